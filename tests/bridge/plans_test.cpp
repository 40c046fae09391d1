// The plan registry and envelope resolution over HTTP against the real scheduler: plans are
// idempotent by task and content, every change-set rule refuses before anything is stored,
// the allowlist gates verification, a registered plan wins, a read-only envelope is replayed
// exactly (seed: test_online_agent_source_capture_replay.py), anything else is refused.
#include <string>

#include "aios/envelope.hpp"
#include "bridge/bridge_fixture.hpp"

namespace aios::bridge_test {
namespace {

using ::testing::Contains;
using ::testing::Not;

class PlansTest : public BridgeTest {
 protected:
  Json plan_for(const std::string& task_id, const std::vector<Json>& change_set) {
    return {{"task_id", task_id}, {"change_set", change_set}};
  }

  Reply resolve(ApiClient&& client, const std::string& task_id, const Json& required,
                const Json* execution = nullptr) {
    return resolve(client, task_id, required, execution);
  }
  Reply resolve(ApiClient& client, const std::string& task_id, const Json& required,
                const Json* execution = nullptr) {
    Json body = {{"task_id", task_id}, {"required_capabilities", required}};
    if (execution != nullptr) body["execution"] = *execution;
    return client.post("/v2/execution-envelope", body);
  }
};

TEST_F(PlansTest, RegisteringThePlanTwiceReplaysAndAnotherPlanConflicts) {
  // Given a source-capture task, we should register its plan once (201), replay the same plan
  // (200, same digest, one audit event) and refuse a different one (409).
  create_task(source_capture_task(binding("task-plan-1", "agent/plan-1")));
  const auto plan = plan_for("task-plan-1", {write_file("docs/NEW.md", "new\n")});
  const auto first = bridge().post("/v2/plans", plan);
  ASSERT_EQ(first.status, 201) << describe(first);
  EXPECT_EQ(first.body.at("idempotent"), false);
  EXPECT_EQ(first.body.at("target_branch"), "agent/plan-1");
  const auto again = bridge().post("/v2/plans", plan);
  ASSERT_EQ(again.status, 200) << describe(again);
  EXPECT_EQ(again.body.at("idempotent"), true);
  EXPECT_EQ(again.body.at("execution_digest"), first.body.at("execution_digest"));
  EXPECT_EQ(again.body.at("plan_sha256"), first.body.at("plan_sha256"));

  const auto other =
      bridge().post("/v2/plans", plan_for("task-plan-1", {write_file("docs/NEW.md", "other\n")}));
  EXPECT_EQ(other.status, 409) << describe(other);
  EXPECT_EQ(other.code(), "EXECUTION_PLAN_CONFLICT");
  const auto types = event_types("task-plan-1");
  EXPECT_EQ(std::count(types.begin(), types.end(), "BRIDGE_PLAN_REGISTERED"), 1);
}

TEST_F(PlansTest, TraversalAbsoluteAndGitPathsAreRefusedAndNothingIsStored) {
  // Given bad change paths, we should refuse each with its code and register no plan.
  create_task(source_capture_task(binding("task-plan-2", "agent/plan-2")));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"../escape.txt", "CHANGE_PATH_INVALID"},     {"docs/../../escape", "CHANGE_PATH_INVALID"},
      {"/etc/passwd", "CHANGE_PATH_INVALID"},       {".git/config", "CHANGE_PATH_GIT_DENY"},
      {"sub/.GIT/hooks/x", "CHANGE_PATH_GIT_DENY"}, {"docs\\win", "CHANGE_PATH_INVALID"}};
  for (const auto& [path, code] : cases) {
    const auto reply = bridge().post("/v2/plans", plan_for("task-plan-2", {write_file(path, "x")}));
    EXPECT_EQ(reply.code(), code) << path << ": " << describe(reply);
    EXPECT_GE(reply.status, 400) << path;
  }
  const auto resolved = resolve(bridge(), "task-plan-2", {"git.read"});
  EXPECT_EQ(resolved.code(), "EXECUTION_PLAN_NOT_REGISTERED") << describe(resolved);
  EXPECT_THAT(event_types("task-plan-2"), Not(Contains("BRIDGE_PLAN_REGISTERED")));
}

