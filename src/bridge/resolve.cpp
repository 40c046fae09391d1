// Canonical execution-envelope resolution (the seed's CanonicalBridgeExecutionResolver
// contract): a registered plan wins; a read-only envelope is replayed exactly as persisted; a
// task projected as deterministic is its own registered plan; anything else is refused.
#include <SQLiteCpp/SQLiteCpp.h>

#include "aios/bridge.hpp"
#include "aios/canonical.hpp"
#include "aios/capability.hpp"
#include "bridge/internal.hpp"
#include "envelope/fields.hpp"
#include "envelope/parts.hpp"
#include "fleet/internal.hpp"

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
  const std::string now = format_iso8601(clock_.now());
  nlohmann::json resolved;
  std::string source;
  db_.write([&](SQLite::Database& db) {
    const auto row = fleet::load_existing_task(db, task_id);
    const auto persisted = fleet::execution_of(row);
    // An agent sees only envelopes its grant could ever execute.
    if (agent != nullptr && !has_capabilities(agent->granted_capabilities,
                                              persisted.value("capability_scope", required))) {
      fail(ErrorCode::TASK_NOT_FOUND);
    }
    const auto binding = bridge::binding_of(row);
    if (const auto plan = bridge::load_plan(db, task_id)) {
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
    store::append_event(db, task_id, "BRIDGE_ENVELOPE_RESOLVED",
                        agent != nullptr ? agent->agent_id : bridge::kOwnerActor,
                        {{"execution_digest", resolved["execution_digest"]},
                         {"action", resolved["action"]},
                         {"source", source}},
                        now);
  });
  return resolved;
}

}  // namespace aios
