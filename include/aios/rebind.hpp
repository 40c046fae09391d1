#pragma once
// The owner-controlled execution rebind (aios-agent-task-execution-rebind): the one audited way
// to replace a returned task's persisted source_capture envelope with the deterministic plan the
// governed Bridge has registered for it, on the same governed binding.
//
// The only transition: an official NEEDS_REWORK has put the task back to QUEUED with no lease;
// its metadata.execution is a source_capture envelope; the Bridge resolves a deterministic
// envelope for the same binding; the owner names every coordinate (status, revision, attempt,
// the verification's digest, the old and new execution digests) and the change applies only if
// all of them still hold. It never creates a task, job or branch and never patches other
// metadata. docs/api.md ("Execution rebind") lists the endpoint and every code.
//
// Error codes (include/aios/error_codes.inc, section "Execution rebind", plus the envelope
// codes of a resolved envelope that does not validate and the Bridge's own codes, verbatim).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "aios/environment.hpp"
#include "aios/http.hpp"
#include "aios/store.hpp"
#include "aios/sys.hpp"

namespace aios {

inline constexpr std::string_view kExecutionRebindEventType = "TASK_EXECUTION_REBIND_AUTHORIZED";
inline constexpr std::string_view kExecutionRebindEventSchema =
    "aios.task-execution-rebind.event.v1";
inline constexpr std::string_view kExecutionRebindActor = "owner-control";
inline constexpr std::size_t kExecutionRebindMaxBodyBytes = 64 * 1024;
inline constexpr std::chrono::milliseconds kBridgeResolveTimeout{15000};

// The nine fields of a rebind request, validated (the seed's ExecutionRebindRequest).
struct ExecutionRebindRequest {
  std::string expected_status;  // always "QUEUED"
  std::int64_t expected_revision = 0;
  std::int64_t expected_attempt = 0;
  std::string previous_verification_sha256;
  std::string expected_old_execution_digest;
  std::string expected_new_execution_digest;
  std::string authorization_id;
  std::string idempotency_key;
  std::string reason;

  // Validates in the seed's order and returns the stripped values. Throws:
  // EXECUTION_REBIND_FIELDS_INVALID (not exactly the nine keys), EXPECTED_STATUS_INVALID,
  // EXECUTION_REBIND_INTEGER_INVALID (revision < 0, attempt < 1, a bool or a float),
  // VERIFICATION_SHA256_INVALID, OLD_EXECUTION_DIGEST_INVALID, NEW_EXECUTION_DIGEST_INVALID
  // (each: not 64 lower-case hex), EXECUTION_REBIND_DIGEST_UNCHANGED (old == new),
  // AUTHORIZATION_ID_INVALID, IDEMPOTENCY_KEY_INVALID (the key pattern), and
  // EXECUTION_REBIND_REASON_INVALID (blank or over 512 characters). `value` must be an object.
  static ExecutionRebindRequest from_mapping(const nlohmann::json& value);

  // The nine fields as an object; its canonical SHA-256 is the receipt's request_sha256.
  nlohmann::json to_public() const;
};

// The configured authorization id, stripped: TASK_EXECUTION_REBIND_AUTHORIZATION_ID_MISSING when
// blank, TASK_EXECUTION_REBIND_AUTHORIZATION_ID_INVALID when it does not match the key pattern.
std::string require_execution_rebind_authorization_id(std::string_view configured);

// Resolves the canonical execution envelope the Bridge holds for a task: (task_id,
// required_capabilities as a JSON array of strings) -> the envelope object. May throw
// aios::Error; called without any database lock held, possibly from several threads at once.
using ExecutionResolver =
    std::function<nlohmann::json(const std::string& task_id, const nlohmann::json& capabilities)>;

// The Bridge's POST {base_url}/v2/execution-envelope with the body
// {"required_capabilities":[...],"task_id":"..."} (canonical JSON) and the control token as
// bearer. 200: the answer must be a JSON object and is returned as is. Any other status: its
// {"error": CODE} is thrown verbatim (CANONICAL_EXECUTION_RESOLUTION_FAILED when it has none,
// or not a code-shaped one) with 502 for a 5xx answer and 409 otherwise. An answer that is not a
// JSON object: CANONICAL_EXECUTION_RESPONSE_INVALID. Transport failures keep the http client's
// codes (HTTP_UPSTREAM_UNAVAILABLE, HTTP_UPSTREAM_TIMEOUT, ...). Throws HTTP_URL_INVALID now
// for a base URL that is not http://host[:port][/path]. Requests go through `transport`, which
// must outlive the resolver.
ExecutionResolver make_bridge_execution_resolver(
    std::string_view base_url, std::string control_token, http::Transport& transport,
    std::chrono::milliseconds timeout = kBridgeResolveTimeout);

// The rebind itself, over the task database it shares with the scheduler. Works on the task
// plane's schema and on the seed's minimal one (tasks + task_events); creates
// task_execution_rebinds if missing, and changes no other part of the schema. Thread-safe.
class ExecutionRebindStore {
 public:
  // `store` must outlive this (for SQLite, opened with migrate=false); its clock
  // dates events and receipts. Throws as Store::write when the store cannot be prepared to keep
  // receipts. `faults` (which must outlive this) holds the crash tests' rebind_resolved and
  // rebind_committed points.
  ExecutionRebindStore(store::Store& store, ExecutionResolver resolver,
                       std::string authorization_id, const FaultPlan& faults);

