// The per-connection read / answer / write loop.
#include "http/session.hpp"

#include <algorithm>
#include <chrono>

#include "http/admission.hpp"
#include "http/response.hpp"

namespace aios::http::detail {
namespace {

namespace bhttp = beast::http;

// After a final response the peer may still be sending (an oversized body, pipelined requests).
// Closing with unread bytes would reset the connection and could destroy the response before
// the peer reads it, so the session first discards input for a bounded time and size.
constexpr std::chrono::milliseconds kMaxLinger{5000};
constexpr std::size_t kMaxLingerBytes = 8 * 1024 * 1024;
constexpr std::size_t kLingerChunk = 16 * 1024;

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// What a watch on a connection awaiting a later answer reads at most: its end is the news.
constexpr std::size_t kWatchChunk = 4 * 1024;

// A large answer was built as a JSON document many times its size (a page of 1,000 task views:
// 3.6 MB of text, tens of MB as a DOM) in the malloc arena of the io thread that ran it. glibc
// keeps an arena's freed pages, and each io thread has its own arena, so without handing them
// back the RSS climbs to (io threads x the largest answer) and stays there. Small answers, the
// common case, leave too little to be worth the walk over the arenas.
constexpr std::size_t kTrimAfterBodyBytes = 256 * 1024;

}  // namespace

namespace {

std::variant<beast::tcp_stream, beast::ssl_stream<beast::tcp_stream>> stream_of(
    tcp::socket socket, const std::shared_ptr<ssl::context>& tls) {
  if (!tls) return beast::tcp_stream(std::move(socket));
  return std::variant<beast::tcp_stream, beast::ssl_stream<beast::tcp_stream>>(
      std::in_place_index<1>, std::move(socket), *tls);
}

}  // namespace

Session::Session(tcp::socket socket, std::shared_ptr<ServerState> state, std::string peer_address,
                 std::shared_ptr<ssl::context> tls)
    : tls_(std::move(tls)),
      stream_(stream_of(std::move(socket), tls_)),
      state_(std::move(state)),
      peer_(std::move(peer_address)),
      authenticated_(!state_->options.admits) {
  beast::error_code ec;
  const auto peer = lowest().socket().remote_endpoint(ec);
  if (!ec) {
    request_.remote_address = peer.address().to_string();
    request_.remote_port = peer.port();
  }
  request_.tls = tls_ != nullptr;
  request_.verifies_clients = state_->options.tls && state_->options.tls->verifies_clients();
  lowest().socket().set_option(tcp::no_delay(true), ec);  // best effort; answers are one write
}

beast::tcp_stream& Session::lowest() {
  return std::visit(
      [](auto& stream) -> beast::tcp_stream& { return beast::get_lowest_layer(stream); }, stream_);
}

template <typename Step>
void Session::with_stream(Step&& step) {
  std::visit(step, stream_);
}

Session::~Session() {
  if (counted_) state_->in_flight.fetch_sub(1);
  state_->body_bytes_held.fetch_sub(body_reserved_);
  const std::lock_guard lock(state_->mutex);
  state_->sessions.erase(this);
  if (const auto peer = state_->per_peer.find(peer_);
      peer != state_->per_peer.end() && --peer->second == 0) {
    state_->per_peer.erase(peer);
  }
  state_->drained.notify_all();
}

void Session::start() {
  if (!tls_) {
    net::dispatch(lowest().get_executor(),
                  beast::bind_front_handler(&Session::read_header, shared_from_this()));
    return;
  }
  phase_ = Phase::handshaking;
  // The handshake counts against the caps like any connection, and a peer that stalls in it is
  // dropped at the handshake timeout.
  wait_for_request(state_->options.handshake_timeout);
  net::dispatch(lowest().get_executor(), [self = shared_from_this()] {
    beast::async_detect_ssl(self->lowest(), self->buffer_,
                            beast::bind_front_handler(&Session::on_detected, self));
  });
}

void Session::on_detected(beast::error_code ec, bool tls) {
  if (ec || stop_requested_) return close();
  if (!tls) return refuse_plaintext();
  std::get<TlsStream>(stream_).async_handshake(
      ssl::stream_base::server, buffer_.data(),
      beast::bind_front_handler(&Session::on_handshake, shared_from_this()));
}

// A plaintext request on a TLS port: answered once in plaintext, so the caller learns what went
// wrong, and the connection ends; nothing of it reaches TLS or the handler.
void Session::refuse_plaintext() {
  phase_ = Phase::answering;
  keep_alive_ = false;
  const auto response = error_response(Error(ErrorCode::TLS_PLAINTEXT_REQUEST));
  write_head(response, false, false, head_);
  body_ = response.body;
  buffer_.consume(buffer_.size());
  lowest().expires_after(state_->options.read_timeout);
  const std::array<net::const_buffer, 2> buffers{net::buffer(head_), net::buffer(body_)};
  net::async_write(lowest(), buffers,
                   [self = shared_from_this()](beast::error_code ec, std::size_t) {
                     if (ec) return self->close();
                     self->linger();  // on the bare TCP stream: no TLS was ever spoken
                   });
}

void Session::on_handshake(beast::error_code ec, std::size_t used) {
  if (ec || stop_requested_) return close();
  buffer_.consume(used);
  tls_up_ = true;
  SSL* ssl = std::get<TlsStream>(stream_).native_handle();
  request_.tls_session_resumed = SSL_session_reused(ssl) == 1;
  auto identity = client_identity(ssl);
  request_.client_certificate = std::move(identity.certificate);
  refusal_ = identity.refusal;
  read_header();
}

void Session::request_stop() {
  // A weak reference: a session with no pending operation must be free to go away now (the io
  // threads may already have run out of work and will never run this).
  net::post(lowest().get_executor(), [weak = weak_from_this()] {
    const auto self = weak.lock();
    if (!self) return;
    self->stop_requested_ = true;
    if (self->phase_ == Phase::handshaking || self->phase_ == Phase::reading ||
        self->phase_ == Phase::lingering) {
      self->lowest().cancel();
    }
  });
}

void Session::evict() {
  if (!evictable_.exchange(false)) return;
  net::post(lowest().get_executor(), [weak = weak_from_this()] {
    const auto self = weak.lock();
    if (self && self->waiting_) self->close();
  });
}

void Session::wait_for_request(std::chrono::steady_clock::duration timeout) {
  lowest().expires_after(timeout);
  waiting_ = true;
  waiting_since_.store(std::chrono::steady_clock::now().time_since_epoch().count());
  evictable_.store(!authenticated_);
}

void Session::read_header() {
  if (stop_requested_ || state_->stopping.load()) return close();
  phase_ = Phase::reading;
  const auto& options = state_->options;
  parser_.emplace(request_, options.max_body_bytes, options.max_header_bytes,
                  options.max_body_bytes_for);
  // Covers header and body together.
  wait_for_request(authenticated_
                       ? options.read_timeout
                       : std::min<std::chrono::steady_clock::duration>(
                             options.read_timeout, options.unauthenticated_idle_timeout));
  with_stream([this](auto& stream) {
    bhttp::async_read_header(stream, buffer_, *parser_,
                             beast::bind_front_handler(&Session::on_header, shared_from_this()));
  });
}

void Session::on_header(beast::error_code ec, std::size_t) {
  waiting_ = false;
  evictable_.store(false);
  if (ec) return on_read_failed(ec);
  if (refusal_) return refuse(*refusal_);
  if (const auto refusal = refused_before_body()) return refuse(*refusal);
  if (parser_->is_done()) return answer();
  if (parser_->expects_continue()) {
    with_stream([this](auto& stream) {
      net::async_write(stream, net::buffer(kContinue.data(), kContinue.size()),
                       beast::bind_front_handler(&Session::on_continue_sent, shared_from_this()));
    });
    return;
  }
  read_body();
}

std::optional<ErrorCode> Session::refused_before_body() {
  const auto& options = state_->options;
  if (!host_allowed(request_.header("Host"), options.host, options.allowed_hosts)) {
    return ErrorCode::HTTP_HOST_NOT_ALLOWED;
  }
  if (parser_->is_done()) return std::nullopt;
  const auto length = parser_->content_length();
  if (length && *length <= options.admit_before_bytes) return std::nullopt;
  if (!admitted()) return ErrorCode::UNAUTHORIZED;
  // A body of unknown length (chunked) may come to its target's limit.
  const auto bytes = static_cast<std::size_t>(length ? *length : parser_->body_bytes_limit());
  if (!reserve_body(state_->body_bytes_held, options.max_body_bytes_held, bytes)) {
    return ErrorCode::HTTP_BODY_BUDGET_EXHAUSTED;
  }
  body_reserved_ = bytes;
  // The wait for the rest may have been an unauthenticated connection's short one.
  lowest().expires_after(options.read_timeout);
  return std::nullopt;
}

bool Session::admitted() {
  const auto& admits = state_->options.admits;
  const bool admitted = !admits || admits(request_);
  authenticated_ = authenticated_ || admitted;
  return admitted;
}

void Session::return_body_budget() {
  if (body_reserved_ == 0) return;
  state_->body_bytes_held.fetch_sub(body_reserved_);
  body_reserved_ = 0;
  std::string().swap(request_.body);  // an idle connection must not keep the body's capacity
}

void Session::on_continue_sent(beast::error_code ec, std::size_t) {
  if (ec) return close();
  read_body();
}

void Session::read_body() {
  with_stream([this](auto& stream) {
    bhttp::async_read(stream, buffer_, *parser_,
                      beast::bind_front_handler(&Session::on_body, shared_from_this()));
  });
}

void Session::on_body(beast::error_code ec, std::size_t) {
  if (ec) return on_read_failed(ec);
  answer();
}

void Session::on_read_failed(beast::error_code ec) {
  if (ec == bhttp::error::body_limit) return refuse(ErrorCode::REQUEST_SIZE_INVALID);
  if (ec == bhttp::error::header_limit) return refuse(ErrorCode::HTTP_HEADER_TOO_LARGE);
  // The peer closed between requests, went idle past the timeout, or stop() cancelled the read.
  if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout ||
      ec == net::error::operation_aborted) {
    return close();
  }
  // The seed reads Content-Length after its bearer check: a caller the server does not admit
  // (with the headers before the bad one) still gets 401. The handler never sees the request.
  if (ec == bhttp::error::bad_content_length) {
    const auto& options = state_->options;
    return refuse(options.admits && !options.admits(request_) ? ErrorCode::UNAUTHORIZED
                                                              : ErrorCode::CONTENT_LENGTH_INVALID);
  }
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category()) {
    return refuse(ErrorCode::REQUEST_INVALID);
  }
  close();  // a socket error: nobody to answer
}

