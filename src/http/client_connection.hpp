#pragma once
// The synchronous HTTP/1.1 exchange behind Connection and request(): Beast's async operations
// on a private single-threaded io_context, run until each call's deadline.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "aios/http.hpp"
#include "http/beast.hpp"

namespace aios::http::detail {

class ClientConnection {
 public:
  // `keep_alive` false sends "Connection: close" (one-shot requests). `cancel`, when given, is
  // looked at every kCancelCheck while a call waits: once true, the call closes the connection
  // and throws HTTP_CLIENT_CANCELLED.
  ClientConnection(std::string host, std::uint16_t port, std::chrono::milliseconds timeout,
                   bool keep_alive, const std::atomic<bool>* cancel = nullptr);

  // As Connection::request in aios/http.hpp.
  ClientResponse request(std::string_view method, std::string_view target,
                         std::string_view bearer_token, std::string_view body);

 private:
  using Clock = std::chrono::steady_clock;
  using Message = beast::http::request<beast::http::string_body>;

  Message build(std::string_view method, std::string_view target, std::string_view bearer_token,
                std::string_view body) const;
  void connect(Clock::time_point deadline);
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
  std::chrono::milliseconds timeout_;
  bool keep_alive_;
  const std::atomic<bool>* cancel_;
  std::string host_header_;
  net::io_context io_{1};
  tcp::socket socket_{io_};
  tcp::resolver resolver_{io_};
  beast::flat_buffer buffer_;
};

}  // namespace aios::http::detail
