#pragma once
// What every daemon tells systemd about itself: READY=1 once it serves, a watchdog whose ping
// proves the daemon still answers, and STOPPING=1 when SIGTERM starts the drain.

#include <chrono>
#include <cstdint>
#include <string>

#include "aios/http.hpp"
#include "aios/service_manager.hpp"

namespace aios::daemon {

// The daemon's own GET /health answers within two seconds: 200 (the listener accepts, a handler
// thread is free and the router runs) or the cap's 503 (the io loop runs).
inline bool answers_health(const std::string& host, std::uint16_t port,
                           std::shared_ptr<http::TlsClientCredentials> tls = nullptr) {
  http::Connection connection(host, port, std::chrono::seconds(2), std::move(tls));
  const auto response = connection.request("GET", "/health", "", "");
  // A listener at its connection cap answers 503 HTTP_CONNECTION_LIMIT from the io loop: it is
  // alive, and a flood of connections must not make systemd restart it (and drop them all).
  return response.status == 200 ||
         (response.status == 503 &&
          response.body.find("HTTP_CONNECTION_LIMIT") != std::string::npos);
}

}  // namespace aios::daemon
