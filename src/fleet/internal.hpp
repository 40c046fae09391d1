#pragma once
// Shared pieces of the task plane's implementation: worker state as the fleet sees it, the
// eligibility decision, and small row helpers. Call only inside a store transaction.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aios/fleet.hpp"
#include "aios/store.hpp"
#include "aios/task.hpp"

namespace aios::fleet {

// True when `name` is one of `names` (a worker's adapters or tenants, an agent's tenants).
inline bool contains(const store::Names& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

struct WorkerState : store::WorkerRecord {
  std::set<std::string> effective;  // normalize_worker_capabilities(capabilities), once per load
};

// What the fleet decides a claim on, read from the task's narrow columns (adapter,
// execution_digest, capability scope), never by parsing its stored envelope: every writer
// keeps them equal to metadata_json's execution, which stays authoritative (the rebind service
// writes both; schema 10's trigger rewrites them when another writer, the seed's rebind,
// rewrites the metadata alone).
struct TaskFacts {
  std::string adapter;
  std::string execution_digest;
  std::set<std::string> required;  // normalized capability scope; empty when unusable
};
TaskFacts facts_of(const store::TaskRow& row);

// The serialised view (canonical_json(view_of(row))) of tasks a poll recently offered, so a poll
// does not re-parse and re-serialise the same queued rows on every call. An entry is served only
// for a row equal to the one it was built from in every column: the view is a pure function of
// the row, and the revision alone would not do (a heartbeat moves lease_expires_at without a
// new revision, and the rebind service writes the same table from another process). At most
// kMaxEntries tasks are kept. Thread-safe.
// Why a cache at all: nothing is decided on it (eligibility reads the narrow columns, facts_of);
// it holds the API's own projection of stored columns, serialised at the edge. Idle workers poll
// the same queue head many times between two transitions, and building each view (parsing its
// task and metadata columns, serialising it canonically) was most of a poll's cost before it.
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

// Agents authenticated recently, by token hash, so a request does not read the agents table
// and parse the grants every time. A revoke or rotate in this process clears it at once (the
// generation keeps a lookup that raced the clear from filling it again); an entry also lapses
// after kTtl, the bound on what a change made elsewhere can take to be seen. Thread-safe.
class AgentCache {
 public:
  static constexpr std::chrono::seconds kTtl{1};
  static constexpr std::size_t kMaxEntries = 4096;

  std::optional<Agent> find(const std::string& token_sha256);
  // The generation a lookup starts from; put() keeps its answer only if none was cleared since.
  std::uint64_t generation();
  void put(const std::string& token_sha256, const Agent& agent, std::uint64_t generation);
  void clear();

 private:
  struct Entry {
    Agent agent;
    std::chrono::steady_clock::time_point until;
  };
  std::mutex mutex_;
  std::uint64_t generation_ = 0;
  std::unordered_map<std::string, Entry> entries_;
};

std::optional<WorkerState> load_worker(store::Transaction& tx, const std::string& worker_id,
                                       double now);
// load_worker for a claim or a poll (store::Transaction::load_claimant).
std::optional<WorkerState> load_claimant(store::Transaction& tx, const std::string& worker_id,
                                         double now);
std::vector<WorkerState> load_workers(store::Transaction& tx, double now);

// The reasons, in a fixed order, that keep `worker` from claiming `task` now. The first one is
// the claim's refusal code (see reason_code).
std::vector<std::string> ineligibility_reasons(const WorkerState& worker,
                                               const store::TaskRow& task, const TaskFacts& facts,
                                               bool quarantined_task, double now,
                                               const TaskPlaneOptions& options);
ErrorCode reason_code(const std::string& reason);

// False when `worker` can take no task at all now: quarantined, its circuit open, or every slot
// used (the worker-level reasons of ineligibility_reasons).
bool open_for_claims(const WorkerState& worker, double now);

// A worker failure for its circuit, shared by release, lease expiry and the direct call.
void note_worker_failure(store::Transaction& tx, const std::string& worker_id, double now,
                         int threshold, std::chrono::seconds cooldown);

// The tenant a scope key names ("tenant:<t>" and "project:<t>/<p>": t); "" for "global".
std::string tenant_of(const std::string& scope_key);

// The task view the API returns: never a token hash.
nlohmann::json view_of(const store::TaskRow& row);

// Appends `events` to the JSON array `out` as the API returns them (`with_task`: each with its
// task id, for the fleet-wide feeds); returns the last one's id, or `last` when there is none.
std::int64_t append_events(const std::vector<store::EventRecord>& events, bool with_task,
                           nlohmann::json& out, std::int64_t last);

// A fresh agent token: "aios_" and 64 hex digits from the CSPRNG.
std::string new_agent_token(Random& random);

// --- Transitions checked before their transaction and applied inside it: a single call's one
// step, or one item of a batch under a savepoint of its own. An apply may run again (a re-run
// write body), so it only writes through `tx` and sets what it answers.

// A submitted task given its times, and resolved as a claim would with no plan registered.
struct NewTask {
  store::TaskRow row;
  std::optional<Error> unresolvable;  // refused, unless the request replays a stored task
};
NewTask new_task(const TaskSubmission& task, const resolution::Resolver* resolver, TimePoint now);
// 201 and the new task's view, or 200 and the stored view for an identical replay
// (TASK_ALREADY_EXISTS for another body under the id).
std::pair<int, nlohmann::json> store_new_task(store::Transaction& tx, const NewTask& task);

struct ResultApplied {
  int status = 201;  // 200: the replay of a stored submission
  nlohmann::json answer;
  std::string freed_worker{};  // whose slot a new submission freed
};
ResultApplied apply_result(store::Transaction& tx, const Agent& agent, const std::string& task_id,
                           const ResultSubmission& submission, TimePoint now);

struct VerificationApplied {
  nlohmann::json view;
  bool requeued = false;  // NEEDS_REWORK sent it back to the queue
};
VerificationApplied apply_verification(store::Transaction& tx, const std::string& task_id,
                                       const Verification& verification,
                                       const std::string& now_iso);

// A batch's two passes: check(i) for each of `count` items (an aios::Error refuses the item),
// then one write in which apply(tx, i) runs for every item not refused, each under a savepoint
// of its own (an aios::Error refuses the item with its writes rolled back; anything else fails
// the whole write), and then `then(tx)` when given. Each item's refusal (nullptr: applied).
std::vector<std::exception_ptr> run_batch(
    store::Store& store, std::size_t count, const std::function<void(std::size_t)>& check,
    const std::function<void(store::Transaction&, std::size_t)>& apply,
    const std::function<void(store::Transaction&)>& then = {});
// A refused item's answer: {"task_id", "error": "<CODE>"}, as error_response words the code
// (task_id null when the item named none).
nlohmann::json refused_item(const std::string& task_id, const std::exception_ptr& error);

}  // namespace aios::fleet
