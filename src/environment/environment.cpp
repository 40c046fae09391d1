#include "aios/environment.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "aios/log.hpp"

namespace aios {
namespace {

std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

FaultPlan FaultPlan::from_process_environment() {
  return FaultPlan(variable("AIOS_FAULT_KILL_AT"), variable("AIOS_FAULT_PAUSE_AT"));
}

void FaultPlan::point(std::string_view phase) const {
  if (!pause_at_.empty() && pause_at_.rfind(std::string(phase) + ":", 0) == 0 &&
      !paused_.exchange(true)) {
    const long ms = std::strtol(pause_at_.c_str() + phase.size() + 1, nullptr, 10);
    log::warn("FAULT_INJECTED_PAUSE", {{"phase", std::string(phase)}, {"ms", ms}});
    std::this_thread::sleep_for(std::chrono::milliseconds(std::clamp(ms, 0L, 60000L)));
  }
  if (kill_at_.empty() || kill_at_ != phase) return;
  log::warn("FAULT_INJECTED_KILL", {{"phase", std::string(phase)}});
  std::raise(SIGKILL);
}

const Environment& system_environment() {
  static const SystemClock clock;
  static process::SystemSpawner spawner;
  static http::SystemTransport transport;
  static SystemRandom random;
  static const FaultPlan faults = FaultPlan::from_process_environment();
  static const Environment environment{clock, spawner, transport, random, faults};
  return environment;
}

}  // namespace aios
