// The worker end to end with the real daemons: a deterministic task and a Hermes task from
// creation to SUCCEEDED, a Hermes task skipped by the generic worker and taken by the Hermes
// worker, and a worker killed while its agent runs, restarted, with the agent run once and one
// result submitted.
#include <csignal>
#include <mutex>
#include <string>
#include <thread>

#include "worker/worker_fixture.hpp"

namespace aios::worker_test {
namespace {

using ::testing::HasSubstr;

Json hermes_task(const Json& binding) {
  return {{"task_id", binding.at("task_id")},
          {"goal", "Summarize the layout"},
          {"required_capabilities", {"agent.runtime.hermes"}},
          {"binding", binding},
          {"execution", {{"action", "agent_runtime"}, {"adapter", "hermes"}}}};
}

TEST_F(WorkerTest, DeterministicTaskIsCommittedVerifiedAndSucceeds) {
  // Given a deterministic task with a passing verification command, one worker pass should
  // commit the change through the Bridge and submit a result the owner can accept.
  auto body = deterministic_task(binding("task-w-det", "agent/w-det"),
                                 {write_file("docs/NOTE.md", "from the worker\n")});
  body["execution"]["verification"] = {
      {{"label", "smoke"}, {"argv", {"/usr/bin/true"}}, {"cwd", "docs"}, {"timeout_seconds", 30}}};
  create_task(body);
  auto& worker = make_worker("det", kWriter, "deterministic", true);
  worker.start();
  ASSERT_TRUE(worker.wait_exit(std::chrono::seconds(30))) << worker.log();
  EXPECT_EQ(event(worker, "WORKER_ONCE_DONE").at("outcome"), "SUBMITTED") << worker.log();

  const auto view = task("task-w-det");
  ASSERT_EQ(view.at("status"), "VERIFYING") << view.dump();
  const auto& result = view.at("result");
  EXPECT_EQ(result.at("status"), "SUCCEEDED");
  EXPECT_EQ(result.at("classification"), "DETERMINISTIC_CHANGE_COMMITTED");
  EXPECT_EQ(result.at("commit_oid"), branch_oid("agent/w-det"));
  EXPECT_EQ(result.at("tests").at(0).at("passed"), true);
  EXPECT_EQ(repo_git("show agent/w-det:docs/NOTE.md"), "from the worker");
  verify("task-w-det", "PASS");
  EXPECT_EQ(task("task-w-det").at("status"), "SUCCEEDED");
}

TEST_F(WorkerTest, FailingVerificationIsReportedWithoutACommit) {
  // Given a verification command that fails, the worker should submit a FAILED result and
  // commit nothing.
  auto body = deterministic_task(binding("task-w-fail", "agent/w-fail"), {write_file("a.md", "a")});
  body["execution"]["verification"] = {{{"label", "must fail"},
                                        {"argv", {"/usr/bin/false"}},
                                        {"cwd", "."},
                                        {"timeout_seconds", 30}}};
  create_task(body);
  auto& worker = make_worker("fail", kWriter, "deterministic", true);
  worker.start();
  ASSERT_TRUE(worker.wait_exit(std::chrono::seconds(30))) << worker.log();
  const auto view = task("task-w-fail");
  ASSERT_EQ(view.at("status"), "VERIFYING") << view.dump() << worker.log();
  const auto& result = view.at("result");
  EXPECT_EQ(result.at("status"), "FAILED") << result.dump();
  EXPECT_EQ(result.at("classification"), "DETERMINISTIC_VERIFICATION_FAILED");
  EXPECT_EQ(result.at("tests").at(0).at("exit_code"), 1);
  EXPECT_EQ(branch_oid("agent/w-fail"), "");
}

TEST_F(WorkerTest, HermesTaskIsSkippedByTheGenericWorkerAndRunByTheHermesWorker) {
  // Given a Hermes task, the generic worker (default adapters) should skip it before claiming,
  // and the Hermes worker should run it through the executor once and submit its result.
  start_executor("hermes");
  create_task(hermes_task(binding("task-w-hermes", "agent/w-hermes")));
  auto& generic = make_worker("generic", {"agent.runtime.hermes", "git.read"}, "", true);
  generic.start();
  ASSERT_TRUE(generic.wait_exit(std::chrono::seconds(30))) << generic.log();
  EXPECT_EQ(event(generic, "WORKER_ONCE_DONE").at("outcome"), "IDLE");
  EXPECT_EQ(task("task-w-hermes").at("status"), "QUEUED");
  const auto eligibility =
      require(owner().get("/v1/tasks/task-w-hermes/eligibility"), 200, "eligibility");
  for (const auto& entry : eligibility.at("workers")) {
    if (entry.at("worker_id") == "generic") {
      EXPECT_THAT(entry.at("reasons").dump(), HasSubstr("adapter_not_allowed"));
    }
  }

  auto& hermes = make_worker("hermes", {"agent.runtime.hermes"}, "hermes", true);
  hermes.start();
  ASSERT_TRUE(hermes.wait_exit(std::chrono::seconds(60))) << hermes.log();
  const auto view = task("task-w-hermes");
  ASSERT_EQ(view.at("status"), "VERIFYING") << view.dump() << hermes.log();
  const auto& result = view.at("result");
  EXPECT_EQ(result.at("classification"), "EXTERNAL_AGENT_RUNTIME_SUCCEEDED");
  EXPECT_EQ(result.at("writer_lease"), "NONE");
  EXPECT_EQ(result.at("credential_material_exposed"), false);
  EXPECT_EQ(result.at("output_json").at("answer"), "done: Summarize the layout");
  EXPECT_EQ(agent_runs(), 1u);
  verify("task-w-hermes", "PASS");
  EXPECT_EQ(task("task-w-hermes").at("status"), "SUCCEEDED");
}

TEST_F(WorkerTest, ARequeuedAgentTaskRunsItsAgentAgain) {
  // Given a Hermes task run once and failed by its verification, then requeued by the owner,
  // the worker should run the agent a second time (a new exchange request, not the first run's
  // recorded answer) and submit the new run's result.
  start_executor("hermes");
  create_task(hermes_task(binding("task-w-requeue", "agent/w-requeue")));
  auto& hermes = make_worker("hermes-requeue", {"agent.runtime.hermes"}, "hermes", true);
  hermes.start();
  ASSERT_TRUE(hermes.wait_exit(std::chrono::seconds(60))) << hermes.log();
  ASSERT_EQ(task("task-w-requeue").at("status"), "VERIFYING") << hermes.log();
  EXPECT_EQ(agent_runs(), 1u);
  const auto first_request = task("task-w-requeue").at("result").at("external_request_id");
  verify("task-w-requeue", "FAIL");
  require(owner().post("/v1/tasks/task-w-requeue/requeue",
                       {{"expected_revision", task("task-w-requeue").at("revision")},
                        {"idempotency_key", "requeue-w-requeue-1"},
                        {"reason", "the model was down"}}),
          200, "requeue");
  hermes.start();
  ASSERT_TRUE(hermes.wait_exit(std::chrono::seconds(60))) << hermes.log();
  const auto view = task("task-w-requeue");
  ASSERT_EQ(view.at("status"), "VERIFYING") << view.dump() << hermes.log();
  EXPECT_EQ(view.at("attempt"), 2);
  EXPECT_EQ(view.at("requeues"), 1);
  EXPECT_EQ(agent_runs(), 2u);
  EXPECT_NE(view.at("result").at("external_request_id"), first_request);
}

TEST_F(WorkerTest, AnAgentThroughTheGatewayHasItsModelUsageOnTheTask) {
  // Given a Hermes profile that reaches its provider through the gateway, the agent's two model
  // calls should reach the upstream with the provider key only, and the task's result, its
  // submission event and the scheduler's /metrics should carry their usage.
  std::vector<std::string> keys;
  std::mutex mutex;
  http::Server upstream({}, [&](const http::Request& request) {
    const std::lock_guard lock(mutex);
    keys.emplace_back(request.header("Authorization"));
    http::Response response;
    response.body = R"({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,)"
                    R"("total_tokens":15}})";
    return response;
  });
  upstream.start();
  const auto credentials = dir() / "credentials";
  std::filesystem::create_directories(credentials);
  test::write_text_file(credentials / "provider.env", "ONEAPI_REGULAR_TOKEN=sk-gateway-e2e-key\n");
  start_executor("hermes", 0, {"CREDENTIALS_DIRECTORY=" + credentials.string()},
                 {{"provider",
                   {{"upstream", "http://127.0.0.1:" + std::to_string(upstream.port()) + "/v1"},
                    {"credential",
                     {{"credential", "provider.env"},
                      {"format", "dotenv"},
                      {"key", "ONEAPI_REGULAR_TOKEN"}}}}}});
  create_task(hermes_task(binding("task-w-gateway", "agent/w-gateway")));
  auto& hermes = make_worker("hermes", {"agent.runtime.hermes"}, "hermes", true);
  hermes.start();
  ASSERT_TRUE(hermes.wait_exit(std::chrono::seconds(60))) << hermes.log();
  const auto view = task("task-w-gateway");
  ASSERT_EQ(view.at("status"), "VERIFYING") << view.dump() << hermes.log() << executor_->log();
  const auto& usage = view.at("result").at("model_usage");
  EXPECT_EQ(usage.at("requests"), 2) << usage.dump();
  EXPECT_EQ(usage.at("total"), 30) << usage.dump();
  {
    const std::lock_guard lock(mutex);
    EXPECT_EQ(keys, std::vector<std::string>(2, "Bearer sk-gateway-e2e-key"));
  }
  const auto events = require(owner().get("/v1/tasks/task-w-gateway/events"), 200, "events");
  EXPECT_THAT(events.dump(), HasSubstr("\"model_usage\""));
  const auto metrics = owner().get("/metrics");
  EXPECT_THAT(metrics.raw, HasSubstr("aios_model_requests_total{runtime=\"hermes\"} 2"));
  EXPECT_EQ(view.dump().find("sk-gateway-e2e-key"), std::string::npos);

  // A task whose envelope allows one model call: the agent's second is refused, and the run
  // ends in a FAILED result with the budget's classification and its usage (submitted, never
  // released: another attempt would spend the budget again).
  auto bounded = hermes_task(binding("task-w-budget", "agent/w-budget"));
  bounded["execution"]["model_budget"] = {{"max_requests", 1}};
  create_task(bounded);
  auto& again = make_worker("hermes-budget", {"agent.runtime.hermes"}, "hermes", true);
  again.start();
  ASSERT_TRUE(again.wait_exit(std::chrono::seconds(60))) << again.log();
  const auto stopped = task("task-w-budget");
  ASSERT_EQ(stopped.at("status"), "VERIFYING") << stopped.dump() << again.log();
  EXPECT_EQ(stopped.at("result").at("status"), "FAILED");
  EXPECT_EQ(stopped.at("result").at("classification"), "EXTERNAL_AGENT_MODEL_BUDGET_EXHAUSTED");
  EXPECT_EQ(stopped.at("result").at("model_usage").at("requests"), 1);
  EXPECT_EQ(stopped.at("result").at("model_usage").at("refused"), 1);
  EXPECT_EQ(stopped.at("attempt"), 1);
  const std::lock_guard lock(mutex);
  EXPECT_EQ(keys.size(), 3U);
}

TEST_F(WorkerTest, AWorkerWithThreeSlotsRunsThreeTasksAtOnce) {
  // Given three Hermes tasks whose agent works 3 s each and a worker with --max-concurrency 3,
  // all three should be CLAIMED by it at the same moment (a worker of one slot holds one at a
  // time), each agent should run once, and each task reach VERIFYING with one result.
  start_executor("hermes", 3.0);
  const std::vector<std::string> ids = {"task-w-slot-1", "task-w-slot-2", "task-w-slot-3"};
  for (const auto& id : ids) create_task(hermes_task(binding(id, "agent/" + id.substr(5))));
  auto& worker =
      make_worker("slots", {"agent.runtime.hermes"}, "hermes", false, {"--max-concurrency", "3"});
  worker.start();
  EXPECT_EQ(event(worker, "WORKER_REGISTERED").at("slots"), 3);
  const auto claimed_together = [&] {
    return std::all_of(ids.begin(), ids.end(),
                       [&](const std::string& id) { return task(id).at("status") == "CLAIMED"; });
  };
  EXPECT_TRUE(taskapi_test::eventually(claimed_together, std::chrono::seconds(20))) << worker.log();
  ASSERT_TRUE(taskapi_test::eventually(
      [&] {
        return std::all_of(ids.begin(), ids.end(), [&](const std::string& id) {
          return task(id).at("status") == "VERIFYING";
        });
      },
      std::chrono::seconds(60)))
      << worker.log();
  EXPECT_EQ(agent_runs(), 3U);
  for (const auto& id : ids) {
    const auto types = event_types(id);
    EXPECT_EQ(std::count(types.begin(), types.end(), "TASK_RESULT_SUBMITTED"), 1) << id;
  }
  EXPECT_TRUE(worker.stop().exited_with(0)) << worker.log();
}

TEST_F(WorkerTest, WorkerKilledWhileTheAgentRunsNeverRunsItTwice) {
  // Given a worker SIGKILLed while its external agent runs, a restarted worker should resume
  // from its checkpoint, take the executor's one result and submit it once.
  start_executor("hermes", 2.0);
  create_task(hermes_task(binding("task-w-crash", "agent/w-crash")));
  auto& worker = make_worker("crash", {"agent.runtime.hermes"}, "hermes", false);
  worker.start();
  ASSERT_TRUE(taskapi_test::eventually([&] { return agent_runs() == 1; })) << worker.log();
  worker.kill();
  worker.start();
  ASSERT_TRUE(taskapi_test::eventually(
      [&] { return task("task-w-crash").at("status") == "VERIFYING"; }, std::chrono::seconds(30)))
      << worker.log();
  EXPECT_THAT(worker.log(), HasSubstr("TASK_RESUMED"));
  EXPECT_EQ(agent_runs(), 1u);
  EXPECT_EQ(task("task-w-crash").at("attempt"), 1);
  const auto types = event_types("task-w-crash");
  EXPECT_EQ(std::count(types.begin(), types.end(), "TASK_RESULT_SUBMITTED"), 1);
  EXPECT_TRUE(worker.stop().exited_with(0)) << worker.log();
  // Stopped cleanly, it says so: the fleet reads it stopped, not online.
  const auto fleet = require(owner().get("/v1/fleet"), 200, "fleet");
  for (const auto& entry : fleet.at("workers")) {
    if (entry.at("worker_id") != "crash") continue;
    EXPECT_EQ(entry.at("stopped"), true) << entry.dump();
    EXPECT_EQ(entry.at("online"), false) << entry.dump();
  }
}

TEST_F(WorkerTest, SourceCaptureTaskProducesAnInterfaceMapWithoutWriting) {
  // Given a source-capture task over a commit with a scheduler module, one worker pass should
  // map the module for the task's signals and submit a read-only result.
  const auto work = (dir() / "seed-work").string();
  git_ok("-C " + work + " checkout -q -b source && mkdir -p " + work + "/src && printf '" +
         "class FleetScheduler:\\n    def claim_lease(self, worker, capacity):\\n" +
         "        return self.queue.dispatch(worker)\\n' > " + work +
         "/src/scheduler.py && git -C " + work + " add -A && git -C " + work +
         " -c user.name=t -c user.email=t@example.invalid commit -q -m source && git -C " + work +
         " push -q " + scheduler().authority_git_dir().string() + " source");
  const std::string source = git_ok("-C " + work + " rev-parse HEAD");
  auto binding_value = binding("task-w-src", "agent/w-src");
  binding_value["base_oid"] = source;
  binding_value["expected_branch_oid"] = source;
  auto body = source_capture_task(binding_value);
  body["execution"]["source_signals"] = {"scheduler lease capacity dispatch"};
  create_task(body);
  auto& worker = make_worker("src", {"git.read"}, "source_capture", true);
  worker.start();
  ASSERT_TRUE(worker.wait_exit(std::chrono::seconds(30))) << worker.log();
  const auto view = task("task-w-src");
  ASSERT_EQ(view.at("status"), "VERIFYING") << view.dump() << worker.log();
  const auto& result = view.at("result");
  EXPECT_EQ(result.at("classification"), "P2_INTERFACE_MAP_CAPTURED") << result.dump();
  EXPECT_EQ(result.at("writer_lease"), "NONE");
  EXPECT_THAT(result.dump(), HasSubstr("src/scheduler.py"));
  EXPECT_THAT(result.dump(), HasSubstr("claim_lease"));
  EXPECT_EQ(branch_oid("agent/w-src"), "");
  verify("task-w-src", "PASS");
  EXPECT_EQ(task("task-w-src").at("status"), "SUCCEEDED");
}

// A one-second lease, so an agent run of three seconds outlives it many times over.
class ShortLeaseWorkerTest : public WorkerTest {
 protected:
  test::SchedulerConfig config() const override {
    auto result = WorkerTest::config();
    result.lease_seconds = 1;
    return result;
  }
};

TEST_F(ShortLeaseWorkerTest, AnAgentRunLongerThanTheLeaseKeepsItAlive) {
  // Given an external agent that works for longer than the task lease, the worker should keep
  // heartbeating while it waits, so the same attempt submits the result (no expiry, no rerun).
  start_executor("hermes", 3.0);
  create_task(hermes_task(binding("task-w-long", "agent/w-long")));
  auto& worker = make_worker("long", {"agent.runtime.hermes"}, "hermes", true);
  worker.start();
  ASSERT_TRUE(worker.wait_exit(std::chrono::seconds(60))) << worker.log();
  const auto view = task("task-w-long");
  EXPECT_EQ(view.at("status"), "VERIFYING") << view.dump() << worker.log();
  EXPECT_EQ(view.at("attempt"), 1);
  EXPECT_EQ(agent_runs(), 1u);
  const auto types = event_types("task-w-long");
  EXPECT_EQ(std::count(types.begin(), types.end(), "TASK_LEASE_EXPIRED"), 0) << view.dump();
}

}  // namespace
}  // namespace aios::worker_test
