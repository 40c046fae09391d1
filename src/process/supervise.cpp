// Sampling a sandbox's processes, its tmpfs and its writable paths from outside it.
#include "process/supervise.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <limits>

namespace aios::process {
namespace {

// Deeper than any tree a program writes for its work; a deeper one is taken as past the bound
// (its bytes could otherwise hide below a depth the walk does not reach).
constexpr std::size_t kMaxDepth = 256;
constexpr std::uint64_t kUncountable = std::numeric_limits<std::uint64_t>::max();

std::string link_of(const std::string& path) {
  std::array<char, 64> target{};
  const auto n = ::readlink(path.c_str(), target.data(), target.size() - 1);
  return n > 0 ? std::string(target.data(), static_cast<std::size_t>(n)) : std::string();
}

// The value in kB of a "Name:   123 kB" line of a /proc status text, or of "Threads:   4".
std::uint64_t field(std::string_view text, std::string_view name) {
  const auto at = text.find(name);
  if (at == std::string_view::npos) return 0;
  auto rest = text.substr(at + name.size());
  rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
  std::uint64_t value = 0;
  std::from_chars(rest.data(), rest.data() + rest.size(), value);
  return value;
}

std::string read_small(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::array<char, 4096> buffer{};
  const auto n = ::read(fd, buffer.data(), buffer.size());
  ::close(fd);
  return n > 0 ? std::string(buffer.data(), static_cast<std::size_t>(n)) : std::string();
}

std::uint64_t tmpfs_used(const std::string& path) {
  struct statvfs info {};
  if (::statvfs(path.c_str(), &info) != 0) return 0;
  return (info.f_blocks - info.f_bfree) * info.f_frsize;
}

// A directory its owner made unreadable, made readable to its owner again and opened. Through
// a descriptor of the directory itself: the run may swap the name for a symlink meanwhile, and
// chmod by name would follow it to whatever file of ours it points at.
int reopened_readable(int at, const char* name) {
  const int path = ::openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (path < 0) return -1;
  struct stat own {};
  std::array<char, 32> self{};
  std::snprintf(self.data(), self.size(), "/proc/self/fd/%d", path);
  int fd = -1;
  if (::fstat(path, &own) == 0 && ::chmod(self.data(), (own.st_mode & 07777) | S_IRWXU) == 0) {
    fd = ::openat(path, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ::close(path);
  return fd;
}

// The bytes allocated below `root`, symlinks not followed. A directory the run made unreadable
// is its own (the run's uid, or nobody's for a run started by root), so it is opened again.
std::uint64_t allocated_below(const std::filesystem::path& root) {
  const int top = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (top < 0) return 0;
  struct stat info {};
  std::uint64_t total =
      ::fstat(top, &info) == 0 ? static_cast<std::uint64_t>(info.st_blocks) * 512 : 0;
  std::vector<DIR*> stack{::fdopendir(top)};
  if (stack.back() == nullptr) {
    ::close(top);
    return total;
  }
  bool too_deep = false;
  while (!stack.empty()) {
    DIR* directory = stack.back();
    const dirent* entry = ::readdir(directory);
    if (entry == nullptr) {
      ::closedir(directory);
      stack.pop_back();
      continue;
    }
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    const int at = ::dirfd(directory);
    if (::fstatat(at, entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    total += static_cast<std::uint64_t>(info.st_blocks) * 512;
    if (!S_ISDIR(info.st_mode)) continue;
    if (stack.size() >= kMaxDepth) {
      too_deep = true;
      continue;
    }
    int fd = ::openat(at, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES) fd = reopened_readable(at, entry->d_name);
    if (fd < 0) continue;
    DIR* below = ::fdopendir(fd);
    if (below == nullptr) {
      ::close(fd);
      continue;
    }
    stack.push_back(below);
  }
  return too_deep ? kUncountable : total;
}

}  // namespace

std::string_view bound_name(Bound bound) {
  switch (bound) {
    case Bound::memory:
      return "memory";
    case Bound::processes:
      return "processes";
    case Bound::disk:
      return "disk";
  }
  return "";
}

RunSupervisor::RunSupervisor(const Limits& limits, std::vector<std::filesystem::path> writable)
    : limits_(limits), writable_(std::move(writable)), next_(Clock::now()), next_walk_(next_) {
  baseline_ = disk_bytes();
}

void RunSupervisor::watch(pid_t first) {
  first_ = first;
  namespace_ = link_of("/proc/" + std::to_string(first) + "/ns/pid");
}

std::optional<Bound> RunSupervisor::check(Clock::time_point now) {
  if (now >= next_) {
    next_ = now + kSampleInterval;
    if (const auto passed = sample_processes()) return passed;
  }
  if (now >= next_walk_) {
    const auto bytes = disk_bytes();
    const auto done = Clock::now();
    // A large tree is walked less often: the walk takes at most a tenth of the time.
    next_walk_ = done + std::max<Clock::duration>(kSampleInterval, 10 * (done - now));
    if (bytes == kUncountable || bytes - std::min(bytes, baseline_) > limits_.disk_bytes) {
      return Bound::disk;
    }
  }
  return std::nullopt;
}

std::optional<Bound> RunSupervisor::sample_processes() {
  if (namespace_.empty()) return std::nullopt;
  std::uint64_t threads = 0;
  std::uint64_t anonymous_kib = 0;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  while (const dirent* entry = ::readdir(proc)) {
    const std::string_view name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string_view::npos) continue;
    const std::string base = "/proc/" + std::string(name);
    if (link_of(base + "/ns/pid") != namespace_) continue;
    const auto status = read_small(base + "/status");
    threads += field(status, "Threads:");
    anonymous_kib += field(status, "RssAnon:");
  }
  ::closedir(proc);
  const std::string root = "/proc/" + std::to_string(first_) + "/root";
  const std::uint64_t memory =
      anonymous_kib * 1024 + tmpfs_used(root + "/tmp") + tmpfs_used(root + "/dev/shm");
  if (threads > limits_.processes) return Bound::processes;
  if (memory > limits_.memory_bytes) return Bound::memory;
  return std::nullopt;
}

std::uint64_t RunSupervisor::disk_bytes() {
  std::uint64_t total = 0;
  for (const auto& path : writable_) {
    const auto bytes = allocated_below(path);
    if (bytes == kUncountable) return kUncountable;
    total += bytes;
  }
  return total;
}

}  // namespace aios::process
