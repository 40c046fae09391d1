#pragma once
// Where a test's stand-in agent reports what it did. The agent runs in its sandbox, which has no
// file or directory the test can read afterwards; its profile names this TCP server on
// 127.0.0.1 as its one network destination instead. Each connection is one record: the agent
// sends it, closes its side, and waits for "ok", which the witness sends only once the record is
// stored, so a record is counted even when the executor dies right after.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace aios::test {

class Witness {
 public:
  Witness() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      throw std::runtime_error("witness: cannot listen");
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~Witness() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  Witness(const Witness&) = delete;
  Witness& operator=(const Witness&) = delete;

  // The profile's network destination.
  std::string destination() const { return "127.0.0.1:" + std::to_string(port_); }
  std::uint16_t port() const { return port_; }

  std::vector<std::string> records() const {
    const std::lock_guard lock(mutex_);
    return records_;
  }
  std::size_t count(const std::string& record) const {
    const std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(std::count(records_.begin(), records_.end(), record));
  }
  std::size_t size() const {
    const std::lock_guard lock(mutex_);
    return records_.size();
  }

  // Python defining witness(text), which reports `text` and returns once it is stored.
  std::string python() const {
    return "import socket as _witness_socket\n"
           "def witness(text):\n"
           "    with _witness_socket.create_connection(('127.0.0.1', " +
           std::to_string(port_) +
           "), timeout=30) as s:\n"
           "        s.sendall(text.encode())\n"
           "        s.shutdown(_witness_socket.SHUT_WR)\n"
           "        if s.recv(2) != b'ok':\n"
           "            raise SystemExit('the witness did not confirm')\n";
  }

 private:
  void serve() {
    for (;;) {
      const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) return;
      std::string record;
      char buffer[4096];
      ssize_t n = 0;
      while ((n = ::read(client, buffer, sizeof buffer)) > 0) {
        record.append(buffer, static_cast<std::size_t>(n));
      }
      {
        const std::lock_guard lock(mutex_);
        records_.push_back(record);
      }
      (void)!::write(client, "ok", 2);
      ::close(client);
    }
  }

  int fd_ = -1;
  std::uint16_t port_ = 0;
  mutable std::mutex mutex_;
  std::vector<std::string> records_;
  std::thread thread_;
};

}  // namespace aios::test
