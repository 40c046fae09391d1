// Server: address checks, io threads, and the stop/drain sequence.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "aios/http.hpp"
#include "http/beast.hpp"
#include "http/listener.hpp"
#include "http/server_state.hpp"
#include "http/session.hpp"

namespace aios::http {

namespace beast = detail::beast;
namespace net = detail::net;
using detail::tcp;

struct Server::Impl {
  enum class Phase { created, running, stopped };

  Impl(ServerOptions options, Handler handler)
      : state(std::make_shared<detail::ServerState>(std::move(options), std::move(handler))),
        io(static_cast<int>(std::max(1u, state->options.threads))) {
    state->trim_soon = [this] { trim_soon(); };
  }

  // A large answer's pages stay in the malloc arena of the io thread that built it. They go
  // back to the OS at once, unless the last trim was under kTrimInterval ago; then when that
  // interval ends. A walk over every arena per answer cost the batch endpoints about a tenth of
  // their CPU (madvise's TLB flushes, then the next batch's page faults), while an occasional
  // large answer (a listing every half second) must not leave its pages behind until the next.
  // Sessions call it only from io threads, which stop() joins.
  void trim_soon() {
    if (trim_armed.exchange(true)) return;
    net::post(io, [this] {
      trim_timer.expires_at(last_trim + kTrimInterval);  // at once when that is past
      trim_timer.async_wait([this](beast::error_code ec) {
        if (!ec) {
          malloc_trim(0);
          last_trim = std::chrono::steady_clock::now();
        }
        trim_armed.store(false);
      });
    });
  }

  static constexpr auto kTrimInterval = std::chrono::milliseconds(200);
  std::shared_ptr<detail::ServerState> state;
  net::io_context io;
  net::steady_timer trim_timer{io};  // destroyed before io
  std::atomic<bool> trim_armed{false};
  std::chrono::steady_clock::time_point last_trim;  // written by the one armed timer's handler
  std::vector<std::shared_ptr<detail::Listener>> listeners;  // one per host, on one port
  std::vector<std::thread> threads;
  Phase phase = Phase::created;
};

namespace {

net::ip::address resolve_host(const std::string& host, const ServerOptions& options) {
  if (host == "localhost") return net::ip::address_v4::loopback();
  beast::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  if (ec) throw Error(ErrorCode::HTTP_BIND_FAILED, "host is not an IP address: " + host);
  // Bearer tokens cross the network only inside TLS.
  if (!address.is_loopback() && !options.tls) {
    throw Error(ErrorCode::HTTP_PLAINTEXT_NOT_LOOPBACK,
                "refusing to listen on " + host + " without TLS");
  }
  return address;
}

// "a,b" -> {a, b}: one listener per address.
std::vector<std::string> hosts_of(const std::string& hosts) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto comma = hosts.find(',', start);
    out.push_back(hosts.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

void run_io(net::io_context& io) {
  // Handlers catch what they can; anything escaping (allocation failure in Beast) must not end
  // the thread while sessions still need it.
  for (;;) {
    try {
      io.run();
      return;
    } catch (...) {
    }
  }
}

}  // namespace

Server::Server(ServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

Server::~Server() {
  stop();
}

void Server::start() {
  if (impl_->phase != Impl::Phase::created) {
    throw Error(ErrorCode::INTERNAL_ERROR, "http::Server::start called twice");
  }
  const auto& options = impl_->state->options;
  std::vector<net::ip::address> addresses;
  for (const auto& host : hosts_of(options.host)) addresses.push_back(resolve_host(host, options));
  // Every address on the port the first one got (its own ephemeral one when the port is 0).
  auto port = options.port;
  for (const auto& address : addresses) {
    auto listener =
        std::make_shared<detail::Listener>(impl_->io, tcp::endpoint(address, port), impl_->state);
    port = listener->port();
    impl_->listeners.push_back(std::move(listener));
  }
  for (const auto& listener : impl_->listeners) listener->start();
  impl_->phase = Impl::Phase::running;
  const unsigned count = std::max(1u, options.threads);
  impl_->threads.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    impl_->threads.emplace_back([io = &impl_->io] { run_io(*io); });
  }
}

std::uint16_t Server::port() const {
  return impl_->listeners.empty() ? 0 : impl_->listeners.front()->port();
}

void Server::stop() {
  if (impl_->phase != Impl::Phase::running) {
    impl_->phase = Impl::Phase::stopped;
    return;
  }
  impl_->phase = Impl::Phase::stopped;
  auto& state = *impl_->state;
  std::vector<std::shared_ptr<detail::Session>> open;
  {
    const std::lock_guard lock(state.mutex);
    state.stopping.store(true);
    for (auto* session : state.sessions) {
      if (auto alive = session->weak_from_this().lock()) open.push_back(std::move(alive));
    }
  }
  for (const auto& listener : impl_->listeners) listener->stop();
  for (const auto& session : open) session->request_stop();
  open.clear();  // the sessions' own operations keep them alive
  {
    std::unique_lock lock(state.mutex);
    state.drained.wait_for(lock, state.options.drain_timeout,
                           [&] { return state.sessions.empty(); });
  }
  impl_->io.stop();
  for (auto& thread : impl_->threads) thread.join();
  impl_->threads.clear();
}

std::size_t Server::in_flight() const {
  return impl_->state->in_flight.load();
}

std::size_t Server::connections() const {
  const std::lock_guard lock(impl_->state->mutex);
  return impl_->state->sessions.size();
}

}  // namespace aios::http
