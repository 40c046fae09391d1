// A worker SIGKILLed right after each durable phase of a task, then restarted, 20 times per
// phase: the external agent runs once, the branch gets one commit, and one result is submitted,
// whatever phase the crash hit. The worker kills itself at the phase
// (AIOS_WORKER_FAULT_KILL_AFTER_PHASE), so the crash point is exact rather than raced.
#include <algorithm>
#include <csignal>
#include <string>

#include "support/rounds.hpp"
#include "worker/worker_fixture.hpp"

namespace aios::worker_test {
namespace {

struct CrashCase {
  const char* action;
  const char* phase;
};

class WorkerCrashTest : public WorkerTest, public ::testing::WithParamInterface<CrashCase> {
 protected:
  // Starts the worker with the fault armed, waits for its SIGKILL, restarts it unarmed and
  // waits for the task's result.
  void crash_and_recover(test::Daemon& worker, const std::string& task_id) {
    worker.options().env = {std::string("AIOS_WORKER_FAULT_KILL_AFTER_PHASE=") + GetParam().phase};
    worker.start();
    const auto first = worker.wait_exit(std::chrono::seconds(60));
    ASSERT_TRUE(first) << worker.log() << task(task_id).dump();
    ASSERT_TRUE(first->killed_by(SIGKILL)) << first->describe() << "\n" << worker.log();
    ASSERT_THAT(worker.log(), ::testing::HasSubstr("FAULT_INJECTED_KILL"));
    worker.options().env.clear();
    worker.start();
    ASSERT_TRUE(taskapi_test::eventually([&] { return task(task_id).at("status") == "VERIFYING"; },
                                         std::chrono::seconds(60)))
        << worker.log();
    EXPECT_TRUE(worker.stop().exited_with(0)) << worker.log();
  }

  std::size_t count_events(const std::string& task_id, const std::string& type) {
    const auto types = event_types(task_id);
    return static_cast<std::size_t>(std::count(types.begin(), types.end(), type));
  }
};

// The bar: at least 20 kills at every phase (3 under the sanitizers). Each kill is a new
// task on the same worker, so the counts below are per task and the agent ledger grows by exactly
// one per round.
constexpr int kKillsPerPhase = test::rounds(20, 3);

TEST_P(WorkerCrashTest, RestartNeverRunsCommitsOrSubmitsTwice) {
  const bool deterministic = std::string(GetParam().action) == "deterministic";
  if (!deterministic) start_executor("hermes");
  auto& worker =
      deterministic
          ? make_worker("crash-det",
                        {"git.read", "git.test", "governed.write.branch", "governed.write.file"},
                        "deterministic", false)
          : make_worker("crash-hermes", {"agent.runtime.hermes"}, "hermes", false);
  for (int round = 0; round < kKillsPerPhase; ++round) {
    std::string task_id = std::string("task-crash-") + GetParam().action + "-" +
                          std::string(GetParam().phase).substr(0, 12) + "-" + std::to_string(round);
    std::replace(task_id.begin(), task_id.end(), '_', '-');
    SCOPED_TRACE(task_id);
    if (deterministic) {
      auto body = deterministic_task(binding(task_id, "agent/" + task_id),
                                     {write_file("docs/CRASH.md", "once\n")});
      body["execution"]["verification"] = {
          {{"label", "smoke"}, {"argv", {"/usr/bin/true"}}, {"cwd", "."}, {"timeout_seconds", 30}}};
      create_task(body);
    } else {
      create_task({{"task_id", task_id},
                   {"goal", "Summarize the layout"},
                   {"required_capabilities", {"agent.runtime.hermes"}},
                   {"binding", binding(task_id, "agent/" + task_id)},
                   {"execution", {{"action", "agent_runtime"}, {"adapter", "hermes"}}}});
    }
    crash_and_recover(worker, task_id);
    if (HasFatalFailure()) return;
    if (deterministic) {
      EXPECT_EQ(count_events(task_id, "BRIDGE_COMMIT_APPLIED"), 1u);
      EXPECT_EQ(repo_git("rev-list --count agent/" + task_id), "2");
      EXPECT_EQ(task(task_id).at("result").at("commit_oid"), branch_oid("agent/" + task_id));
    } else {
      EXPECT_EQ(agent_runs(), static_cast<std::size_t>(round + 1));
      EXPECT_EQ(task(task_id).at("result").at("classification"),
                "EXTERNAL_AGENT_RUNTIME_SUCCEEDED");
    }
    EXPECT_EQ(count_events(task_id, "TASK_RESULT_SUBMITTED"), 1u);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPhase, WorkerCrashTest,
                         ::testing::Values(CrashCase{"deterministic", "claimed"},
                                           CrashCase{"deterministic", "verification_passed"},
                                           CrashCase{"deterministic", "committed"},
                                           CrashCase{"deterministic", "result_pending"},
                                           CrashCase{"deterministic", "result_submitted"},
                                           CrashCase{"agent_runtime", "claimed"},
                                           CrashCase{"agent_runtime", "agent_runtime_done"},
                                           CrashCase{"agent_runtime", "result_pending"},
                                           CrashCase{"agent_runtime", "result_submitted"}),
                         [](const ::testing::TestParamInfo<CrashCase>& param_info) {
                           return std::string(param_info.param.action) + "_" +
                                  param_info.param.phase;
                         });

}  // namespace
}  // namespace aios::worker_test