TEST_F(PlansTest, VerificationOutsideTheAllowlistIsRefused) {
  // Given a verification command whose executable is not allowlisted, we should refuse it.
  create_task(source_capture_task(binding("task-plan-3", "agent/plan-3")));
  auto plan = plan_for("task-plan-3", {write_file("docs/A.md", "a")});
  plan["verification"] = {{{"label", "tests"},
                           {"argv", {"/usr/bin/perl", "t.pl"}},
                           {"cwd", "."},
                           {"timeout_seconds", 60}}};
  const auto refused = bridge().post("/v2/plans", plan);
  EXPECT_EQ(refused.status, 400) << describe(refused);
  EXPECT_EQ(refused.code(), "VERIFICATION_EXECUTABLE_NOT_ALLOWED");
  plan["verification"][0]["argv"] = {"/usr/bin/python3", "-m", "pytest"};
  const auto accepted = bridge().post("/v2/plans", plan);
  EXPECT_EQ(accepted.status, 201) << describe(accepted);
}

TEST_F(PlansTest, RolesAndUnknownTasks) {
  // Given the plan endpoint, we should demand the owner and name unknown tasks.
  create_task(source_capture_task(binding("task-plan-4", "agent/plan-4")));
  const auto plan = plan_for("task-plan-4", {write_file("docs/A.md", "a")});
  EXPECT_EQ(ApiClient(scheduler().bridge_port(), "").post("/v2/plans", plan).code(),
            "UNAUTHORIZED");
  EXPECT_EQ(
      ApiClient(scheduler().bridge_port(), std::string(40, 'z')).post("/v2/plans", plan).status,
      401);
  EXPECT_EQ(agent_bridge().post("/v2/plans", plan).code(), "FORBIDDEN");
  EXPECT_EQ(bridge().post("/v2/plans", plan_for("task-missing", {write_file("a", "a")})).code(),
            "TASK_NOT_FOUND");
  auto extra = plan;
  extra["executable"] = "/bin/sh";
  EXPECT_EQ(bridge().post("/v2/plans", extra).code(), "REQUEST_FIELDS_INVALID");
  EXPECT_EQ(bridge().send("POST", "/v2/plans", "{not json").code(), "REQUEST_INVALID");
  EXPECT_EQ(bridge().send("PUT", "/v2/plans", "{}").code(), "NOT_FOUND");
  // Reading plans is the owner's too: a list by task id, and one plan with its change set.
  ASSERT_EQ(bridge().post("/v2/plans", plan).status, 201);
  const auto listed = bridge().get("/v2/plans");
  ASSERT_EQ(listed.status, 200) << describe(listed);
  ASSERT_EQ(listed.body.at("plans").size(), 1U);
  EXPECT_EQ(listed.body.at("plans")[0].at("task_id"), "task-plan-4");
  EXPECT_EQ(listed.body.at("plans")[0].at("changes"), 1);
  EXPECT_EQ(listed.body.at("next_after"), "task-plan-4");
  EXPECT_TRUE(bridge().get("/v2/plans?after=task-plan-4").body.at("plans").empty());
  const auto shown = bridge().get("/v2/plans/task-plan-4");
  ASSERT_EQ(shown.status, 200) << describe(shown);
  EXPECT_EQ(shown.body.at("plan").at("change_set")[0].at("path"), "docs/A.md");
  EXPECT_EQ(shown.body.at("plan_sha256"), listed.body.at("plans")[0].at("plan_sha256"));
  EXPECT_EQ(bridge().get("/v2/plans/task-missing").code(), "TASK_NOT_FOUND");
  EXPECT_EQ(bridge().get("/v2/plans?limit=0").code(), "LIMIT_INVALID");
  EXPECT_EQ(agent_bridge().get("/v2/plans").code(), "FORBIDDEN");
  EXPECT_EQ(agent_bridge().get("/v2/plans/task-plan-4").code(), "FORBIDDEN");
  EXPECT_EQ(ApiClient(scheduler().bridge_port(), "").get("/v2/plans").code(), "UNAUTHORIZED");
}

TEST_F(PlansTest, UnregisteredPlanIsRefused) {
  // Given a source-capture task without a plan and without a replayed envelope, we should
  // refuse to invent one.
  create_task(source_capture_task(binding("task-plan-5", "agent/plan-5")));
  const auto reply = resolve(bridge(), "task-plan-5", {"git.read"});
  EXPECT_EQ(reply.status, 409) << describe(reply);
  EXPECT_EQ(reply.code(), "EXECUTION_PLAN_NOT_REGISTERED");
}

