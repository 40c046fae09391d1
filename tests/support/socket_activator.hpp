#pragma once
// What systemd's Accept=yes socket does for aios-verification-sandbox.socket, so that tests can
// run the real sandbox service outside systemd: listen on a Unix socket and start one instance
// of `argv` per connection, with the connection as its stdin and stdout and its stderr appended
// to a log file.

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace aios::test {

class SocketActivator {
 public:
  SocketActivator(std::filesystem::path socket, std::vector<std::string> argv,
                  std::filesystem::path log)
      : socket_(std::move(socket)), argv_(std::move(argv)), log_(std::move(log)) {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = socket_.string();
    if (listener_ < 0 || path.size() >= sizeof address.sun_path) {
      throw std::runtime_error("socket " + path);
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    if (::bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 16) != 0) {
      throw std::runtime_error("bind " + path + ": " + std::strerror(errno));
    }
    thread_ = std::thread([this] { loop(); });
  }
  ~SocketActivator() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
    for (const pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  }
  SocketActivator(const SocketActivator&) = delete;
  SocketActivator& operator=(const SocketActivator&) = delete;

  // How many instances were started so far.
  int instances() const { return instances_; }

 private:
  void loop() {
    while (!stop_) {
      pollfd waiting{listener_, POLLIN, 0};
      if (::poll(&waiting, 1, 50) <= 0) continue;
      const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (connection < 0) continue;
      start(connection);
      ::close(connection);
    }
  }

  void start(int connection) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, connection, STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, connection, STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log_.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0600);
    std::vector<char*> args;
    for (auto& arg : argv_) args.push_back(arg.data());
    args.push_back(nullptr);
    pid_t pid = -1;
    if (::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) == 0) {
      pids_.push_back(pid);
      ++instances_;
    }
    posix_spawn_file_actions_destroy(&actions);
  }

  std::filesystem::path socket_;
  std::vector<std::string> argv_;
  std::filesystem::path log_;
  int listener_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> instances_{0};
  std::vector<pid_t> pids_;
  std::thread thread_;
};

}  // namespace aios::test
