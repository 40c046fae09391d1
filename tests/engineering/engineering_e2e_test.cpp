// Engineering tasks end to end with the real daemons: the scheduler with its Bridge, the
// executor in --broker mode with a scripted backend, and the worker's engineering adapter. One
// task from creation to SUCCEEDED with a governed commit of exactly the backend's edit, and each
// way a backend can misbehave ending in its own failure code with no commit.
#include <algorithm>
#include <csignal>
#include <fstream>

#include "engineering/engineering_fixture.hpp"

namespace aios::engineering_test {
namespace {

struct Refusal {
  std::string scenario;
  std::string code;
};

class EngineeringE2E : public EngineeringTest {
 protected:
  // Runs one task whose backend plays `scenario`; returns the worker's TASK_FAILED code, or ""
  // when the worker submitted a result.
  std::string run_scenario(const std::string& task_id, const std::string& scenario,
                           int backend_timeout = 60) {
    start_broker("codex", scenario, backend_timeout);
    create_task(engineering_task(task_id, "agent/" + task_id));
    auto& worker = make_engineering_worker("eng-" + scenario, "codex");
    worker.start();
    if (!worker.wait_exit(std::chrono::seconds(60))) throw std::runtime_error(worker.log());
    const auto failed = worker.find_event("TASK_FAILED");
    return failed ? failed->at("error").get<std::string>() : "";
  }
};

TEST_F(EngineeringE2E, EngineeringTaskIsCommittedWithExactlyTheBackendsEditAndSucceeds) {
  // Given a backend that rewrites docs/BASE.md and asks for an allowlisted check, the worker
  // should commit exactly that edit through the Bridge and the owner's PASS should end the task.
  ASSERT_EQ(run_scenario("task-eng-ok", "edit"), "");
  const auto view = task("task-eng-ok");
  ASSERT_EQ(view.at("status"), "VERIFYING") << view.dump();
  const auto& result = view.at("result");
  EXPECT_EQ(result.at("status"), "SUCCEEDED") << result.dump();
  EXPECT_EQ(result.at("classification"), "ENGINEERING_CHANGE_COMMITTED");
  EXPECT_EQ(result.at("execution_mode"), "engineering");
  EXPECT_EQ(result.at("runtime_status"), "COMPLETED");
  EXPECT_EQ(result.at("writer_lease"), "GRANTED");
  const auto commit = branch_oid("agent/task-eng-ok");
  EXPECT_EQ(result.at("commit_oid"), commit);
  EXPECT_EQ(result.at("changed_files").size(), 1U);
  EXPECT_EQ(result.at("changed_files").at(0).at("path"), "docs/BASE.md");
  EXPECT_EQ(result.at("tests").at(0).at("argv"), Json({"/usr/bin/true"}));
  EXPECT_EQ(result.at("tests").at(0).at("passed"), true);
  // The commit's diff against the base is the one edit, and its parent is the base.
  EXPECT_EQ(repo_git("diff --name-status " + base() + " " + commit), "M\tdocs/BASE.md");
  EXPECT_EQ(repo_git("show " + commit + ":docs/BASE.md"), "edited by the backend");
  EXPECT_EQ(repo_git("rev-parse " + commit + "^"), base());

  // The backend ran in the pinned worktree, with neither the agent token nor any lease.
  const auto seen = backend_record();
  EXPECT_EQ(seen.at("cwd"), seen.at("request").at("worktree"));
  EXPECT_EQ(seen.at("request").at("schema"), "aios.online-agent.runtime-request.v1");
  EXPECT_EQ(seen.at("request").at("base_oid"), base());
  const auto everything = seen.dump();
  EXPECT_EQ(everything.find(agent_token_), std::string::npos);
  EXPECT_EQ(everything.find("lease"), std::string::npos);
  // The worktree and its run directory are gone.
  EXPECT_TRUE(std::filesystem::is_empty(workspaces()));

  verify("task-eng-ok", "PASS");
  EXPECT_EQ(task("task-eng-ok").at("status"), "SUCCEEDED");
}

TEST_F(EngineeringE2E, VerificationRunsOnACleanCheckoutOfExactlyTheCommittedTree) {
  // Given a backend that leaves files beside its edit that are no change (one its .gitignore
  // ignores, one inside its .git), verification should run on a clean checkout of the base with
  // exactly the committed change: neither file is there, nor any .git, and the commit is the
  // edit and the .gitignore.
  start_broker("codex", "poison");
  auto body = engineering_task("task-eng-clean", "agent/task-eng-clean");
  body["execution"]["verification"] = {
      {{"label", "clean"},
       {"argv", {"/usr/bin/test", "!", "-e", "poison.txt", "-a", "!", "-e", ".git"}},
       {"cwd", "."},
       {"timeout_seconds", 30}}};
  create_task(body);
  auto& worker = make_engineering_worker("eng-clean", "codex");
  worker.start();
  ASSERT_TRUE(worker.wait_exit(std::chrono::seconds(60))) << worker.log();
  ASSERT_FALSE(worker.find_event("TASK_FAILED").has_value()) << worker.log() << broker_->log();
  const auto view = task("task-eng-clean");
  ASSERT_EQ(view.at("status"), "VERIFYING") << view.dump();
  const auto& result = view.at("result");
  EXPECT_EQ(result.at("status"), "SUCCEEDED") << result.dump();
  EXPECT_EQ(result.at("tests").at(0).at("label"), "clean");
  EXPECT_EQ(result.at("tests").at(0).at("passed"), true) << result.dump();
  const auto commit = branch_oid("agent/task-eng-clean");
  EXPECT_EQ(repo_git("diff --name-status " + base() + " " + commit),
            "A\t.gitignore\nM\tdocs/BASE.md");
  EXPECT_TRUE(std::filesystem::is_empty(workspaces()));
}

TEST_F(EngineeringE2E, BridgeTakesAChangeSetWithTheCommitOnlyForAnEngineeringEnvelope) {
  // Given an engineering task and a deterministic one under their writer leases, the Bridge
  // should commit the change set sent with an engineering commit, require one there, and refuse
  // one sent for a deterministic plan (whose change set is its envelope's).
  register_worker(agent(), "worker-eng", bridge_test::kWriterCapabilities, {"codex"}, 2);
  create_task(engineering_task("task-eng-bridge", "agent/eng-bridge"));
  const auto lease = claim_for("task-eng-bridge", "worker-eng");
  const auto granted = require(writer_lease(lease), 201, "writer lease");
  EXPECT_EQ(commit(lease, granted.at("writer_lease_id")).code(), "REQUEST_FIELDS_INVALID");
  auto body = proof_of(lease);
  body["writer_lease_id"] = granted.at("writer_lease_id");
  body["change_set"] = nlohmann::json::array({write_file("docs/.git/config", "x")});
  EXPECT_EQ(agent_bridge().post("/v2/governed-commits", body).code(), "CHANGE_PATH_GIT_DENY");
  body["change_set"] = nlohmann::json::array({write_file("docs/NEW.md", "from the worker\n")});
  require(agent_bridge().post("/v2/governed-commits", body), 201, "engineering commit");
  EXPECT_EQ(repo_git("show agent/eng-bridge:docs/NEW.md"), "from the worker");

  create_task(deterministic_task(binding("task-det-bridge", "agent/det-bridge"),
                                 {write_file("a.md", "a")}));
  const auto det = claim_for("task-det-bridge", "worker-w1");
  const auto det_granted = require(writer_lease(det), 201, "writer lease");
  auto det_body = proof_of(det);
  det_body["writer_lease_id"] = det_granted.at("writer_lease_id");
  det_body["change_set"] = nlohmann::json::array({write_file("b.md", "b")});
  EXPECT_EQ(agent_bridge().post("/v2/governed-commits", det_body).code(), "REQUEST_FIELDS_INVALID");
  EXPECT_EQ(branch_oid("agent/det-bridge"), "");
}

class EngineeringCrash : public EngineeringE2E,
                         public ::testing::WithParamInterface<std::string> {};

TEST_P(EngineeringCrash, RestartNeverRunsTheBackendOrCommitsTwice) {
  // Given a worker SIGKILLed right after a durable engineering phase, the restarted worker
  // should finish the task with the backend run once and one governed commit.
  std::string task_id = "task-eng-crash-" + GetParam();
  std::replace(task_id.begin(), task_id.end(), '_', '-');
  start_broker("codex", "edit");
  create_task(engineering_task(task_id, "agent/" + task_id));
  auto& worker = make_engineering_worker("eng-crash", "codex", false);
  worker.options().env = {"AIOS_WORKER_FAULT_KILL_AFTER_PHASE=" + GetParam()};
  worker.start();
  const auto first = worker.wait_exit(std::chrono::seconds(60));
  ASSERT_TRUE(first) << worker.log();
  ASSERT_TRUE(first->killed_by(SIGKILL)) << first->describe() << "\n" << worker.log();
  worker.options().env.clear();
  worker.start();
  ASSERT_TRUE(taskapi_test::eventually([&] { return task(task_id).at("status") == "VERIFYING"; },
                                       std::chrono::seconds(60)))
      << worker.log();
  EXPECT_TRUE(worker.stop().exited_with(0)) << worker.log();
  EXPECT_EQ(backend_runs(), 1U);
  EXPECT_EQ(repo_git("rev-list --count agent/" + task_id), "2");
  EXPECT_EQ(task(task_id).at("result").at("commit_oid"), branch_oid("agent/" + task_id));
}

INSTANTIATE_TEST_SUITE_P(Phases, EngineeringCrash,
                         ::testing::Values("engineering_requested", "verification_passed"),
                         [](const auto& test_info) { return test_info.param; });

class EngineeringRefusal : public EngineeringE2E, public ::testing::WithParamInterface<Refusal> {};

TEST_P(EngineeringRefusal, EndsInItsOwnCodeWithoutACommit) {
  // Given a backend that misbehaves, the worker should refuse with the matching code, commit
  // nothing, and leave no worktree behind.
  const auto& [scenario, code] = GetParam();
  std::string task_id = "task-eng-" + scenario;
  std::replace(task_id.begin(), task_id.end(), '_', '-');
  EXPECT_EQ(run_scenario(task_id, scenario, scenario == "timeout" ? 1 : 60), code);
  EXPECT_EQ(branch_oid("agent/" + task_id), "");
  const auto view = task(task_id);
  EXPECT_EQ(view.at("status"), "FAILED") << view.dump();
  EXPECT_TRUE(std::filesystem::is_empty(workspaces()));
}

INSTANTIATE_TEST_SUITE_P(Backends, EngineeringRefusal,
                         ::testing::Values(Refusal{"commit", "ENGINEERING_COMMIT_CREATED"},
                                           Refusal{"move_head", "ENGINEERING_HEAD_MOVED"},
                                           Refusal{"tag", "ENGINEERING_REFS_CHANGED"},
                                           Refusal{"garbage_git", "ENGINEERING_REFS_CHANGED"},
                                           Refusal{"secret", "ENGINEERING_SECRET_DETECTED"},
                                           Refusal{"symlink", "ENGINEERING_SYMLINK_ESCAPE"},
                                           Refusal{"not_allowed",
                                                   "ENGINEERING_VERIFICATION_NOT_ALLOWED"},
                                           Refusal{"malformed", "RUNTIME_BROKER_RESULT_MALFORMED"},
                                           Refusal{"timeout", "RUNTIME_BROKER_BACKEND_TIMEOUT"}),
                         [](const auto& test_info) { return test_info.param.scenario; });

}  // namespace
}  // namespace aios::engineering_test
