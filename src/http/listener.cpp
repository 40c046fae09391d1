// The accept loop.
#include "http/listener.hpp"

#include <array>
#include <chrono>
#include <string>

#include "http/response.hpp"
#include "http/session.hpp"

namespace aios::http::detail {
namespace {

// A connection past a limit gets the 503 in one best-effort write, never a session: a flood
// must not make the server wait on the peer.
void refuse_connection(tcp::socket& socket) {
  const auto response = error_response(Error(ErrorCode::HTTP_CONNECTION_LIMIT));
  std::string head;
  write_head(response, false, false, head);
  beast::error_code ignored;
  socket.non_blocking(true, ignored);
  const std::array<net::const_buffer, 2> buffers{net::buffer(head), net::buffer(response.body)};
  socket.write_some(buffers, ignored);
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

// Under state.mutex: closes the unauthenticated connection (of `peer`, when given) that has
// waited longest for a request, to make room for a new one. False when there is none.
bool evict_one(ServerState& state, const std::string* peer) {
  Session* oldest = nullptr;
  for (Session* session : state.sessions) {
    if (!session->evictable() || (peer != nullptr && session->peer() != *peer)) continue;
    if (oldest == nullptr || session->waiting_since() < oldest->waiting_since()) oldest = session;
  }
  if (oldest == nullptr) return false;
  oldest->evict();
  return true;
}

}  // namespace

Listener::Listener(net::io_context& io, const tcp::endpoint& endpoint,
                   std::shared_ptr<ServerState> state)
    : io_(io),
      acceptor_(net::make_strand(io)),
      backoff_(acceptor_.get_executor()),
      state_(std::move(state)) {
  const auto fail = [&](const char* step, const beast::error_code& ec) {
    throw Error(ErrorCode::HTTP_BIND_FAILED,
                std::string(step) + " " + endpoint.address().to_string() + ":" +
                    std::to_string(endpoint.port()) + ": " + ec.message());
  };
  beast::error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) fail("open", ec);
  // Lets a restarted daemon rebind while old connections sit in TIME_WAIT. On Linux it does
  // not allow two listeners on one port, so "port in use" still fails below.
  acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (ec) fail("setsockopt", ec);
  acceptor_.bind(endpoint, ec);
  if (ec) fail("bind", ec);
  acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) fail("listen", ec);
  port_ = acceptor_.local_endpoint(ec).port();
  if (ec) fail("getsockname", ec);
}

void Listener::start() {
  net::dispatch(acceptor_.get_executor(),
                beast::bind_front_handler(&Listener::accept, shared_from_this()));
}

void Listener::stop() {
  net::post(acceptor_.get_executor(), [self = shared_from_this()] {
    beast::error_code ignored;
    self->acceptor_.close(ignored);
    self->backoff_.cancel();
  });
}

void Listener::accept() {
  if (!acceptor_.is_open()) return;
  acceptor_.async_accept(net::make_strand(io_),
                         beast::bind_front_handler(&Listener::on_accept, shared_from_this()));
}

void Listener::on_accept(beast::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
  if (ec) {
    // Out of descriptors or memory: back off instead of spinning on the error.
    backoff_.expires_after(std::chrono::milliseconds(50));
    backoff_.async_wait(beast::bind_front_handler(&Listener::on_backoff, shared_from_this()));
    return;
  }
  beast::error_code ignored;
  std::string peer = socket.remote_endpoint(ignored).address().to_string();
  std::shared_ptr<Session> session;
  bool over_limit = false;
  {
    const std::lock_guard lock(state_->mutex);
    if (!state_->stopping.load()) {
      const auto& options = state_->options;
      const auto from_peer = state_->per_peer.find(peer);
      const bool peer_full = from_peer != state_->per_peer.end() &&
                             from_peer->second >= options.max_connections_per_peer;
      const bool full = state_->sessions.size() >= options.max_connections;
      // The evicted connection leaves once its strand runs; until then the bound is passed by
      // the connections being evicted, each already taken out of the candidates.
      over_limit = (peer_full || full) &&
                   !(options.admits && evict_one(*state_, peer_full ? &peer : nullptr));
      if (!over_limit) {
        ++state_->per_peer[peer];
        session = std::make_shared<Session>(std::move(socket), state_, std::move(peer),
                                            options.tls ? options.tls->impl().current() : nullptr);
        state_->sessions.insert(session.get());
      }
    }
  }
  if (session) {
    session->start();
  } else if (over_limit) {
    refuse_connection(socket);
  }  // otherwise (stopping) `socket` closes here
  accept();
}

void Listener::on_backoff(beast::error_code ec) {
  if (ec) return;
  accept();
}

}  // namespace aios::http::detail
