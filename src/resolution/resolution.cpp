#include "aios/resolution.hpp"

#include "aios/canonical.hpp"
#include "aios/capability.hpp"
#include "aios/envelope.hpp"
#include "aios/task.hpp"

namespace aios::resolution {
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
    check_verification_allowed(envelope, verification_executables);
  }
  check_scope_holds(envelope, required);
}

// What the worker's own resolve sends as required capabilities: the task's.
nlohmann::json required_by(const store::TaskRow& row) {
  return resolution::required_of(
      task::parse_column(row.required_capabilities_json, nlohmann::json::array()));
}

// What the worker's own resolve replays: its persisted envelope, unless the task is
// deterministic (its plan is re-resolved).
const nlohmann::json* replayed(const nlohmann::json& execution) {
  return execution.value("action", "") != "deterministic" ? &execution : nullptr;
}

}  // namespace

std::optional<Plan> load_plan(store::Transaction& tx, const std::string& task_id) {
  const auto record = tx.load_plan(task_id);
  if (!record) return std::nullopt;
  return Plan{record->plan_sha256, task::parse_column(record->plan_json, nlohmann::json::object()),
              record->execution_digest};
}

void check_verification_allowed(const nlohmann::json& envelope,
                                const std::set<std::string>& allowed) {
  for (const auto& command : envelope.at("verification")) {
    if (!allowed.contains(command.at("argv").at(0).get<std::string>())) {
      fail(ErrorCode::VERIFICATION_EXECUTABLE_NOT_ALLOWED);
    }
  }
}

nlohmann::json required_of(const nlohmann::json& capabilities) {
  return envelope::normalize_capability_list(capabilities, ErrorCode::REQUIRED_CAPABILITIES_INVALID,
                                             ErrorCode::REQUIRED_CAPABILITIES_INVALID);
}

Resolver::Resolver(std::set<std::string> verification_executables)
    : verification_executables_(std::move(verification_executables)) {}

Resolved Resolver::for_claim(store::Transaction& tx, const store::TaskRow& row,
                             const nlohmann::json& execution, const store::Names* granted) const {
  auto resolved = resolve(tx, row, execution, required_by(row), replayed(execution), granted);
  // Another digest than the task's is one the worker would refuse: the task is left QUEUED for
  // the rebind.
  if (resolved.envelope.value("execution_digest", "") != row.execution_digest) {
    fail(ErrorCode::TASK_ENVELOPE_DRIFT);
  }
  return resolved;
}

Resolved Resolver::resolve(store::Transaction& tx, const store::TaskRow& row,
                           const nlohmann::json& persisted, const nlohmann::json& required,
                           const nlohmann::json* execution, const store::Names* granted) const {
  // An agent sees only envelopes its grant could ever execute.
  if (granted != nullptr &&
      !has_capabilities(nlohmann::json(*granted), persisted.value("capability_scope", required))) {
    fail(ErrorCode::TASK_NOT_FOUND);
  }
  if (const auto plan = load_plan(tx, row.task_id)) {
    return {project_execution_envelope(GovernedBinding::from_mapping(persisted), plan->request,
                                       required),
            "registered_plan"};
  }
  return resolve_unplanned(persisted, required, execution);
}

void Resolver::check_resolvable(const store::TaskRow& row, const nlohmann::json& execution) const {
  check_admissible(execution, required_by(row), verification_executables_);
}

Resolved Resolver::resolve_unplanned(const nlohmann::json& persisted,
                                     const nlohmann::json& required,
                                     const nlohmann::json* execution) const {
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
  check_admissible(resolved.envelope, required, verification_executables_);
  return resolved;
}

void Resolver::record(store::Transaction& tx, const store::Resolution& resolution,
                      const Resolved& resolved, const std::string& now_iso) {
  // Once per task, attempt, worker and digest: a worker that resolves on every poll writes
  // nothing new, and the audit still shows each worker and attempt that saw the envelope.
  tx.record_resolution(resolution,
                       {{"execution_digest", resolution.execution_digest},
                        {"action", resolved.envelope["action"]},
                        {"source", resolved.source},
                        {"attempt", resolution.attempt},
                        {"worker_id", resolution.worker_id ? nlohmann::json(*resolution.worker_id)
                                                           : nlohmann::json(nullptr)}},
                       now_iso);
}

}  // namespace aios::resolution
