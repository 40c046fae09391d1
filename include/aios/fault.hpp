#pragma once
// Crash-test fault points. A daemon started with AIOS_FAULT_KILL_AT=<phase> kills itself with
// SIGKILL the first time it reaches fault_point("<phase>"), right after logging
// FAULT_INJECTED_KILL, so a crash test hits an exact point between two durable steps instead of
// racing a signal against it. Unset, as in every deployment, a fault point is one comparison
// with an empty string. The code is the same in every build: the crash tests exercise the
// binaries that ship. (The worker's phases use AIOS_WORKER_FAULT_KILL_AFTER_PHASE, which names
// its checkpoint phases; this one names the other daemons' commit points.)
//
// AIOS_FAULT_PAUSE_AT=<phase>:<ms> instead holds the calling thread there for <ms> (at most
// 60,000) the first time, after logging FAULT_INJECTED_PAUSE, so a test can act inside a window
// that is otherwise microseconds wide (a lease lost while the Bridge moves a ref).
//
// Phases: bridge_ref_moved (the branch moved, before the transaction that records it APPLIED),
// scheduler_claim_committed, scheduler_result_committed (after the transaction, before
// the answer), rebind_resolved (after the Bridge answered, before the transaction),
// rebind_committed (after the transaction, before the answer), executor_request_accepted (the
// request read, before the start marker), executor_start_marked (after the marker, before the
// spawn), executor_outcome_written (after the result file, before serve mode removes the
// request).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include "aios/log.hpp"

namespace aios {

inline void fault_point(std::string_view phase) {
  static const std::string armed = [] {
    const char* value = std::getenv("AIOS_FAULT_KILL_AT");
    return value == nullptr ? std::string() : std::string(value);
  }();
  static const std::string pause = [] {
    const char* value = std::getenv("AIOS_FAULT_PAUSE_AT");
    return value == nullptr ? std::string() : std::string(value);
  }();
  static std::atomic<bool> paused{false};
  if (!pause.empty() && pause.rfind(std::string(phase) + ":", 0) == 0 && !paused.exchange(true)) {
    const long ms = std::strtol(pause.c_str() + phase.size() + 1, nullptr, 10);
    log::warn("FAULT_INJECTED_PAUSE", {{"phase", std::string(phase)}, {"ms", ms}});
    std::this_thread::sleep_for(std::chrono::milliseconds(std::clamp(ms, 0L, 60000L)));
  }
  if (armed.empty() || armed != phase) return;
  log::warn("FAULT_INJECTED_KILL", {{"phase", std::string(phase)}});
  std::raise(SIGKILL);
}

}  // namespace aios
