// The crash-point matrix: the scheduler, the rebind daemon and the executor SIGKILLed at each of
// their named commit points (include/aios/environment.hpp; the worker's nine phases are in
// tests/worker/crash_test.cpp), kCyclesPerPhase times each, then restarted; and the scheduler
// killed at random moments under claim and result traffic. After every kill the store is whole
// (support/store_rows.hpp integrity_of); afterwards nothing acknowledged is lost, nothing is
// committed twice, and an interrupted external-agent run is either run exactly once (killed before
// its start marker) or reported EXTERNAL_AGENT_OUTCOME_INDETERMINATE without a second run (after
// it).
#include <fcntl.h>
#include <signal.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "aios/canonical.hpp"
#include "rebind/rebind_daemon.hpp"
#include "support/rounds.hpp"
#include "support/store_rows.hpp"
#include "support/witness.hpp"
#include "taskapi/client.hpp"

namespace aios::security_test {
namespace {

using taskapi_test::ApiClient;
using taskapi_test::describe;
using taskapi_test::Json;
using taskapi_test::Reply;
using taskapi_test::require;

constexpr int kCyclesPerPhase = test::rounds(20, 3);

// Waits for the armed daemon to kill itself at its fault point; checks that it did.
void expect_fault_kill(test::Daemon& daemon) {
  const auto status = daemon.wait_exit(std::chrono::seconds(30));
  ASSERT_TRUE(status) << "still running\n" << daemon.log();
  ASSERT_TRUE(status->killed_by(SIGKILL)) << status->describe() << "\n" << daemon.log();
  ASSERT_THAT(daemon.log(), ::testing::HasSubstr("FAULT_INJECTED_KILL"));
}

// Restarts `daemon` with (`phase` non-empty) or without the fault armed.
void restart(test::Daemon& daemon, const std::string& phase) {
  if (daemon.running()) {
    ASSERT_TRUE(daemon.stop().exited_with(0)) << daemon.log();
  }
  std::erase_if(daemon.options().env,
                [](const std::string& entry) { return entry.starts_with("AIOS_FAULT_KILL_AT="); });
  if (!phase.empty()) daemon.options().env.push_back("AIOS_FAULT_KILL_AT=" + phase);
  daemon.start();
}

// --- The scheduler ------------------------------------------------------------------------------

class SchedulerCrashTest : public taskapi_test::SchedulerTest,
                           public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    token_ = create_agent("agent-crash", {"git.read"});
    ApiClient agent = client(token_);
    register_worker(agent, "worker-crash", {"git.read"}, {"source_capture"}, 64);
  }

  // A claim of `task_id` that succeeds (nothing armed on claims in the result phase).
  Json claimed(const std::string& task_id) {
    create_task(taskapi_test::source_capture_task(task_id));
    ApiClient agent = client(token_);
    auto lease = claim(agent, task_id, "worker-crash");
    return lease;
  }

  std::string token_;
};

