// The per-connection read / answer / write loop.
#include "http/session.hpp"

#include <malloc.h>

#include <algorithm>
#include <chrono>

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

Session::Session(tcp::socket socket, std::shared_ptr<ServerState> state, std::string peer_address)
    : stream_(std::move(socket)), state_(std::move(state)), peer_(std::move(peer_address)) {
  beast::error_code ec;
  const auto peer = stream_.socket().remote_endpoint(ec);
  if (!ec) {
    request_.remote_address = peer.address().to_string();
    request_.remote_port = peer.port();
  }
  stream_.socket().set_option(tcp::no_delay(true), ec);  // best effort; answers are one write
}

Session::~Session() {
  if (counted_) state_->in_flight.fetch_sub(1);
  const std::lock_guard lock(state_->mutex);
  state_->sessions.erase(this);
  if (const auto peer = state_->per_peer.find(peer_);
      peer != state_->per_peer.end() && --peer->second == 0) {
    state_->per_peer.erase(peer);
  }
  state_->drained.notify_all();
}

void Session::start() {
  net::dispatch(stream_.get_executor(),
                beast::bind_front_handler(&Session::read_header, shared_from_this()));
}

void Session::request_stop() {
  // A weak reference: a session with no pending operation must be free to go away now (the io
  // threads may already have run out of work and will never run this).
  net::post(stream_.get_executor(), [weak = weak_from_this()] {
    const auto self = weak.lock();
    if (!self) return;
    self->stop_requested_ = true;
    if (self->phase_ == Phase::reading || self->phase_ == Phase::lingering) self->stream_.cancel();
  });
}

void Session::read_header() {
  if (stop_requested_ || state_->stopping.load()) return close();
  phase_ = Phase::reading;
  const auto& options = state_->options;
  parser_.emplace(request_, options.max_body_bytes, options.max_header_bytes);
  stream_.expires_after(options.read_timeout);  // covers header and body together
  bhttp::async_read_header(stream_, buffer_, *parser_,
                           beast::bind_front_handler(&Session::on_header, shared_from_this()));
}

void Session::on_header(beast::error_code ec, std::size_t) {
  if (ec) return on_read_failed(ec);
  if (parser_->is_done()) return answer();
  if (!admitted()) return refuse(ErrorCode::UNAUTHORIZED);
  if (parser_->expects_continue()) {
    net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                     beast::bind_front_handler(&Session::on_continue_sent, shared_from_this()));
    return;
  }
  read_body();
}

bool Session::admitted() const {
  const auto& options = state_->options;
  if (!options.admits) return true;
  const auto length = parser_->content_length();
  if (length && *length <= options.admit_before_bytes) return true;
  return options.admits(request_);
}

void Session::on_continue_sent(beast::error_code ec, std::size_t) {
  if (ec) return close();
  read_body();
}

void Session::read_body() {
  bhttp::async_read(stream_, buffer_, *parser_,
                    beast::bind_front_handler(&Session::on_body, shared_from_this()));
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
  stream_.expires_never();  // the wait is the handler's to bound
  stream_.async_read_some(
      buffer_.prepare(kWatchChunk),
      // Weak: the handler's Later alone decides its life (a dropped one answers 500).
      [self = shared_from_this(), weak = std::weak_ptr<Later>(later)](beast::error_code ec,
                                                                      std::size_t bytes) {
        self->buffer_.commit(bytes);  // a pipelined request waits in the buffer for its turn
        const auto watched = weak.lock();
        if (watched && self->awaiting_ && ec && ec != net::error::operation_aborted) {
          watched->abandon();
        }
      });
  later->on_complete([self = shared_from_this()](Response answer) {
    if (answer.later || !is_sendable(answer)) {
      answer = error_response(Error(ErrorCode::INTERNAL_ERROR));
    }
    net::post(self->stream_.get_executor(), [self, answer = std::move(answer)]() mutable {
      self->awaiting_ = false;
      self->stream_.cancel();  // ends the watch, so that reading the next request may start
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
  // Decided now, on the strand: a stop requested before this point closes after this answer.
  keep_alive_ = keep_alive_ && !stop_requested_ && !state_->stopping.load();
  write_head(response, keep_alive_, parser_->version() == 10, head_);
  body_ = std::move(response.body);
  const bool omit_body = is_bodiless(response.status) || request_.method == "HEAD";
  const std::array<net::const_buffer, 2> buffers{
      net::buffer(head_), omit_body ? net::const_buffer{} : net::buffer(body_)};
  stream_.expires_after(state_->options.read_timeout);
  net::async_write(stream_, buffers,
                   beast::bind_front_handler(&Session::on_sent, shared_from_this()));
}

void Session::on_sent(beast::error_code ec, std::size_t) {
  if (counted_) {
    state_->in_flight.fetch_sub(1);
    counted_ = false;
  }
  if (body_.size() >= kTrimAfterBodyBytes) {
    std::string().swap(body_);  // an idle keep-alive connection must not hold the last answer
    malloc_trim(0);
  }
  if (ec) return close();
  if (keep_alive_) return read_header();
  linger();
}

void Session::linger() {
  phase_ = Phase::lingering;
  if (stop_requested_) return close();
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return close();
  buffer_.consume(buffer_.size());
  lingered_bytes_ = 0;
  stream_.expires_after(
      std::min<std::chrono::milliseconds>(state_->options.read_timeout, kMaxLinger));
  stream_.async_read_some(buffer_.prepare(kLingerChunk),
                          beast::bind_front_handler(&Session::on_linger, shared_from_this()));
}

void Session::on_linger(beast::error_code ec, std::size_t bytes) {
  lingered_bytes_ += bytes;
  if (ec || lingered_bytes_ > kMaxLingerBytes) return close();
  stream_.async_read_some(buffer_.prepare(kLingerChunk),
                          beast::bind_front_handler(&Session::on_linger, shared_from_this()));
}

void Session::close() {
  phase_ = Phase::closed;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
}

}  // namespace aios::http::detail
