#pragma once
// inotify on a few directories, so that the exchange reacts to a file the moment it is renamed
// into place instead of sleep-polling for it (the seed polls every 0.25 s).

#include <sys/inotify.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "aios/process.hpp"

namespace aios::executor {

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

}  // namespace aios::executor