TEST_P(SchedulerCrashTest, KilledAfterTheCommitBeforeTheAnswerLosesAndDoublesNothing) {
  // Given the scheduler killed right after committing a claim or a result (the caller never got
  // the answer), the restarted scheduler should hold that one commit, refuse a second claim and
  // replay the result, with one event each and an intact database.
  const std::string phase = GetParam();
  const bool result_phase = phase == "scheduler_result_committed";
  auto& process = scheduler().process();
  restart(process, phase);
  for (int cycle = 0; cycle < kCyclesPerPhase; ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    reconnect();
    const std::string id = "task-crash-" + std::to_string(cycle);
    Json body;
    std::string target;
    if (result_phase) {
      const Json lease = claimed(id);
      target = "/v1/tasks/" + id + "/result";
      body = taskapi_test::result_body(lease, lease.at("execution_digest"), id + "-result",
                                       {{"summary", "cycle " + std::to_string(cycle)}});
    } else {
      const Json view = create_task(taskapi_test::source_capture_task(id));
      target = "/v1/tasks/" + id + "/claim";
      body = {{"worker_id", "worker-crash"},
              {"expected_revision", view.at("revision")},
              {"execution_digest", view.at("execution_digest")}};
    }
    {
      ApiClient agent = client(token_);
      EXPECT_ANY_THROW(agent.post(target, body)) << "the scheduler answered before its fault";
    }
    expect_fault_kill(process);
    ASSERT_EQ(test::integrity_of(scheduler()), "ok");
    restart(process, "");
    reconnect();
    ApiClient agent = client(token_);
    const Reply again = agent.post(target, body);
    if (result_phase) {
      EXPECT_EQ(again.status, 200) << describe(again);  // the replay of the committed result
      EXPECT_EQ(again.body.value("idempotent", false), true);
      EXPECT_EQ(task(id).at("status"), "VERIFYING");
      EXPECT_EQ(task(id).at("result"), body.at("result"));
    } else {
      EXPECT_EQ(again.code(), "TASK_NOT_CLAIMABLE") << describe(again);
      EXPECT_EQ(task(id).at("status"), "CLAIMED");
      EXPECT_EQ(task(id).at("attempt"), 1);
    }
    const auto types = event_types(id);
    EXPECT_EQ(std::count(types.begin(), types.end(), "TASK_CLAIMED"), 1);
    EXPECT_EQ(std::count(types.begin(), types.end(), "TASK_RESULT_SUBMITTED"),
              result_phase ? 1 : 0);
    EXPECT_EQ(test::count_in(scheduler(), "SELECT COUNT(*) FROM claims WHERE task_id=$1", {id}), 1);
    restart(process, phase);
  }
  restart(process, "");
  reconnect();
}

INSTANTIATE_TEST_SUITE_P(CommitPoints, SchedulerCrashTest,
                         ::testing::Values("scheduler_claim_committed",
                                           "scheduler_result_committed"));

class SchedulerRandomKillTest : public taskapi_test::SchedulerTest {};

