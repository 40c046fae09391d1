// The result documents the worker submits, exactly as the seed builds them.
#include "aios/canonical.hpp"
#include "aios/error.hpp"
#include "aios/gateway.hpp"
#include "aios/worker.hpp"

namespace aios {
namespace {

constexpr std::size_t kMaxAgentRuntimeResultBytes = 192 * 1024;

[[noreturn]] void fail(ErrorCode code) {
  throw Error(code);
}

}  // namespace

std::string result_idempotency_key(const std::string& task_id, std::int64_t attempt,
                                   const std::string& execution_digest) {
  return "result-" +
         digest(
             {{"task_id", task_id}, {"attempt", attempt}, {"execution_digest", execution_digest}})
             .substr(0, 32);
}

std::string external_request_id(const nlohmann::json& envelope, std::int64_t requeues) {
  const std::string runtime = envelope.at("adapter");
  nlohmann::json material = {{"task_id", envelope.at("task_id")},
                             {"job_id", envelope.at("job_id")},
                             {"execution_digest", envelope.at("execution_digest")},
                             {"runtime", runtime}};
  // Generation 0 keeps the seed's id.
  if (requeues > 0) material["requeues"] = requeues;
  return "external-" + runtime + "-" + digest(material).substr(0, 32);
}

namespace {

// What every agent_runtime result says of its task and its governance, as the seed writes it.
nlohmann::json agent_runtime_result(const std::string& task_id, const nlohmann::json& envelope,
                                    const std::string& status, const std::string& classification) {
  return {{"status", status},
          {"classification", classification},
          {"verification_state", "VERIFIED_BY_WORKER_PENDING_SERVER_REVIEW"},
          {"execution_mode", "agent_runtime"},
          {"execution_backend", "generic-online-agent-worker-v2"},
          {"agent_runtime", envelope.at("adapter")},
          {"task_id", task_id},
          {"job_id", envelope.at("job_id")},
          {"repository", envelope.at("repository")},
          {"base_oid", envelope.at("base_oid")},
          {"expected_branch_oid", envelope.at("expected_branch_oid")},
          {"target_branch", envelope.at("target_branch")},
          {"generation", envelope.at("generation")},
          {"execution_digest", envelope.at("execution_digest")},
          {"changed_files", nlohmann::json::array()},
          {"tests", nlohmann::json::array()},
          {"workspace_cleanup", "PASS"},
          {"writer_lease", "NONE"},
          {"secret_material_exposed", false},
          {"credential_material_exposed", false},
          {"control_plane_access_granted_to_runtime", false},
          {"direct_main_write", false},
          {"force_push", false},
          {"production_write", false},
          {"protected_ref_bypass", false}};
}

// The gateway's count of the run's model calls, as the executor sealed it.
void add_model_usage(nlohmann::json& result, const nlohmann::json& usage) {
  if (!gateway::parse_usage(usage)) fail(ErrorCode::EXTERNAL_AGENT_RESULT_INVALID);
  result["model_usage"] = usage;
}

}  // namespace

nlohmann::json build_agent_runtime_result(const std::string& task_id,
                                          const nlohmann::json& envelope,
                                          const nlohmann::json& external) {
  if (!external.is_object()) fail(ErrorCode::EXTERNAL_AGENT_RESULT_INVALID);
  if (external.value("runtime", nlohmann::json()) != envelope.at("adapter")) {
    fail(ErrorCode::EXTERNAL_AGENT_RESULT_RUNTIME_MISMATCH);
  }
  if (external.value("task_id", nlohmann::json()) != task_id) {
    fail(ErrorCode::EXTERNAL_AGENT_RESULT_TASK_MISMATCH);
  }
  if (external.value("execution_digest", nlohmann::json()) != envelope.at("execution_digest")) {
    fail(ErrorCode::EXTERNAL_AGENT_RESULT_DIGEST_MISMATCH);
  }
  if (external.value("credential_material_exposed", nlohmann::json()) != false) {
    fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_ISOLATION_FAILED);
  }
  const auto field = [&](const char* name) { return external.value(name, nlohmann::json()); };
  nlohmann::json result =
      agent_runtime_result(task_id, envelope, "SUCCEEDED", "EXTERNAL_AGENT_RUNTIME_SUCCEEDED");
  result.update({{"output_text", field("output_text")},
                 {"output_json", field("output_json")},
                 {"output_sha256", field("output_sha256")},
                 {"runtime_duration_ms", field("duration_ms")},
                 {"external_request_id", field("request_id")}});
  // The seed sanitizes every string before measuring; the executor already redacted them, so
  // sanitizing again is idempotent and keeps the two byte-compatible.
  for (auto& [key, value] : result.items()) {
    if (value.is_string()) value = sanitize_text(value.get<std::string>());
  }
  if (const auto usage = external.find("model_usage"); usage != external.end()) {
    add_model_usage(result, *usage);
  }
  const auto bytes = canonical_json(result).size();
  if (bytes > kMaxAgentRuntimeResultBytes) fail(ErrorCode::EXTERNAL_AGENT_TASK_RESULT_TOO_LARGE);
  result["result_bytes"] = bytes;
  return result;
}

nlohmann::json build_budget_exhausted_result(const std::string& task_id,
                                             const nlohmann::json& envelope,
                                             const std::string& request_id,
                                             const nlohmann::json& usage) {
  nlohmann::json result =
      agent_runtime_result(task_id, envelope, "FAILED", "EXTERNAL_AGENT_MODEL_BUDGET_EXHAUSTED");
  result["external_request_id"] = request_id;
  add_model_usage(result, usage);
  result["result_bytes"] = canonical_json(result).size();
  return result;
}

}  // namespace aios
