#pragma once
// The systemd service-manager protocol (sd_notify): readiness, status, stopping and the
// watchdog. Every call is a no-op when the process was not started by systemd with
// NOTIFY_SOCKET set, so the daemons run the same way by hand, in tests and under a unit.

#include <chrono>
#include <functional>
#include <memory>
#include <string_view>

#include "aios/sys.hpp"

namespace aios::service_manager {

// READY=1 with a one-line STATUS=. Call it only once the listener or watch is up: Type=notify
// units order their dependants on it.
void notify_ready(std::string_view status);

// STOPPING=1 with STATUS=; SIGTERM was taken and in-flight work is draining.
void notify_stopping(std::string_view status);

// The interval systemd asked for (WatchdogSec=, via WATCHDOG_USEC and WATCHDOG_PID), or zero.
std::chrono::microseconds watchdog_interval();

// Sends WATCHDOG=1 every half interval while `healthy()` holds; a failing check skips the ping
// (and logs WATCHDOG_UNHEALTHY) so systemd restarts a daemon that is up but wedged. Without an
// armed watchdog it starts no thread.
class Watchdog {
 public:
  explicit Watchdog(std::function<bool()> healthy);

 private:
  std::unique_ptr<PeriodicThread> pinger_;
};

}  // namespace aios::service_manager