TEST_F(SchedulerRandomKillTest, RandomKillsUnderTrafficLoseNoAcknowledgedResult) {
  // Given a client creating, claiming and submitting without pause, and the scheduler SIGKILLed
  // at a random moment (AIOS_CRASH_RANDOM_KILLS times, 200 by default, 20 under the
  // sanitizers: test::rounds), we should find after
  // every kill an intact database, and at the end every acknowledged result stored exactly as
  // sent with one result event, and never two claims or two results for one attempt.
  int kills = test::rounds(200, 20);
  if (const char* value = std::getenv("AIOS_CRASH_RANDOM_KILLS")) kills = std::atoi(value);
  const std::string token = create_agent("agent-random", {"git.read"});
  {
    ApiClient agent = client(token);
    register_worker(agent, "worker-random", {"git.read"}, {"source_capture"}, 64);
  }
  std::mt19937 random(20261130);
  std::map<std::string, Json> acknowledged;  // task id -> the result the scheduler accepted
  int sequence = 0;
  // The kill lands at a random moment within about two rounds of traffic, measured here: a
  // fixed window (40 ms once) is shorter than one round on a slow disk or under the sanitizers,
  // and then no round ever completes before its kill. The round measured is a freshly started
  // scheduler's first, as every round below is (a warm one was at times too short a measure).
  auto& process = scheduler().process();
  process.kill();
  process.start();
  const auto round_started = std::chrono::steady_clock::now();
  {
    ApiClient owner_client(port(), scheduler().control_token());
    ApiClient agent(port(), token);
    const std::string id = "task-random-timing";
    const Reply created = owner_client.post("/v1/tasks", taskapi_test::source_capture_task(id));
    const Reply lease = agent.post("/v1/tasks/" + id + "/claim",
                                   {{"worker_id", "worker-random"},
                                    {"expected_revision", created.body.at("revision")},
                                    {"execution_digest", created.body.at("execution_digest")}});
    agent.post("/v1/tasks/" + id + "/result",
               taskapi_test::result_body(lease.body, lease.body.at("execution_digest"), id,
                                         {{"summary", id}}));
  }
  const auto window =
      static_cast<unsigned>(2 * std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - round_started)
                                    .count() +
                            1);
  for (int kill = 0; kill < kills; ++kill) {
    std::atomic<bool> done{false};
    const std::uint16_t api_port = port();
    const std::string owner_token = scheduler().control_token();
    std::map<std::string, Json> accepted;
    std::thread traffic([&] {
      try {
        ApiClient owner_client(api_port, owner_token);
        ApiClient agent(api_port, token);
        while (!done.load()) {
          const std::string id = "task-random-" + std::to_string(sequence++);
          const Reply created =
              owner_client.post("/v1/tasks", taskapi_test::source_capture_task(id));
          if (created.status != 201) return;
          const Reply lease =
              agent.post("/v1/tasks/" + id + "/claim",
                         {{"worker_id", "worker-random"},
                          {"expected_revision", created.body.at("revision")},
                          {"execution_digest", created.body.at("execution_digest")}});
          if (lease.status != 200) return;
          const Json result = {{"summary", id}};
          const Reply submitted = agent.post(
              "/v1/tasks/" + id + "/result",
              taskapi_test::result_body(lease.body, lease.body.at("execution_digest"), id, result));
          if (submitted.status == 201) accepted[id] = result;
        }
      } catch (const std::exception&) {
        // The scheduler died under the request: this round of traffic ends.
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % window));
    process.kill();
    done = true;
    traffic.join();
    acknowledged.insert(accepted.begin(), accepted.end());
    ASSERT_EQ(test::integrity_of(scheduler()), "ok") << "after kill " << kill;
    process.start();
  }
  reconnect();
  for (const auto& [id, result] : acknowledged) {
    const Json view = task(id);
    EXPECT_EQ(view.at("status"), "VERIFYING") << id;
    EXPECT_EQ(view.at("result"), result) << id;
  }
  EXPECT_EQ(test::count_in(scheduler(),
                           "SELECT COUNT(*) FROM (SELECT task_id, attempt FROM claims "
                           "GROUP BY task_id, attempt HAVING COUNT(*) > 1) AS twice"),
            0);
  EXPECT_EQ(test::count_in(scheduler(),
                           "SELECT COUNT(*) FROM (SELECT task_id FROM task_events WHERE "
                           "event_type='TASK_RESULT_SUBMITTED' GROUP BY task_id HAVING COUNT(*) > "
                           "1) AS twice"),
            0);
  EXPECT_EQ(test::count_in(scheduler(), "SELECT COUNT(*) FROM results"),
            test::count_in(scheduler(),
                           "SELECT COUNT(*) FROM task_events WHERE "
                           "event_type='TASK_RESULT_SUBMITTED'"));
  EXPECT_GT(acknowledged.size(), 0u);
}

// --- The rebind daemon --------------------------------------------------------------------------

const Json kWriteScope = {"git.read", "git.test", "governed.write.branch", "governed.write.file"};

