#include <string>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"

namespace aios {
namespace {

using envelope::fail;
using envelope::get_or;
using envelope::kEmptyArray;
using envelope::kEmptyObject;
using envelope::kEmptyText;
using envelope::kNull;

constexpr std::size_t kMaxTaskBytes = 512 * 1024;
constexpr std::size_t kMaxMetadataBytes = 64 * 1024;
constexpr std::size_t kMaxGoalCodePoints = 12000;
constexpr std::size_t kMaxInstructionsCodePoints = 32000;
constexpr std::size_t kMaxCriteria = 32;

const nlohmann::json kGlobalScope = "global";
const nlohmann::json kDefaultMaxAttempts = 3;
const nlohmann::json kDefaultPriority = 0;

std::string checked_goal(const nlohmann::json& value) {
  std::string goal = envelope::require_text(value, ErrorCode::TASK_GOAL_INVALID);
  if (count_code_points(goal) > kMaxGoalCodePoints) fail(ErrorCode::TASK_GOAL_INVALID);
  return goal;
}

nlohmann::json checked_instructions(const nlohmann::json& value) {
  const std::string& text = envelope::require_string(value, ErrorCode::TASK_INSTRUCTIONS_INVALID);
  if (count_code_points(text) > kMaxInstructionsCodePoints) {
    fail(ErrorCode::TASK_INSTRUCTIONS_INVALID);
  }
  return value;
}

nlohmann::json checked_criteria(const nlohmann::json& value) {
  if (!value.is_array() || value.size() > kMaxCriteria) {
    fail(ErrorCode::TASK_SUCCESS_CRITERIA_INVALID);
  }
  for (const auto& item : value) {
    envelope::require_exact_keys(item, {"id", "description"},
                                 ErrorCode::TASK_SUCCESS_CRITERIA_INVALID);
    const auto id = envelope::require_text(item["id"], ErrorCode::TASK_SUCCESS_CRITERIA_INVALID);
    const auto description =
        envelope::require_text(item["description"], ErrorCode::TASK_SUCCESS_CRITERIA_INVALID);
    if (count_code_points(id) > 120 || count_code_points(description) > 1000) {
      fail(ErrorCode::TASK_SUCCESS_CRITERIA_INVALID);
    }
  }
  return value;
}

nlohmann::json checked_constraints(const nlohmann::json& value) {
  if (!value.is_object()) fail(ErrorCode::TASK_CONSTRAINTS_INVALID);
  if (envelope::has_secret_field(value)) fail(ErrorCode::TASK_SECRET_FIELD_DENY);
  return value;
}

nlohmann::json scope_id(const nlohmann::json& value) {
  if (value.is_null()) return value;
  const std::string& id = envelope::require_string(value, ErrorCode::TASK_SCOPE_INVALID);
  if (!envelope::is_identifier(id, "._:-", 0, 127)) fail(ErrorCode::TASK_SCOPE_INVALID);
  return value;
}

// Fairness groups tasks by tenant, or by tenant and project; a global task has neither.
void add_scope(const nlohmann::json& request, nlohmann::json& task) {
  const auto& type = get_or(request, "scope_type", kGlobalScope);
  const auto tenant = scope_id(get_or(request, "tenant_id", kNull));
  const auto project = scope_id(get_or(request, "project_id", kNull));
  if (type == "global") {
    if (!tenant.is_null() || !project.is_null()) fail(ErrorCode::TASK_SCOPE_INVALID);
  } else if (type == "tenant") {
    if (tenant.is_null()) fail(ErrorCode::TASK_SCOPE_INVALID);
  } else if (type == "project") {
    if (tenant.is_null() || project.is_null()) fail(ErrorCode::TASK_SCOPE_INVALID);
  } else {
    fail(ErrorCode::TASK_SCOPE_INVALID);
  }
  task["scope_type"] = type;
  task["tenant_id"] = tenant;
  task["project_id"] = project;
}

// Owner metadata is kept, except the two keys the projection owns: a caller may send them only
// when they equal what the projection computes.
nlohmann::json project_metadata(const nlohmann::json& value, const GovernedBinding& binding,
                                const nlohmann::json& execution) {
  if (!value.is_object()) fail(ErrorCode::TASK_METADATA_INVALID);
  nlohmann::json metadata = value;
  const nlohmann::json projection = {
      {"schema", kTaskProjectionSchema},
      {"task_id", binding.task_id},
      {"job_id", binding.job_id},
      {"execution_digest", execution["execution_digest"]},
  };
  if (const auto it = metadata.find("execution"); it != metadata.end()) {
    const auto given = validate_execution_envelope(*it, {.binding = &binding});
    if (given["execution_digest"] != execution["execution_digest"]) {
      fail(ErrorCode::EXECUTION_PROJECTION_CONFLICT);
    }
    metadata.erase(it);
  }
  if (const auto it = metadata.find("execution_projection"); it != metadata.end()) {
    if (*it != projection) fail(ErrorCode::EXECUTION_PROJECTION_CONFLICT);
    metadata.erase(it);
  }
  if (envelope::canonical_size(metadata) > kMaxMetadataBytes) {
    fail(ErrorCode::TASK_METADATA_TOO_LARGE);
  }
  metadata["execution"] = execution;
  metadata["execution_projection"] = projection;
  return metadata;
}

}  // namespace

nlohmann::json project_online_task(const GovernedBinding& binding,
                                   const nlohmann::json& task_request,
                                   const nlohmann::json& execution_request) {
  if (!task_request.is_object()) fail(ErrorCode::TASK_REQUEST_INVALID);
  envelope::require_known_keys(task_request,
                               {"task_id", "goal", "instructions", "success_criteria",
                                "constraints", "required_capabilities", "max_attempts", "priority",
                                "scope_type", "tenant_id", "project_id", "metadata"},
                               ErrorCode::TASK_FIELDS_INVALID);
  if (const auto it = task_request.find("task_id");
      it != task_request.end() && *it != binding.task_id) {
    fail(ErrorCode::TASK_BINDING_MISMATCH);
  }
  const auto& required_value = get_or(task_request, "required_capabilities", kEmptyArray);
  // Checked before projection so an unknown requirement is named as such, not as a mismatch.
  const nlohmann::json required =
      required_value.is_array() && required_value.empty()
          ? required_value
          : envelope::normalize_capability_list(required_value,
                                                ErrorCode::REQUIRED_CAPABILITIES_INVALID,
                                                ErrorCode::REQUIRED_CAPABILITIES_INVALID);

  nlohmann::json execution_value =
      execution_request.is_null() ? nlohmann::json::object() : execution_request;
  if (!execution_value.is_object()) fail(ErrorCode::EXECUTION_REQUEST_INVALID);
  const auto& action = get_or(execution_value, "action", kNull);
  if (action == "agent_runtime" || action == "engineering") {
    const auto& adapter = get_or(execution_value, "adapter", kNull);
    if (action == "agent_runtime" && adapter != "hermes" && adapter != "openclaw") {
      fail(ErrorCode::AGENT_RUNTIME_ADAPTER_INVALID);
    }
    if (get_or(execution_value, "runtime_input", kNull).is_null()) {
      execution_value["runtime_input"] = {
          {"goal", get_or(task_request, "goal", kNull)},
          {"instructions", get_or(task_request, "instructions", kEmptyText)},
          {"success_criteria", get_or(task_request, "success_criteria", kEmptyArray)},
          {"constraints", get_or(task_request, "constraints", kEmptyObject)},
      };
    }
  }
  const auto execution = project_execution_envelope(binding, execution_value, required);

  nlohmann::json task = binding.to_public();
  task["goal"] = checked_goal(get_or(task_request, "goal", kNull));
  task["instructions"] = checked_instructions(get_or(task_request, "instructions", kEmptyText));
  task["success_criteria"] =
      checked_criteria(get_or(task_request, "success_criteria", kEmptyArray));
  task["constraints"] = checked_constraints(get_or(task_request, "constraints", kEmptyObject));
  task["required_capabilities"] = required.empty() ? execution["capability_scope"] : required;
  task["max_attempts"] =
      envelope::require_int(get_or(task_request, "max_attempts", kDefaultMaxAttempts), 1, 20,
                            ErrorCode::TASK_MAX_ATTEMPTS_INVALID);
  task["priority"] = envelope::require_int(get_or(task_request, "priority", kDefaultPriority),
                                           -1000, 1000, ErrorCode::TASK_PRIORITY_INVALID);
  add_scope(task_request, task);
  task["metadata"] =
      project_metadata(get_or(task_request, "metadata", kEmptyObject), binding, execution);
  if (envelope::canonical_size(task) > kMaxTaskBytes) fail(ErrorCode::TASK_TOO_LARGE);
  return task;
}

}  // namespace aios
