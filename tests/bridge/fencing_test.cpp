// The task lease is the fencing token of the governed write: with a one-second lease, an
// attempt whose lease expired cannot commit even though it still holds its writer lease, and
// the next attempt commits exactly once.
#include <string>

#include "bridge/bridge_fixture.hpp"

namespace aios::bridge_test {
namespace {

class FencingTest : public BridgeTest {
 protected:
  test::SchedulerConfig config() const override {
    test::SchedulerConfig result;
    result.lease_seconds = 1;
    result.sweep_interval_ms = 50;
    return result;
  }
};

TEST_F(FencingTest, AnExpiredAttemptCannotCommitAndTheNextOneCan) {
  // Given a claimed task with a writer lease whose task lease then expires, we should refuse
  // its commit (nothing written), and let the next attempt take the branch.
  create_task(deterministic_task(binding("task-fence-1", "agent/fence"),
                                 {write_file("docs/F.md", "fenced\n")}));
  const auto stale = claim_for("task-fence-1", "worker-w1");
  const std::string writer = require(writer_lease(stale), 201, "writer").at("writer_lease_id");
  ASSERT_TRUE(
      taskapi_test::eventually([&] { return task("task-fence-1").at("status") == "QUEUED"; }));

  const auto refused = commit(stale, writer);
  EXPECT_EQ(refused.status, 409) << describe(refused);
  EXPECT_TRUE(refused.code() == "TASK_NOT_CLAIMED" || refused.code() == "LEASE_INVALID")
      << describe(refused);
  EXPECT_EQ(branch_oid("agent/fence"), "");

  const auto next = claim_for("task-fence-1", "worker-w2");
  EXPECT_EQ(next.at("attempt"), 2);
  EXPECT_EQ(commit(stale, writer).code(), "LEASE_INVALID");
  EXPECT_EQ(commit(next, writer).code(), "WRITER_LEASE_INVALID");
  const auto granted = writer_lease(next);
  ASSERT_EQ(granted.status, 201) << describe(granted);
  const auto applied = commit(next, granted.body.at("writer_lease_id"));
  ASSERT_EQ(applied.status, 201) << describe(applied);
  EXPECT_EQ(branch_oid("agent/fence"), applied.body.at("commit_oid"));
}

}  // namespace
}  // namespace aios::bridge_test
