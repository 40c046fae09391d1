// Canonical execution-envelope resolution (the seed's CanonicalBridgeExecutionResolver
// contract): a registered plan wins; a read-only envelope is replayed exactly as persisted; a
// task projected as deterministic is its own registered plan; anything else is refused.
#include "aios/bridge.hpp"
#include "aios/canonical.hpp"
#include "aios/capability.hpp"
#include "aios/envelope.hpp"
#include "bridge/internal.hpp"

namespace aios {
namespace {

using envelope::fail;

void check_scope_holds(const nlohmann::json& envelope, const nlohmann::json& required) {
  if (!required_capabilities_subset(envelope["capability_scope"], required)) {
    fail(ErrorCode::EXECUTION_CAPABILITY_SCOPE_MISMATCH);
  }
}

// What resolution asks of a valid envelope beyond its validation: a plan's verification
// commands, and an engineering envelope's (the allowlist the worker reruns the backend's
// requests against), on the executable allowlist; a scope that holds the required capabilities.
void check_admissible(const nlohmann::json& envelope, const nlohmann::json& required,
                      const std::set<std::string>& verification_executables) {
  const auto action = envelope.value("action", "");
  if (action == "deterministic" || action == "engineering") {
    bridge::check_verification_allowed(envelope, verification_executables);
  }
  check_scope_holds(envelope, required);
}

}  // namespace

nlohmann::json Bridge::resolve_envelope(const nlohmann::json& body, const Agent* agent) {
  envelope::require_known_keys(body, {"task_id", "required_capabilities", "execution"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  const std::string task_id = bridge::task_id_of(body);
  if (!body.contains("required_capabilities")) fail(ErrorCode::REQUEST_FIELDS_INVALID);
  const auto required = required_of(body["required_capabilities"]);
  // An agent learns an envelope only for a task its worker holds or could claim now: the
  // documented poll, resolve, claim flow, and nothing about the rest of the queue.
  std::optional<TaskPlane::AgentHold> hold;
  if (agent != nullptr) {
    hold = plane_.agent_hold(*agent, task_id);
    if (!hold) fail(ErrorCode::TASK_NOT_FOUND);
  }
  Resolved resolved;
  store_.read([&](store::Transaction& tx) {
    const auto row = task::load(tx, task_id);
    resolved = resolve_in(tx, row, task::execution_of(row), required,
                          body.contains("execution") ? &body["execution"] : nullptr, agent);
  });
  const std::string actor = agent != nullptr ? agent->agent_id : bridge::kOwnerActor;
  const store::Resolution resolution{task_id, actor, hold ? hold->attempt : 0,
                                     hold ? std::optional(hold->worker_id) : std::nullopt,
                                     resolved.envelope["execution_digest"]};
  bool seen = false;
  store_.read([&](store::Transaction& tx) { seen = tx.resolution_recorded(resolution); });
  if (!seen) {
    const std::string now = format_iso8601(store_.now());
    store_.write([&](store::Transaction& tx) { record_in(tx, resolution, resolved, now); });
  }
  return std::move(resolved.envelope);
}

// What the worker's own resolve sends for a task: its required capabilities and, unless the
// task is deterministic (its plan is re-resolved), its persisted envelope to replay.
nlohmann::json Bridge::required_of(const store::TaskRow& row) {
  return required_of(task::parse_column(row.required_capabilities_json, nlohmann::json::array()));
}

const nlohmann::json* Bridge::replayed(const nlohmann::json& execution) {
  return execution.value("action", "") != "deterministic" ? &execution : nullptr;
}

fleet::ClaimResolver::Resolved Bridge::resolve(store::Transaction& tx, const store::TaskRow& row,
                                               const nlohmann::json& execution,
                                               const Agent* agent) {
  return resolve_in(tx, row, execution, required_of(row), replayed(execution), agent);
}

void Bridge::check_resolvable(const store::TaskRow& row, const nlohmann::json& execution) {
  // `execution` is the projection this process validated a moment ago, not a stored row: what
  // resolution adds to validation is checked, not the validation again. (Every projected
  // envelope resolves without a plan: replayed, or a deterministic task's own plan.)
  check_admissible(execution, required_of(row), options_.verification_executables);
}

void Bridge::record(store::Transaction& tx, const store::TaskRow& claimed,
                    const std::string& worker_id, const Resolved& resolved, const Agent& agent,
                    const std::string& now_iso) {
  record_in(tx,
            {claimed.task_id, agent.agent_id, claimed.attempt, worker_id,
             resolved.envelope["execution_digest"]},
            resolved, now_iso);
}

nlohmann::json Bridge::required_of(const nlohmann::json& capabilities) {
  return envelope::normalize_capability_list(capabilities, ErrorCode::REQUIRED_CAPABILITIES_INVALID,
                                             ErrorCode::REQUIRED_CAPABILITIES_INVALID);
}

fleet::ClaimResolver::Resolved Bridge::resolve_in(store::Transaction& tx, const store::TaskRow& row,
                                                  const nlohmann::json& persisted,
                                                  const nlohmann::json& required,
                                                  const nlohmann::json* execution,
                                                  const Agent* agent) {
  // An agent sees only envelopes its grant could ever execute.
  if (agent != nullptr && !has_capabilities(agent->granted_capabilities,
                                            persisted.value("capability_scope", required))) {
    fail(ErrorCode::TASK_NOT_FOUND);
  }
  if (const auto plan = bridge::load_plan(tx, row.task_id)) {
    return {project_execution_envelope(GovernedBinding::from_mapping(persisted), plan->request,
                                       required),
            "registered_plan"};
  }
  return resolve_unplanned(persisted, required, execution);
}

fleet::ClaimResolver::Resolved Bridge::resolve_unplanned(const nlohmann::json& persisted,
                                                         const nlohmann::json& required,
                                                         const nlohmann::json* execution) {
  // A stored envelope is validated again when it is replayed: whoever can write the database
  // is not trusted to have written a valid one. The binding is the persisted envelope's own.
  const auto binding = GovernedBinding::from_mapping(persisted);
  Resolved resolved;
  if (execution != nullptr) {
    resolved = {validate_execution_envelope(*execution, {.binding = &binding}), "persisted_replay"};
    if (canonical_json(resolved.envelope) != canonical_json(persisted)) {
      fail(ErrorCode::EXECUTION_REPLAY_MISMATCH);
    }
    if (resolved.envelope["action"] == "deterministic") {
      fail(ErrorCode::EXECUTION_PLAN_NOT_REGISTERED);
    }
  } else if (persisted.value("action", "") == "deterministic") {
    resolved = {validate_execution_envelope(persisted, {.binding = &binding}), "task_plan"};
  } else {
    fail(ErrorCode::EXECUTION_PLAN_NOT_REGISTERED);
  }
  check_admissible(resolved.envelope, required, options_.verification_executables);
  return resolved;
}

void Bridge::record_in(store::Transaction& tx, const store::Resolution& resolution,
                       const Resolved& resolved, const std::string& now_iso) {
  // Once per task, attempt, worker and digest: a worker that resolves on every poll writes
  // nothing new, and the audit still shows each worker and attempt that saw the envelope.
  if (tx.resolution_recorded(resolution)) return;
  tx.append_event(resolution.task_id, "BRIDGE_ENVELOPE_RESOLVED", resolution.actor,
                  {{"execution_digest", resolution.execution_digest},
                   {"action", resolved.envelope["action"]},
                   {"source", resolved.source},
                   {"attempt", resolution.attempt},
                   {"worker_id", resolution.worker_id ? nlohmann::json(*resolution.worker_id)
                                                      : nlohmann::json(nullptr)}},
                  now_iso);
}

}  // namespace aios
