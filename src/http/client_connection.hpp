#pragma once
// The synchronous HTTP/1.1 exchange behind Connection, request() and SystemTransport's pool:
// Beast's async operations on a private single-threaded io_context, run until each call's
// deadline, over plaintext or TLS.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "aios/http.hpp"
#include "http/beast.hpp"
#include "http/tls.hpp"

namespace aios::http::detail {

class ClientConnection {
 public:
  // `keep_alive` false sends "Connection: close" (one-shot requests). With `tls`, the connection
  // speaks TLS, verifying the server against it and resuming the session it remembers for
  // host:port.
  ClientConnection(std::string host, std::uint16_t port, bool keep_alive,
                   std::shared_ptr<TlsClientCredentials> tls = nullptr);
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

  // The connection is open and may carry another request.
  bool is_open() const { return socket_.is_open(); }

 private:
  using Clock = std::chrono::steady_clock;
  using Message = beast::http::request<beast::http::string_body>;

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
  net::io_context io_{1};
  tcp::socket socket_{io_};
  std::optional<ssl::stream<tcp::socket&>> tls_stream_;  // one per TLS connection
  tcp::resolver resolver_{io_};
  beast::flat_buffer buffer_;
};

}  // namespace aios::http::detail