void Session::answer() {
  // A connection is known to be authenticated only once one of its requests is admitted.
  if (!authenticated_) admitted();
  phase_ = Phase::answering;
  state_->in_flight.fetch_add(1);
  counted_ = true;
  keep_alive_ = parser_->keep_alive();
  auto response = dispatch(state_->handler, request_, state_->options.on_unhandled_exception);
  if (!response.later) return send(std::move(response));
  // The answer comes from another thread. Meanwhile the connection is watched, so a peer that
  // goes away is seen (Later::abandoned) before the answer acts for it.
  const auto later = std::move(response.later);
  awaiting_ = true;
  watching_ = true;
  lowest().expires_never();  // the wait is the handler's to bound
  with_stream([this, &later](auto& stream) {
    stream.async_read_some(
        buffer_.prepare(kWatchChunk),
        // Weak: the handler's Later alone decides its life (a dropped one answers 500).
        [self = shared_from_this(), weak = std::weak_ptr<Later>(later)](beast::error_code ec,
                                                                        std::size_t bytes) {
          self->watching_ = false;
          self->buffer_.commit(bytes);  // a pipelined request waits in the buffer for its turn
          const auto watched = weak.lock();
          if (watched && self->awaiting_ && ec && ec != net::error::operation_aborted) {
            watched->abandon();
          }
          if (self->after_watch_) {
            self->after_watch_ = false;
            self->after_answer();
          }
        });
  });
  later->on_complete([self = shared_from_this()](Response answer) {
    if (answer.later || !is_sendable(answer)) {
      answer = error_response(Error(ErrorCode::INTERNAL_ERROR));
    }
    net::post(self->lowest().get_executor(), [self, answer = std::move(answer)]() mutable {
      self->awaiting_ = false;
      self->lowest().cancel();  // ends the watch, so that reading the next request may start
      self->send(std::move(answer));
    });
  });
}

