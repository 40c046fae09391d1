#pragma once
// Shared pieces of the task plane's implementation: worker state as the fleet sees it, the
// eligibility decision, and small row helpers. Call only inside a Database transaction.

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "aios/fleet.hpp"
#include "aios/store.hpp"

namespace SQLite {
class Database;
}

namespace aios::fleet {

struct WorkerState {
  std::string worker_id;
  std::string agent_id;
  nlohmann::json capabilities;
  std::set<std::string> effective;  // normalize_worker_capabilities(capabilities)
  std::set<std::string> allowed_adapters;
  nlohmann::json labels;
  std::set<std::string> tenants;  // empty: any tenant
  double last_seen = 0;
  std::int64_t max_slots = 1;
  std::string failure_domain;
  std::string circuit_state = "CLOSED";
  double circuit_open_until = 0;
  std::int64_t consecutive_failures = 0;
  bool quarantined = false;
  std::int64_t used_slots = 0;  // active claims + live reservations
  std::int64_t probes = 0;      // claims taken since a circuit half-opened
};

// What the fleet decides on, read from the task's execution envelope in metadata_json: that is
// authoritative because an execution rebind rewrites only metadata and the revision.
struct TaskFacts {
  std::string adapter;
  std::string execution_digest;
  std::set<std::string> required;  // normalized capability scope; empty when unusable
};

// Parsed facts per (task, revision), so a poll does not re-parse every queued envelope.
// Thread-safe.
class TaskFactsCache {
 public:
  TaskFacts get(const store::TaskRow& row);

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, std::int64_t>, TaskFacts> facts_;
};

// The serialised view (canonical_json(view_of(row))) of tasks a poll recently offered, so a poll
// does not re-parse and re-serialise the same queued rows on every call. An entry is served only
// for a row equal to the one it was built from in every column: the view is a pure function of
// the row, and the revision alone would not do (a heartbeat moves lease_expires_at without a
// new revision, and the rebind service writes the same table from another process). At most
// kMaxEntries tasks are kept. Thread-safe.
class TaskViewCache {
 public:
  static constexpr std::size_t kMaxEntries = 512;

  std::shared_ptr<const std::string> get(const store::TaskRow& row);
  std::size_t size();

 private:
  struct Entry {
    store::TaskRow row;
    std::shared_ptr<const std::string> text;
  };
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> views_;  // by task_id
};

std::optional<WorkerState> load_worker(SQLite::Database& db, const std::string& worker_id,
                                       double now);
std::vector<WorkerState> load_workers(SQLite::Database& db, double now);

// True when a live task quarantine keeps `worker_id` away from `task_id`.
bool task_quarantined(SQLite::Database& db, const std::string& task_id,
                      const std::string& worker_id, double now);

// The reasons, in a fixed order, that keep `worker` from claiming `task` now. The first one is
// the claim's refusal code (see reason_code).
std::vector<std::string> ineligibility_reasons(const WorkerState& worker,
                                               const store::TaskRow& task, const TaskFacts& facts,
                                               bool quarantined_task, double now,
                                               const TaskPlaneOptions& options);
ErrorCode reason_code(const std::string& reason);

// Worker circuit bookkeeping, shared by release, lease expiry and the direct calls.
void note_worker_failure(SQLite::Database& db, const std::string& worker_id, double now,
                         int threshold, std::chrono::seconds cooldown);
void note_worker_success(SQLite::Database& db, const std::string& worker_id, double now);

// Tasks with an attempt that failed (released or expired) on a worker of `domain`. A retry
// prefers another failure domain: poll offers these to the domain's workers after the rest.
std::set<std::string> tasks_failed_in_domain(SQLite::Database& db, const std::string& domain);

// Ends the task's fleet dispatch (frees its slot) with `state`.
void end_dispatch(SQLite::Database& db, const std::string& task_id, const std::string& state,
                  double now);
// Ends the claim row with `status`.
void end_claim(SQLite::Database& db, const std::string& claim_id, const std::string& status,
               const std::string& now_iso);

// The task, or TASK_NOT_FOUND.
store::TaskRow load_existing_task(SQLite::Database& db, const std::string& task_id);

// True when `worker_id` is registered to `agent_id`: an agent acts and reads only through its
// own workers.
bool worker_belongs_to(SQLite::Database& db, const std::string& worker_id,
                       const std::string& agent_id);

// The body's lease_token, or LEASE_INVALID.
std::string lease_token_of(const nlohmann::json& body);

// The lease token fences every side effect: only the current holder of a live lease, through
// a worker of its own agent, may act on a claimed task. TASK_NOT_CLAIMED, LEASE_INVALID or
// LEASE_EXPIRED.
void check_lease(SQLite::Database& db, const store::TaskRow& row, const Agent& agent,
                 const std::string& token, TimePoint now);

// What an agent shows to act for one attempt: its lease token, the attempt and the envelope
// digest it works on. Parsed from the body's lease_token, attempt and execution_digest
// (LEASE_INVALID, ATTEMPT_INVALID, EXECUTION_DIGEST_INVALID).
struct LeaseProof {
  std::string token;
  std::int64_t attempt = 0;
  std::string execution_digest;
};
LeaseProof lease_proof_of(const nlohmann::json& body);

// check_lease, then the attempt (ATTEMPT_STALE) and the digest against `current_digest`
// (TASK_EXECUTION_DIGEST_MISMATCH): a stale attempt can neither submit nor commit.
void check_attempt(SQLite::Database& db, const store::TaskRow& row, const Agent& agent,
                   const LeaseProof& proof, TimePoint now, const std::string& current_digest);

// The task's current execution envelope, from metadata_json (authoritative: the rebind service
// rewrites it).
nlohmann::json execution_of(const store::TaskRow& row);

// The task view the API returns: never a token hash.
nlohmann::json view_of(const store::TaskRow& row);

// A fresh agent token: "aios_" and 64 hex digits from the CSPRNG.
std::string new_agent_token();

// Parses a stored JSON column, or returns `fallback` for an empty one.
nlohmann::json parse_column(const std::string& text, const nlohmann::json& fallback);

}  // namespace aios::fleet
