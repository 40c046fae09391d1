#pragma once
// The exchange protocol shared by the read-only executor and the engineering broker: a request
// file written once (atomic, fsync'd) under requests/, its answer awaited with inotify in
// results/ or failed/, each answer sealed by the executor (aios::executor::ExchangeKey).

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "aios/executor.hpp"

namespace aios::executor {

// Checks a sealed result's bytes against the request (given the request's digest).
using ResultReader =
    std::function<nlohmann::json(const std::string& result, const std::string& request_sha256)>;

// The largest answer a worker reads: output text and JSON are each at most 128 KiB, but JSON
// escapes can grow them sixfold.
inline constexpr std::size_t kMaxAnswerBytes = 16 * kMaxRequestBytes;

// Writes an answer (a result or failure file): its seal to `<path>.mac`, then `content` to
// `path`, each atomically (files::write_atomic). Throws std::system_error.
void write_answer(const std::filesystem::path& path, std::string_view content,
                  const ExchangeKey& key);

// Writes `result` as canonical JSON to `result_path`: sealed under `key` in serve mode, plain when
// `key` is null (one-request mode, whose caller reads the file itself). Throws
// EXTERNAL_AGENT_RESULT_WRITE_FAILED; then passes the fault point executor_outcome_written of
// `faults`.
void write_result(const std::filesystem::path& result_path, const nlohmann::json& result,
                  const ExchangeKey* key, const FaultPlan& faults);

// The bytes of the answer at `path`, or nothing when there is none. Throws
// EXTERNAL_AGENT_RESULT_MAC_INVALID when it is not the executor's: a symlink or unreadable, no
// sidecar, or one that is not the key's seal of these bytes under this directory and name.
std::optional<std::string> read_answer(const std::filesystem::path& path, std::size_t max_bytes,
                                       const ExchangeKey& key);

// Hands `request` to the exchange at `root` under `<request_id>.json` and waits for its answer:
// an existing result is reused (a restart never runs a backend twice), an existing failure is
// thrown with its recorded code, a different request under the same id is
// EXTERNAL_AGENT_REQUEST_ID_CONFLICT (unreadable: _EXISTING_REQUEST_INVALID), no answer in time
// is EXTERNAL_AGENT_EXCHANGE_TIMEOUT, an unusable root EXTERNAL_AGENT_EXCHANGE_UNAVAILABLE, an
// answer without the key's seal EXTERNAL_AGENT_RESULT_MAC_INVALID, no key at all
// EXTERNAL_AGENT_EXCHANGE_KEY_INVALID (before anything is written).
nlohmann::json exchange_request(const std::filesystem::path& root, const std::string& request_id,
                                const nlohmann::json& request, std::chrono::milliseconds timeout,
                                const ExchangeKey& key, const ResultReader& read_result);

}  // namespace aios::executor
