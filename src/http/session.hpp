#pragma once
// One accepted connection: read a request, call the handler, write the response, repeat while
// keep-alive holds. Plumbing only; what to answer is decided by detail::dispatch.
//
// On a TLS listener the connection first shows it speaks TLS (a plaintext request is answered
// TLS_PLAINTEXT_REQUEST in plaintext and closed), then completes the handshake within the
// handshake timeout; a client certificate that failed verification has every request on the
// connection refused with its code before the handler runs.
//
// Every member function runs on the session's strand. A session owns itself through the
// shared_ptr its pending operation holds, and erases itself from ServerState::sessions when
// destroyed.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "aios/http.hpp"
#include "http/beast.hpp"
#include "http/request_parser.hpp"
#include "http/server_state.hpp"
#include "http/tls.hpp"

namespace aios::http::detail {

class Session : public std::enable_shared_from_this<Session> {
 public:
  // The caller has registered the session in state->sessions and counted it in
  // state->per_peer[peer]. With `tls` (the listener's context now), the connection speaks TLS.
  Session(tcp::socket socket, std::shared_ptr<ServerState> state, std::string peer,
          std::shared_ptr<ssl::context> tls);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Starts reading the first request.
  void start();

  // Asks the session to end: an idle (or still reading) connection closes now, a request
  // already read is answered first with "Connection: close". Safe from any thread.
  void request_stop();

  // Under state->mutex, from the listener: whether this connection is unauthenticated and
  // waiting for a request (or its TLS handshake), and since when (steady clock ticks).
  bool evictable() const { return evictable_.load(); }
  std::int64_t waiting_since() const { return waiting_since_.load(); }
  const std::string& peer() const { return peer_; }
  // Closes the connection if it is still waiting unauthenticated (it is taken out of the
  // candidates at once). Safe from any thread.
  void evict();

 private:
  enum class Phase { handshaking, reading, answering, lingering, closed };
  using TlsStream = beast::ssl_stream<beast::tcp_stream>;

  // The TCP stream under either kind of connection (timeouts, cancel, close).
  beast::tcp_stream& lowest();
  // Calls `step` with the stream requests are read from and answers written to.
  template <typename Step>
  void with_stream(Step&& step);

  void on_detected(beast::error_code ec, bool tls);
  void refuse_plaintext();
  void on_handshake(beast::error_code ec, std::size_t used);
  void read_header();
  void on_header(beast::error_code ec, std::size_t bytes);
  void on_continue_sent(beast::error_code ec, std::size_t bytes);
  bool admitted();
  // The Host check and the body budget, once the headers are read: the refusal, if any.
  std::optional<ErrorCode> refused_before_body();
  void wait_for_request(std::chrono::steady_clock::duration timeout);
  void return_body_budget();
  void read_body();
  void on_body(beast::error_code ec, std::size_t bytes);
  void on_read_failed(beast::error_code ec);
  void answer();
  void send(Response response);
  void on_sent(beast::error_code ec, std::size_t bytes);
  void after_answer();
  void refuse(ErrorCode code);
  void linger();
  void on_linger(beast::error_code ec, std::size_t bytes);
  void close();

  std::shared_ptr<ssl::context> tls_;  // kept while the connection uses it
  std::variant<beast::tcp_stream, TlsStream> stream_;
  std::shared_ptr<ServerState> state_;
  const std::string peer_;  // the key of this connection in state_->per_peer
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  Request request_;
  std::string head_;
  std::string body_;  // the response body being written
  Phase phase_ = Phase::reading;
  bool keep_alive_ = false;
  bool counted_ = false;  // this request is counted in state_->in_flight
  bool stop_requested_ = false;
  bool awaiting_ = false;  // a later answer is awaited and the connection watched
  // The watch's read has not completed yet (a cancelled read completes later, and its handler
  // may run after the answer's write): no other read may start on the stream before it has.
  bool watching_ = false;
  bool after_watch_ = false;  // the answer is out; read on (or linger) once the watch is over
  std::size_t lingered_bytes_ = 0;
  // The answer every request on this connection gets: its client certificate failed.
  std::optional<ErrorCode> refusal_;
  bool tls_up_ = false;  // the TLS handshake completed
  // A request on this connection was admitted (ServerOptions::admits), or the server admits
  // every request: the connection is never evicted nor on the short idle timeout.
  bool authenticated_ = false;
  std::size_t body_reserved_ = 0;  // this request's share of state_->body_bytes_held
  bool waiting_ = false;           // for a request or the TLS handshake (evict() closes only then)
  std::atomic<bool> evictable_{false};
  std::atomic<std::int64_t> waiting_since_{0};
};

}  // namespace aios::http::detail
