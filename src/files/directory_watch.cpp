#include <poll.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "aios/files.hpp"

namespace aios::files {

DirectoryWatch::DirectoryWatch() : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
  if (!fd_.valid()) throw std::system_error(errno, std::generic_category(), "inotify_init1");
}

int DirectoryWatch::add(const std::filesystem::path& directory, std::uint32_t mask) {
  const int watch = ::inotify_add_watch(fd_.get(), directory.c_str(), mask | IN_ONLYDIR);
  if (watch < 0) {
    throw std::system_error(errno, std::generic_category(),
                            "inotify_add_watch " + directory.string());
  }
  return watch;
}

std::vector<DirectoryWatch::Event> DirectoryWatch::wait(std::chrono::milliseconds timeout,
                                                        int wake_fd, bool& woken) {
  woken = false;
  std::array<pollfd, 2> fds{{{fd_.get(), POLLIN, 0}, {wake_fd, POLLIN, 0}}};
  const int ready = ::poll(fds.data(), wake_fd >= 0 ? 2 : 1,
                           static_cast<int>(std::max<long long>(0, timeout.count())));
  if (ready < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
  if (ready <= 0) return {};
  woken = wake_fd >= 0 && fds[1].revents != 0;
  return fds[0].revents != 0 ? read_events() : std::vector<Event>{};
}

std::vector<DirectoryWatch::Event> DirectoryWatch::read_events() {
  std::vector<Event> events;
  alignas(inotify_event) std::array<char, 16384> buffer{};
  for (;;) {
    const ssize_t n = ::read(fd_.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (std::size_t offset = 0; offset < static_cast<std::size_t>(n);) {
      inotify_event header{};
      std::memcpy(&header, buffer.data() + offset, sizeof header);
      const char* name = buffer.data() + offset + sizeof header;
      events.push_back({header.wd, header.mask, std::string(name, ::strnlen(name, header.len))});
      offset += sizeof header + header.len;
    }
  }
  return events;
}

}  // namespace aios::files
