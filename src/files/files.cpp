#include "aios/files.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <system_error>

#include "aios/log.hpp"
#include "aios/process.hpp"

namespace aios::files {
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

// The bounded read of an opened file (read_file, read_beneath); a failed open is classified.
ReadResult read_open(const Fd& fd, std::size_t max_bytes) {
  ReadResult result;
  struct stat info {};
  if (!fd.valid()) {
    // ELOOP and EXDEV: a symlink on the way, or a path out of the root (read_beneath).
    result.status = (errno == ENOENT || errno == ELOOP || errno == EXDEV || errno == ENOTDIR)
                        ? ReadStatus::not_regular
                        : ReadStatus::failed;
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

Fd open_root(const std::filesystem::path& root) {
  return Fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// One component opened beneath `directory` without following it: a symlink is ELOOP whatever
// the flags (O_DIRECTORY alone would say ENOTDIR), ".." is EXDEV.
Fd open_component(int directory, const std::filesystem::path& name, int flags, mode_t mode) {
  if (name == "..") {
    errno = EXDEV;
    return Fd();
  }
  Fd fd(::openat(directory, name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid() && errno == ENOTDIR) {
    struct stat info {};
    if (::fstatat(directory, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(info.st_mode)) {
      errno = ELOOP;
    } else {
      errno = ENOTDIR;
    }
  }
  return fd;
}

// The same resolution, one component at a time, where openat2 is refused with ENOSYS (a
// seccomp filter older than the call: systemd 252's SystemCallFilter= is one).
Fd walk_beneath(int directory, const std::filesystem::path& relative, int flags, mode_t mode) {
  if (relative.is_absolute()) {
    errno = EXDEV;
    return Fd();
  }
  Fd current(::openat(directory, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  std::filesystem::path last = ".";
  for (const auto& part : relative) {
    if (part.empty() || part == ".") continue;
    if (last != ".") {
      Fd next = open_component(current.get(), last, O_PATH | O_DIRECTORY, 0);
      if (!next.valid()) return next;
      current = std::move(next);
    }
    last = part;
  }
  return open_component(current.get(), last, flags, mode);
}

// openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: the kernel refuses a path that leaves
// `directory` or has a symlink at any component (EXDEV, ELOOP), at the moment it resolves it.
Fd open_beneath(int directory, const std::filesystem::path& relative, int flags, mode_t mode) {
  open_how how{};
  how.flags = static_cast<unsigned>(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) != 0 ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const char* path = relative.empty() ? "." : relative.c_str();
  // EAGAIN: a rename elsewhere raced the resolution; the kernel asks for a retry.
  for (int attempt = 0; attempt < 8; ++attempt) {
    const long fd = ::syscall(SYS_openat2, directory, path, &how, sizeof how);
    if (fd >= 0) return Fd(static_cast<int>(fd));
    if (errno == ENOSYS) return walk_beneath(directory, relative, flags, mode);
    if (errno != EINTR && errno != EAGAIN) break;
  }
  return Fd();
}

// fsync of a directory, so that a rename or unlink in it survives a crash.
void sync_directory(const std::filesystem::path& directory) {
  const Fd fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || ::fsync(fd.get()) != 0) throw os_error("fsync", directory);
}

}  // namespace

ReadResult read_file(const std::filesystem::path& path, std::size_t max_bytes) {
  return read_open(Fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)),
                   max_bytes);
}

ReadResult read_beneath(const std::filesystem::path& root, const std::filesystem::path& relative,
                        std::size_t max_bytes) {
  const Fd directory = open_root(root);
  if (!directory.valid()) return {};
  return read_open(open_beneath(directory.get(), relative, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0),
                   max_bytes);
}

void write_beneath(const std::filesystem::path& root, const std::filesystem::path& relative,
                   std::string_view content) {
  Fd directory = open_root(root);
  if (!directory.valid()) throw os_error("open", root);
  // Each missing directory is made beneath the last one opened, so no component can be swapped
  // for a symlink between the check and the use.
  const auto parent = relative.parent_path();
  for (auto it = parent.begin(); it != parent.end(); ++it) {
    if (::mkdirat(directory.get(), it->c_str(), 0755) != 0 && errno != EEXIST) {
      throw os_error("mkdir", root / relative);
    }
    Fd next = open_beneath(directory.get(), *it, O_PATH | O_DIRECTORY, 0);
    if (!next.valid()) throw os_error("open", root / relative);
    directory = std::move(next);
  }
  const Fd fd = open_beneath(directory.get(), relative.filename(),
                             O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  if (!fd.valid()) throw os_error("open", root / relative);
  write_all(fd.get(), content, root / relative);
}

void remove_beneath(const std::filesystem::path& root, const std::filesystem::path& relative) {
  const Fd directory = open_root(root);
  const Fd parent = directory.valid() ? open_beneath(directory.get(), relative.parent_path(),
                                                     O_PATH | O_DIRECTORY, 0)
                                      : Fd();
  if (!parent.valid()) throw os_error("open", root / relative);
  if (::unlinkat(parent.get(), relative.filename().c_str(), 0) != 0) {
    throw os_error("unlink", root / relative);
  }
}

namespace {

std::string as_pathlib(const std::filesystem::path& path) {
  std::string text = path.string();
  while (text.size() > 1) {
    if (text.back() == '/') {
      text.pop_back();
    } else if (text.ends_with("/.")) {
      text.resize(text.size() - 2);
    } else {
      break;
    }
  }
  if (text.empty()) text = "/";
  return text;
}

}  // namespace

bool is_symlink(const std::filesystem::path& path) {
  struct stat info {};
  return ::lstat(as_pathlib(path).c_str(), &info) == 0 && S_ISLNK(info.st_mode);
}

bool is_real_directory(const std::filesystem::path& path) {
  struct stat info {};
  return ::lstat(as_pathlib(path).c_str(), &info) == 0 && S_ISDIR(info.st_mode);
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

}  // namespace aios::files
