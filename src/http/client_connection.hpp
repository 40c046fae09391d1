#pragma once
// The synchronous HTTP/1.1 exchange behind Connection, request() and SystemTransport's pool:
// Beast's async operations on a private single-threaded io_context, run until each call's
// deadline, over plaintext or TLS.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "aios/http.hpp"
#include "http/beast.hpp"
#include "http/tls.hpp"

namespace aios::http::detail {

using Clock = std::chrono::steady_clock;

// How often a cancellable wait looks at its flag: a worker's stop waits at most this long, and
// an idle worker wakes this often (more often would cost the idle fleet more than 1 % of a
// core).
inline constexpr std::chrono::milliseconds kCancelCheck{250};

// Starts one async operation through `start(handler)` and runs `io` until it completes,
// `deadline` passes or `*cancel` turns true (looked at every kCancelCheck). If it did not
// complete, calls `abort()`, which must end it (close its socket), and runs `io` until the
// aborted completion is delivered. nullopt: it did not complete.
template <class Start, class Abort>
std::optional<beast::error_code> run_until(net::io_context& io, Clock::time_point deadline,
                                           const std::atomic<bool>* cancel, Start&& start,
                                           Abort&& abort) {
  beast::error_code result;
  bool done = false;
  start([&result, &done](beast::error_code ec, auto&&...) {
    result = ec;
    done = true;
  });
  io.restart();
  const auto cancelled = [cancel] { return cancel != nullptr && cancel->load(); };
  if (cancel == nullptr) {
    io.run_until(deadline);
  } else {
    while (!done && !cancelled() && Clock::now() < deadline) {
      io.run_for(std::min<Clock::duration>(kCancelCheck, deadline - Clock::now()));
    }
  }
  if (done) return result;
  abort();
  io.restart();
  io.run();  // delivers the aborted completion before `result` goes out of scope
  return std::nullopt;
}

class ClientConnection {
 public:
  using Message = beast::http::request<beast::http::string_body>;
  using StreamParser = beast::http::response_parser<beast::http::buffer_body>;

  // `keep_alive` false sends "Connection: close" (one-shot requests). With `tls`, the connection
  // speaks TLS, verifying the server against it and resuming the session it remembers for
  // host:port. With `io`, it runs its operations there (a caller that serves another socket on
  // the same thread), else on an io_context of its own.
  ClientConnection(std::string host, std::uint16_t port, bool keep_alive,
                   std::shared_ptr<TlsClientCredentials> tls = nullptr,
                   net::io_context* io = nullptr);
  ~ClientConnection() { close(); }
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // As Connection::request in aios/http.hpp, bounded by `timeout` as a whole. `cancel`, when
  // given, is looked at every kCancelCheck while the call waits: once true, the call closes
  // the connection and throws HTTP_CLIENT_CANCELLED.
  ClientResponse request(std::string_view method, std::string_view target,
                         std::string_view bearer_token, std::string_view body,
                         std::chrono::milliseconds timeout,
                         const std::atomic<bool>* cancel = nullptr);

  // A request streamed through (a forwarding proxy): sends `message` as it is, with its Host set
  // here, and reads the answer's header within `timeout`; read_some() then reads its body piece
  // by piece, as it arrives, into the parser's buffer_body. Throws as request() does, without a
  // second try (the request may have been acted on).
  StreamParser& start_stream(Message& message, std::chrono::milliseconds timeout,
                             const std::atomic<bool>* cancel);
  // Reads what has arrived of the body (at most the buffer the caller set in the parser's body)
  // within `timeout`. Throws HTTP_UPSTREAM_TIMEOUT, HTTP_UPSTREAM_UNAVAILABLE.
  void read_some(std::chrono::milliseconds timeout, const std::atomic<bool>* cancel);
  // After the streamed answer: closes the connection unless both sides keep it alive.
  void finish_stream();

  // The connection is open and may carry another request.
  bool is_open() const { return socket_.is_open(); }

 private:
  Message build(std::string_view method, std::string_view target, std::string_view bearer_token,
                std::string_view body) const;
  void connect(Clock::time_point deadline);
  void handshake(Clock::time_point deadline);
  // Calls `step` with the stream requests go out on: the TLS stream or the socket.
  template <typename Step>
  auto with_stream(Step&& step);
  // Starts one async operation through `start(handler)` and runs the io_context until it
  // completes or `deadline` passes; on the deadline closes the socket (aborting it) and
  // reports `timed_out`; on a cancel does the same and throws HTTP_CLIENT_CANCELLED.
  template <class Start>
  beast::error_code run(Clock::time_point deadline, bool& timed_out, Start&& start);
  // True when the open connection cannot be reused: the peer closed it, or sent bytes nobody
  // asked for.
  bool closed_while_idle();
  void close();
  [[noreturn]] void fail(ErrorCode code, std::string_view step, const beast::error_code& ec);

  std::string host_;
  std::uint16_t port_;
  bool keep_alive_;
  std::shared_ptr<TlsClientCredentials> tls_;
  const std::atomic<bool>* cancel_ = nullptr;  // the current call's
  std::string host_header_;
  std::string session_key_;  // host:port, under which TLS sessions are remembered
  std::unique_ptr<net::io_context> own_io_;
  net::io_context& io_;
  tcp::socket socket_{io_};
  std::optional<ssl::stream<tcp::socket&>> tls_stream_;  // one per TLS connection
  tcp::resolver resolver_{io_};
  beast::flat_buffer buffer_;
  std::optional<StreamParser> stream_;
};

}  // namespace aios::http::detail
