#pragma once
// The file discipline of every module that touches agent-written or private files (the executor,
// the broker, the worker's governed writes): reads that never follow a symlink and are bounded,
// writes that are atomic (temporary file, fsync, rename, fsync of the directory) with mode 0640,
// and private temporary directories removed on every path; and inotify on a few directories, so
// that a process reacts to a file the moment it is renamed into place or touched instead of
// sleep-polling for it.

#include <sys/inotify.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "aios/process.hpp"

namespace aios::files {

enum class ReadStatus {
  ok,
  not_regular,  // missing, a symlink, or not a regular file
  too_large,    // more than max_bytes
  failed,       // open or read failed otherwise
};

struct ReadResult {
  ReadStatus status = ReadStatus::failed;
  std::string content;
};

// Reads `path` (O_NOFOLLOW, non-blocking open so a FIFO cannot hang us).
ReadResult read_file(const std::filesystem::path& path, std::size_t max_bytes);

// Files beneath `root` as the kernel resolves them with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS): a path with a symlink at any component, or one that leaves `root`, is
// refused whatever was on disk a moment before, so what is read or written is what lies there.
// Where a seccomp filter refuses openat2 with ENOSYS (systemd 252's SystemCallFilter=), each
// component is opened in turn with O_NOFOLLOW beneath the one before, to the same effect.
// read_beneath: not_regular for a symlink on the way, a path out of `root`, a missing file or
// anything but a regular file.
ReadResult read_beneath(const std::filesystem::path& root, const std::filesystem::path& relative,
                        std::size_t max_bytes);
// Creates the missing directories (0755) and writes `content` (0644, truncating). Throws
// std::system_error (ELOOP, EXDEV, ENOTDIR for the paths above).
void write_beneath(const std::filesystem::path& root, const std::filesystem::path& relative,
                   std::string_view content);
// Unlinks the file `relative`; throws std::system_error (ENOENT when it is missing).
void remove_beneath(const std::filesystem::path& root, const std::filesystem::path& relative);

// Copies the tree at `from` (a real directory) into `to` (created 0700; it must not exist):
// directories and regular files only, each opened with O_NOFOLLOW beneath the one before, so a
// link anywhere, a FIFO, socket or device is `refused`; more than `max_entries` entries, or
// `max_bytes` of file content, or 32 levels, is `too_large`. Modes keep the owner's only (0700
// for directories and executables, else 0600). On any status but `ok`, `to` may hold a part.
enum class CopyStatus { ok, refused, too_large, failed };
CopyStatus copy_tree(const std::filesystem::path& from, const std::filesystem::path& to,
                     std::size_t max_entries, std::uint64_t max_bytes);

// Python's Path(path).is_symlink(), and "a directory that is not a symlink": both judge `path`
// as pathlib spells it, without trailing "/" and "/.", because lstat("link/") follows the link
// and would take a symlinked directory given with a slash for a real one.
bool is_symlink(const std::filesystem::path& path);
bool is_real_directory(const std::filesystem::path& path);

// True when `path` itself (not a symlink's target) is a regular file / exists at all.
bool is_regular_file(const std::filesystem::path& path);
bool exists(const std::filesystem::path& path);

// Writes `content` to `path` atomically with mode 0640: a temporary ".<name>.XXXXXX" in the
// same directory, fsync, rename over `path`, fsync of the directory. Throws std::system_error;
// no temporary file is left behind.
void write_atomic(const std::filesystem::path& path, std::string_view content);

// Removes `path` (not following a symlink) and fsyncs its directory; a missing file is fine.
void remove_durably(const std::filesystem::path& path);

// mkdtemp("<parent>/<prefix>XXXXXX") (mode 0700), removed with its content on destruction.
class PrivateDirectory {
 public:
  PrivateDirectory(const std::filesystem::path& parent, std::string_view prefix);
  ~PrivateDirectory();
  PrivateDirectory(const PrivateDirectory&) = delete;
  PrivateDirectory& operator=(const PrivateDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

class DirectoryWatch {
 public:
  struct Event {
    int watch = -1;  // what add() returned for the directory
    std::uint32_t mask = 0;
    std::string name;  // empty for IN_Q_OVERFLOW
  };

  // Throws std::system_error when inotify is unavailable.
  DirectoryWatch();

  // Watches `directory` for `mask` (IN_MOVED_TO, IN_CLOSE_WRITE, ...); returns the watch id.
  int add(const std::filesystem::path& directory, std::uint32_t mask);

  // Waits up to `timeout` for events, or for `wake_fd` (an eventfd; -1: none) to become
  // readable. Returns the events read (empty on timeout or wake); sets `woken`.
  std::vector<Event> wait(std::chrono::milliseconds timeout, int wake_fd, bool& woken);

 private:
  std::vector<Event> read_events();

  process::Fd fd_;
};

}  // namespace aios::files
