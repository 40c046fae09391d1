// A bounded copy of a root-owned directory tree that follows no link (a profile's state
// template, copied into a run's private directory).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "aios/files.hpp"

namespace aios::files {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxDepth = 32;

// Closes a descriptor on every way out.
struct Descriptor {
  explicit Descriptor(int value) : fd(value) {}
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int fd;
};

struct Left {
  std::size_t entries;
  std::uint64_t bytes;
};

CopyStatus copy_file(int from, const struct stat& info, const fs::path& to, Left& left) {
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > left.bytes) return CopyStatus::too_large;
  left.bytes -= size;
  const mode_t mode = (info.st_mode & S_IXUSR) != 0 ? 0700 : 0600;
  const Descriptor out(
      ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (out.fd < 0) return CopyStatus::failed;
  std::array<char, 64 * 1024> buffer{};
  std::uint64_t copied = 0;
  for (;;) {
    const auto n = ::read(from, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return CopyStatus::failed;
    if (n == 0) break;
    copied += static_cast<std::uint64_t>(n);
    // A file that grows while it is copied is held to what it declared.
    if (copied > size) return CopyStatus::too_large;
    for (ssize_t written = 0; written < n;) {
      const auto w =
          ::write(out.fd, buffer.data() + written, static_cast<std::size_t>(n - written));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return CopyStatus::failed;
      written += w;
    }
  }
  return CopyStatus::ok;
}

CopyStatus copy_directory(int from, const fs::path& to, Left& left, int depth) {
  if (depth > kMaxDepth) return CopyStatus::too_large;
  if (::mkdir(to.c_str(), 0700) != 0) return CopyStatus::failed;
  const int listed = ::dup(from);
  if (listed < 0) return CopyStatus::failed;
  DIR* raw = ::fdopendir(listed);
  if (raw == nullptr) {
    ::close(listed);
    return CopyStatus::failed;
  }
  const std::unique_ptr<DIR, int (*)(DIR*)> directory(raw, ::closedir);
  while (const dirent* entry = ::readdir(directory.get())) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (left.entries == 0) return CopyStatus::too_large;
    --left.entries;
    // Non-blocking, so a FIFO is refused below rather than waited on.
    const Descriptor child(
        ::openat(from, entry->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (child.fd < 0) return errno == ELOOP ? CopyStatus::refused : CopyStatus::failed;
    struct stat info {};
    if (::fstat(child.fd, &info) != 0) return CopyStatus::failed;
    CopyStatus status = CopyStatus::refused;
    if (S_ISDIR(info.st_mode)) {
      status = copy_directory(child.fd, to / name, left, depth + 1);
    } else if (S_ISREG(info.st_mode)) {
      status = copy_file(child.fd, info, to / name, left);
    }
    if (status != CopyStatus::ok) return status;
  }
  return CopyStatus::ok;
}

}  // namespace

CopyStatus copy_tree(const fs::path& from, const fs::path& to, std::size_t max_entries,
                     std::uint64_t max_bytes) {
  const Descriptor root(::open(from.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (root.fd < 0) {
    return errno == ELOOP || errno == ENOTDIR ? CopyStatus::refused : CopyStatus::failed;
  }
  Left left{max_entries, max_bytes};
  return copy_directory(root.fd, to, left, 0);
}

}  // namespace aios::files
