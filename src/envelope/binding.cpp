#include <array>
#include <string_view>

#include "aios/envelope.hpp"

namespace aios {
namespace {

using envelope::fail;
using envelope::require_string;

constexpr std::array<std::string_view, 8> kProtectedPrefixes = {
    "main", "master", "refs/", "tags/", "tag/", "release/", "baseline/", "production/"};

bool is_object_id(std::string_view oid) {
  if (oid.size() != 40 && oid.size() != 64) return false;
  return oid.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

bool is_repository(std::string_view repository) {
  const auto slash = repository.find('/');
  if (slash == std::string_view::npos) return false;
  return envelope::is_identifier(repository.substr(0, slash), "._-", 0, 99) &&
         envelope::is_identifier(repository.substr(slash + 1), "._-", 0, 99);
}

// BRANCH_RE ^agent/[A-Za-z0-9][A-Za-z0-9._/-]{2,179}$ plus the parts of git's ref-name rules
// the pattern lets through, so a binding never names a branch git would refuse.
bool is_agent_branch(std::string_view branch) {
  constexpr std::string_view kPrefix = "agent/";
  if (!branch.starts_with(kPrefix)) return false;
  const auto name = branch.substr(kPrefix.size());
  if (!envelope::is_identifier(name, "._/-", 2, 179)) return false;
  if (name.find("..") != std::string_view::npos || name.find("//") != std::string_view::npos ||
      name.find("/.") != std::string_view::npos || name.ends_with("/") || name.ends_with(".") ||
      name.ends_with(".lock") || name.find(".lock/") != std::string_view::npos) {
    return false;
  }
  return true;
}

bool is_protected(std::string_view branch) {
  for (const auto prefix : kProtectedPrefixes) {
    if (branch.starts_with(prefix)) return true;
  }
  return false;
}

const nlohmann::json& field(const nlohmann::json& value, std::string_view key, ErrorCode code) {
  const auto it = value.find(key);
  if (it == value.end()) fail(code);
  return *it;
}

}  // namespace

GovernedBinding GovernedBinding::from_mapping(const nlohmann::json& value) {
  if (!value.is_object()) fail(ErrorCode::BINDING_INVALID);
  GovernedBinding binding;
  binding.task_id = require_string(field(value, "task_id", ErrorCode::BINDING_TASK_ID_INVALID),
                                   ErrorCode::BINDING_TASK_ID_INVALID);
  if (!envelope::is_task_id(binding.task_id)) fail(ErrorCode::BINDING_TASK_ID_INVALID);
  binding.job_id = require_string(field(value, "job_id", ErrorCode::BINDING_JOB_ID_INVALID),
                                  ErrorCode::BINDING_JOB_ID_INVALID);
  if (!envelope::is_task_id(binding.job_id)) fail(ErrorCode::BINDING_JOB_ID_INVALID);
  binding.repository =
      require_string(field(value, "repository", ErrorCode::BINDING_REPOSITORY_INVALID),
                     ErrorCode::BINDING_REPOSITORY_INVALID);
  if (!is_repository(binding.repository)) fail(ErrorCode::BINDING_REPOSITORY_INVALID);
  binding.base_oid = require_string(field(value, "base_oid", ErrorCode::BINDING_BASE_OID_INVALID),
                                    ErrorCode::BINDING_BASE_OID_INVALID);
  if (!is_object_id(binding.base_oid)) fail(ErrorCode::BINDING_BASE_OID_INVALID);
  binding.expected_branch_oid = require_string(
      field(value, "expected_branch_oid", ErrorCode::BINDING_EXPECTED_BRANCH_OID_INVALID),
      ErrorCode::BINDING_EXPECTED_BRANCH_OID_INVALID);
  if (!is_object_id(binding.expected_branch_oid) ||
      binding.expected_branch_oid.size() != binding.base_oid.size()) {
    fail(ErrorCode::BINDING_EXPECTED_BRANCH_OID_INVALID);
  }
  binding.target_branch =
      require_string(field(value, "target_branch", ErrorCode::BINDING_TARGET_BRANCH_INVALID),
                     ErrorCode::BINDING_TARGET_BRANCH_INVALID);
  if (is_protected(binding.target_branch)) fail(ErrorCode::BINDING_TARGET_BRANCH_PROTECTED);
  if (!is_agent_branch(binding.target_branch)) fail(ErrorCode::BINDING_TARGET_BRANCH_INVALID);
  binding.branch_mode =
      require_string(field(value, "branch_mode", ErrorCode::BINDING_BRANCH_MODE_INVALID),
                     ErrorCode::BINDING_BRANCH_MODE_INVALID);
  if (binding.branch_mode != "CREATE_NEW" && binding.branch_mode != "UPDATE_EXISTING") {
    fail(ErrorCode::BINDING_BRANCH_MODE_INVALID);
  }
  // A new branch starts at the base: any other expected tip would be a branch that exists.
  if (binding.branch_mode == "CREATE_NEW" && binding.expected_branch_oid != binding.base_oid) {
    fail(ErrorCode::BINDING_EXPECTED_BRANCH_OID_INVALID);
  }
  binding.generation =
      envelope::require_int(field(value, "generation", ErrorCode::BINDING_GENERATION_INVALID), 1,
                            2147483647, ErrorCode::BINDING_GENERATION_INVALID);
  binding.idempotency_key =
      require_string(field(value, "idempotency_key", ErrorCode::BINDING_IDEMPOTENCY_KEY_INVALID),
                     ErrorCode::BINDING_IDEMPOTENCY_KEY_INVALID);
  if (!envelope::is_idempotency_key(binding.idempotency_key)) {
    fail(ErrorCode::BINDING_IDEMPOTENCY_KEY_INVALID);
  }
  return binding;
}

nlohmann::json GovernedBinding::to_public() const {
  return {
      {"task_id", task_id},
      {"job_id", job_id},
      {"repository", repository},
      {"base_oid", base_oid},
      {"expected_branch_oid", expected_branch_oid},
      {"target_branch", target_branch},
      {"branch_mode", branch_mode},
      {"generation", generation},
      {"idempotency_key", idempotency_key},
  };
}

}  // namespace aios
