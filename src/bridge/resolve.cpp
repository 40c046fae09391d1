// POST /v2/execution-envelope: the route over resolution::Resolver, with who may ask
// and the audit row of what was resolved.
#include "aios/bridge.hpp"
#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "bridge/internal.hpp"

namespace aios {

nlohmann::json Bridge::resolve_envelope(const nlohmann::json& body, const Agent* agent) {
  envelope::require_known_keys(body, {"task_id", "required_capabilities", "execution"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  const std::string task_id = bridge::task_id_of(body);
  if (!body.contains("required_capabilities")) envelope::fail(ErrorCode::REQUEST_FIELDS_INVALID);
  const auto required = resolution::required_of(body["required_capabilities"]);
  // An agent learns an envelope only for a task its worker holds or could claim now: the
  // documented poll, resolve, claim flow, and nothing about the rest of the queue.
  std::optional<TaskPlane::AgentHold> hold;
  if (agent != nullptr) {
    hold = plane_.agent_hold(*agent, task_id);
    if (!hold) envelope::fail(ErrorCode::TASK_NOT_FOUND);
  }
  resolution::Resolved resolved;
  store_.read([&](store::Transaction& tx) {
    const auto row = task::load(tx, task_id);
    resolved = resolver_.resolve(tx, row, task::execution_of(row), required,
                                 body.contains("execution") ? &body["execution"] : nullptr,
                                 agent != nullptr ? &agent->granted_capabilities : nullptr);
  });
  const std::string actor = agent != nullptr ? agent->agent_id : bridge::kOwnerActor;
  const store::Resolution resolution{task_id, actor, hold ? hold->attempt : 0,
                                     hold ? std::optional(hold->worker_id) : std::nullopt,
                                     resolved.envelope["execution_digest"]};
  bool seen = false;
  store_.read([&](store::Transaction& tx) { seen = tx.resolution_recorded(resolution); });
  if (!seen) {
    const std::string now = format_iso8601(store_.now());
    store_.write([&](store::Transaction& tx) {
      resolution::Resolver::record(tx, resolution, resolved, now);
    });
  }
  return std::move(resolved.envelope);
}

}  // namespace aios
