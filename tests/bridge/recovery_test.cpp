// A governed commit interrupted between its PENDING receipt and its APPLIED one (the scheduler
// killed mid-request) is finished from what the authority repository's ref says, never decided
// again: at the commit it is completed, at the old value the same commit object is put in
// place, anywhere else it is refused and the receipt dropped. In-process: the crash windows are
// set up directly in the database and the repository.
#include <SQLiteCpp/SQLiteCpp.h>

#include <string>

#include "aios/bridge.hpp"
#include "fleet/fleet_fixture.hpp"
#include "support/run_command.hpp"

namespace aios::fleet_test {
namespace {

const Json kScope = {"code.read", "governed.write.branch", "governed.write.file"};

class CommitRecoveryTest : public PlaneTest {
 protected:
  void SetUp() override {
    repo_ = (dir_.path() / "authority.git").string();
    const std::string work = (dir_.path() / "work").string();
    base_ = sh("git init -q --bare " + repo_ + " && git init -q -b main " + work + " && echo b > " +
               work + "/b.md && git -C " + work + " add -A && git -C " + work +
               " -c user.name=t -c user.email=t@example.invalid commit -q -m base && git -C " +
               work + " push -q " + repo_ + " main && git -C " + work + " rev-parse HEAD");
    bridge_.emplace(store_, plane_, resolver_, environment_, std::string(40, 'o'),
                    BridgeOptions{.authority_git_dir = repo_});
    agent_ = make_agent("agent-recovery", kScope);
    register_worker(agent_, "worker-r",
                    {{"capabilities", kScope}, {"allowed_adapters", {"deterministic"}}});
    TaskSpec spec;
    spec.task_id = "task-recovery";
    spec.execution = {
        {"action", "deterministic"},
        {"adapter", "deterministic"},
        {"capability_scope", kScope},
        {"change_set",
         Json::array({{{"path", "n.md"}, {"operation", "write_file"}, {"content", "n\n"}}})}};
    auto body = task_body(spec);
    body["binding"]["base_oid"] = base_;
    body["binding"]["expected_branch_oid"] = base_;
    plane_.create_task(fleet::task_submission_of(body));
    const auto claimed = claim(agent_, "task-recovery", "worker-r");
    body_ = {{"task_id", "task-recovery"},
             {"lease_token", claimed["lease_token"]},
             {"attempt", claimed["attempt"]},
             {"execution_digest", claimed["execution_digest"]}};
    body_["writer_lease_id"] =
        bridge_->acquire_writer_lease(agent_, body_).second["writer_lease_id"];
    first_ = bridge_->governed_commit(agent_, body_).second;
  }

  static std::string sh(const std::string& command) {
    const auto result = test::run_command(command);
    if (result.exit_code != 0) throw std::runtime_error(command + ": " + result.output);
    auto out = result.output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  std::string branch() {
    return sh("git --git-dir=" + repo_ + " rev-parse refs/heads/agent/task-recovery");
  }

  void mark_pending() {
    db_.write([](SQLite::Database& db) { db.exec("UPDATE bridge_commits SET state='PENDING'"); });
  }

  std::int64_t count(const std::string& sql) {
    std::int64_t n = 0;
    db_.read([&](SQLite::Database& db) { n = db.execAndGet(sql).getInt64(); });
    return n;
  }

  std::string repo_;
  std::string base_;
  resolution::Resolver resolver_{{"/usr/bin/true"}};
  std::optional<Bridge> bridge_;
  Agent agent_;
  Json body_;
  Json first_;
};

TEST_F(CommitRecoveryTest, PendingWithTheRefAlreadyMovedIsCompleted) {
  // Given the ref moved but the receipt still PENDING, the retry should complete it.
  mark_pending();
  const auto [status, again] = bridge_->governed_commit(agent_, body_);
  EXPECT_EQ(status, 201);
  EXPECT_EQ(again["commit_oid"], first_["commit_oid"]);
  EXPECT_EQ(branch(), first_["commit_oid"]);
  EXPECT_EQ(count("SELECT COUNT(*) FROM bridge_commits WHERE state='APPLIED'"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM task_events WHERE event_type='BRIDGE_COMMIT_APPLIED'"), 2);
}

TEST_F(CommitRecoveryTest, PendingWithTheRefNotMovedPutsTheSameCommitInPlace) {
  // Given the receipt PENDING and the ref never created, the retry should create it at the
  // recorded commit, not build a new one.
  mark_pending();
  sh("git --git-dir=" + repo_ + " update-ref -d refs/heads/agent/task-recovery");
  const auto [status, again] = bridge_->governed_commit(agent_, body_);
  EXPECT_EQ(status, 201);
  EXPECT_EQ(again["commit_oid"], first_["commit_oid"]);
  EXPECT_EQ(branch(), first_["commit_oid"]);
}

TEST_F(CommitRecoveryTest, ARefLockTheCrashLeftIsRemovedWhenTheLeadIsTakenAndTheCommitCompleted) {
  // Given the receipt PENDING, the ref never created and its lock file left by a scheduler
  // killed inside the update, the process that takes the lead should remove the lock and the
  // retry should put the recorded commit in place.
  mark_pending();
  sh("git --git-dir=" + repo_ + " update-ref -d refs/heads/agent/task-recovery");
  const auto lock = std::filesystem::path(repo_) / "refs/heads/agent/task-recovery.lock";
  sh("mkdir -p " + lock.parent_path().string() + " && printf '%s\\n' " +
     std::string(first_["commit_oid"]) + " > " + lock.string());
  const auto other = std::filesystem::path(repo_) / "refs/heads/main.lock.keep";
  sh("touch " + other.string());
  bridge_->took_lead();
  EXPECT_FALSE(std::filesystem::exists(lock));
  EXPECT_TRUE(std::filesystem::exists(other)) << "only lock files are removed";
  const auto [status, again] = bridge_->governed_commit(agent_, body_);
  EXPECT_EQ(status, 201);
  EXPECT_EQ(again["commit_oid"], first_["commit_oid"]);
  EXPECT_EQ(branch(), first_["commit_oid"]);
}

TEST_F(CommitRecoveryTest, PendingWithTheRefMovedElsewhereIsRefusedAndForgotten) {
  // Given the receipt PENDING and the branch moved by someone else, the retry should refuse,
  // leave the branch alone and drop the receipt.
  mark_pending();
  sh("git --git-dir=" + repo_ + " update-ref refs/heads/agent/task-recovery " + base_);
  EXPECT_EQ(code_of([&] { bridge_->governed_commit(agent_, body_); }),
            "GOVERNED_COMMIT_CAS_MISMATCH");
  EXPECT_EQ(branch(), base_);
  EXPECT_EQ(count("SELECT COUNT(*) FROM bridge_commits"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM task_events WHERE event_type='BRIDGE_COMMIT_REFUSED'"), 1);
}

TEST_F(CommitRecoveryTest, AnAppliedReceiptIsReplayedWithoutTouchingTheRepository) {
  // Given an applied commit, a replay should answer 200 with the same oid even if the
  // repository is unreachable now.
  std::filesystem::rename(repo_, repo_ + ".moved");
  const auto [status, again] = bridge_->governed_commit(agent_, body_);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(again["commit_oid"], first_["commit_oid"]);
  EXPECT_EQ(again["idempotent"], true);
}

}  // namespace
}  // namespace aios::fleet_test
