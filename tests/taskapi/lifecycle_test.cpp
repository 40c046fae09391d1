// The task lifecycle over HTTP against the real daemon: create, poll, claim, heartbeat, result,
// verification (PASS, NEEDS_REWORK, FAIL), release and cancel; revisions, attempts, events and
// the task view at each step.
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "support/run_command.hpp"
#include "taskapi/client.hpp"

namespace aios::taskapi_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class LifecycleTest : public SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    agent_.emplace(client(create_agent("agent-one", {"agent.runtime.hermes", "git.read"})));
    register_worker(*agent_, "worker-one", {"agent.runtime.hermes"}, {"hermes"}, 4);
  }

  ApiClient& agent() { return *agent_; }

  Reply post_result(const std::string& task_id, const Json& lease, const std::string& key,
                    const Json& result) {
    const std::string digest = task(task_id).at("execution_digest");
    return agent().post("/v1/tasks/" + task_id + "/result",
                        result_body(lease, digest, key, result));
  }

  std::optional<ApiClient> agent_;
};

// Neither the stored hash nor the issued lease token may appear in `reply`.
void expect_no_lease_secret(const Reply& reply, const std::string& token) {
  EXPECT_THAT(reply.raw, Not(HasSubstr("lease_token_hash")));
  EXPECT_THAT(reply.raw, Not(HasSubstr(token)));
}

TEST_F(LifecycleTest, HealthAnswersWithoutAToken) {
  // Given a running scheduler, we should answer GET /health to anyone.
  ApiClient anonymous = client("");
  const auto reply = anonymous.get("/health");
  ASSERT_EQ(reply.status, 200) << describe(reply);
  EXPECT_EQ(reply.body, (Json{{"status", "ok"},
                              {"service", "aios-task-scheduler"},
                              {"store", scheduler().on_postgres() ? "postgresql" : "sqlite"},
                              {"leader", true}}));
}

