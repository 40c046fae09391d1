// The rebind end to end: the real scheduler serves the database, the tasks and the governed
// Bridge (whose POST /v2/plans the owner uses to register the deterministic plan), and the
// real rebind daemon resolves through that Bridge. A rebound task is then claimable by a
// governed writer under the new digest, as the worker's normal claim path will take it.

#include <future>
#include <latch>
#include <map>
#include <mutex>
#include <thread>

#include "aios/canonical.hpp"
#include "rebind/rebind_daemon.hpp"
#include "support/store_rows.hpp"
#include "taskapi/client.hpp"

namespace aios::rebind_test {
namespace {

using taskapi_test::ApiClient;
using taskapi_test::describe;
using taskapi_test::Json;
using taskapi_test::Reply;
using taskapi_test::require;

const Json kWriteScope = {"git.read", "git.test", "governed.write.branch", "governed.write.file"};

class RebindThroughBridge : public taskapi_test::SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    const std::uint16_t bridge_port = scheduler().bridge_port();
    ASSERT_NE(bridge_port, 0) << scheduler().process().log();
    bridge_owner_.emplace(bridge_port, scheduler().control_token());
    rebind_.emplace(
        rebind_options({.store = scheduler().store_location(),
                        .token_file = scheduler().dir() / "control_token",
                        .bridge_url = "http://127.0.0.1:" + std::to_string(bridge_port)}),
        scheduler().dir().path(), "aios-agent-task-execution-rebind");
    rebind_->start();
    rebind_owner_.emplace(rebind_->port(), scheduler().control_token());
    Json grant = kWriteScope;
    agent_.emplace(client(create_agent("agent-rebind", grant)));
    register_worker(*agent_, "worker-reader", {"git.read"}, {"source_capture"}, 4);
  }

  void TearDown() override {
    if (rebind_ && rebind_->running()) {
      const auto status = rebind_->stop();
      EXPECT_TRUE(status.exited_with(0)) << status.describe() << "\n" << rebind_->log();
      EXPECT_THAT(rebind_->log(), ::testing::Not(::testing::HasSubstr("Sanitizer")));
      EXPECT_THAT(rebind_->log(), ::testing::Not(::testing::HasSubstr("runtime error:")));
    }
    SchedulerTest::TearDown();
  }

  // A source_capture task run once and sent back by NEEDS_REWORK: QUEUED, attempt 1.
  Json returned_task(const std::string& task_id) {
    create_task(taskapi_test::source_capture_task(task_id));
    const Json lease = claim(*agent_, task_id, "worker-reader");
    require(agent_->post("/v1/tasks/" + task_id + "/result",
                         taskapi_test::result_body(lease, lease.at("execution_digest"),
                                                   task_id + "-result-1", {{"summary", "read"}})),
            201, "result of " + task_id);
    verify(task_id, "NEEDS_REWORK");
    return task(task_id);
  }

  // Registers the task's deterministic plan with the Bridge; returns its execution digest.
  std::string register_plan(const std::string& task_id) {
    const Json plan = require(bridge_owner_->post("/v2/plans", {{"task_id", task_id},
                                                                {"capability_scope", kWriteScope},
                                                                {"change_set",
                                                                 {{{"path", "docs/NOTE.md"},
                                                                   {"operation", "write_file"},
                                                                   {"content", "rebound\n"}}}}}),
                              201, "plan of " + task_id);
    return plan.at("execution_digest");
  }

  static Json owner_request(const Json& view, const std::string& new_digest,
                            const std::string& key = "rebind-request-v1") {
    return owner_rebind_request(view, new_digest, key);
  }

  Reply rebind(const std::string& task_id, const Json& body) {
    return rebind_owner_->post("/v1/tasks/" + task_id + "/execution-rebind", body);
  }

  std::int64_t rebind_events(const std::string& task_id) {
    const auto types = event_types(task_id);
    return std::count(types.begin(), types.end(), "TASK_EXECUTION_REBIND_AUTHORIZED");
  }

  std::int64_t receipts() {
    return test::count_in(scheduler(), "SELECT COUNT(*) FROM task_execution_rebinds");
  }