class RebindCrashTest : public taskapi_test::SchedulerTest,
                        public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    bridge_owner_.emplace(scheduler().bridge_port(), scheduler().control_token());
    rebind_.emplace(
        rebind_test::rebind_options(
            {.store = scheduler().store_location(),
             .token_file = scheduler().dir() / "control_token",
             .bridge_url = "http://127.0.0.1:" + std::to_string(scheduler().bridge_port())}),
        scheduler().dir().path(), "aios-agent-task-execution-rebind");
    agent_.emplace(client(create_agent("agent-rebind", kWriteScope)));
    register_worker(*agent_, "worker-reader", {"git.read"}, {"source_capture"}, 64);
  }

  void TearDown() override {
    if (rebind_ && rebind_->running()) {
      EXPECT_TRUE(rebind_->stop().exited_with(0)) << rebind_->log();
    }
    SchedulerTest::TearDown();
  }

  // A task sent back by NEEDS_REWORK, with its plan registered: the owner's rebind body.
  Json rebind_body(const std::string& task_id) {
    create_task(taskapi_test::source_capture_task(task_id));
    const Json lease = claim(*agent_, task_id, "worker-reader");
    require(agent_->post("/v1/tasks/" + task_id + "/result",
                         taskapi_test::result_body(lease, lease.at("execution_digest"),
                                                   task_id + "-result", {{"summary", "read"}})),
            201, "result of " + task_id);
    verify(task_id, "NEEDS_REWORK");
    const Json view = task(task_id);
    const Json plan =
        require(bridge_owner_->post("/v2/plans",
                                    {{"task_id", task_id},
                                     {"capability_scope", kWriteScope},
                                     {"change_set", Json::array({{{"path", "docs/NOTE.md"},
                                                                  {"operation", "write_file"},
                                                                  {"content", "rebound\n"}}})}}),
                201, "plan of " + task_id);
    return rebind_test::owner_rebind_request(view, plan.at("execution_digest"), task_id + "-rebind",
                                             "crash matrix");
  }

  std::optional<ApiClient> bridge_owner_;
  std::optional<test::Daemon> rebind_;
  std::optional<ApiClient> agent_;
};

TEST_P(RebindCrashTest, KilledAroundTheRebindTransactionAppliesItExactlyOnce) {
  // Given the rebind daemon killed after the Bridge answered (nothing written yet) or after its
  // transaction committed (the owner never got the answer), the same request to the restarted
  // daemon should leave exactly one rebind: applied now (201) or replayed (200).
  const std::string phase = GetParam();
  const bool committed = phase == "rebind_committed";
  restart(*rebind_, phase);
  for (int cycle = 0; cycle < kCyclesPerPhase; ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    const std::string id = "task-rebind-crash-" + std::to_string(cycle);
    const Json body = rebind_body(id);
    const std::string target = "/v1/tasks/" + id + "/execution-rebind";
    {
      ApiClient owner_client(rebind_->port(), scheduler().control_token());
      EXPECT_ANY_THROW(owner_client.post(target, body));
    }
    expect_fault_kill(*rebind_);
    ASSERT_EQ(test::integrity_of(scheduler()), "ok");
    restart(*rebind_, "");
    ApiClient owner_client(rebind_->port(), scheduler().control_token());
    const Reply again = owner_client.post(target, body);
    EXPECT_EQ(again.status, committed ? 200 : 201) << describe(again);
    const auto types = event_types(id);
    EXPECT_EQ(std::count(types.begin(), types.end(), "TASK_EXECUTION_REBIND_AUTHORIZED"), 1);
    EXPECT_EQ(test::count_in(scheduler(),
                             "SELECT COUNT(*) FROM task_execution_rebinds WHERE task_id=$1", {id}),
              1);
    EXPECT_EQ(task(id).at("execution_digest"), body.at("expected_new_execution_digest"));
    restart(*rebind_, phase);
  }
}

INSTANTIATE_TEST_SUITE_P(CommitPoints, RebindCrashTest,
                         ::testing::Values("rebind_resolved", "rebind_committed"));

// --- The executor -------------------------------------------------------------------------------

class ExecutorCrashTest : public ::testing::TestWithParam<const char*> {
 protected:
  ExecutorCrashTest() {
    for (const char* sub : {"exchange", "profiles", "tmp"}) {
      std::filesystem::create_directories(dir_ / sub);
    }
    // The agent reports its goal (the task id) to the witness, which confirms only once it is
    // stored, so every invocation is counted even when the executor dies right after.
    const auto script = dir_ / "agent.py";
    test::write_text_file(script,
                          witness_.python() +
                              "import json, sys\n"
                              "request = json.load(sys.stdin)\n"
                              "witness(request['goal'])\n"
                              "print(json.dumps({'answer': 'ok'}))\n",
                          std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                              std::filesystem::perms::others_read);
    test::write_text_file(dir_ / "profiles" / "hermes.json",
                          Json{{"schema", "aios.external-agent-runtime.profile.v1"},
                               {"runtime", "hermes"},
                               {"argv", {"/usr/bin/python3", script.string()}},
                               {"input_mode", "stdin_json"},
                               {"output_mode", "stdout_json"},
                               {"timeout_seconds", 30},
                               {"max_output_bytes", 65536},
                               {"network", {witness_.destination()}}}
                              .dump());
    test::DaemonOptions options =
        test::executor_options(dir_ / "exchange", dir_ / "profiles", dir_.path());
    options.env = {"TMPDIR=" + (dir_ / "tmp").string()};
    executor_.emplace(options, dir_.path(), "executor");
  }

