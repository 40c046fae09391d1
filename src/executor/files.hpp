#pragma once
// The executor's file discipline: reads that never follow a symlink and are bounded, writes
// that are atomic (temporary file, fsync, rename, fsync of the directory) with mode 0640, and
// private temporary directories removed on every path.

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace aios::executor::files {

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

}  // namespace aios::executor::files
