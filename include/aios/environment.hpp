#pragma once
// Every side effect the library has on the world, as one bundle that a daemon's main builds once
// and passes down: the clock (lease time and every recorded time), the process spawner (agents,
// backends, verification commands), the HTTP transport (the worker's calls to the Task API and
// the Bridge, the rebind service's to the Bridge), randomness (tokens, lease tokens, ids) and
// the crash-test fault plan. Library code never builds the real ones (system_environment() is
// for mains); unit tests give recording fakes (tests/support/recording.hpp) and assert the
// exact argv, environment and requests without spawning a child or opening a socket.
//
// Files are not in the bundle: the library opens every file beneath a directory its caller
// names (files.hpp), so a test gives it a temporary directory rather than a fake.

#include <atomic>
#include <string>
#include <string_view>

#include "aios/http.hpp"
#include "aios/process.hpp"
#include "aios/sys.hpp"

namespace aios {

// Crash-test fault points. A daemon started with AIOS_FAULT_KILL_AT=<phase> kills itself with
// SIGKILL the first time it reaches point("<phase>"), right after logging FAULT_INJECTED_KILL,
// so a crash test hits an exact point between two durable steps instead of racing a signal
// against it. AIOS_FAULT_PAUSE_AT=<phase>:<ms> instead holds the calling thread there for <ms>
// (at most 60,000) the first time, after logging FAULT_INJECTED_PAUSE, so a test can act inside
// a window that is otherwise microseconds wide (a lease lost while the Bridge moves a ref).
// Unarmed, as in every deployment, a point is one comparison with an empty string; the code is
// the same in every build, so the crash tests exercise the binaries that ship. (The worker's
// phases use AIOS_WORKER_FAULT_KILL_AFTER_PHASE, which names its checkpoint phases; this plan
// names the other daemons' commit points.)
//
// Phases: bridge_ref_moved (the branch moved, before the transaction that records it APPLIED),
// scheduler_claim_committed, scheduler_result_committed (after the transaction, before the
// answer), rebind_resolved (after the Bridge answered, before the transaction),
// rebind_committed (after the transaction, before the answer), executor_request_accepted (the
// request read, before the start marker), executor_start_marked (after the marker, before the
// spawn), executor_outcome_written (after the result file, before serve mode removes the
// request).
class FaultPlan {
 public:
  FaultPlan() = default;  // nothing armed
  FaultPlan(std::string kill_at, std::string pause_at)
      : kill_at_(std::move(kill_at)), pause_at_(std::move(pause_at)) {}
  // AIOS_FAULT_KILL_AT and AIOS_FAULT_PAUSE_AT, read once.
  static FaultPlan from_process_environment();
  virtual ~FaultPlan() = default;
  FaultPlan(const FaultPlan&) = delete;
  FaultPlan& operator=(const FaultPlan&) = delete;

  virtual void point(std::string_view phase) const;

 private:
  std::string kill_at_;
  std::string pause_at_;
  mutable std::atomic<bool> paused_{false};
};

struct Environment {
  const Clock& clock;
  process::Spawner& spawner;
  http::Transport& http;
  Random& random;
  const FaultPlan& faults;
};

// The real world, one per process: SystemClock, process::SystemSpawner, http::SystemTransport,
// OpenSSL's CSPRNG and FaultPlan::from_process_environment(). Thread-safe. For mains only.
const Environment& system_environment();

}  // namespace aios