  std::optional<ApiClient> bridge_owner_;
  std::optional<test::Daemon> rebind_;
  std::optional<ApiClient> rebind_owner_;
  std::optional<ApiClient> agent_;
};

TEST_F(RebindThroughBridge, AppliedOnceThenReplayedAndAReusedKeyConflicts) {
  // Given a returned task and its registered plan, we should rebind it (201), replay the same
  // request (200) and refuse the key with another request (409), with one event and receipt.
  const Json before = returned_task("task-rebind-1");
  const std::string plan_digest = register_plan("task-rebind-1");
  const Json body = owner_request(before, plan_digest);

  const Reply applied = rebind("task-rebind-1", body);
  ASSERT_EQ(applied.status, 201) << describe(applied) << "\n" << rebind_->log();
  const Json expected = {{"task_id", "task-rebind-1"},
                         {"status", "QUEUED"},
                         {"attempt", before.at("attempt")},
                         {"revision", before.at("revision").get<int>() + 1},
                         {"old_execution_digest", before.at("execution_digest")},
                         {"new_execution_digest", plan_digest},
                         {"authorization_id", kDaemonAuthorization},
                         {"idempotent", false}};
  EXPECT_EQ(applied.body, expected);

  const Reply replayed = rebind("task-rebind-1", body);
  EXPECT_EQ(replayed.status, 200) << describe(replayed);
  Json replay_expected = expected;
  replay_expected["idempotent"] = true;
  EXPECT_EQ(replayed.body, replay_expected);

  Json other = body;
  other["reason"] = "another reason";
  const Reply conflict = rebind("task-rebind-1", other);
  EXPECT_EQ(conflict.status, 409) << describe(conflict);
  EXPECT_EQ(conflict.code(), "EXECUTION_REBIND_IDEMPOTENCY_CONFLICT");

  const Json after = task("task-rebind-1");
  EXPECT_EQ(after.at("status"), "QUEUED");
  EXPECT_EQ(after.at("revision"), expected.at("revision"));
  EXPECT_EQ(after.at("execution_digest"), plan_digest);
  EXPECT_EQ(after.at("metadata").at("execution").at("action"), "deterministic");
  EXPECT_EQ(after.at("metadata").at("execution_projection").at("execution_digest"), plan_digest);
  EXPECT_EQ(rebind_events("task-rebind-1"), 1);
  EXPECT_EQ(receipts(), 1);
}

TEST_F(RebindThroughBridge, ReboundTaskIsClaimedUnderTheNewDigest) {
  // Given a rebound task, a governed writer should be offered the deterministic envelope and
  // claim it with the new digest (the worker's claim path; the full worker e2e comes with it).
  const Json before = returned_task("task-rebind-2");
  const std::string plan_digest = register_plan("task-rebind-2");
  ASSERT_EQ(rebind("task-rebind-2", owner_request(before, plan_digest)).status, 201);

  register_worker(*agent_, "worker-writer", kWriteScope, {"deterministic"}, 1);
  const Json polled = require(
      agent_->post("/v1/tasks/poll", {{"worker_id", "worker-writer"}, {"limit", 5}}), 200, "poll");
  ASSERT_EQ(polled.at("tasks").size(), 1U) << polled.dump();
  EXPECT_EQ(polled.at("tasks")[0].at("execution_digest"), plan_digest);
  EXPECT_EQ(polled.at("tasks")[0].at("metadata").at("execution").at("adapter"), "deterministic");
  const Json lease = claim(*agent_, "task-rebind-2", "worker-writer");
  EXPECT_EQ(lease.at("execution_digest"), plan_digest);
  EXPECT_EQ(lease.at("attempt"), before.at("attempt").get<int>() + 1);
}

