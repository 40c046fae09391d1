#pragma once
// The exchange protocol shared by the read-only executor and the engineering broker: a request
// file written once (atomic, fsync'd) under requests/, its answer awaited with inotify in
// results/ or failed/.

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace aios::executor {

// Reads and checks a result file against the request (given the request's digest).
using ResultReader = std::function<nlohmann::json(const std::filesystem::path& result,
                                                  const std::string& request_sha256)>;

// Hands `request` to the exchange at `root` under `<request_id>.json` and waits for its answer:
// an existing result is reused (a restart never runs a backend twice), an existing failure is
// thrown with its recorded code, a different request under the same id is
// EXTERNAL_AGENT_REQUEST_ID_CONFLICT (unreadable: _EXISTING_REQUEST_INVALID), no answer in time
// is EXTERNAL_AGENT_EXCHANGE_TIMEOUT, an unusable root EXTERNAL_AGENT_EXCHANGE_UNAVAILABLE.
nlohmann::json exchange_request(const std::filesystem::path& root, const std::string& request_id,
                                const nlohmann::json& request, std::chrono::milliseconds timeout,
                                const ResultReader& read_result);

}  // namespace aios::executor
