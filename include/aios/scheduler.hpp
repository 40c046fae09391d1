#pragma once
// The task scheduler's assembly, as aios-task-scheduler runs it: one store, the task plane on
// it, the Task API and the governed Bridge each on its own loopback listener, and the lease
// sweeper, whose last successful sweep is the daemon's liveness. The main parses options,
// starts it, reports readiness and waits for a signal.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "aios/bridge.hpp"
#include "aios/environment.hpp"

namespace aios {

struct SchedulerOptions {
  std::filesystem::path db{"/var/lib/aios-agent-task/state.sqlite3"};
  std::string api_host = "127.0.0.1";
  std::uint16_t api_port = 18940;  // 0: any free port
  std::string bridge_host = "127.0.0.1";
  std::uint16_t bridge_port = 18892;  // 0: any free port
  BridgeOptions bridge;
  // Absolute executables verification commands may start: a task or plan whose verification
  // starts another is refused, and a stored one is not resolved.
  std::set<std::string> verification_executables{
      "/usr/bin/python3", "/usr/bin/pytest", "/usr/bin/make", "/usr/bin/cmake",
      "/usr/bin/ctest",   "/usr/bin/node",   "/usr/bin/npm",  "/usr/bin/true"};
  std::chrono::seconds lease{120};
  std::chrono::milliseconds sweep_interval{1000};
  // How often a replica checks that it holds the lead of governed commits, or tries to take it
  // (store::Leadership): a dead leader's lead moves on within about this long.
  std::chrono::milliseconds leader_check{1000};
  // Above zero: every waiting claim-next also retries this often, a safety net for a writer
  // that announces nothing (every transition of the suite announces itself, and the clock's
  // own openings, a cooldown or quarantine ending, wake their workers' waiters).
  std::chrono::milliseconds claim_recheck{0};
  unsigned threads = 4;  // HTTP io threads per listener; the store keeps one connection more
  // Set: both listeners speak TLS with these credentials (and may take network addresses; with
  // a client CA, every agent request needs its bound certificate). The main reloads them.
  std::shared_ptr<http::TlsServerCredentials> tls;
  // Host names both listeners answer besides loopback ones (http::ServerOptions::allowed_hosts).
  std::vector<std::string> allowed_hosts;
  // The owner's control token counts from peers that are not loopback too.
  bool remote_owner = false;
};

class Scheduler {
 public:
  // Opens (and migrates) the store and builds both services; `control_token` is the owner's.
  // Throws aios::Error: STORE_UNAVAILABLE, STORE_DURABILITY_UNAVAILABLE, ...
  // Lease time comes from the environment's clock (the store's one clock).
  Scheduler(const SchedulerOptions& options, std::string control_token,
            const Environment& environment);
  ~Scheduler();  // stop()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Binds both listeners and starts serving and sweeping. Throws aios::Error (HTTP_BIND_FAILED,
  // HTTP_PLAINTEXT_NOT_LOOPBACK).
  void start();
  // Drains in-flight requests on both listeners and stops sweeping. Idempotent.
  void stop();

  std::uint16_t api_port() const;
  std::uint16_t bridge_port() const;
  int schema_version() const;
  std::size_t in_flight() const;
  // The last sweep committed within `window`: the store still takes writes.
  bool sweeping_within(std::chrono::steady_clock::duration window) const;
  // This replica holds the lead of governed commits (always, on SQLite).
  bool leads() const;

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

}  // namespace aios
