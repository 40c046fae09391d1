#pragma once
// Loopback helpers for the http tests: raw POSIX sockets (so a test can send malformed bytes
// and see exactly what the server writes back), and peers that misbehave on purpose.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "aios/http.hpp"

namespace aios::http::testing {

// An owned socket descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

inline sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

inline Fd tcp_socket() {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) throw std::runtime_error("socket");
  return fd;
}

// A socket bound to 127.0.0.1 on an ephemeral port; listening when `listen` (and then never
// accepting: the kernel completes connections into the backlog and nobody ever answers), or
// merely bound (a connect to it is refused).
class BoundSocket {
 public:
  explicit BoundSocket(bool listen) : fd_(tcp_socket()) {
    auto address = loopback(0);
    if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      throw std::runtime_error("bind");
    }
    if (listen && ::listen(fd_.get(), 16) != 0) throw std::runtime_error("listen");
    socklen_t length = sizeof address;
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  std::uint16_t port() const { return port_; }
  int fd() const { return fd_.get(); }

 private:
  Fd fd_;
  std::uint16_t port_ = 0;
};

// A blocking client socket with a receive timeout, for byte-exact conversations.
class RawClient {
 public:
  explicit RawClient(std::uint16_t port,
                     std::chrono::milliseconds receive_timeout = std::chrono::seconds(5))
      : fd_(tcp_socket()) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(receive_timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((receive_timeout.count() % 1000) * 1000);
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    auto address = loopback(port);
    if (::connect(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      throw std::runtime_error("connect");
    }
  }

  void send(std::string_view bytes) {
    while (!bytes.empty()) {
      const auto sent = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent <= 0) throw std::runtime_error("send");
      bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
  }

  // Reads until `marker` has arrived (true), or until EOF, an error or the receive timeout
  // (false). Everything read is appended to received().
  bool read_until(std::string_view marker) {
    while (received_.find(marker) == std::string::npos) {
      if (!read_some()) return false;
    }
    return true;
  }

  // Reads until the peer closes (true) or the receive timeout or an error (false).
  bool read_to_eof() {
    for (;;) {
      char chunk[4096];
      const auto got = ::recv(fd_.get(), chunk, sizeof chunk, 0);
      if (got == 0) return true;
      if (got < 0) return false;
      received_.append(chunk, static_cast<std::size_t>(got));
    }
  }

  const std::string& received() const { return received_; }

 private:
  bool read_some() {
    char chunk[4096];
    const auto got = ::recv(fd_.get(), chunk, sizeof chunk, 0);
    if (got <= 0) return false;
    received_.append(chunk, static_cast<std::size_t>(got));
    return true;
  }

  Fd fd_;
  std::string received_;
};

// Sends `bytes` on a new connection and returns everything the server writes before it closes.
inline std::string exchange(std::uint16_t port, std::string_view bytes) {
  RawClient client(port);
  client.send(bytes);
  if (!client.read_to_eof()) throw std::runtime_error("the server did not close the connection");
  return client.received();
}

// The status code of the first response in `raw`, or 0.
inline int status_of(std::string_view raw) {
  if (raw.size() < 12 || raw.substr(0, 9) != "HTTP/1.1 ") return 0;
  return std::stoi(std::string(raw.substr(9, 3)));
}

// The body of a single response in `raw` (everything after the blank line).
inline std::string body_of(std::string_view raw) {
  const auto end = raw.find("\r\n\r\n");
  return end == std::string_view::npos ? std::string() : std::string(raw.substr(end + 4));
}

// A peer that follows a script: for each connection in turn it accepts, then for each reply
// reads one request head (bodies must be empty) and sends the reply, or closes without
// answering when the reply is "". After its replies it closes the connection.
class ScriptedPeer {
 public:
  using Script = std::vector<std::vector<std::string>>;

  explicit ScriptedPeer(Script script) : socket_(true), script_(std::move(script)) {
    thread_ = std::thread([this] {
      for (const auto& replies : script_) {
        Fd connection(::accept4(socket_.fd(), nullptr, nullptr, SOCK_CLOEXEC));
        if (connection.get() < 0) return;
        std::string input;
        for (const auto& reply : replies) {
          std::size_t end;
          while ((end = input.find("\r\n\r\n")) == std::string::npos) {
            char chunk[1024];
            const auto got = ::recv(connection.get(), chunk, sizeof chunk, 0);
            if (got <= 0) return;
            input.append(chunk, static_cast<std::size_t>(got));
          }
          input.erase(0, end + 4);
          ++requests_;
          if (reply.empty()) break;
          ::send(connection.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
        }
      }
    });
  }
  ~ScriptedPeer() {
    ::shutdown(socket_.fd(), SHUT_RDWR);  // wakes accept() when no client ever came
    thread_.join();
  }
  ScriptedPeer(const ScriptedPeer&) = delete;
  ScriptedPeer& operator=(const ScriptedPeer&) = delete;
  std::uint16_t port() const { return socket_.port(); }
  // Request heads read so far.
  int requests() const { return requests_.load(); }

 private:
  BoundSocket socket_;
  Script script_;
  std::atomic<int> requests_{0};
  std::thread thread_;
};

inline std::string url(std::uint16_t port, std::string_view target) {
  return "http://127.0.0.1:" + std::to_string(port) + std::string(target);
}

// A started server (stopped when the pointer goes).
inline std::unique_ptr<Server> started(Handler handler, ServerOptions options = {}) {
  auto server = std::make_unique<Server>(std::move(options), std::move(handler));
  server->start();
  return server;
}

// Polls until the server holds `count` open connections (accepting is asynchronous).
inline bool wait_for_connections(const Server& server, std::size_t count) {
  for (int i = 0; i < 500; ++i) {
    if (server.connections() == count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A handler that answers the parsed request as JSON.
inline Response echo(const Request& request) {
  nlohmann::json query = nlohmann::json::object();
  for (const auto& [name, value] : request.query) query[name] = value;
  return json_response(200, {{"method", request.method},
                             {"path", request.path},
                             {"target", request.target},
                             {"query", query},
                             {"body", request.body},
                             {"bearer", request.bearer_token},
                             {"remote", request.remote_address},
                             {"trace", std::string(request.header("x-trace"))}});
}

}  // namespace aios::http::testing
