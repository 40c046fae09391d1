// Wire faults between a real scheduler and its PostgreSQL server, through
// tests/support/wire_fault_proxy.py: a connection cut in the middle of a pipeline, before its
// COMMIT arrived, leaves nothing of the transition; a COMMIT whose answer is lost is answered 503
// and never run again by the store, and the caller's retry with the same key or fence finds it
// done. Nothing half-written, nothing acknowledged that was not committed.
#include <fstream>
#include <memory>
#include <string>

#include "support/postgres.hpp"
#include "support/store_rows.hpp"
#include "taskapi/client.hpp"

namespace aios::store_test {
namespace {

using taskapi_test::ApiClient;
using taskapi_test::Json;
using taskapi_test::require;

// `url` with its host and port replaced by the proxy's.
std::string through(const std::string& url, std::uint16_t port) {
  const auto scheme = url.find("://") + 3;
  const auto host = url.find('@', scheme) == std::string::npos ? scheme : url.find('@') + 1;
  const auto path = url.find('/', host);
  return url.substr(0, host) + "127.0.0.1:" + std::to_string(port) + url.substr(path);
}

std::string host_and_port(const std::string& url) {
  const auto scheme = url.find("://") + 3;
  const auto host = url.find('@', scheme) == std::string::npos ? scheme : url.find('@') + 1;
  return url.substr(host, url.find('/', host) - host);
}

class WireFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AIOS_SKIP_WITHOUT_POSTGRES();
    database_ = std::make_unique<test::ScopedPostgresDatabase>(*test::postgres_admin_url());
    test::DaemonOptions options;
    options.binary = "/usr/bin/python3";
    options.args = {std::string(AIOS_SOURCE_DIR) + "/tests/support/wire_fault_proxy.py",
                    "--upstream", host_and_port(database_->url()), "--arm-file",
                    (dir_ / "arm").string()};
    options.ready_event = "FAULT_PROXY_LISTENING";
    proxy_ = std::make_unique<test::Daemon>(options, dir_.path(), "wire-fault-proxy");
    test::SchedulerConfig config;
    config.store = through(database_->url(), proxy_->start());
    scheduler_ = std::make_unique<test::SchedulerDaemon>(config);
    scheduler_->start();
  }

  void TearDown() override {
    if (scheduler_) scheduler_->stop();
    if (proxy_) proxy_->stop();
  }

  // The next write's COMMIT meets `mode` (see the proxy).
  void arm(const std::string& mode) { std::ofstream(dir_ / "arm") << mode; }

  // Read on the database itself, not through the proxy.
  std::int64_t count(const std::string& sql, const std::string& task_id) {
    return test::count_in(database_->url(), sql, {task_id});
  }

  ApiClient owner() { return {scheduler_->port(), scheduler_->control_token()}; }

  // An agent with one worker that has claimed `task_id`; returns the claim.
  Json claimed(const std::string& task_id) {
    auto control = owner();
    const std::string token =
        require(control.post("/v1/agents", {{"agent_id", "agent-wire"},
                                            {"granted_capabilities", {"agent.runtime.hermes"}}}),
                201, "agent")
            .at("token");
    agent_ = std::make_unique<ApiClient>(scheduler_->port(), token);
    taskapi_test::register_worker(*agent_, "worker-wire", {"agent.runtime.hermes"}, {"hermes"}, 1);
    require(control.post("/v1/tasks", taskapi_test::hermes_task(task_id)), 201, "create");
    return require(agent_->post("/v1/tasks/claim-next", {{"worker_id", "worker-wire"}}), 200,
                   "claim")
        .at("claim");
  }

  Json result_of(const Json& claim) {
    return taskapi_test::result_body(claim, claim.at("execution_digest"), "result-wire-1",
                                     {{"status", "SUCCEEDED"}});
  }

  test::ScopedTempDir dir_{"aios-wire-faults"};
  std::unique_ptr<test::ScopedPostgresDatabase> database_;
  std::unique_ptr<test::Daemon> proxy_;
  std::unique_ptr<test::SchedulerDaemon> scheduler_;  // stopped before the drop
  std::unique_ptr<ApiClient> agent_;
};

TEST_F(WireFaultTest, ACommitWhoseAnswerIsLostIsReportedAndItsRetryFindsItDone) {
  // Given a result whose COMMIT reached the server and whose answer was lost, the worker should
  // be told 503 STORE_UNAVAILABLE (the outcome is unknown to the scheduler, which does not run
  // it again), and its retry with the same key should get the committed answer back, once.
  const auto claim = claimed("task-wire-drop");
  arm("drop-answer");
  const auto lost = agent_->post("/v1/tasks/task-wire-drop/result", result_of(claim));
  EXPECT_EQ(lost.status, 503) << taskapi_test::describe(lost);
  EXPECT_EQ(lost.body.value("error", ""), "STORE_UNAVAILABLE");
  EXPECT_THAT(proxy_->log(), ::testing::HasSubstr("\"mode\": \"drop-answer\""));
  EXPECT_EQ(count("SELECT COUNT(*) FROM results WHERE task_id=$1", "task-wire-drop"), 1)
      << "the transition committed";

  const auto retried = agent_->post("/v1/tasks/task-wire-drop/result", result_of(claim));
  EXPECT_EQ(retried.status, 200) << taskapi_test::describe(retried);
  EXPECT_EQ(retried.body.value("idempotent", false), true);
  EXPECT_EQ(count("SELECT COUNT(*) FROM task_events WHERE task_id=$1 AND "
                  "event_type='TASK_RESULT_SUBMITTED'",
                  "task-wire-drop"),
            1);
}

TEST_F(WireFaultTest, AConnectionCutMidPipelineLeavesNothingOfTheTransition) {
  // Given the owner's verification, whose update and event are pipelined ahead of its COMMIT,
  // and the connection cut after them and before the COMMIT, we should be told 503 and find the
  // task as it was (VERIFYING, no TASK_VERIFIED); the same call again should verify it once.
  const auto claim = claimed("task-wire-cut");
  const auto submitted =
      require(agent_->post("/v1/tasks/task-wire-cut/result", result_of(claim)), 201, "result");
  const Json verification = {
      {"expected_revision", submitted.at("revision")}, {"decision", "PASS"}, {"reason", ""}};
  arm("mid-pipeline");
  const auto cut = owner().post("/v1/tasks/task-wire-cut/verification", verification);
  EXPECT_EQ(cut.status, 503) << taskapi_test::describe(cut);
  const auto fault = proxy_->find_event("FAULT_PROXY_FAULTED");
  ASSERT_TRUE(fault.has_value()) << proxy_->log();
  EXPECT_EQ(fault->at("mode"), "mid-pipeline");
  EXPECT_GT(fault->at("forwarded"), 0) << "the statements ahead of COMMIT reached the server";
  EXPECT_EQ(
      count("SELECT COUNT(*) FROM tasks WHERE task_id=$1 AND status='VERIFYING'", "task-wire-cut"),
      1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM task_events WHERE task_id=$1 AND "
                  "event_type='TASK_VERIFIED'",
                  "task-wire-cut"),
            0);

  const auto again = require(owner().post("/v1/tasks/task-wire-cut/verification", verification),
                             200, "verification");
  EXPECT_EQ(again.at("status"), "SUCCEEDED");
  EXPECT_EQ(count("SELECT COUNT(*) FROM task_events WHERE task_id=$1 AND "
                  "event_type='TASK_VERIFIED'",
                  "task-wire-cut"),
            1);
}

}  // namespace
}  // namespace aios::store_test
