// Network faults mid-task with the real daemons: the worker reaches the Task API or the Bridge
// through tests/support/fault_proxy.py, which drops or delays chosen calls. A call that fails
// that way keeps the task and its checkpoint; the worker retries from the last durable phase,
// and every step being idempotent, the task ends with one commit and one result.
#include <algorithm>
#include <string>

#include "worker/worker_fixture.hpp"

namespace aios::worker_test {
namespace {

class NetworkFaultTest : public WorkerTest {
 protected:
  // A proxy to `upstream_port` faulting the first `count` POSTs whose path matches `path`.
  std::uint16_t start_proxy(std::uint16_t upstream_port, const std::string& path,
                            const std::string& mode, int count) {
    test::DaemonOptions options;
    options.binary = "/usr/bin/python3";
    options.args = {std::string(AIOS_SOURCE_DIR) + "/tests/support/fault_proxy.py",
                    "--upstream",
                    "127.0.0.1:" + std::to_string(upstream_port),
                    "--path",
                    path,
                    "--mode",
                    mode,
                    "--count",
                    std::to_string(count)};
    options.ready_event = "FAULT_PROXY_LISTENING";
    proxy_ = std::make_unique<test::Daemon>(options, dir(), "fault-proxy");
    return proxy_->start();
  }

  // A long-running worker for a deterministic task whose `flag` URL goes through the proxy.
  test::Daemon& worker_through(const std::string& flag, std::uint16_t proxy_port) {
    auto& worker = make_worker("net", kWriter, "deterministic", false);
    auto& args = worker.options().args;
    const auto at = std::find(args.begin(), args.end(), flag);
    *(at + 1) = "http://127.0.0.1:" + std::to_string(proxy_port);
    args.insert(args.end(), {"--http-timeout-ms", "1000"});
    return worker;
  }

  // Creates the task, runs the worker until the task is VERIFYING, and checks that it got one
  // commit, one result and no failure.
  void expect_one_commit_and_one_result(test::Daemon& worker, const std::string& task_id) {
    create_task(deterministic_task(binding(task_id, "agent/" + task_id),
                                   {write_file("docs/NET.md", "through an outage\n")}));
    worker.start();
    ASSERT_TRUE(taskapi_test::eventually([&] { return task(task_id).at("status") == "VERIFYING"; },
                                         std::chrono::seconds(60)))
        << worker.log() << proxy_->log();
    EXPECT_TRUE(worker.stop().exited_with(0)) << worker.log();
    EXPECT_THAT(proxy_->log(), ::testing::HasSubstr("FAULT_PROXY_FAULTED"));
    EXPECT_TRUE(worker.find_event("TASK_INTERRUPTED").has_value()) << worker.log();
    EXPECT_FALSE(worker.find_event("TASK_FAILED").has_value()) << worker.log();

    const auto view = task(task_id);
    EXPECT_EQ(view.at("attempt"), 1) << view.dump();
    EXPECT_EQ(view.at("result").at("status"), "SUCCEEDED") << view.dump();
    EXPECT_EQ(view.at("result").at("commit_oid"), branch_oid("agent/" + task_id));
    EXPECT_EQ(repo_git("rev-list --count agent/" + task_id), "2");
    const auto types = event_types(task_id);
    EXPECT_EQ(std::count(types.begin(), types.end(), "BRIDGE_COMMIT_APPLIED"), 1);
    EXPECT_EQ(std::count(types.begin(), types.end(), "TASK_RESULT_SUBMITTED"), 1);
  }

  std::unique_ptr<test::Daemon> proxy_;
};

TEST_F(NetworkFaultTest, TaskApiDownAtResultSubmissionKeepsTheResultAndRetriesIt) {
  // Given a Task API that drops the first three result submissions, the worker should keep the
  // committed result in its checkpoint and submit it once the API answers, without releasing
  // the task or committing again.
  const auto proxy = start_proxy(port(), "^/v1/tasks/[^/]+/result$", "drop", 3);
  expect_one_commit_and_one_result(worker_through("--api-url", proxy), "task-net-api");
}

TEST_F(NetworkFaultTest, SlowBridgeCommitThatLandsLateIsNotCommittedTwice) {
  // Given a Bridge that answers the first governed commit only after the worker's timeout,
  // while the commit still lands, the retried commit should find it rather than add another.
  const auto proxy = start_proxy(scheduler().bridge_port(), "^/v2/governed-commits$", "slow", 1);
  expect_one_commit_and_one_result(worker_through("--bridge-url", proxy), "task-net-bridge");
}

}  // namespace
}  // namespace aios::worker_test
