#pragma once
// Accepts connections and hands each to a new Session until stopped. Plumbing only.

#include <memory>

#include "http/beast.hpp"
#include "http/server_state.hpp"

namespace aios::http::detail {

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // Opens, binds and listens on `endpoint`. Throws aios::Error HTTP_BIND_FAILED.
  Listener(net::io_context& io, const tcp::endpoint& endpoint, std::shared_ptr<ServerState> state);

  // The bound port.
  std::uint16_t port() const { return port_; }

  // Starts the accept loop on the listener's strand.
  void start();

  // Closes the acceptor; no connection is accepted after this runs. Safe from any thread.
  void stop();

 private:
  void accept();
  void on_accept(beast::error_code ec, tcp::socket socket);
  void on_backoff(beast::error_code ec);

  net::io_context& io_;
  tcp::acceptor acceptor_;
  net::steady_timer backoff_;
  std::shared_ptr<ServerState> state_;
  std::uint16_t port_ = 0;
};

}  // namespace aios::http::detail