TEST_F(PlansTest, SourceCaptureEnvelopeIsReplayedExactly) {
  // Given the persisted source-capture envelope, we should return it byte for byte; a valid
  // envelope that differs from the persisted one is refused.
  const auto created = create_task(source_capture_task(binding("task-plan-6", "agent/plan-6")));
  register_worker(agent(), "worker-sc", kWriterCapabilities, {"source_capture"}, 1);
  const Json persisted = created.at("metadata").at("execution");
  const auto replay = resolve(agent_bridge(), "task-plan-6", {"git.read"}, &persisted);
  ASSERT_EQ(replay.status, 200) << describe(replay);
  EXPECT_EQ(replay.body, persisted);
  EXPECT_EQ(replay.body.at("execution_digest"), created.at("execution_digest"));

  Json altered = persisted;
  altered["source_signals"] = {"another signal"};
  altered.erase("execution_digest");
  altered["execution_digest"] = aios::execution_digest_of(altered);
  const auto refused = resolve(agent_bridge(), "task-plan-6", {"git.read"}, &altered);
  EXPECT_EQ(refused.code(), "EXECUTION_REPLAY_MISMATCH") << describe(refused);
  Json forged = persisted;
  forged["source_signals"] = {"another signal"};
  EXPECT_EQ(resolve(agent_bridge(), "task-plan-6", {"git.read"}, &forged).code(),
            "EXECUTION_DIGEST_MISMATCH");
}

TEST_F(PlansTest, RegisteredPlanWinsOverTheReplayedEnvelope) {
  // Given a source-capture task with a registered plan, we should resolve the plan's
  // deterministic envelope for the task's binding, whatever envelope is passed in.
  const auto created = create_task(source_capture_task(binding("task-plan-7", "agent/plan-7")));
  const auto registered =
      require(bridge().post("/v2/plans", plan_for("task-plan-7", {write_file("docs/P.md", "p\n")})),
              201, "plan");
  const Json persisted = created.at("metadata").at("execution");
  const auto reply = resolve(bridge(), "task-plan-7", {"git.read"}, &persisted);
  ASSERT_EQ(reply.status, 200) << describe(reply);
  EXPECT_EQ(reply.body.at("action"), "deterministic");
  EXPECT_EQ(reply.body.at("execution_digest"), registered.at("execution_digest"));
  EXPECT_EQ(reply.body.at("task_id"), "task-plan-7");
  EXPECT_EQ(reply.body.at("target_branch"), "agent/plan-7");
  EXPECT_EQ(reply.body.at("governance").at("writer_lease"), true);
  EXPECT_EQ(aios::execution_digest_of(reply.body), registered.at("execution_digest"));
  EXPECT_THAT(event_types("task-plan-7"), Contains("BRIDGE_ENVELOPE_RESOLVED"));
}

TEST_F(PlansTest, ATaskAwaitingItsRebindSaysSoInWhyAndOnceInItsEvents) {
  // Given a queued source-capture task whose plan is registered after it (it resolves to the
  // plan's digest until the owner rebinds it), we should keep it, pass it over in claim-next,
  // say why in its eligibility (the code, each worker's envelope_unresolved) and record it once
  // in its events, however often a claim-next meets it.
  create_task(source_capture_task(binding("task-plan-w", "agent/plan-w")));
  register_worker(agent(), "worker-reader", {"git.read"}, {"source_capture"}, 1);
  const auto why = [&] {
    return require(owner().get("/v1/tasks/task-plan-w/eligibility"), 200, "eligibility");
  };
  const auto unresolved = [&] {
    std::vector<Json> payloads;
    for (const auto& event : events("task-plan-w")) {
      if (event.at("event_type") == "TASK_ENVELOPE_UNRESOLVED")
        payloads.push_back(event["payload"]);
    }
    return payloads;
  };
  auto report = why();
  EXPECT_EQ(report.at("envelope"), (Json{{"resolves", true}}));

  require(bridge().post("/v2/plans", plan_for("task-plan-w", {write_file("docs/W.md", "w\n")})),
          201, "plan");
  report = why();
  EXPECT_EQ(report.at("envelope"), (Json{{"resolves", false}, {"code", "TASK_ENVELOPE_DRIFT"}}));
  for (const auto& worker : report.at("workers")) {
    EXPECT_EQ(worker.at("eligible"), false) << worker.dump();
    EXPECT_EQ(worker.at("reasons").back(), "envelope_unresolved") << worker.dump();
  }
  for (int i = 0; i < 2; ++i) {
    const auto next = agent().post("/v1/tasks/claim-next", {{"worker_id", "worker-reader"}});
    ASSERT_EQ(next.status, 200) << describe(next);
    EXPECT_TRUE(next.body.at("claim").is_null()) << describe(next);
  }
  const auto recorded = unresolved();
  ASSERT_EQ(recorded.size(), 1U);
  EXPECT_EQ(recorded[0].at("code"), "TASK_ENVELOPE_DRIFT");
  EXPECT_EQ(recorded[0].at("revision"), 1);
  EXPECT_EQ(task("task-plan-w").at("status"), "QUEUED");
}