TEST_F(RebindThroughBridge, AWaitingClaimIsWokenByTheRebindOfAnotherProcess) {
  // Given a governed writer's claim-next waiting 20 s for the one task it could run, which
  // waits for its rebind, the rebind service's commit (another process, announced through the
  // store) should wake it: the task is claimed under the new digest, where without the
  // announcement the wait would end with no claim (nothing rechecks).
  const Json before = returned_task("task-rebind-6");
  const std::string plan_digest = register_plan("task-rebind-6");
  register_worker(*agent_, "worker-writer", kWriteScope, {"deterministic"}, 1);
  auto waited = std::async(std::launch::async, [&] {
    return client(agent_->token())
        .post("/v1/tasks/claim-next", {{"worker_id", "worker-writer"}, {"wait_ms", 20000}});
  });
  for (int polls = 0; metrics_text().find("\naios_claims_waiting 1\n") == std::string::npos;
       ++polls) {
    ASSERT_LT(polls, 1000) << "the claim-next never waited";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  ASSERT_EQ(rebind("task-rebind-6", owner_request(before, plan_digest)).status, 201);

  const Reply claimed = waited.get();
  ASSERT_EQ(claimed.status, 200) << describe(claimed);
  ASSERT_TRUE(claimed.body.at("claim").is_object()) << describe(claimed);
  EXPECT_EQ(claimed.body.at("claim").at("task_id"), "task-rebind-6");
  EXPECT_EQ(claimed.body.at("claim").at("execution_digest"), plan_digest);
}

TEST_F(RebindThroughBridge, WithoutAPlanTheBridgeRefusalIsPassedOn) {
  // Given no registered plan, the Bridge cannot resolve a deterministic envelope: we should pass
  // on its refusal (409) and write nothing.
  const Json before = returned_task("task-rebind-3");
  const Reply reply = rebind("task-rebind-3", owner_request(before, std::string(64, 'c')));
  EXPECT_EQ(reply.status, 409) << describe(reply);
  EXPECT_EQ(reply.code(), "EXECUTION_PLAN_NOT_REGISTERED");
  EXPECT_EQ(task("task-rebind-3").at("revision"), before.at("revision"));
  EXPECT_EQ(rebind_events("task-rebind-3"), 0);
  EXPECT_EQ(receipts(), 0);
}

TEST_F(RebindThroughBridge, PlanOtherThanTheOwnerApprovedIsRefused) {
  // Given a registered plan whose digest is not the one in the owner's request, we should
  // refuse with EXECUTION_REBIND_NEW_DIGEST_DRIFT and write nothing.
  const Json before = returned_task("task-rebind-4");
  register_plan("task-rebind-4");
  const Reply reply = rebind("task-rebind-4", owner_request(before, std::string(64, 'c')));
  EXPECT_EQ(reply.status, 409) << describe(reply);
  EXPECT_EQ(reply.code(), "EXECUTION_REBIND_NEW_DIGEST_DRIFT");
  EXPECT_EQ(task("task-rebind-4").at("execution_digest"), before.at("execution_digest"));
  EXPECT_EQ(rebind_events("task-rebind-4"), 0);
  EXPECT_EQ(receipts(), 0);
}

TEST_F(RebindThroughBridge, TwentyConcurrentIdenticalRequestsRebindOnce) {
  // Given 20 owners' connections sending the same request at once, we should apply it exactly
  // once (one 201, nineteen 200 replays) with one event and one receipt, and no 5xx.
  const Json before = returned_task("task-rebind-5");
  const std::string plan_digest = register_plan("task-rebind-5");
  const Json body = owner_request(before, plan_digest);
  constexpr int kRequests = 20;
  std::latch start(kRequests);
  std::mutex mutex;
  std::map<int, int> statuses;
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&] {
      ApiClient owner(rebind_->port(), scheduler().control_token());
      start.arrive_and_wait();
      const Reply reply = owner.post("/v1/tasks/task-rebind-5/execution-rebind", body);
      const std::lock_guard lock(mutex);
      ++statuses[reply.status];
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(statuses, (std::map<int, int>{{200, kRequests - 1}, {201, 1}}));
  EXPECT_EQ(rebind_events("task-rebind-5"), 1);
  EXPECT_EQ(receipts(), 1);
  EXPECT_EQ(task("task-rebind-5").at("revision"), before.at("revision").get<int>() + 1);
}

}  // namespace
}  // namespace aios::rebind_test
