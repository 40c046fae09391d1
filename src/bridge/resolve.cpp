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

}  // namespace

nlohmann::json Bridge::resolve_envelope(const nlohmann::json& body, const Agent* agent) {
  envelope::require_known_keys(body, {"task_id", "required_capabilities", "execution"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  const std::string task_id = bridge::task_id_of(body);
  if (!body.contains("required_capabilities")) fail(ErrorCode::REQUEST_FIELDS_INVALID);
  const auto required = envelope::normalize_capability_list(
      body["required_capabilities"], ErrorCode::REQUIRED_CAPABILITIES_INVALID,
      ErrorCode::REQUIRED_CAPABILITIES_INVALID);
  // An agent learns an envelope only for a task its worker holds or could claim now: the
  // documented poll, resolve, claim flow, and nothing about the rest of the queue.
  std::optional<TaskPlane::AgentHold> hold;
  if (agent != nullptr) {
    hold = plane_.agent_hold(*agent, task_id);
    if (!hold) fail(ErrorCode::TASK_NOT_FOUND);
  }
  nlohmann::json resolved;
  std::string source;
  store_.read([&](store::Transaction& tx) {
    const auto row = fleet::load_existing_task(tx, task_id);
    const auto persisted = fleet::execution_of(row);
    // An agent sees only envelopes its grant could ever execute.
    if (agent != nullptr && !has_capabilities(agent->granted_capabilities,
                                              persisted.value("capability_scope", required))) {
      fail(ErrorCode::TASK_NOT_FOUND);
    }
    const auto binding = bridge::binding_of(row);
    if (const auto plan = bridge::load_plan(tx, task_id)) {
      resolved = project_execution_envelope(binding, plan->request, required);
      source = "registered_plan";
    } else if (body.contains("execution")) {
      resolved = validate_execution_envelope(body["execution"], {.binding = &binding});
      if (canonical_json(resolved) != canonical_json(persisted)) {
        fail(ErrorCode::EXECUTION_REPLAY_MISMATCH);
      }
      if (resolved["action"] == "deterministic") fail(ErrorCode::EXECUTION_PLAN_NOT_REGISTERED);
      // An engineering envelope's verification list is the allowlist the worker reruns the
      // backend's requests against, so it passes the same executable allowlist as a plan's.
      if (resolved["action"] == "engineering") {
        bridge::check_verification_allowed(resolved, options_.verification_executables);
      }
      check_scope_holds(resolved, required);
      source = "persisted_replay";
    } else if (persisted.value("action", "") == "deterministic") {
      resolved = validate_execution_envelope(persisted, {.binding = &binding});
      bridge::check_verification_allowed(resolved, options_.verification_executables);
      check_scope_holds(resolved, required);
      source = "task_plan";
    } else {
      fail(ErrorCode::EXECUTION_PLAN_NOT_REGISTERED);
    }
  });
  record_resolution(task_id, agent, hold, resolved, source);
  return resolved;
}

void Bridge::record_resolution(const std::string& task_id, const Agent* agent,
                               const std::optional<TaskPlane::AgentHold>& hold,
                               const nlohmann::json& resolved, const std::string& source) {
  // Once per task, attempt, worker and digest: a worker that resolves on every poll writes
  // nothing new, and the audit still shows each worker and attempt that saw the envelope.
  const std::string actor = agent != nullptr ? agent->agent_id : bridge::kOwnerActor;
  const nlohmann::json worker = hold ? nlohmann::json(hold->worker_id) : nlohmann::json(nullptr);
  const std::int64_t attempt = hold ? hold->attempt : 0;
  const std::string digest = resolved["execution_digest"];
  const store::Resolution resolution{task_id, actor, attempt,
                                     hold ? std::optional(hold->worker_id) : std::nullopt, digest};
  bool seen = false;
  store_.read([&](store::Transaction& tx) { seen = tx.resolution_recorded(resolution); });
  if (seen) return;
  const std::string now = format_iso8601(store_.now());
  store_.write([&](store::Transaction& tx) {
    if (tx.resolution_recorded(resolution)) return;
    tx.append_event(task_id, "BRIDGE_ENVELOPE_RESOLVED", actor,
                    {{"execution_digest", digest},
                     {"action", resolved["action"]},
                     {"source", source},
                     {"attempt", attempt},
                     {"worker_id", worker}},
                    now);
  });
}

}  // namespace aios