void Session::refuse(ErrorCode code) {
  phase_ = Phase::answering;
  keep_alive_ = false;
  send(error_response(Error(code)));
}

void Session::send(Response response) {
  return_body_budget();  // the answer is made: the request's body is no longer needed
  // Decided now, on the strand: a stop requested before this point closes after this answer.
  keep_alive_ = keep_alive_ && !stop_requested_ && !state_->stopping.load();
  write_head(response, keep_alive_, parser_->version() == 10, head_);
  body_ = std::move(response.body);
  const bool omit_body = is_bodiless(response.status) || request_.method == "HEAD";
  if (tls_up_ && !omit_body) {
    // With Beast 1.74's TLS stream a write of head and body as two buffers completed after the
    // head when the answer was over 16 KiB (its flat_stream writes the head alone), and the
    // body never left; one buffer goes out whole.
    head_.append(body_);
    body_.clear();
  }
  const std::array<net::const_buffer, 2> buffers{
      net::buffer(head_), omit_body ? net::const_buffer{} : net::buffer(body_)};
  lowest().expires_after(state_->options.read_timeout);
  with_stream([this, &buffers](auto& stream) {
    net::async_write(stream, buffers,
                     beast::bind_front_handler(&Session::on_sent, shared_from_this()));
  });
}

