#pragma once
// One task as every module that acts on it reads it: the row (or TASK_NOT_FOUND), its stored
// JSON columns parsed under the nesting bound, its current execution envelope, and the fence
// every side effect passes, the lease and attempt proof of its current holder. The task plane,
// the Bridge (writer leases, governed commits) and the rebind service share it, so each rule is
// written once and none of them reaches into another's internals.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "aios/store.hpp"
#include "aios/sys.hpp"

namespace aios::task {

// The task, or TASK_NOT_FOUND.
store::TaskRow load(store::Transaction& tx, const std::string& task_id);

// Parses a stored JSON column (bounded nesting), or returns `fallback` for an empty one;
// STORE_FAILURE for a damaged one.
nlohmann::json parse_column(const std::string& text, const nlohmann::json& fallback);

// The task's current execution envelope, from metadata_json (authoritative: the rebind service
// rewrites it): an object, {} when there is none; STORE_FAILURE for a damaged one.
nlohmann::json execution_of(const store::TaskRow& row);

// True when `worker_id` is registered to `agent_id`: an agent acts and reads only through its
// own workers.
bool worker_belongs_to(store::Transaction& tx, const std::string& worker_id,
                       const std::string& agent_id);

// The body's lease_token, or LEASE_INVALID.
std::string lease_token_of(const nlohmann::json& body);

// What an agent shows to act for one attempt: its lease token, the attempt and the envelope
// digest it works on. Parsed from the body's lease_token, attempt and execution_digest
// (LEASE_INVALID, ATTEMPT_INVALID, EXECUTION_DIGEST_INVALID).
struct LeaseProof {
  std::string token;
  std::int64_t attempt = 0;
  std::string execution_digest;
};
LeaseProof lease_proof_of(const nlohmann::json& body);

// The lease token fences every side effect: only the current holder of a live lease, through
// a worker of its own agent, may act on a claimed task. TASK_NOT_CLAIMED, LEASE_INVALID or
// LEASE_EXPIRED.
void check_lease(store::Transaction& tx, const store::TaskRow& row, const std::string& agent_id,
                 const std::string& token, TimePoint now);

// check_lease, then the attempt (ATTEMPT_STALE) and the digest against the task's current
// execution_digest column (TASK_EXECUTION_DIGEST_MISMATCH): a stale attempt can neither submit
// nor commit. The column is kept equal to metadata_json's execution by every writer (schema 10).
void check_attempt(store::Transaction& tx, const store::TaskRow& row, const std::string& agent_id,
                   const LeaseProof& proof, TimePoint now);

// A task fenced for a side effect by the attempt that proves `proof`, in the caller's
// transaction: load and check_attempt, then the current execution, parsed once the fence holds.
struct FencedTask {
  store::TaskRow row;
  nlohmann::json execution;
};
FencedTask fence_attempt(store::Transaction& tx, const std::string& task_id,
                         const std::string& agent_id, const LeaseProof& proof, TimePoint now);

}  // namespace aios::task
