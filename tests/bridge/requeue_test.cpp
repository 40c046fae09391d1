// POST /v1/tasks/{id}/requeue against the real scheduler: a cancelled or failed task queued
// again under its envelope, its attempts counting on, idempotent by key, and refused where
// running it again could not be what the owner means (a live task, a new branch already made).
#include "bridge/bridge_fixture.hpp"

namespace aios::bridge_test {
namespace {

class RequeueTest : public BridgeTest {
 protected:
  Reply requeue(const std::string& task_id, const Json& body) {
    return owner().post("/v1/tasks/" + task_id + "/requeue", body);
  }
  std::int64_t revision(const std::string& task_id) {
    return task(task_id).at("revision").get<std::int64_t>();
  }
};

// Given a cancelled task, requeue should queue it again with its envelope and digest, one
// requeue generation more and `additional_attempts` more attempts, record TASK_REQUEUED once
// however often the same key is replayed, and the next claim should carry the generation.
TEST_F(RequeueTest, ACancelledTaskIsQueuedAgainUnderItsEnvelope) {
  create_task(deterministic_task(binding("task-requeue-1", "agent/requeue-1"),
                                 {write_file("docs/AGAIN.md", "again\n")}));
  const auto digest = task("task-requeue-1").at("execution_digest");
  require(owner().post("/v1/tasks/task-requeue-1/cancel", {{"reason", "wrong worker"}}), 200,
          "cancel");
  const Json body = {{"expected_revision", revision("task-requeue-1")},
                     {"idempotency_key", "requeue-task-1-a"},
                     {"additional_attempts", 2},
                     {"reason", "the worker is fixed"}};
  const auto first = requeue("task-requeue-1", body);
  ASSERT_EQ(first.status, 200) << describe(first);
  EXPECT_EQ(first.body.at("status"), "QUEUED");
  EXPECT_EQ(first.body.at("attempt"), 0);
  EXPECT_EQ(first.body.at("max_attempts"), 2);
  EXPECT_EQ(first.body.at("requeues"), 1);
  EXPECT_EQ(first.body.at("execution_digest"), digest);
  const auto replay = requeue("task-requeue-1", body);
  ASSERT_EQ(replay.status, 200) << describe(replay);
  EXPECT_EQ(replay.body, first.body);
  const auto types = event_types("task-requeue-1");
  EXPECT_EQ(std::count(types.begin(), types.end(), "TASK_REQUEUED"), 1);
  EXPECT_EQ(requeue("task-requeue-1", {{"expected_revision", revision("task-requeue-1")},
                                       {"idempotency_key", "requeue-task-1-b"}})
                .code(),
            "TASK_NOT_REQUEUEABLE");

  const auto lease = claim_for("task-requeue-1", "worker-w1");
  EXPECT_EQ(lease.at("attempt"), 1);
  EXPECT_EQ(lease.at("requeues"), 1);
}

// Given a task whose new branch a governed commit made and whose verification then failed it,
// requeue should be refused: a second run would find its branch taken.
TEST_F(RequeueTest, ATaskWhoseNewBranchWasCommittedIsNotRequeued) {
  create_task(deterministic_task(binding("task-requeue-2", "agent/requeue-2"),
                                 {write_file("docs/ONCE.md", "once\n")}));
  ASSERT_EQ(claim_and_commit("task-requeue-2", "worker-w1").status, 201);
  require(owner().post("/v1/tasks/task-requeue-2/verification",
                       {{"expected_revision", revision("task-requeue-2")},
                        {"decision", "FAIL"},
                        {"reason", "not what was asked"}}),
          200, "verify");
  ASSERT_EQ(task("task-requeue-2").at("status"), "FAILED");
  const auto refused = requeue("task-requeue-2", {{"expected_revision", revision("task-requeue-2")},
                                                  {"idempotency_key", "requeue-task-2-a"}});
  EXPECT_EQ(refused.status, 409) << describe(refused);
  EXPECT_EQ(refused.code(), "TASK_COMMIT_ALREADY_APPLIED");
  EXPECT_EQ(task("task-requeue-2").at("status"), "FAILED");
}

}  // namespace
}  // namespace aios::bridge_test