  // Applies (or replays) one rebind of `task_id` and returns
  // {task_id, status, attempt, revision, old_execution_digest, new_execution_digest,
  //  authorization_id, idempotent}. Order, as the seed's: task id, authorization id, receipt
  // replay (before any CAS: a rebind changes the revision it was checked against), the CAS
  // snapshot, Bridge resolution outside any lock, then in one write transaction the receipt again,
  // the snapshot again, the UPDATE with the full CAS predicate, the event and the receipt.
  // Throws TASK_ID_INVALID, EXECUTION_REBIND_AUTHORIZATION_ID_MISMATCH,
  // EXECUTION_REBIND_IDEMPOTENCY_CONFLICT, the TASK_*_UNSUPPORTED schema codes, TASK_NOT_FOUND,
  // EXECUTION_REBIND_CAS_MISMATCH, EXECUTION_REBIND_ACTIVE_LEASE_DENY,
  // TASK_VERIFICATION_INVALID, EXECUTION_REBIND_VERIFICATION_DRIFT, TASK_METADATA_INVALID,
  // TASK_EXECUTION_METADATA_MISSING, the envelope codes of the stored envelope,
  // EXECUTION_REBIND_OLD_DIGEST_DRIFT, EXECUTION_REBIND_SOURCE_CAPTURE_REQUIRED,
  // EXECUTION_REBIND_PROJECTION_DRIFT, whatever the resolver throws, the envelope codes of the
  // resolved envelope (EXECUTION_BINDING_MISMATCH when it is for another binding),
  // EXECUTION_REBIND_DETERMINISTIC_PLAN_REQUIRED, EXECUTION_REBIND_NEW_DIGEST_DRIFT, and the
  // STORE_* codes. Nothing is written unless it returns with idempotent=false.
  nlohmann::json rebind(std::string_view task_id, const ExecutionRebindRequest& request);

 private:
  store::Store& store_;
  ExecutionResolver resolver_;
  std::string authorization_id_;
  const FaultPlan& faults_;
};

// The HTTP routes: GET /health, POST /v1/tasks/{task_id}/execution-rebind (201 applied, 200
// replayed), 404 NOT_FOUND for anything else. Checks in the seed's order: route, bearer
// (UNAUTHORIZED, constant time), body size 1..64 KiB (REQUEST_SIZE_INVALID), JSON object
// (REQUEST_INVALID), the request fields, then the store. Thread-safe.
class ExecutionRebindApi {
 public:
  // The server's own body limit for this API: larger than kExecutionRebindMaxBodyBytes so that
  // the route and bearer checks come first, as the seed's do, for any body up to it.
  static constexpr std::size_t kServerBodyLimit = 1024 * 1024;

  // `owner`: the control token and where it counts (OWNER_NOT_LOOPBACK from elsewhere).
  ExecutionRebindApi(ExecutionRebindStore& store, http::OwnerToken owner);

  // Never throws aios::Error: refusals are answered as {"error": CODE} with their status.
  http::Response handle(const http::Request& request);
  // For ServerOptions::admits: the bearer token is the owner's (the only role here).
  bool admits(const http::Request& request) const;

 private:
  http::Response route(const http::Request& request);
  http::Response rebind(const http::Request& request, std::string_view task_id);

  ExecutionRebindStore& store_;
  http::OwnerToken owner_;
};

}  // namespace aios
