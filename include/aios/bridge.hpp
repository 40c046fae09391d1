#pragma once
// The governed Bridge: the plan registry, canonical execution-envelope resolution, writer
// leases and governed commits into the authority repository. Served by aios-task-scheduler on
// its own port over the same database as the Task API; the scheduler is the only process that
// writes the authority repository. docs/api.md ("Governed Bridge API") is the wire contract.
//
// Every call that changes state is one store transaction with its task_events row
// (the audit trail); none of them changes a task's revision, so a worker's claim CAS is never
// disturbed by a resolution or a commit. Thread-safe.

#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "aios/environment.hpp"
#include "aios/fleet.hpp"
#include "aios/http.hpp"
#include "aios/resolution.hpp"
#include "aios/store.hpp"
#include "aios/sys.hpp"

namespace aios {

struct BridgeOptions {
  std::filesystem::path authority_git_dir{"/data/aios-gitops/repo.git"};
  std::string committer_name = "AIOS Governed Bridge";
  std::string committer_email = "governed-bridge@aios.invalid";
};

class Bridge final {
 public:
  // `control_token` is the owner's bearer token; agents authenticate through `plane`.
  // `resolver` (which must outlive it) resolves envelopes and holds the verification allowlist
  // plans are checked against; the task plane's claims use the same one.
  // Times (commit dates, leases) come from the store's clock; writer lease ids from the
  // environment's randomness, fault points from its plan.
  Bridge(store::Store& store, TaskPlane& plane, const resolution::Resolver& resolver,
         const Environment& environment, http::OwnerToken owner, BridgeOptions options);

  // The request handler for http::Server.
  http::Response handle(const http::Request& request);
  // For ServerOptions::admits: the bearer token is the owner's (from where it counts) or an
  // issued agent's with the client certificate its binding asks for.
  bool admits(const http::Request& request);
  // Whether this process holds the lead of governed commits (store::Leadership); without it
  // POST /v2/governed-commits answers BRIDGE_NOT_LEADER and every other route serves as ever
  // (they are the store's alone). Set before serving; unset, the Bridge always leads.
  void lead_by(std::function<bool()> leads) { leads_ = std::move(leads); }
  // Called when this process takes the lead, before it commits: the ref locks left in the
  // authority repository were left by a leader that died or lost its session mid-update (only
  // the leader moves refs), and are removed (BRIDGE_STALE_REF_LOCK_REMOVED), or no commit to
  // their branches could ever be completed.
  void took_lead();

  // Owner: {task_id, change_set, verification[, governance][, capability_scope]} registers the
  // task's deterministic plan. {201 new | 200 same plan again, plan view}.
  std::pair<int, nlohmann::json> register_plan(const nlohmann::json& body);
  // Owner: GET /v2/plans?after=<task id>&limit=N: {plans: [{task_id, plan_sha256,
  // execution_digest, created_at, changes}], next_after}; GET /v2/plans/{task_id}: one plan
  // with its stored request as `plan`. TASK_NOT_FOUND for a task without a plan.
  nlohmann::json plans(const std::string& after_task_id, std::size_t limit);
  nlohmann::json plan(const std::string& task_id);

  // Owner (agent == nullptr) or agent: {task_id, required_capabilities[, execution]} -> the
  // canonical envelope for the task's binding. An agent only for a task one of its workers
  // holds the claim of or could claim now (TASK_NOT_FOUND otherwise). BRIDGE_ENVELOPE_RESOLVED
  // is written once per task, attempt, worker and execution digest.
  nlohmann::json resolve_envelope(const nlohmann::json& body, const Agent* agent);

  // Agent holding the task lease: {task_id, lease_token, attempt, execution_digest} -> the
  // writer lease of the envelope's target branch. {201 new | 200 this attempt's lease again}.
  std::pair<int, nlohmann::json> acquire_writer_lease(const Agent& agent,
                                                      const nlohmann::json& body);

  // Agent holding the writer lease: {task_id, writer_lease_id, lease_token, attempt,
  // execution_digest} -> the commit of the envelope's change set on its target branch.
  // {201 applied | 200 replay of the same commit key, commit view}.
  std::pair<int, nlohmann::json> governed_commit(const Agent& agent, const nlohmann::json& body);

  // Agent: {task_id, have?} for a task one of its workers holds or could claim -> the history
  // of the task's base commit as one git pack (application/x-git-packfile), without what the
  // commits in `have` (at most 64) already reach: how a worker on another host fills its
  // mirror of the authority repository. GOVERNED_COMMIT_BASE_MISSING,
  // REPOSITORY_PACK_TOO_LARGE (over 64 MiB).
  http::Response repository_pack(const Agent& agent, const nlohmann::json& body);

 private:
  http::Response route(const http::Request& request);

  store::Store& store_;
  TaskPlane& plane_;
  const resolution::Resolver& resolver_;
  Environment environment_;
  http::OwnerToken owner_;
  BridgeOptions options_;
  std::mutex commit_mutex_;  // one writer of the authority repository at a time
  std::function<bool()> leads_;
};

}  // namespace aios