TEST_F(PlansTest, DeterministicTaskResolvesToItsOwnEnvelope) {
  // Given a task projected as deterministic, we should resolve its persisted envelope, and
  // refuse capabilities outside its scope and agents whose grant could never run it.
  const auto created = create_task(
      deterministic_task(binding("task-plan-8", "agent/plan-8"), {write_file("docs/D.md", "d")}));
  const auto reply = resolve(agent_bridge(), "task-plan-8", {"git.read", "governed.write.file"});
  ASSERT_EQ(reply.status, 200) << describe(reply);
  EXPECT_EQ(reply.body, created.at("metadata").at("execution"));
  EXPECT_EQ(resolve(bridge(), "task-plan-8", {"agent.runtime.hermes"}).code(),
            "EXECUTION_CAPABILITY_SCOPE_MISMATCH");
  EXPECT_EQ(resolve(bridge(), "task-plan-8", {"no.such.capability"}).code(), "CAPABILITY_UNKNOWN");
  ApiClient reader(scheduler().bridge_port(), create_agent("agent-reader", {"git.read"}));
  EXPECT_EQ(resolve(reader, "task-plan-8", {"git.read"}).code(), "TASK_NOT_FOUND");
}

TEST_F(PlansTest, AnAgentResolvesOnlyWhatItsWorkersHoldOrCouldClaimAndIsRecordedOnce) {
  // Given a task none of the agent's workers could claim (its workers run deterministic plans
  // only), the agent should learn nothing of it while the owner may resolve it; once a worker
  // of the agent could claim it, and while it holds the claim, the agent resolves it, and each
  // attempt and worker is recorded once however often it asks.
  const auto created = create_task(source_capture_task(binding("task-plan-9", "agent/plan-9")));
  const Json persisted = created.at("metadata").at("execution");
  EXPECT_EQ(resolve(agent_bridge(), "task-plan-9", {"git.read"}, &persisted).code(),
            "TASK_NOT_FOUND");
  ASSERT_EQ(resolve(bridge(), "task-plan-9", {"git.read"}, &persisted).status, 200);
  register_worker(agent(), "worker-sc", kWriterCapabilities, {"source_capture"}, 1);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(resolve(agent_bridge(), "task-plan-9", {"git.read"}, &persisted).status, 200);
  }
  claim(agent(), "task-plan-9", "worker-sc");
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(resolve(agent_bridge(), "task-plan-9", {"git.read"}, &persisted).status, 200);
  }
  std::vector<Json> recorded;
  for (const auto& event : events("task-plan-9")) {
    if (event.at("event_type") == "BRIDGE_ENVELOPE_RESOLVED") recorded.push_back(event);
  }
  // The owner's, the queued task's (attempt 0) and the claim's (attempt 1), by worker-sc.
  ASSERT_EQ(recorded.size(), 3u) << Json(recorded).dump();
  EXPECT_EQ(recorded[0].at("payload").at("worker_id"), nullptr);
  EXPECT_EQ(recorded[1].at("payload").at("worker_id"), "worker-sc");
  EXPECT_EQ(recorded[1].at("payload").at("attempt"), 0);
  EXPECT_EQ(recorded[2].at("payload").at("worker_id"), "worker-sc");
  EXPECT_EQ(recorded[2].at("payload").at("attempt"), 1);
  // Another agent, whose worker could claim it were it queued, learns nothing of a claimed task.
  ApiClient other(scheduler().bridge_port(), create_agent("agent-other", kWriterCapabilities));
  ApiClient other_api = client(other.token());
  register_worker(other_api, "worker-other", kWriterCapabilities, {"source_capture"}, 1);
  EXPECT_EQ(resolve(other, "task-plan-9", {"git.read"}, &persisted).code(), "TASK_NOT_FOUND");
}

}  // namespace
}  // namespace aios::bridge_test
