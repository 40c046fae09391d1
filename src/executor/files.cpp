#include "executor/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <system_error>

#include "aios/log.hpp"
#include "process/fd.hpp"

namespace aios::executor::files {
namespace {

using process::Fd;

std::system_error os_error(const char* what, const std::filesystem::path& path) {
  return {errno, std::generic_category(), std::string(what) + " " + path.string()};
}

void write_all(int fd, std::string_view content, const std::filesystem::path& path) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw os_error("write", path);
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
}

// fsync of a directory, so that a rename or unlink in it survives a crash.
void sync_directory(const std::filesystem::path& directory) {
  const Fd fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || ::fsync(fd.get()) != 0) throw os_error("fsync", directory);
}

}  // namespace

ReadResult read_file(const std::filesystem::path& path, std::size_t max_bytes) {
  ReadResult result;
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat info {};
  if (!fd.valid()) {
    result.status =
        (errno == ENOENT || errno == ELOOP) ? ReadStatus::not_regular : ReadStatus::failed;
    return result;
  }
  if (::fstat(fd.get(), &info) != 0) return result;
  if (!S_ISREG(info.st_mode)) {
    result.status = ReadStatus::not_regular;
    return result;
  }
  if (static_cast<std::size_t>(info.st_size) > max_bytes) {
    result.status = ReadStatus::too_large;
    return result;
  }
  std::array<char, 65536> buffer{};
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return result;
    if (n == 0) break;
    result.content.append(buffer.data(), static_cast<std::size_t>(n));
    // The file may grow after fstat; the bound holds for what we keep.
    if (result.content.size() > max_bytes) {
      result.status = ReadStatus::too_large;
      result.content.clear();
      return result;
    }
  }
  result.status = ReadStatus::ok;
  return result;
}

bool is_regular_file(const std::filesystem::path& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

bool exists(const std::filesystem::path& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

void write_atomic(const std::filesystem::path& path, std::string_view content) {
  const auto directory = path.parent_path();
  std::string temporary = (directory / ("." + path.filename().string() + ".XXXXXX")).string();
  const Fd fd(::mkostemp(temporary.data(), O_CLOEXEC));
  if (!fd.valid()) throw os_error("mkostemp", directory);
  try {
    if (::fchmod(fd.get(), 0640) != 0) throw os_error("fchmod", temporary);
    write_all(fd.get(), content, temporary);
    if (::fsync(fd.get()) != 0) throw os_error("fsync", temporary);
    if (::rename(temporary.c_str(), path.c_str()) != 0) throw os_error("rename", path);
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  sync_directory(directory);
}

void remove_durably(const std::filesystem::path& path) {
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return;
    throw os_error("unlink", path);
  }
  sync_directory(path.parent_path());
}

PrivateDirectory::PrivateDirectory(const std::filesystem::path& parent, std::string_view prefix) {
  std::string pattern = (parent / (std::string(prefix) + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw os_error("mkdtemp", parent);
  path_ = pattern;
}

PrivateDirectory::~PrivateDirectory() {
  std::error_code error;
  std::filesystem::remove_all(path_, error);
  if (error) {
    log::warn("EXTERNAL_AGENT_TEMPORARY_DIRECTORY_LEFT",
              {{"path", path_.string()}, {"error", error.message()}});
  }
}

}  // namespace aios::executor::files
