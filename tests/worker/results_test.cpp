// The worker's result documents and derived ids, as the seed builds them:
// test_worker_external_adapter_builds_readonly_result and
// test_worker_adapter_filter_defaults_exclude_external_runtimes, plus every refusal of
// build_agent_runtime_result and the stability of the ids a restart depends on.
#include <gtest/gtest.h>

#include <string>

#include "aios/envelope.hpp"
#include "aios/worker.hpp"
#include "support/code_of.hpp"

namespace aios {
namespace {

using nlohmann::json;
using test::code_of;

json envelope_for(const std::string& runtime) {
  const std::string base(40, 'a');
  const auto binding =
      GovernedBinding::from_mapping({{"task_id", "task-" + runtime + "-runtime"},
                                     {"job_id", "job-" + runtime},
                                     {"repository", "aios/aios"},
                                     {"base_oid", base},
                                     {"expected_branch_oid", base},
                                     {"target_branch", "agent/" + runtime + "-runtime"},
                                     {"branch_mode", "CREATE_NEW"},
                                     {"generation", 1},
                                     {"idempotency_key", runtime + "-runtime-v1"}});
  return project_execution_envelope(binding, {{"action", "agent_runtime"},
                                              {"adapter", runtime},
                                              {"capability_scope", {"agent.runtime." + runtime}},
                                              {"runtime_input", {{"goal", "Return ok."}}}});
}

json external_for(const json& envelope) {
  return {{"schema", "aios.external-agent-runtime.result.v1"},
          {"request_id", external_request_id(envelope)},
          {"request_sha256", std::string(64, 'e')},
          {"runtime", envelope["adapter"]},
          {"task_id", envelope["task_id"]},
          {"execution_digest", envelope["execution_digest"]},
          {"exit_code", 0},
          {"duration_ms", 10},
          {"output_text", "done"},
          {"output_sha256", std::string(64, 'f')},
          {"stderr_sha256", std::string(64, '0')},
          {"credential_material_exposed", false},
          {"control_plane_access_granted", false},
          {"result_sha256", std::string(64, '1')}};
}

TEST(WorkerResults, ExternalAdapterBuildsAReadOnlyResultForBothRuntimes) {
  // Given an executor result bound to the envelope, we should build the seed's read-only result.
  for (const std::string& runtime : {std::string("hermes"), std::string("openclaw")}) {
    const auto envelope = envelope_for(runtime);
    const auto result =
        build_agent_runtime_result(envelope["task_id"], envelope, external_for(envelope));
    EXPECT_EQ(result["status"], "SUCCEEDED");
    EXPECT_EQ(result["classification"], "EXTERNAL_AGENT_RUNTIME_SUCCEEDED");
    EXPECT_EQ(result["execution_mode"], "agent_runtime");
    EXPECT_EQ(result["agent_runtime"], runtime);
    EXPECT_EQ(result["writer_lease"], "NONE");
    EXPECT_EQ(result["changed_files"], json::array());
    EXPECT_EQ(result["control_plane_access_granted_to_runtime"], false);
    EXPECT_EQ(result["credential_material_exposed"], false);
    EXPECT_EQ(result["output_text"], "done");
    EXPECT_EQ(result["execution_digest"], envelope["execution_digest"]);
    EXPECT_GT(result["result_bytes"].get<int>(), 500);
  }
}

TEST(WorkerResults, ResultsNotBoundToTheEnvelopeAreRefused) {
  // Given an executor result for another runtime, task or digest, or one that does not deny
  // credential exposure, we should refuse it with the seed's code.
  const auto envelope = envelope_for("hermes");
  const std::string task_id = envelope["task_id"];
  const auto refused = [&](const char* key, const json& value) {
    auto external = external_for(envelope);
    if (value.is_null()) {
      external.erase(key);
    } else {
      external[key] = value;
    }
    return code_of([&] { build_agent_runtime_result(task_id, envelope, external); });
  };
  EXPECT_EQ(refused("runtime", "openclaw"), "EXTERNAL_AGENT_RESULT_RUNTIME_MISMATCH");
  EXPECT_EQ(refused("task_id", "task-other"), "EXTERNAL_AGENT_RESULT_TASK_MISMATCH");
  EXPECT_EQ(refused("execution_digest", std::string(64, '9')),
            "EXTERNAL_AGENT_RESULT_DIGEST_MISMATCH");
  EXPECT_EQ(refused("credential_material_exposed", true),
            "EXTERNAL_AGENT_CREDENTIAL_ISOLATION_FAILED");
  EXPECT_EQ(refused("credential_material_exposed", nullptr),
            "EXTERNAL_AGENT_CREDENTIAL_ISOLATION_FAILED");
  EXPECT_EQ(refused("output_text", std::string(200 * 1024, 'x')),
            "EXTERNAL_AGENT_TASK_RESULT_TOO_LARGE");
  EXPECT_EQ(code_of([&] { build_agent_runtime_result(task_id, envelope, json::array()); }),
            "EXTERNAL_AGENT_RESULT_INVALID");
}

TEST(WorkerResults, AdapterFilterDefaultsExcludeExternalRuntimes) {
  // Given the default configuration, a worker should never run hermes or openclaw.
  const WorkerConfig config;
  EXPECT_FALSE(config.allowed_adapters.contains("hermes"));
  EXPECT_FALSE(config.allowed_adapters.contains("openclaw"));
  EXPECT_TRUE(config.allowed_adapters.contains("deterministic"));
}

TEST(WorkerResults, IdsAreDerivedFromTheExecutionOnly) {
  // Given the same execution, a restarted worker should derive the same executor request id
  // and, per attempt, the same result key; anything else changes them.
  const auto envelope = envelope_for("hermes");
  const std::string id = external_request_id(envelope);
  EXPECT_EQ(id, external_request_id(envelope_for("hermes")));
  EXPECT_TRUE(id.starts_with("external-hermes-"));
  EXPECT_EQ(id.size(), std::string("external-hermes-").size() + 32);
  EXPECT_NE(id, external_request_id(envelope_for("openclaw")));
  // A requeued task's generation is a new run; generation 0 is the id as it always was.
  EXPECT_EQ(id, external_request_id(envelope, 0));
  EXPECT_NE(id, external_request_id(envelope, 1));
  EXPECT_NE(external_request_id(envelope, 1), external_request_id(envelope, 2));
  EXPECT_EQ(external_request_id(envelope, 2), external_request_id(envelope_for("hermes"), 2));
  const std::string digest = envelope["execution_digest"];
  EXPECT_EQ(result_idempotency_key("t-1", 1, digest), result_idempotency_key("t-1", 1, digest));
  EXPECT_NE(result_idempotency_key("t-1", 1, digest), result_idempotency_key("t-1", 2, digest));
  EXPECT_NE(result_idempotency_key("t-1", 1, digest),
            result_idempotency_key("t-1", 1, std::string(64, '0')));
}

}  // namespace
}  // namespace aios
