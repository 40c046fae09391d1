// The owner-controlled rebind end to end: a source-capture task sent back with NEEDS_REWORK,
// its deterministic plan registered with the Bridge, the rebind daemon swapping the envelope,
// and the normal worker claim path executing the new deterministic envelope to SUCCEEDED.
#include <string>

#include "aios/canonical.hpp"
#include "rebind/rebind_daemon.hpp"
#include "worker/worker_fixture.hpp"

namespace aios::worker_test {
namespace {

TEST_F(WorkerTest, ReboundTaskIsExecutedByTheWorkerUnderItsNewEnvelope) {
  // Given a returned source-capture task and its registered plan, a rebind followed by one
  // worker pass should commit the plan's change set and let the owner accept the result.
  create_task(source_capture_task(binding("task-w-rebind", "agent/w-rebind")));
  register_worker(agent(), "worker-capture", {"git.read"}, {"source_capture"}, 1);
  const auto lease = claim_for("task-w-rebind", "worker-capture");
  require(agent().post("/v1/tasks/task-w-rebind/result",
                       taskapi_test::result_body(lease, lease.at("execution_digest"),
                                                 "result-capture-1", {{"summary", "captured"}})),
          201, "capture result");
  verify("task-w-rebind", "NEEDS_REWORK");
  const std::string plan_digest =
      require(bridge().post("/v2/plans", {{"task_id", "task-w-rebind"},
                                          {"change_set",
                                           {{{"path", "docs/REBOUND.md"},
                                             {"operation", "write_file"},
                                             {"content", "planned\n"}}}}}),
              201, "plan")
          .at("execution_digest");

  test::Daemon rebind(rebind_test::rebind_options(
                          {scheduler().db_path(), dir() / "control_token",
                           "http://127.0.0.1:" + std::to_string(scheduler().bridge_port())}),
                      dir(), "rebind");
  rebind.start();
  const auto view = task("task-w-rebind");
  taskapi_test::ApiClient owner_of_rebind(rebind.port(), scheduler().control_token());
  const auto applied =
      owner_of_rebind.post("/v1/tasks/task-w-rebind/execution-rebind",
                           rebind_test::owner_rebind_request(view, plan_digest, "rebind-w-1"));
  ASSERT_EQ(applied.status, 201) << describe(applied) << rebind.log();

  auto& worker = make_worker(
      "rebound", {"git.read", "git.test", "governed.write.branch", "governed.write.file"},
      "deterministic", true);
  worker.start();
  ASSERT_TRUE(worker.wait_exit(std::chrono::seconds(30))) << worker.log();
  const auto after = task("task-w-rebind");
  ASSERT_EQ(after.at("status"), "VERIFYING") << after.dump() << worker.log();
  EXPECT_EQ(after.at("attempt"), 2);
  EXPECT_EQ(after.at("result").at("execution_digest"), plan_digest);
  EXPECT_EQ(repo_git("show agent/w-rebind:docs/REBOUND.md"), "planned");
  verify("task-w-rebind", "PASS");
  EXPECT_EQ(task("task-w-rebind").at("status"), "SUCCEEDED");
}

}  // namespace
}  // namespace aios::worker_test
