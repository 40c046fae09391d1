// One synchronous request/response exchange with deadline, reconnect-once and error mapping.
#include "http/client_connection.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <vector>

#include "http/url.hpp"

namespace aios::http::detail {

// The steps before a byte is sent; their names start the detail of the errors they throw
// (http::nothing_sent reads them).
constexpr std::string_view kResolveStep = "resolve";
constexpr std::string_view kConnectStep = "connect";

namespace {

namespace bhttp = beast::http;

constexpr std::uint64_t kMaxResponseBodyBytes = 64ull * 1024 * 1024;
constexpr std::uint32_t kMaxResponseHeaderBytes = 64 * 1024;
// The peer closed a connection it considered idle: nothing of the request was processed.
bool closed_by_peer(const beast::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == net::error::eof ||
         ec == ssl::error::stream_truncated || ec == net::error::connection_reset ||
         ec == net::error::broken_pipe || ec == net::error::connection_aborted;
}

// RFC 9110 idempotent methods: sending one twice has the effect of sending it once.
bool is_idempotent(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" ||
         method == "OPTIONS";
}

bool is_http_error(const beast::error_code& ec) {
  return ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category();
}

}  // namespace

ClientConnection::ClientConnection(std::string host, std::uint16_t port, bool keep_alive,
                                   std::shared_ptr<TlsClientCredentials> tls, net::io_context* io)
    : host_(std::move(host)),
      port_(port),
      keep_alive_(keep_alive),
      tls_(std::move(tls)),
      own_io_(io == nullptr ? std::make_unique<net::io_context>(1) : nullptr),
      io_(io == nullptr ? *own_io_ : *io) {
  host_header_ = host_.find(':') == std::string::npos ? host_ : "[" + host_ + "]";
  if (port_ != (tls_ ? 443 : 80)) host_header_ += ":" + std::to_string(port_);
  session_key_ = host_ + ":" + std::to_string(port_);
}

template <typename Step>
auto ClientConnection::with_stream(Step&& step) {
  if (tls_stream_) return step(*tls_stream_);
  return step(socket_);
}

ClientConnection::Message ClientConnection::build(std::string_view method, std::string_view target,
                                                  std::string_view bearer_token,
                                                  std::string_view body) const {
  if (!is_token(method)) {
    throw Error(ErrorCode::HTTP_CLIENT_REQUEST_INVALID, "the method is not an HTTP token");
  }
  if (target.empty() || target.front() != '/' || !is_visible_ascii(target)) {
    throw Error(ErrorCode::HTTP_CLIENT_REQUEST_INVALID, "the target is not origin-form ASCII");
  }
  if (!is_visible_ascii(bearer_token)) {
    throw Error(ErrorCode::HTTP_CLIENT_REQUEST_INVALID,
                "the bearer token has characters outside visible ASCII");
  }
  Message message;
  message.version(11);
  message.method_string({method.data(), method.size()});
  message.target({target.data(), target.size()});
  message.set(bhttp::field::host, host_header_);
  message.set(bhttp::field::user_agent, "aios-http-client");
  message.set(bhttp::field::accept, "application/json");
  if (!bearer_token.empty()) {
    std::string authorization = "Bearer ";
    authorization.append(bearer_token);
    message.set(bhttp::field::authorization, authorization);
  }
  if (!body.empty()) message.set(bhttp::field::content_type, "application/json");
  message.body().assign(body);
  message.keep_alive(keep_alive_);
  message.prepare_payload();
  return message;
}

template <class Start>
beast::error_code ClientConnection::run(Clock::time_point deadline, bool& timed_out,
                                        Start&& start) {
  const auto result = run_until(io_, deadline, cancel_, std::forward<Start>(start), [this] {
    beast::error_code ignored;
    socket_.close(ignored);  // aborts the operation; its TLS stream must outlive it
    resolver_.cancel();
  });
  if (result) return *result;
  timed_out = true;
  close();
  if (cancel_ != nullptr && cancel_->load())
    fail(ErrorCode::HTTP_CLIENT_CANCELLED, "cancelled", {});
  return {};
}

bool ClientConnection::closed_while_idle() {
  // Between exchanges nothing may arrive: end of stream means the peer closed the connection,
  // and stray bytes mean it is out of step. Either way it cannot be reused.
  if (buffer_.size() != 0) return true;
  char byte = 0;
  const auto got = ::recv(socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

void ClientConnection::close() {
  // OpenSSL drops the session of a connection freed without a shutdown from resumption; this
  // one's session stays good to offer again, so the shutdown is recorded (quietly: no
  // close_notify, which would cost a round trip).
  if (tls_stream_) SSL_set_shutdown(tls_stream_->native_handle(), SSL_SENT_SHUTDOWN);
  beast::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  tls_stream_.reset();
  buffer_.consume(buffer_.size());
}

void ClientConnection::fail(ErrorCode code, std::string_view step, const beast::error_code& ec) {
  close();
  std::string detail(step);
  detail.append(" ").append(host_header_);
  if (ec) detail.append(": ").append(ec.message());
  throw Error(code, std::move(detail));
}

void ClientConnection::connect(Clock::time_point deadline) {
  bool timed_out = false;
  std::vector<tcp::endpoint> endpoints;
  beast::error_code ec;
  const auto address = net::ip::make_address(host_, ec);
  if (!ec) {
    endpoints.emplace_back(address, port_);
  } else {
    tcp::resolver::results_type results;
    ec = run(deadline, timed_out, [&](auto handler) {
      resolver_.async_resolve(
          host_, std::to_string(port_),
          [&results, handler](beast::error_code error, tcp::resolver::results_type found) mutable {
            results = std::move(found);
            handler(error);
          });
    });
    if (timed_out) fail(ErrorCode::HTTP_UPSTREAM_TIMEOUT, kResolveStep, {});
    if (ec) fail(ErrorCode::HTTP_UPSTREAM_UNAVAILABLE, kResolveStep, ec);
    for (const auto& entry : results) endpoints.push_back(entry.endpoint());
  }
  ec = run(deadline, timed_out,
           [&](auto handler) { net::async_connect(socket_, endpoints, handler); });
  if (timed_out) fail(ErrorCode::HTTP_UPSTREAM_TIMEOUT, kConnectStep, {});
  if (ec) fail(ErrorCode::HTTP_UPSTREAM_UNAVAILABLE, kConnectStep, ec);
  socket_.set_option(tcp::no_delay(true), ec);
  if (tls_) handshake(deadline);
}

void ClientConnection::handshake(Clock::time_point deadline) {
  tls_stream_.emplace(socket_, tls_->impl().context);
  detail::prepare_client(tls_->impl(), tls_stream_->native_handle(), host_, session_key_);
  bool timed_out = false;
  const auto ec = run(deadline, timed_out, [&](auto handler) {
    tls_stream_->async_handshake(ssl::stream_base::client, handler);
  });
  if (timed_out) fail(ErrorCode::HTTP_UPSTREAM_TIMEOUT, "TLS handshake with", {});
  if (ec) {
    // The server's certificate is named when it is the reason; otherwise OpenSSL's own.
    const auto why = detail::server_verification_error(tls_stream_->native_handle());
    close();
    throw Error(ErrorCode::TLS_HANDSHAKE_FAILED,
                "TLS handshake with " + host_header_ + ": " + (why.empty() ? ec.message() : why));
  }
}

ClientResponse ClientConnection::request(std::string_view method, std::string_view target,
                                         std::string_view bearer_token, std::string_view body,
                                         std::chrono::milliseconds timeout,
                                         const std::atomic<bool>* cancel) {
  const Message message = build(method, target, bearer_token, body);
  const auto deadline = Clock::now() + timeout;
  cancel_ = cancel;
  for (int attempt = 0;; ++attempt) {
    if (socket_.is_open() && closed_while_idle()) close();
    const bool reused = socket_.is_open();
    if (!reused) connect(deadline);
    // The peer may close an idle connection just as we reuse it: then the write fails, or the
    // connection ends before a byte of the response. Sending once more is safe when the method
    // is idempotent; a POST is not repeated, since the peer may have acted on it.
    const bool may_retry = reused && attempt == 0 && is_idempotent(method);
    bool timed_out = false;

    auto ec = run(deadline, timed_out, [&](auto handler) {
      with_stream([&](auto& stream) { bhttp::async_write(stream, message, handler); });
    });
    if (timed_out) fail(ErrorCode::HTTP_UPSTREAM_TIMEOUT, "write to", {});
    if (ec) {
      if (may_retry) {
        close();
        continue;
      }
      fail(ErrorCode::HTTP_UPSTREAM_UNAVAILABLE, "write to", ec);
    }

    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(kMaxResponseBodyBytes);
    parser.header_limit(kMaxResponseHeaderBytes);
    parser.skip(method == "HEAD");  // its Content-Length describes a body that never comes
    ec = run(deadline, timed_out, [&](auto handler) {
      with_stream([&](auto& stream) { bhttp::async_read(stream, buffer_, parser, handler); });
    });
    if (timed_out) fail(ErrorCode::HTTP_UPSTREAM_TIMEOUT, "read from", {});
    if (ec) {
      if (may_retry && !parser.got_some() && closed_by_peer(ec)) {
        close();
        continue;
      }
      if (is_http_error(ec) && ec != bhttp::error::end_of_stream &&
          ec != bhttp::error::partial_message) {
        fail(ErrorCode::HTTP_UPSTREAM_RESPONSE_INVALID, "read from", ec);
      }
      fail(ErrorCode::HTTP_UPSTREAM_UNAVAILABLE, "read from", ec);
    }
    auto response = parser.release();
    if (!keep_alive_ || !response.keep_alive()) close();
    return ClientResponse{static_cast<int>(response.result_int()), std::move(response.body())};
  }
}

ClientConnection::StreamParser& ClientConnection::start_stream(Message& message,
                                                               std::chrono::milliseconds timeout,
                                                               const std::atomic<bool>* cancel) {
  const auto deadline = Clock::now() + timeout;
  cancel_ = cancel;
  if (socket_.is_open() && closed_while_idle()) close();
  if (!socket_.is_open()) connect(deadline);
  message.set(bhttp::field::host, host_header_);
  message.keep_alive(keep_alive_);
  bool timed_out = false;
  auto ec = run(deadline, timed_out, [&](auto handler) {
    with_stream([&](auto& stream) { bhttp::async_write(stream, message, handler); });
  });
  if (timed_out) fail(ErrorCode::HTTP_UPSTREAM_TIMEOUT, "write to", {});
  if (ec) fail(ErrorCode::HTTP_UPSTREAM_UNAVAILABLE, "write to", ec);
  stream_.emplace();
  stream_->header_limit(kMaxResponseHeaderBytes);
  // A stream has no length; the caller bounds what it keeps.
  stream_->body_limit(std::numeric_limits<std::uint64_t>::max());
  stream_->skip(message.method() == bhttp::verb::head);
  ec = run(deadline, timed_out, [&](auto handler) {
    with_stream(
        [&](auto& stream) { bhttp::async_read_header(stream, buffer_, *stream_, handler); });
  });
  if (timed_out) fail(ErrorCode::HTTP_UPSTREAM_TIMEOUT, "read from", {});
  if (ec) {
    fail(is_http_error(ec) ? ErrorCode::HTTP_UPSTREAM_RESPONSE_INVALID
                           : ErrorCode::HTTP_UPSTREAM_UNAVAILABLE,
         "read from", ec);
  }
  return *stream_;
}

void ClientConnection::read_some(std::chrono::milliseconds timeout,
                                 const std::atomic<bool>* cancel) {
  cancel_ = cancel;
  bool timed_out = false;
  auto ec = run(Clock::now() + timeout, timed_out, [&](auto handler) {
    with_stream([&](auto& stream) { bhttp::async_read_some(stream, buffer_, *stream_, handler); });
  });
  // buffer_body reports a full buffer as need_buffer: the piece is there to pass on.
  if (ec == bhttp::error::need_buffer) ec = {};
  if (timed_out) fail(ErrorCode::HTTP_UPSTREAM_TIMEOUT, "read from", {});
  if (ec) fail(ErrorCode::HTTP_UPSTREAM_UNAVAILABLE, "read from", ec);
}

void ClientConnection::finish_stream() {
  if (!keep_alive_ || !stream_ || !stream_->is_done() || !stream_->get().keep_alive()) close();
  stream_.reset();
}

}  // namespace aios::http::detail

namespace aios::http {

bool nothing_sent(const Error& error) {
  if (!error.is(ErrorCode::HTTP_UPSTREAM_UNAVAILABLE)) return false;
  const std::string_view detail = error.detail();
  for (const auto step : {detail::kResolveStep, detail::kConnectStep}) {
    if (detail.size() > step.size() && detail.starts_with(step) && detail[step.size()] == ' ') {
      return true;
    }
  }
  return false;
}

}  // namespace aios::http