void Session::on_sent(beast::error_code ec, std::size_t) {
  if (counted_) {
    state_->in_flight.fetch_sub(1);
    counted_ = false;
  }
  if (body_.size() >= kTrimAfterBodyBytes) {
    std::string().swap(body_);  // an idle keep-alive connection must not hold the last answer
    if (state_->trim_soon) state_->trim_soon();
  }
  if (ec) return close();
  // Two io threads may run the cancelled watch's completion after this write's (a strand keeps
  // handlers apart, not in the order their operations ended): two reads at once on one stream
  // would share its buffer, so the next one waits for the watch to end.
  if (watching_) {
    after_watch_ = true;
    return;
  }
  after_answer();
}

void Session::after_answer() {
  if (keep_alive_) return read_header();
  linger();
}

void Session::linger() {
  phase_ = Phase::lingering;
  if (stop_requested_) return close();
  const auto wait = std::min<std::chrono::milliseconds>(state_->options.read_timeout, kMaxLinger);
  if (tls_up_) {
    // TLS ends with close_notify each way; a peer that never answers it is closed at the wait.
    lowest().expires_after(wait);
    std::get<TlsStream>(stream_).async_shutdown(
        [self = shared_from_this()](beast::error_code) { self->close(); });
    return;
  }
  beast::error_code ec;
  lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return close();
  buffer_.consume(buffer_.size());
  lingered_bytes_ = 0;
  lowest().expires_after(wait);
  lowest().async_read_some(buffer_.prepare(kLingerChunk),
                           beast::bind_front_handler(&Session::on_linger, shared_from_this()));
}

void Session::on_linger(beast::error_code ec, std::size_t bytes) {
  lingered_bytes_ += bytes;
  if (ec || lingered_bytes_ > kMaxLingerBytes) return close();
  lowest().async_read_some(buffer_.prepare(kLingerChunk),
                           beast::bind_front_handler(&Session::on_linger, shared_from_this()));
}

void Session::close() {
  phase_ = Phase::closed;
  beast::error_code ec;
  lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
  lowest().close();
}

}  // namespace aios::http::detail
