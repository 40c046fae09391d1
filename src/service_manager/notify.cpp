#include <systemd/sd-daemon.h>

#include <algorithm>
#include <string>

#include "aios/log.hpp"
#include "aios/service_manager.hpp"

namespace aios::service_manager {
namespace {

// STATUS= is one line of the protocol; a newline would start a new assignment.
std::string status_line(std::string_view status) {
  std::string line(status);
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return line;
}

void notify(std::string_view state, std::string_view status) {
  const std::string message = std::string(state) + "\nSTATUS=" + status_line(status);
  // 0: not under systemd; negative: the socket is gone. Neither stops the daemon.
  if (sd_notify(0, message.c_str()) < 0) {
    log::warn("SERVICE_MANAGER_NOTIFY_FAILED", {{"state", state}});
  }
}

}  // namespace

void notify_ready(std::string_view status) {
  notify("READY=1", status);
}

void notify_stopping(std::string_view status) {
  notify("STOPPING=1", status);
}

std::chrono::microseconds watchdog_interval() {
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0) return std::chrono::microseconds::zero();
  return std::chrono::microseconds(usec);
}

Watchdog::Watchdog(std::function<bool()> healthy) {
  const auto interval = watchdog_interval();
  if (interval == std::chrono::microseconds::zero()) return;
  log::info("WATCHDOG_ARMED", {{"interval_ms", interval.count() / 1000}});
  const auto period = std::max(std::chrono::milliseconds(1),
                               std::chrono::duration_cast<std::chrono::milliseconds>(interval / 2));
  pinger_ = std::make_unique<PeriodicThread>(period, [healthy = std::move(healthy)] {
    bool ok = false;
    try {
      ok = healthy();
    } catch (const std::exception& error) {
      log::warn("WATCHDOG_CHECK_FAILED", {{"what", error.what()}});
    }
    if (ok) {
      sd_notify(0, "WATCHDOG=1");
    } else {
      log::warn("WATCHDOG_UNHEALTHY");
    }
  });
}

}  // namespace aios::service_manager