TEST_F(LifecycleTest, ClaimNextTakesAJobInOneRoundTripAndWaitsForTheNext) {
  // Given a queued task, we should claim it with one claim-next whose answer carries the
  // Bridge's envelope (here the persisted one, replayed) and a lease the result accepts; given
  // an empty queue, a waiting claim-next should take the task created while it waits.
  const auto created = owner().post("/v1/tasks", hermes_task("task-next-1"));
  ASSERT_EQ(created.status, 201) << describe(created);

  const auto first = agent().post("/v1/tasks/claim-next", {{"worker_id", "worker-one"}});

  ASSERT_EQ(first.status, 200) << describe(first);
  const Json claim = first.body.at("claim");
  EXPECT_EQ(claim.at("task_id"), "task-next-1");
  EXPECT_EQ(claim.at("attempt"), 1);
  EXPECT_EQ(claim.at("envelope"), created.body.at("metadata").at("execution"));
  EXPECT_EQ(claim.at("execution"), created.body.at("metadata").at("execution"));
  EXPECT_EQ(task("task-next-1").at("status"), "CLAIMED");
  EXPECT_THAT(event_types("task-next-1"),
              ElementsAre("TASK_CREATED", "TASK_CLAIMED", "BRIDGE_ENVELOPE_RESOLVED"));
  const auto submitted = post_result("task-next-1", claim, "result-next-1", {{"ok", true}});
  EXPECT_EQ(submitted.status, 201) << describe(submitted);

  Reply waited;
  std::thread waiter([&] {
    ApiClient own = client(agent().token());
    waited = own.post("/v1/tasks/claim-next", {{"worker_id", "worker-one"}, {"wait_ms", 20000}});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(owner().post("/v1/tasks", hermes_task("task-next-2")).status, 201);
  waiter.join();

  ASSERT_EQ(waited.status, 200) << describe(waited);
  EXPECT_EQ(waited.body.at("claim").at("task_id"), "task-next-2");
}

TEST_F(LifecycleTest, FullLifecycleToSucceeded) {
  // Given a hermes task and worker, we should walk create to SUCCEEDED with revisions 1 to 4.
  const auto body = hermes_task("task-life-1");
  const auto created = owner().post("/v1/tasks", body);
  ASSERT_EQ(created.status, 201) << describe(created);
  EXPECT_EQ(created.body.at("status"), "QUEUED");
  EXPECT_EQ(created.body.at("revision"), 1);
  EXPECT_EQ(created.body.at("attempt"), 0);
  EXPECT_EQ(created.body.at("max_attempts"), 3);
  EXPECT_EQ(created.body.at("claimed_by"), nullptr);
  EXPECT_EQ(created.body.at("lease_expires_at"), nullptr);
  const std::string digest = created.body.at("execution_digest");
  EXPECT_EQ(digest.size(), 64u);
  EXPECT_EQ(created.body.at("metadata").at("execution").at("execution_digest"), digest);
  EXPECT_EQ(created.body.at("metadata").at("execution").at("adapter"), "hermes");

  const auto replay = owner().post("/v1/tasks", body);
  ASSERT_EQ(replay.status, 200) << describe(replay);
  EXPECT_EQ(replay.body, created.body);

  const auto polled = agent().post("/v1/tasks/poll", {{"worker_id", "worker-one"}});
  ASSERT_EQ(polled.status, 200) << describe(polled);
  ASSERT_EQ(polled.body.at("tasks").size(), 1u);
  EXPECT_EQ(polled.body.at("tasks")[0].at("task_id"), "task-life-1");
  EXPECT_EQ(polled.body.at("tasks")[0].at("metadata").at("execution").at("execution_digest"),
            digest);

  const auto claimed = agent().post(
      "/v1/tasks/task-life-1/claim",
      {{"worker_id", "worker-one"}, {"expected_revision", 1}, {"execution_digest", digest}});
  ASSERT_EQ(claimed.status, 200) << describe(claimed);
  const Json lease = claimed.body;
  EXPECT_EQ(lease.at("task_id"), "task-life-1");
  EXPECT_EQ(lease.at("revision"), 2);
  EXPECT_EQ(lease.at("attempt"), 1);
  EXPECT_EQ(lease.at("execution_digest"), digest);
  const std::string token = lease.at("lease_token");
  ASSERT_EQ(token.size(), 64u);

  const auto claimed_view = owner().get("/v1/tasks/task-life-1");
  ASSERT_EQ(claimed_view.status, 200) << describe(claimed_view);
  expect_no_lease_secret(claimed_view, token);
  EXPECT_EQ(claimed_view.body.at("status"), "CLAIMED");
  EXPECT_EQ(claimed_view.body.at("revision"), 2);
  EXPECT_EQ(claimed_view.body.at("attempt"), 1);
  EXPECT_EQ(claimed_view.body.at("claimed_by"), "worker-one");
  EXPECT_EQ(claimed_view.body.at("lease_expires_at"), lease.at("lease_expires_at"));

  // The claimant may read its own task, and sees what the owner sees.
  const auto own = agent().get("/v1/tasks/task-life-1");
  ASSERT_EQ(own.status, 200) << describe(own);
  EXPECT_EQ(own.body, claimed_view.body);

  const auto beat = agent().post("/v1/tasks/task-life-1/heartbeat",
                                 {{"lease_token", token}, {"stage", "running"}});
  ASSERT_EQ(beat.status, 200) << describe(beat);
  expect_no_lease_secret(beat, token);
  EXPECT_EQ(beat.body.at("revision"), 2);
  EXPECT_EQ(beat.body.at("stage"), "running");
  // ISO-8601 UTC with a fixed width: text order is time order.
  EXPECT_GE(beat.body.at("lease_expires_at").get<std::string>(),
            lease.at("lease_expires_at").get<std::string>());
  EXPECT_EQ(task("task-life-1").at("revision"), 2);

  const auto result_request =
      result_body(lease, digest, "result-life-1", {{"summary", "three modules"}});
  const auto result = agent().post("/v1/tasks/task-life-1/result", result_request);
  ASSERT_EQ(result.status, 201) << describe(result);
  expect_no_lease_secret(result, token);
  EXPECT_EQ(result.body.at("status"), "VERIFYING");
  EXPECT_EQ(result.body.at("revision"), 3);
  EXPECT_EQ(result.body.at("attempt"), 1);
  EXPECT_EQ(result.body.at("idempotent"), false);

  const auto result_replay = agent().post("/v1/tasks/task-life-1/result", result_request);
  ASSERT_EQ(result_replay.status, 200) << describe(result_replay);
  EXPECT_EQ(result_replay.body.at("idempotent"), true);
  EXPECT_EQ(result_replay.body.at("revision"), 3);
  EXPECT_EQ(result_replay.body.at("result_sha256"), result.body.at("result_sha256"));

  const auto verifying = task("task-life-1");
  EXPECT_EQ(verifying.at("status"), "VERIFYING");
  EXPECT_EQ(verifying.at("revision"), 3);
  EXPECT_EQ(verifying.at("attempt"), 1);
  EXPECT_EQ(verifying.at("result"), (Json{{"summary", "three modules"}}));
  EXPECT_EQ(verifying.at("lease_expires_at"), nullptr);

  const auto verified =
      owner().post("/v1/tasks/task-life-1/verification",
                   {{"expected_revision", 3}, {"decision", "PASS"}, {"reason", "looks right"}});
  ASSERT_EQ(verified.status, 200) << describe(verified);
  expect_no_lease_secret(verified, token);
  EXPECT_EQ(verified.body.at("status"), "SUCCEEDED");
  EXPECT_EQ(verified.body.at("revision"), 4);
  EXPECT_EQ(verified.body.at("attempt"), 1);
  EXPECT_EQ(verified.body.at("claimed_by"), nullptr);
  EXPECT_EQ(verified.body.at("verification"),
            (Json{{"decision", "PASS"}, {"reason", "looks right"}}));
  EXPECT_EQ(task("task-life-1"), verified.body);

  const auto history = owner().get("/v1/tasks/task-life-1/events");
  ASSERT_EQ(history.status, 200) << describe(history);
  expect_no_lease_secret(history, token);
  const auto& list = history.body.at("events");
  std::vector<std::string> types;
  for (const auto& event : list) types.push_back(event.at("event_type"));
  EXPECT_THAT(
      types, ElementsAre("TASK_CREATED", "TASK_CLAIMED", "TASK_RESULT_SUBMITTED", "TASK_VERIFIED"));
  ASSERT_EQ(list.size(), 4u);
  for (std::size_t i = 1; i < list.size(); ++i) {
    EXPECT_LT(list[i - 1].at("event_id"), list[i].at("event_id"));
  }
  EXPECT_EQ(list[0].at("payload").at("revision"), 1);
  EXPECT_EQ(list[0].at("payload").at("execution_digest"), digest);
  EXPECT_EQ(list[1].at("agent_id"), "agent-one");
  EXPECT_EQ(list[1].at("payload").at("revision"), 2);
  EXPECT_EQ(list[1].at("payload").at("attempt"), 1);
  EXPECT_EQ(list[1].at("payload").at("worker_id"), "worker-one");
  EXPECT_EQ(list[1].at("payload").at("claim_id"), lease.at("claim_id"));
  EXPECT_EQ(list[2].at("payload").at("idempotency_key"), "result-life-1");
  EXPECT_EQ(list[2].at("payload").at("result_sha256"), result.body.at("result_sha256"));
  EXPECT_EQ(list[3].at("payload").at("decision"), "PASS");
  EXPECT_EQ(list[3].at("payload").at("status"), "SUCCEEDED");
  EXPECT_EQ(history.body.at("next_after"), list[3].at("event_id"));

  // The same history a page at a time: `after` the last id of the page before, at most `limit`.
  std::vector<std::string> paged;
  Json after = 0;
  for (int page = 0; page < 3; ++page) {
    const auto part = owner().get("/v1/tasks/task-life-1/events?limit=2&after=" + after.dump());
    ASSERT_EQ(part.status, 200) << describe(part);
    EXPECT_LE(part.body.at("events").size(), 2u);
    for (const auto& event : part.body.at("events")) paged.push_back(event.at("event_type"));
    after = part.body.at("next_after");
  }
  EXPECT_EQ(paged, types);
  EXPECT_EQ(after, list[3].at("event_id"));
  for (const char* bad : {"limit=0", "limit=1001", "after=-1", "limit=two"}) {
    const auto refused = owner().get(std::string("/v1/tasks/task-life-1/events?") + bad);
    EXPECT_EQ(refused.status, 400) << bad;
    EXPECT_EQ(refused.code(), "LIMIT_INVALID") << bad;
  }

  const auto listed = owner().get("/v1/tasks");
  ASSERT_EQ(listed.status, 200) << describe(listed);
  expect_no_lease_secret(listed, token);
  ASSERT_EQ(listed.body.at("tasks").size(), 1u);
  EXPECT_EQ(listed.body.at("tasks")[0], verified.body);

  // The worker's slot is free again.
  EXPECT_EQ(fleet_worker("worker-one").at("used_slots"), 0);

  // No credential reaches the daemon's log or the metrics.
  const std::string log = scheduler().process().log();
  const std::string metrics = metrics_text();
  for (const auto& secret : {token, scheduler().control_token(), agent().token()}) {
    EXPECT_THAT(log, Not(HasSubstr(secret)));
    EXPECT_THAT(metrics, Not(HasSubstr(secret)));
  }
}

TEST_F(LifecycleTest, IntegersPast64BitsKeepTheirDigitsAndPythonsDigest) {
  // Given constraints and metadata with integers past 64 bits (Python's json keeps them
  // exactly), the stored task should answer them digit for digit, and its execution digest
  // should be the one Python computes over the envelope the scheduler answered.
  auto body = hermes_task("task-life-big");
  body["execution"]["runtime_input"] = {
      {"goal", "Count"},
      {"constraints", parse_json(R"({"n":18446744073709551616,"m":-9223372036854775809})")}};
  body["metadata"] = parse_json(R"({"budget":123456789012345678901234567890})");
  const auto created = owner().post("/v1/tasks", body);
  ASSERT_EQ(created.status, 201) << describe(created);
  const auto got = owner().get("/v1/tasks/task-life-big");
  ASSERT_EQ(got.status, 200) << describe(got);
  EXPECT_THAT(got.raw, ::testing::HasSubstr(R"("budget":123456789012345678901234567890)"));
  EXPECT_THAT(got.raw, ::testing::HasSubstr(R"("n":18446744073709551616)"));
  const auto& envelope = got.body.at("metadata").at("execution");
  EXPECT_EQ(envelope.at("runtime_input").at("constraints"),
            body["execution"]["runtime_input"]["constraints"]);

  const std::string file = (scheduler().dir() / "envelope.json").string();
  {
    std::ofstream out(file);
    out << canonical_json(envelope);
  }
  const auto python = test::run_command(
      "/usr/bin/python3 -c 'import hashlib,json,sys; e=json.load(open(sys.argv[1])); "
      "e.pop(\"execution_digest\"); print(hashlib.sha256(json.dumps(e,sort_keys=True,"
      "separators=(\",\",\":\"),ensure_ascii=False).encode()).hexdigest())' " +
      file);
  ASSERT_EQ(python.exit_code, 0) << python.output;
  EXPECT_EQ(python.output, got.body.at("execution_digest").get<std::string>() + "\n");
}

TEST_F(LifecycleTest, NeedsReworkRequeuesAndTheNextClaimIsAttemptTwo) {
  // Given NEEDS_REWORK, we should requeue with the verification kept and claim it as attempt 2.
  create_task(hermes_task("task-rework", 3));
  const auto first = claim(agent(), "task-rework", "worker-one");
  require(post_result("task-rework", first, "result-rework-1", {{"try", 1}}), 201, "result 1");

  const auto reworked = owner().post(
      "/v1/tasks/task-rework/verification",
      {{"expected_revision", 3}, {"decision", "NEEDS_REWORK"}, {"reason", "tests missing"}});
  ASSERT_EQ(reworked.status, 200) << describe(reworked);
  const auto& view = reworked.body;
  EXPECT_EQ(view.at("status"), "QUEUED");
  EXPECT_EQ(view.at("revision"), 4);
  EXPECT_EQ(view.at("attempt"), 1);
  EXPECT_EQ(view.at("claimed_by"), nullptr);
  EXPECT_EQ(view.at("lease_expires_at"), nullptr);
  EXPECT_EQ(view.at("verification"),
            (Json{{"decision", "NEEDS_REWORK"}, {"reason", "tests missing"}}));
  EXPECT_EQ(task("task-rework"), view);
  EXPECT_EQ(fleet_worker("worker-one").at("used_slots"), 0);

  // No claimant any more: the agent no longer sees the task by id, only through poll.
  const auto hidden = agent().get("/v1/tasks/task-rework");
  EXPECT_EQ(hidden.status, 404) << describe(hidden);
  EXPECT_EQ(hidden.code(), "TASK_NOT_FOUND");
  const auto polled = agent().post("/v1/tasks/poll", {{"worker_id", "worker-one"}});
  ASSERT_EQ(polled.status, 200) << describe(polled);
  ASSERT_EQ(polled.body.at("tasks").size(), 1u);
  EXPECT_EQ(polled.body.at("tasks")[0].at("revision"), 4);

  const auto second = claim(agent(), "task-rework", "worker-one");
  EXPECT_EQ(second.at("attempt"), 2);
  EXPECT_EQ(second.at("revision"), 5);
  EXPECT_NE(second.at("lease_token"), first.at("lease_token"));
  EXPECT_NE(second.at("claim_id"), first.at("claim_id"));
  EXPECT_EQ(task("task-rework").at("verification").at("decision"), "NEEDS_REWORK");

  const auto stale =
      agent().post("/v1/tasks/task-rework/heartbeat", {{"lease_token", first.at("lease_token")}});
  EXPECT_EQ(stale.status, 409) << describe(stale);
  EXPECT_EQ(stale.code(), "LEASE_INVALID");
  const auto stale_attempt =
      post_result("task-rework", {{"lease_token", second.at("lease_token")}, {"attempt", 1}},
                  "result-rework-stale", {{"try", 2}});
  EXPECT_EQ(stale_attempt.status, 409) << describe(stale_attempt);
  EXPECT_EQ(stale_attempt.code(), "ATTEMPT_STALE");

  const auto result = post_result("task-rework", second, "result-rework-2", {{"try", 2}});
  ASSERT_EQ(result.status, 201) << describe(result);
  EXPECT_EQ(result.body.at("attempt"), 2);
  EXPECT_EQ(result.body.at("revision"), 6);
  const auto passed = verify("task-rework", "PASS");
  EXPECT_EQ(passed.at("status"), "SUCCEEDED");
  EXPECT_EQ(passed.at("revision"), 7);
  EXPECT_EQ(passed.at("attempt"), 2);
  EXPECT_EQ(passed.at("result"), (Json{{"try", 2}}));

  EXPECT_THAT(event_types("task-rework"),
              ElementsAre("TASK_CREATED", "TASK_CLAIMED", "TASK_RESULT_SUBMITTED", "TASK_VERIFIED",
                          "TASK_CLAIMED", "TASK_RESULT_SUBMITTED", "TASK_VERIFIED"));
}

TEST_F(LifecycleTest, FailDecisionEndsTheTask) {
  // Given a result judged FAIL, we should end the task FAILED, never claimable or cancellable.
  create_task(hermes_task("task-fail"));
  const auto lease = claim(agent(), "task-fail", "worker-one");
  require(post_result("task-fail", lease, "result-fail-1", {{"ok", false}}), 201, "result");
  const auto failed = verify("task-fail", "FAIL");
  EXPECT_EQ(failed.at("status"), "FAILED");
  EXPECT_EQ(failed.at("revision"), 4);
  EXPECT_EQ(failed.at("verification").at("decision"), "FAIL");

  const auto reclaim = try_claim(agent(), "task-fail", "worker-one");
  EXPECT_EQ(reclaim.status, 409) << describe(reclaim);
  EXPECT_EQ(reclaim.code(), "TASK_NOT_CLAIMABLE");
  const auto cancel = owner().post("/v1/tasks/task-fail/cancel", Json::object());
  EXPECT_EQ(cancel.status, 409) << describe(cancel);
  EXPECT_EQ(cancel.code(), "TASK_TERMINAL");
  EXPECT_EQ(task("task-fail").at("revision"), 4);
}

TEST_F(LifecycleTest, NeedsReworkWithNoAttemptLeftFails) {
  // Given NEEDS_REWORK on the last attempt, we should end the task FAILED, verification kept.
  create_task(hermes_task("task-last-try", 1));
  const auto lease = claim(agent(), "task-last-try", "worker-one");
  require(post_result("task-last-try", lease, "result-last-1", {{"ok", "partly"}}), 201, "result");
  const auto view = verify("task-last-try", "NEEDS_REWORK");
  EXPECT_EQ(view.at("status"), "FAILED");
  EXPECT_EQ(view.at("revision"), 4);
  EXPECT_EQ(view.at("attempt"), 1);
  EXPECT_EQ(view.at("claimed_by"), nullptr);
  EXPECT_EQ(view.at("verification").at("decision"), "NEEDS_REWORK");
  const auto reclaim = try_claim(agent(), "task-last-try", "worker-one");
  EXPECT_EQ(reclaim.code(), "TASK_NOT_CLAIMABLE") << describe(reclaim);
}

TEST_F(LifecycleTest, CancelQueuedTask) {
  // Given a queued task, we should cancel it and keep it out of polls and claims.
  create_task(hermes_task("task-cancel-q"));
  const auto cancelled = owner().post("/v1/tasks/task-cancel-q/cancel",
                                      {{"expected_revision", 1}, {"reason", "not needed"}});
  ASSERT_EQ(cancelled.status, 200) << describe(cancelled);
  EXPECT_EQ(cancelled.body.at("status"), "CANCELLED");
  EXPECT_EQ(cancelled.body.at("revision"), 2);
  const auto history = events("task-cancel-q");
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[1].at("event_type"), "TASK_CANCELLED");
  EXPECT_EQ(history[1].at("payload").at("reason"), "not needed");

  const auto polled = agent().post("/v1/tasks/poll", {{"worker_id", "worker-one"}});
  ASSERT_EQ(polled.status, 200) << describe(polled);
  EXPECT_TRUE(polled.body.at("tasks").empty()) << describe(polled);
  const auto reclaim = agent().post("/v1/tasks/task-cancel-q/claim",
                                    {{"worker_id", "worker-one"},
                                     {"expected_revision", 2},
                                     {"execution_digest", cancelled.body.at("execution_digest")}});
  EXPECT_EQ(reclaim.code(), "TASK_NOT_CLAIMABLE") << describe(reclaim);
}

TEST_F(LifecycleTest, CancelClaimedTaskFencesTheLease) {
  // Given a claimed task, we should cancel it, free the worker's slot and refuse the lease.
  create_task(hermes_task("task-cancel-c"));
  const auto lease = claim(agent(), "task-cancel-c", "worker-one");
  EXPECT_EQ(fleet_worker("worker-one").at("used_slots"), 1);
  const auto cancelled = owner().post("/v1/tasks/task-cancel-c/cancel", {{"reason", "stop"}});
  ASSERT_EQ(cancelled.status, 200) << describe(cancelled);
  EXPECT_EQ(cancelled.body.at("status"), "CANCELLED");
  EXPECT_EQ(cancelled.body.at("revision"), 3);
  EXPECT_EQ(cancelled.body.at("claimed_by"), nullptr);
  EXPECT_EQ(cancelled.body.at("lease_expires_at"), nullptr);
  EXPECT_EQ(fleet_worker("worker-one").at("used_slots"), 0);

  const auto beat =
      agent().post("/v1/tasks/task-cancel-c/heartbeat", {{"lease_token", lease.at("lease_token")}});
  EXPECT_EQ(beat.status, 409) << describe(beat);
  EXPECT_EQ(beat.code(), "TASK_NOT_CLAIMED");
  const std::string digest = cancelled.body.at("execution_digest");
  const auto result = agent().post("/v1/tasks/task-cancel-c/result",
                                   result_body(lease, digest, "result-cancel-1", {{"late", true}}));
  EXPECT_EQ(result.status, 409) << describe(result);
  EXPECT_EQ(result.code(), "TASK_NOT_CLAIMED");
  EXPECT_EQ(task("task-cancel-c").at("revision"), 3);
  EXPECT_THAT(event_types("task-cancel-c"),
              ElementsAre("TASK_CREATED", "TASK_CLAIMED", "TASK_CANCELLED"));
}

TEST_F(LifecycleTest, CancelVerifyingTask) {
  // Given a task waiting for verification, we should cancel it and refuse a late verification.
  create_task(hermes_task("task-cancel-v"));
  const auto lease = claim(agent(), "task-cancel-v", "worker-one");
  require(post_result("task-cancel-v", lease, "result-cancel-v", {{"ok", true}}), 201, "result");
  const auto cancelled = owner().post("/v1/tasks/task-cancel-v/cancel", {{"expected_revision", 3}});
  ASSERT_EQ(cancelled.status, 200) << describe(cancelled);
  EXPECT_EQ(cancelled.body.at("status"), "CANCELLED");
  EXPECT_EQ(cancelled.body.at("revision"), 4);
  const auto late = owner().post("/v1/tasks/task-cancel-v/verification",
                                 {{"expected_revision", 4}, {"decision", "PASS"}});
  EXPECT_EQ(late.status, 409) << describe(late);
  EXPECT_EQ(late.code(), "TASK_NOT_VERIFYING");
}

TEST_F(LifecycleTest, ReleaseRequeuesForAnotherWorker) {
  // Given a released task, we should requeue it, keep its worker away and let another claim it.
  register_worker(agent(), "worker-two", {"agent.runtime.hermes"}, {"hermes"}, 4);
  create_task(hermes_task("task-release"));
  const auto lease = claim(agent(), "task-release", "worker-one");
  const auto released =
      agent().post("/v1/tasks/task-release/release", {{"lease_token", lease.at("lease_token")},
                                                      {"failure_class", "runtime_crash"},
                                                      {"reason", "adapter exited"}});
  ASSERT_EQ(released.status, 200) << describe(released);
  EXPECT_EQ(released.body.at("status"), "QUEUED");
  EXPECT_EQ(released.body.at("revision"), 3);
  EXPECT_EQ(released.body.at("attempt"), 1);
  EXPECT_EQ(released.body.at("claimed_by"), nullptr);
  EXPECT_EQ(released.body.at("lease_expires_at"), nullptr);
  const auto history = events("task-release");
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[2].at("event_type"), "TASK_RELEASED");
  EXPECT_EQ(history[2].at("payload").at("failure_class"), "runtime_crash");
  EXPECT_EQ(history[2].at("payload").at("worker_id"), "worker-one");

  const auto fleet = require(owner().get("/v1/fleet"), 200, "fleet");
  ASSERT_EQ(fleet.at("task_quarantines").size(), 1u);
  EXPECT_EQ(fleet.at("task_quarantines")[0].at("task_id"), "task-release");
  EXPECT_EQ(fleet.at("task_quarantines")[0].at("worker_id"), "worker-one");
  EXPECT_EQ(fleet_worker("worker-one").at("consecutive_failures"), 1);

  const auto mine = agent().post("/v1/tasks/poll", {{"worker_id", "worker-one"}});
  ASSERT_EQ(mine.status, 200) << describe(mine);
  EXPECT_TRUE(mine.body.at("tasks").empty()) << describe(mine);
  const auto again = claim(agent(), "task-release", "worker-two");
  EXPECT_EQ(again.at("attempt"), 2);
  EXPECT_EQ(again.at("revision"), 4);
}

