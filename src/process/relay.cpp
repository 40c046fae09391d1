// Boost.Asio on one thread per sandboxed run that has destinations: accept, resolve, connect,
// then copy both ways until either side closes.
#include "process/relay.hpp"

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <thread>

namespace aios::process {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// A run's agent needs a handful of connections to its provider; more at once is abuse.
constexpr int kMaxConnections = 64;

struct Pair : std::enable_shared_from_this<Pair> {
  Pair(tcp::socket accepted, net::io_context& io, int& counter)
      : inside(std::move(accepted)), outside(io), resolver(io), open(counter) {
    ++open;
  }
  ~Pair() { --open; }
  Pair(const Pair&) = delete;
  Pair& operator=(const Pair&) = delete;

  void start(const Destination& destination) {
    resolver.async_resolve(destination.host, std::to_string(destination.port),
                           [self = shared_from_this()](auto error, auto endpoints) {
                             if (error) return self->close();
                             net::async_connect(
                                 self->outside, endpoints, [self](auto connect_error, const auto&) {
                                   if (connect_error) return self->close();
                                   self->pump(self->inside, self->outside, self->up);
                                   self->pump(self->outside, self->inside, self->down);
                                 });
                           });
  }

  void pump(tcp::socket& from, tcp::socket& to, std::array<char, 16384>& buffer) {
    from.async_read_some(net::buffer(buffer), [self = shared_from_this(), &from, &to, &buffer](
                                                  auto error, std::size_t n) {
      if (error) {
        // One side finished: let the other see the end, and stop when both have.
        boost::system::error_code ignored;
        to.shutdown(tcp::socket::shutdown_send, ignored);
        return;
      }
      net::async_write(to, net::buffer(buffer.data(), n),
                       [self, &from, &to, &buffer](auto write_error, std::size_t) {
                         if (write_error) return self->close();
                         self->pump(from, to, buffer);
                       });
    });
  }

  void close() {
    boost::system::error_code ignored;
    inside.close(ignored);
    outside.close(ignored);
  }

  tcp::socket inside;
  tcp::socket outside;
  tcp::resolver resolver;
  std::array<char, 16384> up{};
  std::array<char, 16384> down{};
  int& open;
};

}  // namespace

struct Relay::State {
  // Before io: the connections io still holds when it is destroyed count themselves out here.
  int open = 0;
  net::io_context io{1};
  std::vector<std::pair<std::unique_ptr<tcp::acceptor>, Destination>> acceptors;
  std::thread thread;

  void accept(tcp::acceptor& acceptor, const Destination& destination) {
    acceptor.async_accept([this, &acceptor, &destination](auto error, tcp::socket socket) {
      if (error == net::error::operation_aborted || !acceptor.is_open()) return;
      if (!error && open < kMaxConnections) {
        std::make_shared<Pair>(std::move(socket), io, open)->start(destination);
      }
      accept(acceptor, destination);
    });
  }
};

Relay::Relay(std::vector<std::pair<Fd, Destination>> listeners)
    : state_(std::make_unique<State>()) {
  for (auto& [fd, destination] : listeners) {
    auto acceptor = std::make_unique<tcp::acceptor>(state_->io);
    boost::system::error_code error;
    acceptor->assign(tcp::v4(), fd.get(), error);
    if (error) continue;
    // The acceptor owns the descriptor now.
    (void)fd.release();
    state_->acceptors.emplace_back(std::move(acceptor), destination);
  }
  for (auto& [acceptor, destination] : state_->acceptors) state_->accept(*acceptor, destination);
  state_->thread = std::thread([state = state_.get()] { state->io.run(); });
}

Relay::~Relay() {
  state_->io.stop();
  state_->thread.join();
}

}  // namespace aios::process
