// The agent_runtime action: the seed's test_agent_runtime_projection_* tests for both runtimes,
// runtime_input normalization, and every AGENT_RUNTIME_* rule.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "test_fixtures.hpp"

namespace aios::envelope_test {
namespace {

const std::string kKelvin = "\xE2\x84\xAA";  // U+212A KELVIN SIGN; Python lower() gives 'k'

std::string other_runtime(const std::string& runtime) {
  return runtime == "hermes" ? "openclaw" : "hermes";
}

Json runtime_input_of(const Json& runtime_input) {
  return project_execution_envelope(runtime_binding("task-hermes-runtime"),
                                    hermes_request(runtime_input))["runtime_input"];
}

std::string hermes_code(const Json& runtime_input) {
  return code_of([&] {
    project_execution_envelope(runtime_binding("task-hermes-runtime"),
                               hermes_request(runtime_input));
  });
}

std::string task_code(const std::string& runtime, const Json& task_request,
                      const Json& execution_request) {
  return code_of([&] {
    project_online_task(runtime_binding(runtime_task_id(runtime)), task_request, execution_request);
  });
}

class AgentRuntimeProjectionTest : public ::testing::TestWithParam<std::string> {
 protected:
  const std::string& runtime() const { return GetParam(); }
  std::string task_id() const { return runtime_task_id(runtime()); }
  std::string capability() const { return "agent.runtime." + runtime(); }
};

TEST_P(AgentRuntimeProjectionTest, IsReadOnlyAndTaskBound) {
  // Given the seed's runtime task, we should project a read-only agent_runtime envelope whose
  // runtime_input is the task's, valid for the task's binding and a worker of that runtime.
  const Json value = projected(runtime());
  const Json& execution = value["metadata"]["execution"];
  EXPECT_EQ(execution["action"], "agent_runtime");
  EXPECT_EQ(execution["adapter"], runtime());
  EXPECT_EQ(execution["runtime_input"]["goal"], value["goal"]);
  EXPECT_EQ(execution["runtime_input"]["instructions"], value["instructions"]);
  EXPECT_EQ(execution["governance"], Json({{"writer_lease", false}}));
  EXPECT_EQ(execution["change_set"], Json::array());
  EXPECT_EQ(execution["verification"], Json::array());
  EXPECT_EQ(execution["source_signals"], Json::array());
  EXPECT_EQ(execution["capability_scope"], Json::array({capability()}));
  EXPECT_EQ(execution["runtime_input"], Json::parse(R"({
    "goal": "Summarize the requested operation.",
    "instructions": "Return a concise result.",
    "success_criteria": [{"id": "done", "description": "A result is returned."}],
    "constraints": {"network": "runtime-managed"}
  })"));
  const GovernedBinding binding = runtime_binding(task_id());
  const Json worker = Json::array({capability()});
  EXPECT_EQ(
      validate_execution_envelope(execution, {.binding = &binding, .worker_capabilities = &worker}),
      execution);
}

TEST_P(AgentRuntimeProjectionTest, RequiresRuntimeCapability) {
  // Given a runtime task whose scope lacks agent.runtime.<adapter>, we should refuse it with
  // AGENT_RUNTIME_CAPABILITY_REQUIRED, even when the scope holds the other runtime.
  const Json task = runtime_task_request(task_id(), runtime());
  Json execution = runtime_execution_request(runtime());
  execution["capability_scope"] = Json::array({"git.read"});
  EXPECT_EQ(task_code(runtime(), task, execution), "AGENT_RUNTIME_CAPABILITY_REQUIRED");
  execution["capability_scope"] = Json::array({"agent.runtime." + other_runtime(runtime())});
  EXPECT_EQ(task_code(runtime(), task, execution), "AGENT_RUNTIME_CAPABILITY_REQUIRED");
}

TEST_P(AgentRuntimeProjectionTest, RejectsMutation) {
  // Given a runtime task with a change set or verification, we should refuse it with
  // AGENT_RUNTIME_MUTATION_DENY.
  const Json task = runtime_task_request(task_id(), runtime());
  const Json execution = runtime_execution_request(runtime());
  EXPECT_EQ(task_code(runtime(), task,
                      with(execution, "/change_set",
                           Json::parse(R"([{"path": "x.py", "operation": "write_file",
                                            "content": "x=1\n"}])"))),
            "AGENT_RUNTIME_MUTATION_DENY");
  EXPECT_EQ(task_code(runtime(), task,
                      with(execution, "/verification",
                           Json::parse(R"([{"label": "unit", "argv": ["/usr/bin/make"],
                                            "cwd": ".", "timeout_seconds": 10}])"))),
            "AGENT_RUNTIME_MUTATION_DENY");
}

TEST_P(AgentRuntimeProjectionTest, RejectsSecretConstraintKeys) {
  // Given a runtime task whose constraints carry a secret-looking key, we should refuse it with
  // AGENT_RUNTIME_SECRET_FIELD_DENY.
  Json task = runtime_task_request(task_id(), runtime());
  task["constraints"] = {{"api_token", "do-not-project"}};
  EXPECT_EQ(task_code(runtime(), task, runtime_execution_request(runtime())),
            "AGENT_RUNTIME_SECRET_FIELD_DENY");
}

TEST_P(AgentRuntimeProjectionTest, RuntimeScopesAreIsolated) {
  // Given one runtime's envelope, we should refuse a worker that holds only the other runtime's
  // capability, and accept one that holds its own.
  const Json execution = projected(runtime())["metadata"]["execution"];
  const Json other = Json::array({"agent.runtime." + other_runtime(runtime())});
  const Json own = Json::array({capability()});
  const Json both = Json::array({"agent.runtime.hermes", "agent.runtime.openclaw"});
  const Json generic =
      Json::array({"git.read", "git.test", "governed.write.branch", "governed.write.file"});
  const auto check = [&execution](const Json& worker) {
    return code_of(
        [&] { validate_execution_envelope(execution, {.worker_capabilities = &worker}); });
  };
  EXPECT_EQ(check(other), "EXECUTION_WORKER_CAPABILITY_DENY");
  EXPECT_EQ(check(generic), "EXECUTION_WORKER_CAPABILITY_DENY");
  EXPECT_EQ(check(own), kOk);
  EXPECT_EQ(check(both), kOk);
}

TEST_P(AgentRuntimeProjectionTest, AdapterMustBeARuntime) {
  // Given an agent_runtime task without a runtime adapter, we should refuse it with
  // AGENT_RUNTIME_ADAPTER_INVALID before looking at its input.
  const Json task = runtime_task_request(task_id(), runtime());
  const Json execution = runtime_execution_request(runtime());
  Json no_adapter = execution;
  no_adapter.erase("adapter");
  EXPECT_EQ(task_code(runtime(), task, no_adapter), "AGENT_RUNTIME_ADAPTER_INVALID");
  for (const Json& adapter :
       {Json(), Json(""), Json("codex"), Json("HERMES"), Json(1), Json("source_capture")}) {
    SCOPED_TRACE(adapter.dump());
    EXPECT_EQ(task_code(runtime(), task, with(execution, "/adapter", adapter)),
              "AGENT_RUNTIME_ADAPTER_INVALID");
  }
}

TEST_P(AgentRuntimeProjectionTest, AModelBudgetIsPartOfTheDigestedEnvelope) {
  // Given a runtime task with a model_budget, the envelope should carry it under its digest (a
  // worker that changed it would find the digest wrong); without one, the envelope is the seed's.
  const GovernedBinding binding = runtime_binding(task_id());
  const Json task = runtime_task_request(task_id(), runtime());
  Json request = runtime_execution_request(runtime());
  const auto envelope_of = [&](const Json& execution) {
    return project_online_task(binding, task, execution)["metadata"]["execution"];
  };
  const Json plain = envelope_of(request);
  EXPECT_FALSE(plain.contains("model_budget"));
  request["model_budget"] = {{"max_requests", 5}, {"max_usage", 20000}};
  const Json budgeted = envelope_of(request);
  EXPECT_EQ(budgeted["model_budget"], request["model_budget"]);
  EXPECT_NE(budgeted["execution_digest"], plain["execution_digest"]);
  EXPECT_EQ(validate_execution_envelope(budgeted, {.binding = &binding}), budgeted);
  Json raised = budgeted;
  raised["model_budget"]["max_requests"] = 500;
  EXPECT_EQ(code_of([&] { validate_execution_envelope(raised); }), "EXECUTION_DIGEST_MISMATCH");
  for (const Json& bad :
       {Json({{"max_requests", 0}}), Json({{"max_tokens", 5}}), Json("5"), Json::object()}) {
    request["model_budget"] = bad;
    EXPECT_EQ(code_of([&] { envelope_of(request); }), "MODEL_BUDGET_INVALID") << bad.dump();
  }
}

TEST(ModelBudget, BelongsOnlyToActionsThatRunAnAgent) {
  // Given a model_budget on a deterministic plan (no agent, no model calls), the projection
  // should refuse it.
  Json request = new_request();
  request["model_budget"] = {{"max_requests", 5}};
  EXPECT_EQ(code_of([&] { project_execution_envelope(rebind_binding(), request); }),
            "MODEL_BUDGET_INVALID");
}

INSTANTIATE_TEST_SUITE_P(Runtimes, AgentRuntimeProjectionTest,
                         ::testing::Values("hermes", "openclaw"));

TEST(AgentRuntimeTest, SeedHermesEnvelopeIsPinned) {
  // Given the seed's hermes task, we should project exactly this envelope; its digest was
  // computed by Python's json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False).
  EXPECT_EQ(projected("hermes")["metadata"]["execution"], Json::parse(R"({
    "schema": "aios.online-agent.execution.v1",
    "task_id": "task-hermes-runtime", "job_id": "job-task-hermes-runtime",
    "repository": "aios/aios",
    "base_oid": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "expected_branch_oid": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "target_branch": "agent/task-hermes-runtime", "branch_mode": "CREATE_NEW", "generation": 1,
    "idempotency_key": "task-hermes-runtime-binding-v1",
    "action": "agent_runtime", "adapter": "hermes",
    "capability_scope": ["agent.runtime.hermes"],
    "change_set": [], "verification": [], "source_signals": [],
    "runtime_input": {
      "goal": "Summarize the requested operation.",
      "instructions": "Return a concise result.",
      "success_criteria": [{"id": "done", "description": "A result is returned."}],
      "constraints": {"network": "runtime-managed"}
    },
    "governance": {"writer_lease": false},
    "workspace": {"authority_git_dir": "/data/aios-gitops/repo.git"},
    "execution_digest": "039322ec4b8759aa055873d45d2172b28e763d1e22aad5cd99afef2efdc3cc69"
  })"));
}

TEST(AgentRuntimeTest, ExplicitRuntimeInputWinsOverTaskFields) {
  // Given a runtime task whose execution request carries runtime_input, we should project that
  // input, not one built from the task's fields.
  Json execution = runtime_execution_request("hermes");
  execution["runtime_input"] = {{"goal", "  A different goal. "}};
  const Json task =
      project_online_task(runtime_binding("task-hermes-runtime"),
                          runtime_task_request("task-hermes-runtime", "hermes"), execution);
  EXPECT_EQ(task["metadata"]["execution"]["runtime_input"],
            Json({{"goal", "A different goal."},
                  {"instructions", ""},
                  {"success_criteria", Json::array()},
                  {"constraints", Json::object()}}));
  EXPECT_EQ(task["goal"], "Summarize the requested operation.");
}

TEST(AgentRuntimeTest, MissingOptionalFieldsTakeDefaults) {
  // Given only a goal, we should fill instructions "", no criteria and no constraints.
  EXPECT_EQ(runtime_input_of({{"goal", "g"}}), Json({{"goal", "g"},
                                                     {"instructions", ""},
                                                     {"success_criteria", Json::array()},
                                                     {"constraints", Json::object()}}));
}

TEST(AgentRuntimeTest, GoalIsTrimmedAndInstructionsAreKept) {
  // Given padded text, we should trim the goal (Python str.strip) and keep instructions and
  // constraints byte for byte.
  const Json input = runtime_input_of({{"goal", " \n\t Goal text \xE3\x80\x80"},
                                       {"instructions", "  keep  \n"},
                                       {"constraints", {{"mode", "  spaced  "}}}});
  EXPECT_EQ(input["goal"], "Goal text");
  EXPECT_EQ(input["instructions"], "  keep  \n");
  EXPECT_EQ(input["constraints"], Json({{"mode", "  spaced  "}}));
}

TEST(AgentRuntimeTest, GoalIsTruncatedTo12000CodePoints) {
  // Given a goal of 12001 four-byte characters, we should keep the first 12000 characters
  // (48000 bytes), not the first 12000 bytes.
  const Json input = runtime_input_of({{"goal", repeat(kEmoji, 12001)}});
  EXPECT_EQ(input["goal"], repeat(kEmoji, 12000));
  EXPECT_EQ(input["goal"].get<std::string>().size(), 48000U);
  EXPECT_EQ(runtime_input_of({{"goal", repeat(kEmoji, 12000)}})["goal"], repeat(kEmoji, 12000));
}

TEST(AgentRuntimeTest, InstructionsAreTruncatedTo32000CodePoints) {
  // Given instructions of 32001 two-byte characters, we should keep the first 32000 characters
  // (64000 bytes), not the first 32000 bytes.
  const Json input = runtime_input_of({{"goal", "g"}, {"instructions", repeat(kEAcute, 32001)}});
  EXPECT_EQ(input["instructions"], repeat(kEAcute, 32000));
  EXPECT_EQ(input["instructions"].get<std::string>().size(), 64000U);
}

TEST(AgentRuntimeTest, SuccessCriteriaAreTrimmedTruncatedAndNarrowed) {
  // Given criteria with padding, long texts and extra keys, we should keep trimmed ids of at
  // most 120 and descriptions of at most 1000 code points, and only id and description.
  const Json input = runtime_input_of(
      {{"goal", "g"},
       {"success_criteria",
        Json::array({{{"id", " done "}, {"description", " A result. "}, {"weight", 3}},
                     {{"id", repeat(kEAcute, 121)}, {"description", repeat(kEmoji, 1001)}}})}});
  EXPECT_EQ(input["success_criteria"],
            Json::array({{{"id", "done"}, {"description", "A result."}},
                         {{"id", repeat(kEAcute, 120)}, {"description", repeat(kEmoji, 1000)}}}));
}

TEST(AgentRuntimeTest, ThirtyTwoCriteriaAreAccepted) {
  // Given exactly 32 criteria, we should keep them all.
  Json criteria = Json::array();
  for (int i = 0; i < 32; ++i) {
    criteria.push_back({{"id", "c" + std::to_string(i)}, {"description", "d"}});
  }
  EXPECT_EQ(runtime_input_of({{"goal", "g"}, {"success_criteria", criteria}})["success_criteria"],
            criteria);
}

struct InputCase {
  std::string name;
  Json runtime_input;
  std::string expected;
};

TEST(AgentRuntimeTest, RuntimeInputRules) {
  // Given a runtime_input that breaks one rule, we should refuse it with that rule's code.
  Json criteria_33 = Json::array();
  for (int i = 0; i < 33; ++i) {
    criteria_33.push_back({{"id", "c" + std::to_string(i)}, {"description", "d"}});
  }
  const auto criteria = [](const Json& value) {
    return Json({{"goal", "g"}, {"success_criteria", value}});
  };
  const std::vector<InputCase> cases = {
      {"string", "do it", "AGENT_RUNTIME_INPUT_REQUIRED"},
      {"list", Json::array({"goal"}), "AGENT_RUNTIME_INPUT_REQUIRED"},
      {"number", 5, "AGENT_RUNTIME_INPUT_REQUIRED"},
      {"bool", true, "AGENT_RUNTIME_INPUT_REQUIRED"},
      {"extra field", {{"goal", "g"}, {"extra", 1}}, "AGENT_RUNTIME_INPUT_FIELDS_INVALID"},
      {"capitalized field", {{"goal", "g"}, {"Goal", "g"}}, "AGENT_RUNTIME_INPUT_FIELDS_INVALID"},
      {"other name", {{"objective", "g"}}, "AGENT_RUNTIME_INPUT_FIELDS_INVALID"},
      {"empty", Json::object(), "AGENT_RUNTIME_GOAL_REQUIRED"},
      {"no goal", {{"instructions", "x"}}, "AGENT_RUNTIME_GOAL_REQUIRED"},
      {"empty goal", {{"goal", ""}}, "AGENT_RUNTIME_GOAL_REQUIRED"},
      {"blank goal", {{"goal", " \n\t"}}, "AGENT_RUNTIME_GOAL_REQUIRED"},
      {"number goal", {{"goal", 5}}, "AGENT_RUNTIME_GOAL_REQUIRED"},
      {"null goal", {{"goal", nullptr}}, "AGENT_RUNTIME_GOAL_REQUIRED"},
      {"null instructions",
       {{"goal", "g"}, {"instructions", nullptr}},
       "AGENT_RUNTIME_INSTRUCTIONS_INVALID"},
      {"number instructions",
       {{"goal", "g"}, {"instructions", 5}},
       "AGENT_RUNTIME_INSTRUCTIONS_INVALID"},
      {"list instructions",
       {{"goal", "g"}, {"instructions", Json::array({"x"})}},
       "AGENT_RUNTIME_INSTRUCTIONS_INVALID"},
      {"null criteria", criteria(nullptr), "AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID"},
      {"string criteria", criteria("done"), "AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID"},
      {"33 criteria", criteria(criteria_33), "AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID"},
      {"non-object criterion", criteria(Json::array({"done"})),
       "AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID"},
      {"blank id", criteria(Json::array({{{"id", "  "}, {"description", "d"}}})),
       "AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID"},
      {"number id", criteria(Json::array({{{"id", 1}, {"description", "d"}}})),
       "AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID"},
      {"missing description", criteria(Json::array({{{"id", "a"}}})),
       "AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID"},
      {"missing id", criteria(Json::array({{{"description", "d"}}})),
       "AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID"},
      {"blank description", criteria(Json::array({{{"id", "a"}, {"description", "\n"}}})),
       "AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID"},
      {"null constraints",
       {{"goal", "g"}, {"constraints", nullptr}},
       "AGENT_RUNTIME_CONSTRAINTS_INVALID"},
      {"list constraints",
       {{"goal", "g"}, {"constraints", Json::array()}},
       "AGENT_RUNTIME_CONSTRAINTS_INVALID"},
      {"string constraints",
       {{"goal", "g"}, {"constraints", "none"}},
       "AGENT_RUNTIME_CONSTRAINTS_INVALID"},
      {"secret",
       {{"goal", "g"}, {"constraints", {{"api_token", "x"}}}},
       "AGENT_RUNTIME_SECRET_FIELD_DENY"},
      {"too large",
       {{"goal", "g"}, {"constraints", {{"note", std::string(70000, 'n')}}}},
       "AGENT_RUNTIME_INPUT_TOO_LARGE"},
  };
  for (const InputCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(hermes_code(c.runtime_input), c.expected);
  }
}

TEST(AgentRuntimeTest, MissingRuntimeInputIsRequired) {
  // Given an agent_runtime execution request without runtime_input (or with null), we should
  // refuse it with AGENT_RUNTIME_INPUT_REQUIRED, as the seed's _agent_runtime_input(None) does.
  Json request = runtime_execution_request("hermes");
  const auto code = [](const Json& value) {
    return code_of(
        [&] { project_execution_envelope(runtime_binding("task-hermes-runtime"), value); });
  };
  EXPECT_EQ(code(request), "AGENT_RUNTIME_INPUT_REQUIRED");
  request["runtime_input"] = nullptr;
  EXPECT_EQ(code(request), "AGENT_RUNTIME_INPUT_REQUIRED");
}

TEST(AgentRuntimeTest, SecretLookingConstraintKeysAreDenied) {
  // Given a constraint key containing a secret marker in any case, at any depth, or spelled
  // with the Kelvin sign that Python lower-cases to 'k', we should refuse it.
  const std::vector<Json> constraints = {
      {{"token", 1}},
      {{"access_token", 1}},
      {{"Client_Secret", 1}},
      {{"PASSWORD", 1}},
      {{"db_password", 1}},
      {{"credentials", 1}},
      {{"CREDENTIAL_FILE", 1}},
      {{"authorization", 1}},
      {{"Authorization-Header", 1}},
      {{"api_key", 1}},
      {{"API_KEY", 1}},
      {{"openai_apikey", 1}},
      {{"ApiKey", 1}},
      {{"api_" + kKelvin + "ey", 1}},
      {{"to" + kKelvin + "en", 1}},
      {{"network", "ok"}, {"outer", {{"PassWord", "x"}}}},
      {{"list", Json::array({{{"token", "x"}}})}},
      {{"a", {{"b", {{"c", {{"secret", 1}}}}}}}},
  };
  for (const Json& value : constraints) {
    SCOPED_TRACE(value.dump());
    EXPECT_EQ(hermes_code({{"goal", "g"}, {"constraints", value}}),
              "AGENT_RUNTIME_SECRET_FIELD_DENY");
  }
}

TEST(AgentRuntimeTest, SecretWordsInValuesAreAllowed) {
  // Given constraint keys without a marker (markers only in values, near-miss keys), we should
  // keep the constraints unchanged.
  const std::vector<Json> constraints = {
      {{"note", "token secret password"}},
      {{"list", Json::array({"token", "api_key"})}},
      {{"api-key", 1}},
      {{"passphrase", 1}},
      {{"auth", 1}},
      {{kKelvin + "ind", "k"}},
  };
  for (const Json& value : constraints) {
    SCOPED_TRACE(value.dump());
    EXPECT_EQ(runtime_input_of({{"goal", "g"}, {"constraints", value}})["constraints"], value);
  }
}

TEST(AgentRuntimeTest, InputSizeLimitIsExactly64KiB) {
  // Given runtime inputs whose canonical form is 65536 and 65537 bytes, we should accept the
  // first and refuse the second with AGENT_RUNTIME_INPUT_TOO_LARGE.
  Json input = {{"goal", "g"}, {"constraints", {{"note", ""}}}};
  const std::size_t empty_size = canonical_json(runtime_input_of(input)).size();
  input["constraints"]["note"] = std::string(65536 - empty_size, 'n');
  EXPECT_EQ(canonical_json(runtime_input_of(input)).size(), 65536U);
  input["constraints"]["note"] = std::string(65537 - empty_size, 'n');
  EXPECT_EQ(hermes_code(input), "AGENT_RUNTIME_INPUT_TOO_LARGE");
}

struct RuntimeTamperCase {
  std::string pointer;
  Json value;
  std::string expected;
};

TEST(AgentRuntimeTest, TamperedRuntimeEnvelopeIsRefused) {
  // Given the hermes envelope with one field changed and its digest recomputed, we should refuse
  // it with the agent_runtime rule that sees the change (a plain value change is valid once
  // resealed, so only the binding or the digest can catch it).
  const Json envelope = projected("hermes")["metadata"]["execution"];
  const std::vector<RuntimeTamperCase> cases = {
      {"/runtime_input/goal", "  Summarize the requested operation.  ",
       "AGENT_RUNTIME_INPUT_NOT_CANONICAL"},
      {"/runtime_input/goal", repeat("g", 12001), "AGENT_RUNTIME_INPUT_NOT_CANONICAL"},
      {"/runtime_input/instructions", repeat(kEAcute, 32001), "AGENT_RUNTIME_INPUT_NOT_CANONICAL"},
      {"/runtime_input/success_criteria/0/id", " done", "AGENT_RUNTIME_INPUT_NOT_CANONICAL"},
      {"/runtime_input/success_criteria/0/weight", 1, "AGENT_RUNTIME_INPUT_NOT_CANONICAL"},
      {"/runtime_input/extra", 1, "AGENT_RUNTIME_INPUT_FIELDS_INVALID"},
      {"/runtime_input", Json::object(), "AGENT_RUNTIME_GOAL_REQUIRED"},
      {"/runtime_input", "goal", "AGENT_RUNTIME_INPUT_REQUIRED"},
      {"/runtime_input/constraints/token", "x", "AGENT_RUNTIME_SECRET_FIELD_DENY"},
      {"/runtime_input/constraints/note", std::string(70000, 'n'), "AGENT_RUNTIME_INPUT_TOO_LARGE"},
      {"/runtime_input/goal", "Another goal.", std::string(kOk)},
      {"/adapter", "openclaw", "AGENT_RUNTIME_CAPABILITY_REQUIRED"},
      {"/adapter", "codex", "AGENT_RUNTIME_ADAPTER_INVALID"},
      {"/adapter", "source_capture", "AGENT_RUNTIME_ADAPTER_INVALID"},
      {"/capability_scope", Json::array({"git.read"}), "AGENT_RUNTIME_CAPABILITY_REQUIRED"},
      {"/capability_scope", Json::array({"agent.runtime.hermes", "agent.runtime.openclaw"}),
       std::string(kOk)},
      {"/source_signals", Json::array({"x"}), "AGENT_RUNTIME_SOURCE_SIGNALS_DENY"},
      {"/change_set", Json::parse(R"([{"path": "x.py", "operation": "delete_file"}])"),
       "AGENT_RUNTIME_MUTATION_DENY"},
      {"/governance/writer_lease", true, "GOVERNANCE_INVALID"},
      {"/action", "source_capture", "EXECUTION_ADAPTER_INVALID"},
      {"/action", "deterministic", "EXECUTION_ADAPTER_INVALID"},
  };
  for (const RuntimeTamperCase& c : cases) {
    SCOPED_TRACE(c.pointer + " = " + c.value.dump().substr(0, 60));
    const Json tampered = reseal(with(envelope, c.pointer, c.value));
    EXPECT_EQ(code_of([&] { validate_execution_envelope(tampered); }), c.expected);
    if (c.expected == kOk) {
      // Without the new digest the same change is a digest mismatch.
      EXPECT_EQ(code_of([&] { validate_execution_envelope(with(envelope, c.pointer, c.value)); }),
                "EXECUTION_DIGEST_MISMATCH");
    }
  }
}

TEST(AgentRuntimeTest, SourceSignalsAreDenied) {
  // Given an agent_runtime request with source signals, we should refuse it with
  // AGENT_RUNTIME_SOURCE_SIGNALS_DENY; an empty list is no signal.
  Json request = hermes_request({{"goal", "g"}});
  request["source_signals"] = Json::array({"model provider registry"});
  const GovernedBinding binding = runtime_binding("task-hermes-runtime");
  EXPECT_EQ(code_of([&] { project_execution_envelope(binding, request); }),
            "AGENT_RUNTIME_SOURCE_SIGNALS_DENY");
  request["source_signals"] = Json::array();
  EXPECT_EQ(code_of([&] { project_execution_envelope(binding, request); }), kOk);
}

TEST(AgentRuntimeTest, AdapterIsCheckedOnDirectProjection) {
  // Given project_execution_envelope with an agent_runtime request for another adapter, we
  // should refuse it with AGENT_RUNTIME_ADAPTER_INVALID.
  const GovernedBinding binding = runtime_binding("task-hermes-runtime");
  for (const Json& adapter : {Json("codex"), Json("compact_interface_map"), Json(""), Json()}) {
    SCOPED_TRACE(adapter.dump());
    const Json request = with(hermes_request({{"goal", "g"}}), "/adapter", adapter);
    EXPECT_EQ(code_of([&] { project_execution_envelope(binding, request); }),
              "AGENT_RUNTIME_ADAPTER_INVALID");
  }
}

}  // namespace
}  // namespace aios::envelope_test