TEST_F(LifecycleTest, ReleaseOfTheLastAttemptFails) {
  // Given a single-attempt task given back by its worker, we should end it FAILED.
  create_task(hermes_task("task-release-last", 1));
  const auto lease = claim(agent(), "task-release-last", "worker-one");
  const auto released =
      agent().post("/v1/tasks/task-release-last/release",
                   {{"lease_token", lease.at("lease_token")}, {"failure_class", "runtime_crash"}});
  ASSERT_EQ(released.status, 200) << describe(released);
  EXPECT_EQ(released.body.at("status"), "FAILED");
  EXPECT_EQ(released.body.at("revision"), 3);
  EXPECT_EQ(events("task-release-last")[2].at("payload").at("status"), "FAILED");
  EXPECT_EQ(fleet_worker("worker-one").at("used_slots"), 0);
}

TEST_F(LifecycleTest, PollOffersOnlyWhatTheWorkerCanRun) {
  // Given three kinds of task, we should offer a hermes worker only hermes tasks, by priority.
  create_task(source_capture_task("task-src"));
  create_task(deterministic_task("task-det"));
  auto low = hermes_task("task-low");
  low["priority"] = -5;
  create_task(low);
  auto high = hermes_task("task-high");
  high["priority"] = 50;
  create_task(high);
  EXPECT_EQ(task("task-det").at("metadata").at("execution").at("action"), "deterministic");
  EXPECT_EQ(task("task-src").at("metadata").at("execution").at("capability_scope"),
            (Json{"git.read"}));

  const auto polled = agent().post("/v1/tasks/poll", {{"worker_id", "worker-one"}});
  ASSERT_EQ(polled.status, 200) << describe(polled);
  std::vector<std::string> offered;
  for (const auto& item : polled.body.at("tasks")) offered.push_back(item.at("task_id"));
  EXPECT_THAT(offered, ElementsAre("task-high", "task-low"));
  const auto limited = agent().post("/v1/tasks/poll", {{"worker_id", "worker-one"}, {"limit", 1}});
  ASSERT_EQ(limited.status, 200) << describe(limited);
  ASSERT_EQ(limited.body.at("tasks").size(), 1u);
  EXPECT_EQ(limited.body.at("tasks")[0].at("task_id"), "task-high");

  claim(agent(), "task-high", "worker-one");
  const auto queued = owner().get("/v1/tasks?status=QUEUED");
  ASSERT_EQ(queued.status, 200) << describe(queued);
  std::vector<std::string> listed;
  for (const auto& item : queued.body.at("tasks")) listed.push_back(item.at("task_id"));
  EXPECT_THAT(listed, ElementsAre("task-src", "task-det", "task-low"));
  const auto claimed = owner().get("/v1/tasks?status=CLAIMED");
  ASSERT_EQ(claimed.status, 200) << describe(claimed);
  ASSERT_EQ(claimed.body.at("tasks").size(), 1u);
  EXPECT_EQ(claimed.body.at("tasks")[0].at("task_id"), "task-high");

  // Paging: `after` is the last row's cursor.
  const auto page = owner().get("/v1/tasks?limit=2");
  ASSERT_EQ(page.status, 200) << describe(page);
  ASSERT_EQ(page.body.at("tasks").size(), 2u);
  const auto rest = owner().get("/v1/tasks?limit=2&after=" + page.body.at("next_after").dump());
  ASSERT_EQ(rest.status, 200) << describe(rest);
  ASSERT_EQ(rest.body.at("tasks").size(), 2u);
  EXPECT_EQ(rest.body.at("tasks")[0].at("task_id"), "task-low");
  EXPECT_EQ(rest.body.at("tasks")[1].at("task_id"), "task-high");
}

}  // namespace
}  // namespace aios::taskapi_test
