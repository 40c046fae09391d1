#include "aios/scheduler.hpp"

#include <atomic>
#include <optional>
#include <utility>

#include "aios/fleet.hpp"
#include "aios/http.hpp"
#include "aios/log.hpp"
#include "aios/store.hpp"
#include "aios/taskapi.hpp"

namespace aios {
namespace {

// A plan carries whole files; the envelope's own limit (16 MiB canonical) is the bound.
constexpr std::size_t kBridgeMaxBodyBytes = 17 * 1024 * 1024;

http::ServerOptions listener(const std::string& host, std::uint16_t port,
                             const SchedulerOptions& scheduler) {
  http::ServerOptions options;
  options.host = host;
  options.port = port;
  options.threads = scheduler.threads;
  options.tls = scheduler.tls;
  options.allowed_hosts = scheduler.allowed_hosts;
  options.on_unhandled_exception = [](std::string_view what) {
    log::error("HANDLER_EXCEPTION", {{"what", what}});
  };
  return options;
}

}  // namespace

struct Scheduler::Parts {
  Parts(const SchedulerOptions& options, std::string control_token, const Environment& environment)
      : store(store::open_store({.url = options.db.string(),
                                 .connections = static_cast<std::size_t>(options.threads) + 1},
                                environment.clock)),
        resolver(options.verification_executables),
        plane(*store, environment, {.lease = options.lease}, &resolver),
        bridge(*store, plane, resolver, environment, {control_token, options.remote_owner},
               options.bridge),
        api(plane, {std::move(control_token), options.remote_owner}, metrics,
            options.claim_recheck),
        api_server(api_options(options),
                   [this](const http::Request& request) { return api.handle(request); }),
        bridge_server(bridge_options(options),
                      [this](const http::Request& request) { return bridge.handle(request); }),
        sweep_interval(options.sweep_interval),
        leader_check(options.leader_check) {
    metrics.set_store(store.get());
    metrics.set_leader(false);
    bridge.lead_by([this] { return metrics.leader(); });
  }

  http::ServerOptions api_options(const SchedulerOptions& options) {
    auto server = listener(options.api_host, options.api_port, options);
    server.admits = [this](const http::Request& request) { return api.admits(request); };
    server.max_body_bytes_for = &TaskApi::body_limit_for;
    return server;
  }
  http::ServerOptions bridge_options(const SchedulerOptions& options) {
    auto server = listener(options.bridge_host, options.bridge_port, options);
    server.max_body_bytes = kBridgeMaxBodyBytes;
    server.admits = [this](const http::Request& request) { return bridge.admits(request); };
    return server;
  }

  // Returns leases whose holders went silent to the queue.
  void sweep() {
    try {
      const auto swept = plane.sweep_expired_leases();
      metrics.count_expired(swept);
      if (swept > 0) log::info("LEASES_EXPIRED", {{"count", swept}});
      last_sweep = std::chrono::steady_clock::now();
    } catch (const Error& error) {
      log::warn("LEASE_SWEEP_FAILED", {{"error", error.code()}});
    }
  }

  // Takes or keeps the lead; logs each change of hands.
  void check_lead() {
    const bool now = leadership->refresh();
    if (metrics.leader() == now) return;
    if (now) bridge.took_lead();
    metrics.set_leader(now);
    log::info(now ? "LEAD_ACQUIRED" : "LEAD_LOST",
              {{"role", "governed-commits"}, {"store", store->backend()}});
  }

  std::unique_ptr<store::Store> store;
  resolution::Resolver resolver;  // the claims' and the Bridge's
  TaskPlane plane;
  TaskApiMetrics metrics;
  Bridge bridge;
  TaskApi api;
  http::Server api_server;
  http::Server bridge_server;
  std::chrono::milliseconds sweep_interval;
  std::atomic<std::chrono::steady_clock::time_point> last_sweep{std::chrono::steady_clock::now()};
  std::optional<PeriodicThread> sweeper;
  std::chrono::milliseconds leader_check;
  std::unique_ptr<store::Leadership> leadership;
  std::optional<PeriodicThread> lead_checker;
  std::unique_ptr<store::Subscription> listening;  // other replicas' queue changes
};

Scheduler::Scheduler(const SchedulerOptions& options, std::string control_token,
                     const Environment& environment)
    : parts_(std::make_unique<Parts>(options, std::move(control_token), environment)) {}

Scheduler::~Scheduler() {
  stop();
}

void Scheduler::start() {
  // The lead is settled before the Bridge serves, so a scheduler alone on its store never
  // answers a first commit BRIDGE_NOT_LEADER.
  parts_->leadership = parts_->store->leadership();
  parts_->check_lead();
  parts_->api_server.start();
  parts_->bridge_server.start();
  parts_->sweeper.emplace(parts_->sweep_interval, [this] { parts_->sweep(); });
  parts_->lead_checker.emplace(parts_->leader_check, [this] { parts_->check_lead(); });
  parts_->listening = parts_->store->listen_queue_changes([this] { parts_->api.wake_waiters(); });
}

void Scheduler::stop() {
  parts_->api.stop_waiting();  // long polls answered, so the drain does not wait them out
  parts_->api_server.stop();
  parts_->bridge_server.stop();
  parts_->sweeper.reset();
  parts_->listening.reset();
  parts_->lead_checker.reset();
  parts_->leadership.reset();  // its session ends: the lead is free for another replica at once
  parts_->metrics.set_leader(false);
}

std::uint16_t Scheduler::api_port() const {
  return parts_->api_server.port();
}
std::uint16_t Scheduler::bridge_port() const {
  return parts_->bridge_server.port();
}
int Scheduler::schema_version() const {
  return parts_->store->schema_version();
}
std::size_t Scheduler::in_flight() const {
  return parts_->api_server.in_flight() + parts_->bridge_server.in_flight();
}

bool Scheduler::leads() const {
  return parts_->metrics.leader();
}

bool Scheduler::sweeping_within(std::chrono::steady_clock::duration window) const {
  return std::chrono::steady_clock::now() - parts_->last_sweep.load() < window;
}

}  // namespace aios
