#pragma once
// What the listener, the sessions and the Server share: options, the handler, the stop flag
// and the registry of open connections. Held by shared_ptr so a session that outlives the
// Server's io threads (destroyed with the io_context) still has it.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "aios/http.hpp"

namespace aios::http::detail {

class Session;

struct ServerState {
  ServerState(ServerOptions server_options, Handler request_handler)
      : options(std::move(server_options)), handler(std::move(request_handler)) {}

  const ServerOptions options;
  const Handler handler;

  std::atomic<bool> stopping{false};      // set once by Server::stop
  std::atomic<std::size_t> in_flight{0};  // requests read and not yet answered
  // Request bodies counted against options.max_body_bytes_held (Session reserves and returns).
  std::atomic<std::size_t> body_bytes_held{0};

  std::mutex mutex;                       // guards sessions and per_peer
  std::condition_variable drained;        // notified when a session leaves `sessions`
  std::unordered_set<Session*> sessions;  // open connections; a Session erases itself
  // Open connections by peer address; a Session counts itself down, the last one erases it.
  std::unordered_map<std::string, std::size_t> per_peer;

  // Called on an io thread after a large answer was sent: its freed pages go back to the OS
  // soon (set by the Server; unset: never).
  std::function<void()> trim_soon;
};

}  // namespace aios::http::detail