  ~ExecutorCrashTest() override {
    if (executor_ && executor_->running()) executor_->stop();
  }

  std::filesystem::path exchange(const char* sub) const { return dir_ / "exchange" / sub; }

  // Written aside and renamed into requests/, as the worker hands a request in.
  void hand_in(const std::string& task_id) {
    const std::string name = "external-hermes-" + task_id + ".json";
    const Json request = {{"schema", "aios.external-agent-runtime.request.v1"},
                          {"request_id", "external-hermes-" + task_id},
                          {"runtime", "hermes"},
                          {"task_id", task_id},
                          {"execution_digest", std::string(64, 'd')},
                          {"payload", {{"goal", task_id}}}};
    std::filesystem::create_directories(exchange("requests"));
    const auto staging = exchange("requests") / ("." + name + ".tmp");
    test::write_text_file(staging, canonical_json(request));
    std::filesystem::rename(staging, exchange("requests") / name);
  }

  std::size_t invocations(const std::string& task_id) const { return witness_.count(task_id); }

  // Waits for the request to be settled (its outcome file written, the request and its start
  // marker removed); "results", "failed" or "" after 20 s.
  std::string outcome_of(const std::string& task_id) {
    const std::string name = "external-hermes-" + task_id + ".json";
    for (int i = 0; i < 4000; ++i) {
      for (const char* sub : {"results", "failed"}) {
        if (std::filesystem::exists(exchange(sub) / name) &&
            !std::filesystem::exists(exchange("requests") / name) &&
            !std::filesystem::exists(exchange("started") / name)) {
          return sub;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return "";
  }

  test::ScopedTempDir dir_{"aios-executor-crash"};
  test::Witness witness_;
  std::optional<test::Daemon> executor_;
};

TEST_P(ExecutorCrashTest, InterruptedRunIsRunOnceOrIndeterminateNeverTwice) {
  // Given the executor killed before the start marker, after it (before the spawn), or after the
  // outcome is written (before the request is removed), the restarted executor should run the
  // agent exactly once, report EXTERNAL_AGENT_OUTCOME_INDETERMINATE without running it, or keep
  // the one result, respectively; never a second invocation.
  const std::string phase = GetParam();
  restart(*executor_, phase);
  for (int cycle = 0; cycle < kCyclesPerPhase; ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    const std::string id = "task-exec-crash-" + std::to_string(cycle);
    hand_in(id);
    expect_fault_kill(*executor_);
    restart(*executor_, "");
    const std::string outcome = outcome_of(id);
    if (phase == "executor_start_marked") {
      ASSERT_EQ(outcome, "failed") << executor_->log();
      EXPECT_THAT(test::read_text_file(exchange("failed") / ("external-hermes-" + id + ".json")),
                  ::testing::HasSubstr("EXTERNAL_AGENT_OUTCOME_INDETERMINATE"));
      EXPECT_EQ(invocations(id), 0u);
    } else {
      ASSERT_EQ(outcome, "results") << executor_->log();
      EXPECT_EQ(invocations(id), 1u);
    }
    EXPECT_TRUE(std::filesystem::is_empty(exchange("started")));
    restart(*executor_, phase);
  }
}

INSTANTIATE_TEST_SUITE_P(Phases, ExecutorCrashTest,
                         ::testing::Values("executor_request_accepted", "executor_start_marked",
                                           "executor_outcome_written"));

}  // namespace
}  // namespace aios::security_test
