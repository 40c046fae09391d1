// The task lease is the fencing token of the governed write: with a one-second lease, an
// attempt whose lease expired cannot commit even though it still holds its writer lease, and
// the next attempt commits exactly once; an attempt that loses its lease while the Bridge moves
// the ref (held there by the bridge_ref_moved pause point) cannot record the commit, and the
// next attempt completes that same commit.
#include <algorithm>
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

// The scheduler holds its first governed commit for 2.5 s right after the ref moved, past the
// one-second lease.
class RefMovedFencingTest : public FencingTest {
 protected:
  test::SchedulerConfig config() const override {
    auto result = FencingTest::config();
    result.env = {"AIOS_FAULT_PAUSE_AT=bridge_ref_moved:2500"};
    return result;
  }
};

TEST_F(RefMovedFencingTest, ALeaseLostWhileTheRefMovesLeavesTheCommitToTheNextAttempt) {
  // Given an attempt whose lease expires (and the sweeper returns the task to the queue) after
  // the branch moved but before the commit is recorded, the transaction that marks it APPLIED
  // should refuse it: the stale attempt gets the lease error and no BRIDGE_COMMIT_APPLIED event
  // is written. The next attempt should then find the PENDING receipt with the ref at its
  // commit and complete that same commit, with exactly one commit on the branch.
  create_task(deterministic_task(binding("task-fence-2", "agent/fence-moved"),
                                 {write_file("docs/M.md", "moved\n")}));
  const auto stale = claim_for("task-fence-2", "worker-w1");
  const std::string writer = require(writer_lease(stale), 201, "writer").at("writer_lease_id");
  const auto refused = commit(stale, writer);
  EXPECT_EQ(refused.status, 409) << describe(refused);
  EXPECT_TRUE(refused.code() == "TASK_NOT_CLAIMED" || refused.code() == "LEASE_INVALID")
      << describe(refused);
  const std::string moved = branch_oid("agent/fence-moved");
  ASSERT_NE(moved, "") << "the pause point sits after the ref update";
  const auto applied_events = [&] {
    return std::ranges::count(event_types("task-fence-2"), "BRIDGE_COMMIT_APPLIED");
  };
  EXPECT_EQ(applied_events(), 0);

  const auto next = claim_for("task-fence-2", "worker-w2");
  EXPECT_EQ(next.at("attempt"), 2);
  const auto granted = writer_lease(next);
  ASSERT_EQ(granted.status, 201) << describe(granted);
  const auto completed = commit(next, granted.body.at("writer_lease_id"));
  ASSERT_EQ(completed.status, 201) << describe(completed);
  EXPECT_EQ(completed.body.at("commit_oid"), moved);
  EXPECT_EQ(branch_oid("agent/fence-moved"), moved);
  EXPECT_EQ(repo_git("rev-list --count " + moved + " ^main"), "1");
  EXPECT_EQ(applied_events(), 1);
}

}  // namespace
}  // namespace aios::bridge_test
