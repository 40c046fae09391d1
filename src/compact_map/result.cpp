// The worker's source-capture result around an interface map (seed:
// build_compact_interface_map_result), with the profile/classification revalidation the seed
// adds before a result is submitted.
#include <string>

#include "aios/canonical.hpp"
#include "aios/compact_map.hpp"
#include "aios/error.hpp"

namespace aios::compact_map {
namespace {

// Python's str(value or default) for the values a map can carry: a missing or empty value
// takes the default, a string stays itself, anything else can name no profile.
std::string text_or(const nlohmann::json& map, const char* key, std::string_view fallback) {
  const auto it = map.find(key);
  if (it == map.end() || it->is_null() ||
      (it->is_string() && it->get_ref<const std::string&>().empty())) {
    return std::string(fallback);
  }
  if (!it->is_string()) throw Error(ErrorCode::COMPACT_INTERFACE_MAP_PROFILE_BINDING_INVALID);
  return it->get<std::string>();
}

bool has(const nlohmann::json& object, const char* key, nlohmann::json::value_t type) {
  const auto it = object.find(key);
  return it != object.end() && it->type() == type;
}

const nlohmann::json& envelope_field(const nlohmann::json& envelope, const char* key) {
  const auto it = envelope.find(key);
  if (it == envelope.end()) throw Error(ErrorCode::COMPACT_INTERFACE_MAP_RESULT_INVALID, key);
  return *it;
}

}  // namespace

nlohmann::json build_compact_interface_map_result(std::string_view task_id,
                                                  const nlohmann::json& envelope,
                                                  const nlohmann::json& execution) {
  using Type = nlohmann::json::value_t;
  if (!execution.is_object() || !envelope.is_object() ||
      !has(execution, "interface_map", Type::object)) {
    throw Error(ErrorCode::COMPACT_INTERFACE_MAP_RESULT_INVALID);
  }
  const nlohmann::json& map = execution.at("interface_map");
  if (!has(map, "implementation_map", Type::object) || !has(map, "bounded_excerpts", Type::array) ||
      !has(map, "contracts", Type::object)) {
    throw Error(ErrorCode::COMPACT_INTERFACE_MAP_RESULT_INVALID);
  }
  const std::string profile = text_or(map, "profile", kProfileFleet);
  const std::string classification = text_or(map, "classification", "");
  const bool bound =
      (profile == kProfileFleet && classification == kClassificationFleet) ||
      (profile == kProfileModelGovernance && classification == kClassificationModelGovernance);
  if (!bound) throw Error(ErrorCode::COMPACT_INTERFACE_MAP_PROFILE_BINDING_INVALID);
  const nlohmann::json& base_oid = envelope_field(envelope, "base_oid");
  if (map.value("source_commit", nlohmann::json()) != base_oid) {
    throw Error(ErrorCode::COMPACT_INTERFACE_MAP_SOURCE_COMMIT_MISMATCH);
  }

  nlohmann::json result = {
      {"status", "SUCCEEDED"},
      {"classification", classification},
      {"interface_map_profile", profile},
      {"verification_state", "VERIFIED_BY_WORKER_PENDING_SERVER_REVIEW"},
      {"execution_mode", "compact_interface_map"},
      {"execution_backend", "generic-online-agent-worker-v2"},
      {"task_id", task_id},
      {"job_id", envelope_field(envelope, "job_id")},
      {"repository", envelope_field(envelope, "repository")},
      {"base_oid", base_oid},
      {"expected_branch_oid", envelope_field(envelope, "expected_branch_oid")},
      {"target_branch", envelope_field(envelope, "target_branch")},
      {"generation", envelope_field(envelope, "generation")},
      {"execution_digest", envelope_field(envelope, "execution_digest")},
      {"interface_map", map},
      {"changed_files", nlohmann::json::array()},
      {"tests", nlohmann::json::array()},
      {"workspace_cleanup", "PASS"},
      {"writer_lease", "NONE"},
      {"secret_material_exposed", false},
      {"credential_material_exposed", false},
      {"direct_main_write", false},
      {"force_push", false},
      {"production_write", false},
      {"protected_ref_bypass", false},
  };
  const std::size_t size = canonical_json(result).size();
  if (size > kMaxResultBytes) {
    throw Error(ErrorCode::COMPACT_INTERFACE_MAP_RESULT_TOO_LARGE, std::to_string(size));
  }
  result["result_bytes"] = size;
  return result;
}

}  // namespace aios::compact_map
