#include "aios/envelope.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "aios/canonical.hpp"
#include "aios/capability.hpp"
#include "aios/gateway.hpp"

namespace aios {
namespace {

using envelope::fail;
using envelope::get_or;
using envelope::kEmptyArray;
using envelope::kEmptyObject;
using envelope::kEmptyText;
using envelope::kNull;

constexpr std::size_t kMaxEnvelopeBytes = 16 * 1024 * 1024;

bool is_action(std::string_view action) {
  return action == "deterministic" || action == "source_capture" || action == "agent_runtime" ||
         action == "engineering";
}

// The actions that end in a governed commit, and so hold a writer lease and a commit key.
bool writes(std::string_view action) {
  return action == "deterministic" || action == "engineering";
}

nlohmann::json workspace() {
  return {{"authority_git_dir", kAuthorityGitDir}};
}

// The default commit key changes with the plan's content, so a re-registered plan for the same
// binding can never replay the commit of an earlier one.
// An engineering plan's content is its runtime input; the change set comes later, from the
// worktree.
std::string default_commit_key(const GovernedBinding& binding, const nlohmann::json& change_set,
                               const nlohmann::json& verification,
                               const nlohmann::json& runtime_input) {
  nlohmann::json basis = {{"idempotency_key", binding.idempotency_key},
                          {"change_set", change_set},
                          {"verification", verification}};
  if (!runtime_input.empty()) basis["runtime_input"] = runtime_input;
  return "commit-" + digest(basis).substr(0, 32);
}

nlohmann::json project_governance(std::string_view action, const nlohmann::json& request,
                                  const GovernedBinding& binding, const nlohmann::json& change_set,
                                  const nlohmann::json& verification,
                                  const nlohmann::json& runtime_input) {
  if (!writes(action)) {
    if (request != kEmptyObject) fail(ErrorCode::GOVERNANCE_FIELDS_INVALID);
    return {{"writer_lease", false}};
  }
  envelope::require_known_keys(request, {"commit_idempotency_key"},
                               ErrorCode::GOVERNANCE_FIELDS_INVALID);
  std::string key;
  if (const auto& given = get_or(request, "commit_idempotency_key", kNull); given.is_null()) {
    key = default_commit_key(binding, change_set, verification,
                             action == "engineering" ? runtime_input : kEmptyObject);
  } else {
    key = envelope::require_string(given, ErrorCode::GOVERNANCE_COMMIT_KEY_INVALID);
    if (!envelope::is_idempotency_key(key)) fail(ErrorCode::GOVERNANCE_COMMIT_KEY_INVALID);
  }
  return {{"commit_idempotency_key", key}, {"writer_lease", true}};
}

// What a run through the provider gateway may spend (gateway::parse_budget, as written there):
// only an action that runs an agent or a backend has model calls to bound.
void check_model_budget(std::string_view action, const nlohmann::json& budget) {
  const auto parsed = gateway::parse_budget(budget);
  if (!parsed || parsed->to_json() != budget ||
      (action != "agent_runtime" && action != "engineering")) {
    fail(ErrorCode::MODEL_BUDGET_INVALID);
  }
}

void check_governance(std::string_view action, const nlohmann::json& governance) {
  if (!writes(action)) {
    if (governance != nlohmann::json{{"writer_lease", false}}) fail(ErrorCode::GOVERNANCE_INVALID);
    return;
  }
  envelope::require_exact_keys(governance, {"commit_idempotency_key", "writer_lease"},
                               ErrorCode::GOVERNANCE_INVALID);
  const auto& key = governance["commit_idempotency_key"];
  if (governance["writer_lease"] != true || !key.is_string() ||
      !envelope::is_idempotency_key(key.get_ref<const std::string&>())) {
    fail(ErrorCode::GOVERNANCE_INVALID);
  }
}

void check_source_capture(const nlohmann::json& env, bool mutates) {
  if (mutates) fail(ErrorCode::SOURCE_CAPTURE_MUTATION_DENY);
  const auto& adapter = env["adapter"];
  if (adapter != "source_capture" && adapter != "compact_interface_map") {
    fail(ErrorCode::EXECUTION_ADAPTER_INVALID);
  }
  if (envelope::normalize_source_signals(env["source_signals"]) != env["source_signals"]) {
    fail(ErrorCode::SOURCE_CAPTURE_SIGNALS_INVALID);
  }
  if (env["runtime_input"] != kEmptyObject) fail(ErrorCode::SOURCE_CAPTURE_RUNTIME_INPUT_DENY);
}

// The seed's order: mutation, adapter, canonical input, runtime capability, source signals.
void check_agent_runtime(const nlohmann::json& env, bool mutates) {
  if (mutates) fail(ErrorCode::AGENT_RUNTIME_MUTATION_DENY);
  const auto& adapter = env["adapter"];
  if (adapter != "hermes" && adapter != "openclaw") fail(ErrorCode::AGENT_RUNTIME_ADAPTER_INVALID);
  if (envelope::normalize_agent_runtime_input(env["runtime_input"]) != env["runtime_input"]) {
    fail(ErrorCode::AGENT_RUNTIME_INPUT_NOT_CANONICAL);
  }
  const std::string needed = "agent.runtime." + adapter.get<std::string>();
  const auto& scope = env["capability_scope"];
  if (std::find(scope.begin(), scope.end(), needed) == scope.end()) {
    fail(ErrorCode::AGENT_RUNTIME_CAPABILITY_REQUIRED);
  }
  if (env["source_signals"] != kEmptyArray) fail(ErrorCode::AGENT_RUNTIME_SOURCE_SIGNALS_DENY);
}

// The backend changes the worktree; the worker reads the change from git and commits it through
// the Bridge, so the envelope holds the task, not a change set.
void check_engineering(const nlohmann::json& env) {
  const auto& adapter = env["adapter"];
  if (adapter != "codex" && adapter != "hermes" && adapter != "openclaw") {
    fail(ErrorCode::ENGINEERING_ADAPTER_INVALID);
  }
  if (!env["change_set"].empty()) fail(ErrorCode::ENGINEERING_CHANGE_SET_DENY);
  if (envelope::normalize_agent_runtime_input(env["runtime_input"]) != env["runtime_input"]) {
    fail(ErrorCode::AGENT_RUNTIME_INPUT_NOT_CANONICAL);
  }
  // The scope's names are task aliases (governed.git.write, governed.write.branch, ...); what
  // they grant must include both halves of the governed write.
  const auto granted = normalize_required_capabilities(env["capability_scope"]);
  if (!granted.contains("governed.git.write.branch") ||
      !granted.contains("governed.git.write.file")) {
    fail(ErrorCode::ENGINEERING_CAPABILITY_REQUIRED);
  }
  if (env["source_signals"] != kEmptyArray) fail(ErrorCode::ENGINEERING_SOURCE_SIGNALS_DENY);
}

void check_deterministic(const nlohmann::json& env) {
  if (env["adapter"] != "deterministic") fail(ErrorCode::EXECUTION_ADAPTER_INVALID);
  if (env["change_set"].empty()) fail(ErrorCode::CHANGE_SET_INVALID);
  if (env["source_signals"] != kEmptyArray) fail(ErrorCode::DETERMINISTIC_SOURCE_SIGNALS_DENY);
  if (env["runtime_input"] != kEmptyObject) fail(ErrorCode::DETERMINISTIC_RUNTIME_INPUT_DENY);
}

nlohmann::json without_digest(const nlohmann::json& env) {
  nlohmann::json body = env;
  body.erase("execution_digest");
  return body;
}

}  // namespace

std::string execution_digest_of(const nlohmann::json& envelope) {
  return digest(without_digest(envelope));
}

nlohmann::json validate_execution_envelope(const nlohmann::json& env,
                                           const EnvelopeChecks& checks) {
  if (!env.is_object()) fail(ErrorCode::EXECUTION_ENVELOPE_INVALID);
  const std::string body = canonical_json(without_digest(env));
  if (body.size() > kMaxEnvelopeBytes) fail(ErrorCode::EXECUTION_ENVELOPE_TOO_LARGE);
  // The seed's twenty fields, and model_budget (ours) only when the owner set one, so an
  // envelope without one is byte for byte the seed's.
  const bool budgeted = env.contains("model_budget");
  envelope::require_known_keys(env, {"schema",           "task_id",          "job_id",
                                     "repository",       "base_oid",         "expected_branch_oid",
                                     "target_branch",    "branch_mode",      "generation",
                                     "idempotency_key",  "action",           "adapter",
                                     "capability_scope", "change_set",       "verification",
                                     "source_signals",   "runtime_input",    "governance",
                                     "workspace",        "execution_digest", "model_budget"},
                               ErrorCode::EXECUTION_ENVELOPE_FIELDS_INVALID);
  if (env.size() != (budgeted ? 21U : 20U)) fail(ErrorCode::EXECUTION_ENVELOPE_FIELDS_INVALID);
  if (env["schema"] != kExecutionSchema) fail(ErrorCode::EXECUTION_SCHEMA_INVALID);
  const auto binding = GovernedBinding::from_mapping(env);
  if (checks.binding != nullptr && binding != *checks.binding) {
    fail(ErrorCode::EXECUTION_BINDING_MISMATCH);
  }
  const auto& action_value = env["action"];
  if (!action_value.is_string() || !is_action(action_value.get_ref<const std::string&>())) {
    fail(ErrorCode::EXECUTION_ACTION_UNSUPPORTED);
  }
  const std::string& action = action_value.get_ref<const std::string&>();
  if (!env["adapter"].is_string()) fail(ErrorCode::EXECUTION_ADAPTER_INVALID);
  const auto& scope = env["capability_scope"];
  if (envelope::normalize_capability_list(scope, ErrorCode::CAPABILITY_SCOPE_INVALID,
                                          ErrorCode::CAPABILITY_SCOPE_REQUIRED) != scope) {
    fail(ErrorCode::CAPABILITY_SCOPE_INVALID);
  }
  // Both parts are checked in full before either decides whether the envelope mutates.
  const bool changes = !envelope::normalize_change_set(env["change_set"]).empty();
  const bool verifies = !envelope::normalize_verification(env["verification"]).empty();
  const bool mutates = changes || verifies;
  if (action == "source_capture") {
    check_source_capture(env, mutates);
  } else if (action == "agent_runtime") {
    check_agent_runtime(env, mutates);
  } else if (action == "engineering") {
    check_engineering(env);
  } else {
    check_deterministic(env);
  }
  check_governance(action, env["governance"]);
  if (budgeted) check_model_budget(action, env["model_budget"]);
  if (env["workspace"] != workspace()) fail(ErrorCode::EXECUTION_WORKSPACE_INVALID);
  const auto& declared = env["execution_digest"];
  if (!declared.is_string() || !is_sha256_hex(declared.get_ref<const std::string&>())) {
    fail(ErrorCode::EXECUTION_DIGEST_INVALID);
  }
  if (declared != sha256_hex(body)) fail(ErrorCode::EXECUTION_DIGEST_MISMATCH);
  if (checks.worker_capabilities != nullptr &&
      !has_capabilities(*checks.worker_capabilities, scope)) {
    fail(ErrorCode::EXECUTION_WORKER_CAPABILITY_DENY);
  }
  return env;
}

nlohmann::json project_execution_envelope(const GovernedBinding& binding,
                                          const nlohmann::json& request,
                                          const nlohmann::json& required_capabilities) {
  if (!request.is_object()) fail(ErrorCode::EXECUTION_REQUEST_INVALID);
  envelope::require_known_keys(
      request,
      {"action", "adapter", "capability_scope", "change_set", "verification", "source_signals",
       "runtime_input", "governance", "model_budget"},
      ErrorCode::EXECUTION_REQUEST_FIELDS_INVALID);
  // Python's `str(request.get("action") or "source_capture")`: absent, null or "" default.
  const auto& action_value = get_or(request, "action", kEmptyText);
  if (!action_value.is_string()) fail(ErrorCode::EXECUTION_ACTION_UNSUPPORTED);
  const std::string action =
      action_value == kEmptyText ? "source_capture" : action_value.get<std::string>();
  if (!is_action(action)) fail(ErrorCode::EXECUTION_ACTION_UNSUPPORTED);
  const auto& adapter_value = get_or(request, "adapter", kEmptyText);
  if (!adapter_value.is_string()) fail(ErrorCode::EXECUTION_ADAPTER_INVALID);
  std::string adapter = adapter_value.get<std::string>();
  if (adapter.empty()) adapter = action == "deterministic" ? "deterministic" : "source_capture";

  if (!required_capabilities.is_array()) fail(ErrorCode::REQUIRED_CAPABILITIES_INVALID);
  const auto& scope_source = get_or(request, "capability_scope", required_capabilities);
  const auto scope = envelope::normalize_capability_list(
      scope_source, ErrorCode::CAPABILITY_SCOPE_INVALID, ErrorCode::CAPABILITY_SCOPE_REQUIRED);
  const auto& change_set = get_or(request, "change_set", kEmptyArray);
  const auto& verification = get_or(request, "verification", kEmptyArray);
  const auto& signals = get_or(request, "source_signals", kEmptyArray);
  const auto& runtime_input = get_or(request, "runtime_input", kEmptyObject);

  // Parts that do not belong to the action are carried, not dropped, so that validation refuses
  // them by name instead of silently ignoring what the owner asked for.
  nlohmann::json env = binding.to_public();
  env["schema"] = kExecutionSchema;
  env["action"] = action;
  env["adapter"] = adapter;
  env["capability_scope"] = scope;
  env["change_set"] = change_set;
  env["verification"] = verification;
  env["source_signals"] =
      action == "source_capture" ? envelope::normalize_source_signals(signals) : signals;
  // As the seed's _agent_runtime_input(request.get("runtime_input")): absent is refused too.
  env["runtime_input"] =
      action == "agent_runtime" || action == "engineering"
          ? envelope::normalize_agent_runtime_input(get_or(request, "runtime_input", kNull))
          : runtime_input;
  env["governance"] = project_governance(action, get_or(request, "governance", kEmptyObject),
                                         binding, change_set, verification, env["runtime_input"]);
  env["workspace"] = workspace();
  if (const auto& budget = get_or(request, "model_budget", kNull); !budget.is_null()) {
    env["model_budget"] = budget;
  }
  env["execution_digest"] = execution_digest_of(env);
  validate_execution_envelope(env, {.binding = &binding});
  if (!required_capabilities.empty() &&
      !required_capabilities_subset(scope, required_capabilities)) {
    fail(ErrorCode::EXECUTION_CAPABILITY_SCOPE_MISMATCH);
  }
  return env;
}

}  // namespace aios
