#pragma once
// What every daemon tells systemd about itself: READY=1 once it serves, a watchdog whose ping
// proves the daemon still answers, and STOPPING=1 when SIGTERM starts the drain.

#include <chrono>
#include <cstdint>
#include <string>

#include "aios/http.hpp"
#include "aios/service_manager.hpp"

namespace aios::daemon {

// The daemon's own GET /health answers 200 within two seconds: the listener accepts, a
// handler thread is free and the router runs.
inline bool answers_health(const std::string& host, std::uint16_t port) {
  http::Connection connection(host, port, std::chrono::seconds(2));
  return connection.request("GET", "/health", "", "").status == 200;
}

}  // namespace aios::daemon
