// Writer leases and governed commits against a real bare repository: create a branch from the
// base, update it with compare-and-swap, refuse a CAS mismatch and an existing branch, never
// touch a protected ref, replay by commit key, one writer per branch, and exactly one winner
// when two workers race for the same branch.
#include <atomic>
#include <string>
#include <thread>

#include "bridge/bridge_fixture.hpp"

namespace aios::bridge_test {
namespace {

using ::testing::Contains;
using ::testing::IsSubsetOf;

class CommitsTest : public BridgeTest {};

TEST_F(CommitsTest, CreatesTheBranchFromTheBaseWithTheChangeSet) {
  // Given a CREATE_NEW task, we should commit its change set on top of the base and point the
  // new branch at it, nothing else.
  create_task(deterministic_task(binding("task-commit-1", "agent/commit-1"),
                                 {write_file("docs/NOTE.md", "hello\n"),
                                  {{"path", "docs/OLD.md"}, {"operation", "delete_file"}}}));
  const auto reply = claim_and_commit("task-commit-1", "worker-w1");
  ASSERT_EQ(reply.status, 201) << describe(reply);
  const std::string oid = reply.body.at("commit_oid");
  EXPECT_EQ(reply.body.at("old_oid"), nullptr);
  EXPECT_EQ(reply.body.at("idempotent"), false);
  EXPECT_EQ(branch_oid("agent/commit-1"), oid);
  EXPECT_EQ(repo_git("rev-parse " + oid + "^"), base());
  EXPECT_EQ(repo_git("show " + oid + ":docs/NOTE.md"), "hello");
  EXPECT_EQ(repo_git("show " + oid + ":docs/BASE.md"), "base");
  EXPECT_EQ(repo_git("ls-tree -r --name-only " + oid), "docs/BASE.md\ndocs/NOTE.md");
  EXPECT_EQ(branch_oid("main"), base());
  EXPECT_THAT(repo_git("log -1 --format=%B " + oid), ::testing::HasSubstr("Commit-Key: commit-"));
  EXPECT_THAT((std::vector<std::string>{"BRIDGE_WRITER_LEASE_GRANTED", "BRIDGE_COMMIT_APPLIED"}),
              IsSubsetOf(event_types("task-commit-1")));
}

TEST_F(CommitsTest, ReplayReturnsTheSameCommit) {
  // Given an applied commit, the same request again should answer 200 with the same oid and
  // leave the branch where it is.
  create_task(deterministic_task(binding("task-commit-2", "agent/commit-2"),
                                 {write_file("docs/NOTE.md", "once\n")}));
  const auto lease = claim_for("task-commit-2", "worker-w1");
  const std::string writer = require(writer_lease(lease), 201, "writer").at("writer_lease_id");
  const auto first = commit(lease, writer);
  ASSERT_EQ(first.status, 201) << describe(first);
  const auto again = commit(lease, writer);
  ASSERT_EQ(again.status, 200) << describe(again);
  EXPECT_EQ(again.body.at("commit_oid"), first.body.at("commit_oid"));
  EXPECT_EQ(again.body.at("idempotent"), true);
  EXPECT_EQ(repo_git("rev-list --count agent/commit-2"), "2");
  const auto writer_again = writer_lease(lease);
  EXPECT_EQ(writer_again.status, 200) << describe(writer_again);
  EXPECT_EQ(writer_again.body.at("writer_lease_id"), writer);
}

TEST_F(CommitsTest, UpdateExistingMovesTheBranchWithCompareAndSwap) {
  // Given a branch made by one task, an UPDATE_EXISTING task naming its tip should add a
  // commit on top; one naming an older tip should be refused and change nothing.
  create_task(
      deterministic_task(binding("task-cas-1", "agent/cas"), {write_file("docs/ONE.md", "1\n")}));
  const auto created = claim_and_commit("task-cas-1", "worker-w1");
  ASSERT_EQ(created.status, 201) << describe(created);
  const std::string tip = created.body.at("commit_oid");

  create_task(deterministic_task(binding("task-cas-2", "agent/cas", "UPDATE_EXISTING", tip),
                                 {write_file("docs/TWO.md", "2\n")}));
  const auto updated = claim_and_commit("task-cas-2", "worker-w1");
  ASSERT_EQ(updated.status, 201) << describe(updated);
  const std::string new_tip = updated.body.at("commit_oid");
  EXPECT_EQ(updated.body.at("old_oid"), tip);
  EXPECT_EQ(repo_git("rev-parse " + new_tip + "^"), tip);
  EXPECT_EQ(repo_git("show " + new_tip + ":docs/ONE.md"), "1");

  create_task(deterministic_task(binding("task-cas-3", "agent/cas", "UPDATE_EXISTING", tip),
                                 {write_file("docs/THREE.md", "3\n")}));
  const auto stale = claim_and_commit("task-cas-3", "worker-w1");
  EXPECT_EQ(stale.status, 409) << describe(stale);
  EXPECT_EQ(stale.code(), "GOVERNED_COMMIT_CAS_MISMATCH");
  EXPECT_EQ(branch_oid("agent/cas"), new_tip);
}

TEST_F(CommitsTest, CreateNewRefusesABranchThatExistsElsewhere) {
  // Given a branch already moved past the base, a CREATE_NEW task for it should be refused.
  create_task(
      deterministic_task(binding("task-exists-1", "agent/exists"), {write_file("docs/A.md", "a")}));
  ASSERT_EQ(claim_and_commit("task-exists-1", "worker-w1").status, 201);
  const std::string tip = branch_oid("agent/exists");
  create_task(
      deterministic_task(binding("task-exists-2", "agent/exists"), {write_file("docs/B.md", "b")}));
  const auto reply = claim_and_commit("task-exists-2", "worker-w1");
  EXPECT_EQ(reply.code(), "GOVERNED_COMMIT_BRANCH_EXISTS") << describe(reply);
  EXPECT_EQ(branch_oid("agent/exists"), tip);
}

TEST_F(CommitsTest, ProtectedRefsCanNeverBeTargeted) {
  // Given targets that are protected or outside agent/, we should refuse the task itself, so no
  // envelope, lease or commit can ever name them; main stays at the base.
  for (const std::string target : {"main", "master", "refs/heads/main", "tags/v1", "release/1.0",
                                   "baseline/x", "production/x", "feature/x"}) {
    auto body = deterministic_task(binding("task-protected", target), {write_file("a.md", "a")});
    const auto reply = owner().post("/v1/tasks", body);
    EXPECT_EQ(reply.status / 100, 4) << target << ": " << describe(reply);
    EXPECT_THAT(reply.code(), ::testing::StartsWith("BINDING_TARGET_BRANCH_")) << target;
  }
  EXPECT_EQ(branch_oid("main"), base());
}

TEST_F(CommitsTest, ChangesThatDoNotFitTheTreeAreRefusedWhole) {
  // Given a change set whose second entry cannot apply, we should write nothing at all.
  create_task(deterministic_task(binding("task-fit-1", "agent/fit-1"),
                                 {write_file("docs/FINE.md", "fine"),
                                  {{"path", "docs/MISSING.md"}, {"operation", "delete_file"}}}));
  auto reply = claim_and_commit("task-fit-1", "worker-w1");
  EXPECT_EQ(reply.code(), "GOVERNED_COMMIT_CHANGE_CONFLICT") << describe(reply);
  create_task(deterministic_task(binding("task-fit-2", "agent/fit-2"),
                                 {write_file("docs/BASE.md/inner.md", "under a file")}));
  reply = claim_and_commit("task-fit-2", "worker-w1");
  EXPECT_EQ(reply.code(), "GOVERNED_COMMIT_CHANGE_CONFLICT") << describe(reply);
  create_task(deterministic_task(binding("task-fit-3", "agent/fit-3"), {write_file("docs", "x")}));
  reply = claim_and_commit("task-fit-3", "worker-w1");
  EXPECT_EQ(reply.code(), "GOVERNED_COMMIT_CHANGE_CONFLICT") << describe(reply);
  for (const auto* branch : {"agent/fit-1", "agent/fit-2", "agent/fit-3"}) {
    EXPECT_EQ(branch_oid(branch), "") << branch;
  }
}

TEST_F(CommitsTest, WriterLeasesAreOnlyForDeterministicEnvelopesAndTheirHolder) {
  // Given a read-only task, we should refuse a writer lease; given a deterministic task, a
  // commit needs this claim's writer lease and its lease token.
  register_worker(agent(), "worker-src", {"git.read"}, {"source_capture"}, 1);
  create_task(source_capture_task(binding("task-wl-1", "agent/wl-1")));
  auto lease = claim_for("task-wl-1", "worker-src");
  EXPECT_EQ(writer_lease(lease).code(), "WRITER_LEASE_NOT_REQUIRED");

  create_task(deterministic_task(binding("task-wl-2", "agent/wl-2"), {write_file("a.md", "a")}));
  lease = claim_for("task-wl-2", "worker-w1");
  EXPECT_EQ(commit(lease, "wl-not-a-lease").code(), "WRITER_LEASE_INVALID");
  const std::string writer = require(writer_lease(lease), 201, "writer").at("writer_lease_id");
  auto forged = lease;
  forged["lease_token"] = std::string(64, 'f');
  EXPECT_EQ(commit(forged, writer).code(), "LEASE_INVALID");
  auto older = lease;
  older["attempt"] = 7;
  EXPECT_EQ(commit(older, writer).code(), "ATTEMPT_STALE");
  auto drifted = lease;
  drifted["execution_digest"] = std::string(64, '0');
  EXPECT_EQ(commit(drifted, writer).code(), "TASK_EXECUTION_DIGEST_MISMATCH");
  EXPECT_EQ(ApiClient(scheduler().bridge_port(), scheduler().control_token())
                .post("/v2/writer-leases", proof_of(lease))
                .code(),
            "FORBIDDEN");
  EXPECT_EQ(branch_oid("agent/wl-2"), "");
  EXPECT_EQ(commit(lease, writer).status, 201);
}

TEST_F(CommitsTest, OneWriterPerBranchUntilTheHoldersTaskLeaseEnds) {
  // Given two tasks for one branch, the second should get no writer lease while the first
  // holds its task lease, and get one once the first released its claim.
  create_task(deterministic_task(binding("task-one-1", "agent/one"), {write_file("a.md", "a")}));
  create_task(deterministic_task(binding("task-one-2", "agent/one"), {write_file("b.md", "b")}));
  const auto first = claim_for("task-one-1", "worker-w1");
  const auto second = claim_for("task-one-2", "worker-w2");
  ASSERT_EQ(writer_lease(first).status, 201);
  const auto busy = writer_lease(second);
  EXPECT_EQ(busy.status, 409) << describe(busy);
  EXPECT_EQ(busy.code(), "WRITER_LEASE_BRANCH_BUSY");
  require(agent().post("/v1/tasks/task-one-1/release", {{"lease_token", first.at("lease_token")},
                                                        {"failure_class", "test_release"}}),
          200, "release");
  EXPECT_EQ(writer_lease(second).status, 201);
  EXPECT_THAT(event_types("task-one-1"), Contains("BRIDGE_WRITER_LEASE_ENDED"));
}

TEST_F(CommitsTest, TwoWorkersRacingForOneBranchGiveExactlyOneCommit) {
  // Given two claimed tasks for the same new branch, racing writer lease + commit from two
  // threads should leave exactly one applied commit, the branch at the winner's commit.
  create_task(deterministic_task(binding("task-race-1", "agent/race"), {write_file("a.md", "a")}));
  create_task(deterministic_task(binding("task-race-2", "agent/race"), {write_file("b.md", "b")}));
  const Json leases[2] = {claim_for("task-race-1", "worker-w1"),
                          claim_for("task-race-2", "worker-w2")};
  Reply replies[2];
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      ApiClient client = agent_bridge();
      ++ready;
      while (ready.load() < 2) std::this_thread::yield();
      const auto granted = client.post("/v2/writer-leases", proof_of(leases[i]));
      if (granted.status != 201) {
        replies[i] = granted;
        return;
      }
      auto body = proof_of(leases[i]);
      body["writer_lease_id"] = granted.body.at("writer_lease_id");
      replies[i] = client.post("/v2/governed-commits", body);
    });
  }
  for (auto& thread : threads) thread.join();
  const int winners = (replies[0].status == 201) + (replies[1].status == 201);
  ASSERT_EQ(winners, 1) << describe(replies[0]) << "\n" << describe(replies[1]);
  const auto& winner = replies[0].status == 201 ? replies[0] : replies[1];
  const auto& loser = replies[0].status == 201 ? replies[1] : replies[0];
  EXPECT_EQ(loser.status, 409) << describe(loser);
  EXPECT_EQ(branch_oid("agent/race"), winner.body.at("commit_oid"));
  EXPECT_EQ(repo_git("rev-list --count agent/race"), "2");
}

}  // namespace
}  // namespace aios::bridge_test
