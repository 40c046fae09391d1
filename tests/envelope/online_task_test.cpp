// project_online_task: the task document, its defaults, metadata.execution and
// metadata.execution_projection, and every TASK_* rule.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "test_fixtures.hpp"

namespace aios::envelope_test {
namespace {

Json with_key(Json value, const std::string& key, const Json& replacement) {
  value[key] = replacement;
  return value;
}

Json without_key(Json value, const std::string& key) {
  value.erase(key);
  return value;
}

// The execution request with the runtime_input the seed builds from runtime_task_request.
Json with_task_input(Json execution) {
  execution["runtime_input"] = Json::parse(R"({
    "goal": "Summarize the requested operation.",
    "instructions": "Return a concise result.",
    "success_criteria": [{"id": "done", "description": "A result is returned."}],
    "constraints": {"network": "runtime-managed"}
  })");
  return execution;
}

Json source_task() {
  return project_online_task(rebind_binding(), source_task_request(), old_request());
}

std::string source_task_code(const Json& task_request, const Json& execution = old_request()) {
  return code_of([&] { project_online_task(rebind_binding(), task_request, execution); });
}

Json projection_of(const Json& envelope) {
  return {{"schema", "aios.online-agent.task-projection.v1"},
          {"task_id", envelope["task_id"]},
          {"job_id", envelope["job_id"]},
          {"execution_digest", envelope["execution_digest"]}};
}

// The seed's make_db metadata: the old envelope, its projection record and owner data.
Json seed_task_metadata() {
  const Json old = old_envelope();
  return {{"execution", old},
          {"execution_projection", projection_of(old)},
          {"preserved", {{"value", "unchanged"}}}};
}

Json seed_rebind_task_request() {
  Json request = source_task_request();
  request["required_capabilities"] = rebind_scope();
  request["metadata"] = seed_task_metadata();
  return request;
}

TEST(OnlineTaskTest, RuntimeTaskDocumentHasBindingTaskAndMetadata) {
  // Given the seed's hermes task, we should return the binding's nine fields, the task fields
  // and metadata holding exactly the envelope and its projection record.
  const Json task = projected("hermes");
  const GovernedBinding binding = runtime_binding("task-hermes-runtime");
  std::set<std::string> keys;
  for (const auto& item : task.items()) keys.insert(item.key());
  EXPECT_EQ(keys, (std::set<std::string>{"task_id",
                                         "job_id",
                                         "repository",
                                         "base_oid",
                                         "expected_branch_oid",
                                         "target_branch",
                                         "branch_mode",
                                         "generation",
                                         "idempotency_key",
                                         "goal",
                                         "instructions",
                                         "success_criteria",
                                         "constraints",
                                         "required_capabilities",
                                         "max_attempts",
                                         "priority",
                                         "scope_type",
                                         "tenant_id",
                                         "project_id",
                                         "metadata"}));
  const Json published = binding.to_public();
  for (const auto& item : published.items()) {
    SCOPED_TRACE(item.key());
    EXPECT_EQ(task[item.key()], item.value());
  }
  EXPECT_EQ(task["goal"], "Summarize the requested operation.");
  EXPECT_EQ(task["instructions"], "Return a concise result.");
  EXPECT_EQ(task["success_criteria"],
            Json::parse(R"([{"id": "done", "description": "A result is returned."}])"));
  EXPECT_EQ(task["constraints"], Json({{"network", "runtime-managed"}}));
  EXPECT_EQ(task["required_capabilities"], Json::array({"agent.runtime.hermes"}));
  EXPECT_EQ(task["max_attempts"], 3);
  EXPECT_EQ(task["priority"], 0);
  EXPECT_EQ(task["scope_type"], "global");
  EXPECT_TRUE(task["tenant_id"].is_null());
  EXPECT_TRUE(task["project_id"].is_null());
  const Json& metadata = task["metadata"];
  EXPECT_EQ(metadata.size(), 2U);
  const Json& execution = metadata["execution"];
  EXPECT_EQ(execution, project_execution_envelope(
                           binding, with_task_input(runtime_execution_request("hermes")),
                           Json::array({"agent.runtime.hermes"})));
  EXPECT_EQ(metadata["execution_projection"],
            Json({{"schema", "aios.online-agent.task-projection.v1"},
                  {"task_id", "task-hermes-runtime"},
                  {"job_id", "job-task-hermes-runtime"},
                  {"execution_digest", execution["execution_digest"]}}));
}

TEST(OnlineTaskTest, SourceCaptureTaskTakesDefaults) {
  // Given a task with only a goal, we should fill the documented defaults and take the envelope's
  // capability scope as the task's requirements.
  const Json task = source_task();
  EXPECT_EQ(task["goal"], "Map the interfaces.");
  EXPECT_EQ(task["instructions"], "");
  EXPECT_EQ(task["success_criteria"], Json::array());
  EXPECT_EQ(task["constraints"], Json::object());
  EXPECT_EQ(task["required_capabilities"], rebind_scope());
  EXPECT_EQ(task["max_attempts"], 3);
  EXPECT_EQ(task["priority"], 0);
  EXPECT_EQ(task["scope_type"], "global");
  EXPECT_TRUE(task["tenant_id"].is_null());
  EXPECT_TRUE(task["project_id"].is_null());
  EXPECT_EQ(task["metadata"]["execution"], old_envelope());
  EXPECT_EQ(task["metadata"]["execution_projection"], projection_of(old_envelope()));
  EXPECT_EQ(task["task_id"], "task-rebind-a");
}

TEST(OnlineTaskTest, NullFieldsTakeDefaults) {
  // Given optional task fields sent as null, we should treat them as absent.
  Json request = source_task_request();
  for (const char* field :
       {"instructions", "success_criteria", "constraints", "required_capabilities", "max_attempts",
        "priority", "scope_type", "tenant_id", "project_id", "metadata"}) {
    request[field] = nullptr;
  }
  EXPECT_EQ(project_online_task(rebind_binding(), request, old_request()), source_task());
  Json without_id = source_task_request();
  without_id.erase("task_id");
  EXPECT_EQ(project_online_task(rebind_binding(), without_id, old_request()), source_task());
}

TEST(OnlineTaskTest, RequiredCapabilitiesAreNormalized) {
  // Given required capabilities with padding, case and repeats, we should store them trimmed,
  // lower-cased, sorted and de-duplicated; an empty list takes the scope.
  Json request = source_task_request();
  request["required_capabilities"] = Json::array({" GIT.TEST ", "git.read", "Git.Read"});
  EXPECT_EQ(project_online_task(rebind_binding(), request, old_request())["required_capabilities"],
            Json::array({"git.read", "git.test"}));
  request["required_capabilities"] = Json::array();
  EXPECT_EQ(project_online_task(rebind_binding(), request, old_request())["required_capabilities"],
            rebind_scope());
}

TEST(OnlineTaskTest, ScopeDefaultsToTheRequirementsWithoutAnExecutionRequest) {
  // Given no execution request, we should project a source_capture envelope scoped to the
  // task's required capabilities.
  Json request = source_task_request();
  request["required_capabilities"] = Json::array({"git.read"});
  const Json task = project_online_task(rebind_binding(), request, Json());
  EXPECT_EQ(task["metadata"]["execution"]["action"], "source_capture");
  EXPECT_EQ(task["metadata"]["execution"]["capability_scope"], Json::array({"git.read"}));
  EXPECT_EQ(source_task_code(source_task_request(), Json()), "CAPABILITY_SCOPE_REQUIRED");
  EXPECT_EQ(source_task_code(request, "source_capture"), "EXECUTION_REQUEST_INVALID");
}

TEST(OnlineTaskTest, ExplicitValuesAreKept) {
  // Given explicit task values within their limits, we should keep them as given.
  Json request = source_task_request();
  request["instructions"] = "  Keep  ";
  request["success_criteria"] = Json::array({{{"id", "a"}, {"description", "b"}}});
  request["constraints"] = {{"nested", {{"depth", Json::array({1, 2})}}}};
  request["max_attempts"] = 20;
  request["priority"] = -1000;
  request["scope_type"] = "project";
  request["tenant_id"] = "tenant-a";
  request["project_id"] = "project-a";
  const Json task = project_online_task(rebind_binding(), request, old_request());
  EXPECT_EQ(task["instructions"], "  Keep  ");
  EXPECT_EQ(task["success_criteria"], request["success_criteria"]);
  EXPECT_EQ(task["constraints"], request["constraints"]);
  EXPECT_EQ(task["max_attempts"], 20);
  EXPECT_EQ(task["priority"], -1000);
  EXPECT_EQ(task["scope_type"], "project");
  EXPECT_EQ(task["tenant_id"], "tenant-a");
  EXPECT_EQ(task["project_id"], "project-a");
}

TEST(OnlineTaskTest, OwnerMetadataIsPreserved) {
  // Given owner metadata, we should keep every owner key beside execution and
  // execution_projection.
  Json request = source_task_request();
  request["metadata"] = {{"preserved", {{"value", "unchanged"}}}, {"fleet_priority", 0}};
  const Json metadata = project_online_task(rebind_binding(), request, old_request())["metadata"];
  EXPECT_EQ(metadata["preserved"], Json({{"value", "unchanged"}}));
  EXPECT_EQ(metadata["fleet_priority"], 0);
  EXPECT_EQ(metadata["execution"], old_envelope());
  EXPECT_EQ(metadata.size(), 4U);
}

TEST(OnlineTaskTest, EqualProjectionInMetadataIsAccepted) {
  // Given the seed's stored metadata (old envelope, its projection record, owner data) and the
  // same execution request, we should accept it and return the same metadata.
  const Json task =
      project_online_task(rebind_binding(), seed_rebind_task_request(), old_request());
  EXPECT_EQ(task["metadata"], seed_task_metadata());
}

TEST(OnlineTaskTest, ConflictingProjectionInMetadataIsRefused) {
  // Given caller metadata whose envelope or projection record differs from the projection, we
  // should refuse it with EXECUTION_PROJECTION_CONFLICT.
  EXPECT_EQ(source_task_code(seed_rebind_task_request(), new_request()),
            "EXECUTION_PROJECTION_CONFLICT");
  const Json old = old_envelope();
  const std::vector<std::pair<std::string, Json>> projections = {
      {"other digest", with_key(projection_of(old), "execution_digest", std::string(64, '0'))},
      {"other schema", with_key(projection_of(old), "schema", "aios.online-agent.task.v0")},
      {"other job", with_key(projection_of(old), "job_id", "job-other")},
      {"extra key", with_key(projection_of(old), "extra", 1)},
      {"missing key", without_key(projection_of(old), "job_id")},
      {"not an object", Json("projection")},
      {"null", Json()},
  };
  for (const auto& [name, projection] : projections) {
    SCOPED_TRACE(name);
    Json request = source_task_request();
    request["metadata"] = {{"execution_projection", projection}};
    EXPECT_EQ(source_task_code(request), "EXECUTION_PROJECTION_CONFLICT");
  }
  Json request = source_task_request();
  request["metadata"] = {{"execution", new_envelope()}};
  EXPECT_EQ(source_task_code(request), "EXECUTION_PROJECTION_CONFLICT");
}

TEST(OnlineTaskTest, InvalidEnvelopeInMetadataIsRefusedByItsOwnCode) {
  // Given caller metadata.execution that is not a valid envelope for this binding, we should
  // refuse it with the envelope's own code.
  Json request = source_task_request();
  request["metadata"] = {{"execution", Json::object()}};
  EXPECT_EQ(source_task_code(request), "EXECUTION_ENVELOPE_FIELDS_INVALID");
  request["metadata"] = {{"execution", "envelope"}};
  EXPECT_EQ(source_task_code(request), "EXECUTION_ENVELOPE_INVALID");
  request["metadata"] = {
      {"execution", with_key(old_envelope(), "source_signals", Json::array({"x"}))}};
  EXPECT_EQ(source_task_code(request), "EXECUTION_DIGEST_MISMATCH");
  request["metadata"] = {{"execution", drift_envelope()}};
  EXPECT_EQ(source_task_code(request), "EXECUTION_BINDING_MISMATCH");
}

struct TaskCase {
  std::string field;
  Json value;
  std::string expected;
};

TEST(OnlineTaskTest, TaskRules) {
  // Given a source_capture task whose one field breaks a rule, we should refuse it with that
  // rule's code, and accept the values at the limits.
  Json criteria_33 = Json::array();
  for (int i = 0; i < 33; ++i) {
    criteria_33.push_back({{"id", "c" + std::to_string(i)}, {"description", "d"}});
  }
  Json criteria_32 = criteria_33;
  criteria_32.erase(criteria_32.size() - 1);
  const auto criterion = [](const Json& id, const Json& description) {
    return Json::array({{{"id", id}, {"description", description}}});
  };
  const std::string ok(kOk);
  const std::vector<TaskCase> cases = {
      {"extra", 1, "TASK_FIELDS_INVALID"},
      {"binding", rebind_binding_mapping(), "TASK_FIELDS_INVALID"},
      {"execution", old_request(), "TASK_FIELDS_INVALID"},
      {"status", "QUEUED", "TASK_FIELDS_INVALID"},
      {"task_id", "task-rebind-b", "TASK_BINDING_MISMATCH"},
      {"task_id", 5, "TASK_BINDING_MISMATCH"},
      {"task_id", Json(), "TASK_BINDING_MISMATCH"},
      {"goal", kAbsent, "TASK_GOAL_INVALID"},
      {"goal", Json(), "TASK_GOAL_INVALID"},
      {"goal", "", "TASK_GOAL_INVALID"},
      {"goal", " \n ", "TASK_GOAL_INVALID"},
      {"goal", 5, "TASK_GOAL_INVALID"},
      {"goal", repeat(kEmoji, 12001), "TASK_GOAL_INVALID"},
      {"goal", repeat(kEmoji, 12000), ok},
      {"instructions", 5, "TASK_INSTRUCTIONS_INVALID"},
      {"instructions", Json::array(), "TASK_INSTRUCTIONS_INVALID"},
      {"instructions", repeat(kEAcute, 32001), "TASK_INSTRUCTIONS_INVALID"},
      {"instructions", repeat(kEAcute, 32000), ok},
      {"success_criteria", "done", "TASK_SUCCESS_CRITERIA_INVALID"},
      {"success_criteria", criteria_33, "TASK_SUCCESS_CRITERIA_INVALID"},
      {"success_criteria", Json::array({"done"}), "TASK_SUCCESS_CRITERIA_INVALID"},
      {"success_criteria", Json::array({{{"id", "a"}}}), "TASK_SUCCESS_CRITERIA_INVALID"},
      {"success_criteria", Json::array({{{"id", "a"}, {"description", "d"}, {"weight", 1}}}),
       "TASK_SUCCESS_CRITERIA_INVALID"},
      {"success_criteria", criterion(" ", "d"), "TASK_SUCCESS_CRITERIA_INVALID"},
      {"success_criteria", criterion(5, "d"), "TASK_SUCCESS_CRITERIA_INVALID"},
      {"success_criteria", criterion("a", ""), "TASK_SUCCESS_CRITERIA_INVALID"},
      {"success_criteria", criterion(repeat(kEAcute, 121), "d"), "TASK_SUCCESS_CRITERIA_INVALID"},
      {"success_criteria", criterion("a", repeat(kEmoji, 1001)), "TASK_SUCCESS_CRITERIA_INVALID"},
      {"success_criteria", criterion(repeat(kEAcute, 120), repeat(kEmoji, 1000)), ok},
      {"success_criteria", criteria_32, ok},
      {"constraints", Json::array(), "TASK_CONSTRAINTS_INVALID"},
      {"constraints", "none", "TASK_CONSTRAINTS_INVALID"},
      {"constraints", 5, "TASK_CONSTRAINTS_INVALID"},
      {"constraints", {{"token", 1}}, "TASK_SECRET_FIELD_DENY"},
      {"constraints", {{"outer", {{"API_KEY", 1}}}}, "TASK_SECRET_FIELD_DENY"},
      {"constraints", {{"list", Json::array({{{"Password", 1}}})}}, "TASK_SECRET_FIELD_DENY"},
      {"constraints",
       {{"api_\xE2\x84\xAA"
         "ey",
         1}},
       "TASK_SECRET_FIELD_DENY"},
      {"constraints", {{"note", "token"}}, ok},
      {"required_capabilities", "git.read", "REQUIRED_CAPABILITIES_INVALID"},
      {"required_capabilities", Json(std::vector<std::string>(65, "git.read")),
       "REQUIRED_CAPABILITIES_INVALID"},
      {"required_capabilities", Json::array({5}), "CAPABILITY_INVALID"},
      {"required_capabilities", Json::array({" "}), "CAPABILITY_INVALID"},
      {"required_capabilities", Json::array({"root.admin"}), "CAPABILITY_UNKNOWN"},
      {"required_capabilities", Json::array({"agent.runtime.hermes"}),
       "EXECUTION_CAPABILITY_SCOPE_MISMATCH"},
      {"required_capabilities", Json::array({"repo.read", "governed_git_write"}), ok},
      {"max_attempts", 0, "TASK_MAX_ATTEMPTS_INVALID"},
      {"max_attempts", 21, "TASK_MAX_ATTEMPTS_INVALID"},
      {"max_attempts", -1, "TASK_MAX_ATTEMPTS_INVALID"},
      {"max_attempts", 1.5, "TASK_MAX_ATTEMPTS_INVALID"},
      {"max_attempts", 3.0, "TASK_MAX_ATTEMPTS_INVALID"},
      {"max_attempts", "3", "TASK_MAX_ATTEMPTS_INVALID"},
      {"max_attempts", true, "TASK_MAX_ATTEMPTS_INVALID"},
      {"max_attempts", 1, ok},
      {"max_attempts", 20, ok},
      {"priority", -1001, "TASK_PRIORITY_INVALID"},
      {"priority", 1001, "TASK_PRIORITY_INVALID"},
      {"priority", 0.5, "TASK_PRIORITY_INVALID"},
      {"priority", "1", "TASK_PRIORITY_INVALID"},
      {"priority", false, "TASK_PRIORITY_INVALID"},
      {"priority", 1000, ok},
      {"priority", -1000, ok},
      {"scope_type", "org", "TASK_SCOPE_INVALID"},
      {"scope_type", 5, "TASK_SCOPE_INVALID"},
      {"scope_type", "Global", "TASK_SCOPE_INVALID"},
      {"scope_type", "tenant", "TASK_SCOPE_INVALID"},
      {"scope_type", "project", "TASK_SCOPE_INVALID"},
      {"tenant_id", "tenant-a", "TASK_SCOPE_INVALID"},
      {"project_id", "project-a", "TASK_SCOPE_INVALID"},
      {"metadata", Json::array(), "TASK_METADATA_INVALID"},
      {"metadata", "owner", "TASK_METADATA_INVALID"},
      {"metadata", 5, "TASK_METADATA_INVALID"},
  };
  for (const TaskCase& c : cases) {
    SCOPED_TRACE(c.field + " = " + c.value.dump().substr(0, 60));
    Json request = source_task_request();
    if (c.value == kAbsent) {
      request.erase(c.field);
    } else {
      request[c.field] = c.value;
    }
    EXPECT_EQ(source_task_code(request), c.expected);
  }
}

TEST(OnlineTaskTest, ScopeCombinations) {
  // Given tenant and project scopes, we should accept the well-formed ones (the seed's tenant
  // scope with a project included) and refuse malformed ids.
  struct ScopeCase {
    Json scope_type;
    Json tenant_id;
    Json project_id;
    std::string expected;
  };
  const std::string ok(kOk);
  const std::vector<ScopeCase> cases = {
      {"global", Json(), Json(), ok},
      {"tenant", "tenant-a", Json(), ok},
      {"tenant", "tenant-a", "project-a", ok},
      {"project", "tenant-a", "project-a", ok},
      {"project", Json(), "project-a", "TASK_SCOPE_INVALID"},
      {"project", "tenant-a", Json(), "TASK_SCOPE_INVALID"},
      {"global", "tenant-a", Json(), "TASK_SCOPE_INVALID"},
      {"tenant", "-tenant", Json(), "TASK_SCOPE_INVALID"},
      {"tenant", "", Json(), "TASK_SCOPE_INVALID"},
      {"tenant", "tenant a", Json(), "TASK_SCOPE_INVALID"},
      {"tenant", 5, Json(), "TASK_SCOPE_INVALID"},
      {"tenant", std::string(129, 't'), Json(), "TASK_SCOPE_INVALID"},
      {"tenant", std::string(128, 't'), Json(), ok},
      {"project", "tenant-a", "project/a", "TASK_SCOPE_INVALID"},
  };
  for (const ScopeCase& c : cases) {
    SCOPED_TRACE(c.scope_type.dump() + " " + c.tenant_id.dump() + " " + c.project_id.dump());
    Json request = source_task_request();
    request["scope_type"] = c.scope_type;
    request["tenant_id"] = c.tenant_id;
    request["project_id"] = c.project_id;
    EXPECT_EQ(source_task_code(request), c.expected);
    if (c.expected == kOk) {
      const Json task = project_online_task(rebind_binding(), request, old_request());
      EXPECT_EQ(task["scope_type"], c.scope_type);
      EXPECT_EQ(task["tenant_id"], c.tenant_id);
      EXPECT_EQ(task["project_id"], c.project_id);
    }
  }
}

TEST(OnlineTaskTest, NonObjectTaskRequestIsRefused) {
  // Given a task request that is not a JSON object, we should refuse it with
  // TASK_REQUEST_INVALID.
  for (const Json& request :
       {Json(), Json("task"), Json::array({source_task_request()}), Json(1)}) {
    SCOPED_TRACE(request.dump());
    EXPECT_EQ(source_task_code(request), "TASK_REQUEST_INVALID");
  }
}

TEST(OnlineTaskTest, OwnerMetadataLimitIsExactly64KiB) {
  // Given owner metadata of 65536 and 65537 canonical bytes, we should accept the first and
  // refuse the second with TASK_METADATA_TOO_LARGE; the projection's own keys do not count.
  Json request = source_task_request();
  const std::size_t overhead = canonical_json(Json({{"blob", ""}})).size();
  request["metadata"] = {{"blob", std::string(65536 - overhead, 'm')}};
  ASSERT_EQ(canonical_json(request["metadata"]).size(), 65536U);
  EXPECT_EQ(source_task_code(request), kOk);
  request["metadata"]["execution"] = old_envelope();
  request["metadata"]["execution_projection"] = projection_of(old_envelope());
  EXPECT_EQ(source_task_code(request), kOk);
  request["metadata"]["blob"] = std::string(65537 - overhead, 'm');
  EXPECT_EQ(source_task_code(request), "TASK_METADATA_TOO_LARGE");
}

TEST(OnlineTaskTest, OversizedTaskIsRefused) {
  // Given a task whose projected document exceeds 512 KiB (a 600 KiB change set), we should
  // refuse it with TASK_TOO_LARGE; a 400 KiB one is accepted.
  Json execution = new_request();
  execution["change_set"][0]["content"] = std::string(600 * 1024, 'x');
  EXPECT_EQ(source_task_code(source_task_request(), execution), "TASK_TOO_LARGE");
  execution["change_set"][0]["content"] = std::string(400 * 1024, 'x');
  EXPECT_EQ(source_task_code(source_task_request(), execution), kOk);
}

TEST(OnlineTaskTest, RuntimeRulesAnswerBeforeTaskRules) {
  // Given an agent_runtime task with a missing goal or secret constraint, we should answer with
  // the runtime's code (the envelope is projected first), as the seed does.
  Json request = runtime_task_request("task-hermes-runtime", "hermes");
  request.erase("goal");
  EXPECT_EQ(code_of([&] {
              project_online_task(runtime_binding("task-hermes-runtime"), request,
                                  runtime_execution_request("hermes"));
            }),
            "AGENT_RUNTIME_GOAL_REQUIRED");
  request = runtime_task_request("task-hermes-runtime", "hermes");
  request["constraints"] = {{"nested", {{"secret", "x"}}}};
  EXPECT_EQ(code_of([&] {
              project_online_task(runtime_binding("task-hermes-runtime"), request,
                                  runtime_execution_request("hermes"));
            }),
            "AGENT_RUNTIME_SECRET_FIELD_DENY");
}

}  // namespace
}  // namespace aios::envelope_test
