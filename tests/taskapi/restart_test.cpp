// Crash and restart against the real daemon: SIGKILL in the middle of a lifecycle and of a
// stream of writes, then a restart on the same database. Committed state, issued agent tokens
// and lease tokens survive; the store comes through whole (support/store_rows.hpp).
#include <signal.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/store_rows.hpp"
#include "taskapi/client.hpp"

namespace aios::taskapi_test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsSupersetOf;

class RestartTest : public SchedulerTest {
 protected:
  test::SchedulerConfig config() const override {
    test::SchedulerConfig result;
    result.lease_seconds = 120;
    return result;
  }
};

TEST_F(RestartTest, KilledMidLifecycleKeepsStateAndHonoursTheLease) {
  // Given SIGKILL with a task claimed, we should restart with the task and its lease intact.
  const std::string agent_token = create_agent("agent-crash", {"agent.runtime.hermes"});
  std::optional<ApiClient> agent(client(agent_token));
  register_worker(*agent, "worker-crash", {"agent.runtime.hermes"}, {"hermes"}, 2);
  create_task(hermes_task("task-crash"));
  const auto lease = claim(*agent, "task-crash", "worker-crash");
  require(agent->post("/v1/tasks/task-crash/heartbeat", {{"lease_token", lease.at("lease_token")}}),
          200, "heartbeat before the crash");
  const auto before = task("task-crash");
  const auto history_before = events("task-crash");

  const auto killed = scheduler().kill();
  EXPECT_TRUE(killed.killed_by(SIGKILL)) << killed.describe();
  EXPECT_FALSE(scheduler().process().find_event("STOPPED").has_value());
  scheduler().restart();
  reconnect();
  agent.emplace(client(agent_token));

  const auto after = task("task-crash");
  EXPECT_EQ(after, before);
  EXPECT_EQ(after.at("status"), "CLAIMED");
  EXPECT_EQ(after.at("revision"), 2);
  EXPECT_EQ(after.at("attempt"), 1);
  EXPECT_EQ(after.at("claimed_by"), "worker-crash");
  EXPECT_EQ(events("task-crash"), history_before);

  const auto beat = agent->post("/v1/tasks/task-crash/heartbeat",
                                {{"lease_token", lease.at("lease_token")}, {"stage", "resumed"}});
  ASSERT_EQ(beat.status, 200) << describe(beat);
  EXPECT_EQ(beat.body.at("revision"), 2);
  const auto result = agent->post(
      "/v1/tasks/task-crash/result",
      result_body(lease, before.at("execution_digest"), "result-crash-1", {{"resumed", true}}));
  ASSERT_EQ(result.status, 201) << describe(result);
  EXPECT_EQ(result.body.at("revision"), 3);
  EXPECT_EQ(verify("task-crash", "PASS").at("revision"), 4);
  EXPECT_THAT(event_types("task-crash"), ElementsAre("TASK_CREATED", "TASK_CLAIMED",
                                                     "TASK_RESULT_SUBMITTED", "TASK_VERIFIED"));

  const auto stopped = scheduler().stop();
  EXPECT_TRUE(stopped.exited_with(0)) << stopped.describe();
  EXPECT_EQ(test::integrity_of(scheduler()), "ok");
}

TEST_F(RestartTest, AcknowledgedCreatesSurviveAKill) {
  // Given SIGKILL during a stream of creates, we should keep every acknowledged task, whole.
  std::mutex mutex;
  std::vector<std::string> acknowledged;
  std::set<std::string> sent;
  std::atomic<bool> stop{false};
  std::string writer_error;
  std::thread writer([&] {
    ApiClient writer_client = client(scheduler().control_token());
    for (int i = 0; i < 1000 && !stop; ++i) {
      const std::string id = "task-stream-" + std::to_string(i);
      {
        const std::lock_guard lock(mutex);
        sent.insert(id);
      }
      try {
        const auto reply = writer_client.post("/v1/tasks", hermes_task(id));
        const std::lock_guard lock(mutex);
        if (reply.status == 201) {
          acknowledged.push_back(id);
        } else {
          writer_error = id + ": " + describe(reply);
          return;
        }
      } catch (const Error&) {
        return;  // the daemon is gone
      }
    }
  });
  const bool enough = eventually([&] {
    const std::lock_guard lock(mutex);
    return acknowledged.size() >= 20 || !writer_error.empty();
  });
  const auto killed = scheduler().kill();
  stop = true;
  writer.join();
  ASSERT_TRUE(enough);
  ASSERT_TRUE(writer_error.empty()) << writer_error;
  EXPECT_TRUE(killed.killed_by(SIGKILL)) << killed.describe();
  EXPECT_EQ(test::integrity_of(scheduler()), "ok");

  scheduler().restart();
  reconnect();
  const auto listed = require(owner().get("/v1/tasks?limit=1000"), 200, "list");
  std::vector<std::string> stored;
  for (const auto& item : listed.at("tasks")) {
    stored.push_back(item.at("task_id"));
    EXPECT_EQ(item.at("status"), "QUEUED");
    EXPECT_EQ(item.at("revision"), 1);
    EXPECT_EQ(event_types(item.at("task_id")), std::vector<std::string>{"TASK_CREATED"});
    EXPECT_TRUE(sent.contains(item.at("task_id"))) << item.at("task_id");
  }
  EXPECT_THAT(stored, IsSupersetOf(acknowledged));
  EXPECT_LE(stored.size(), acknowledged.size() + 1);  // at most the one in flight
}

TEST_F(RestartTest, SigtermDrainsClaimsInFlight) {
  // Given SIGTERM during claims, we should exit 0 having answered every claim it committed.
  const std::string agent_token = create_agent("agent-drain", {"agent.runtime.hermes"});
  constexpr int kClaimers = 4;
  constexpr int kTaskCount = 60;
  {
    ApiClient agent = client(agent_token);
    for (int w = 0; w < kClaimers; ++w) {
      register_worker(agent, "worker-drain-" + std::to_string(w), {"agent.runtime.hermes"},
                      {"hermes"}, 64);
    }
  }
  std::vector<std::string> digests;
  for (int i = 0; i < kTaskCount; ++i) {
    digests.push_back(
        create_task(hermes_task("task-drain-" + std::to_string(i))).at("execution_digest"));
  }
  std::mutex mutex;
  std::set<std::string> won;
  std::vector<std::string> odd;
  std::atomic<int> next{0};
  std::vector<std::thread> claimers;
  for (int w = 0; w < kClaimers; ++w) {
    claimers.emplace_back([&, w] {
      ApiClient agent = client(agent_token);
      const std::string worker_id = "worker-drain-" + std::to_string(w);
      for (int i = next++; i < kTaskCount; i = next++) {
        const std::string task_id = "task-drain-" + std::to_string(i);
        try {
          const auto reply =
              agent.post("/v1/tasks/" + task_id + "/claim",
                         {{"worker_id", worker_id},
                          {"expected_revision", 1},
                          {"execution_digest", digests[static_cast<std::size_t>(i)]}});
          const std::lock_guard lock(mutex);
          if (reply.status == 200) {
            won.insert(task_id);
          } else {
            odd.push_back(task_id + ": " + describe(reply));
          }
        } catch (const Error&) {
          return;  // the daemon stopped listening
        }
      }
    });
  }
  const bool started = eventually([&] {
    const std::lock_guard lock(mutex);
    return won.size() >= 8 || !odd.empty();
  });
  const auto stopped = scheduler().stop();
  for (auto& claimer : claimers) claimer.join();
  ASSERT_TRUE(started);
  EXPECT_TRUE(stopped.exited_with(0)) << stopped.describe() << scheduler().process().log();
  EXPECT_TRUE(odd.empty()) << odd.front();
  EXPECT_EQ(test::integrity_of(scheduler()), "ok");

  scheduler().restart();
  reconnect();
  const auto listed = require(owner().get("/v1/tasks?status=CLAIMED&limit=1000"), 200, "claimed");
  std::set<std::string> claimed;
  for (const auto& item : listed.at("tasks")) claimed.insert(item.at("task_id").get<std::string>());
  EXPECT_EQ(claimed, won);
}

TEST_F(RestartTest, GracefulStopThenRestartKeepsEverything) {
  // Given SIGTERM, we should log STOPPED, exit 0 and serve the same state after a restart.
  const std::string agent_token = create_agent("agent-calm", {"agent.runtime.hermes"});
  {
    ApiClient agent = client(agent_token);
    register_worker(agent, "worker-calm", {"agent.runtime.hermes"}, {"hermes"}, 2);
  }
  create_task(hermes_task("task-calm"));
  const auto before = task("task-calm");

  const auto stopped = scheduler().stop();
  EXPECT_TRUE(stopped.exited_with(0)) << stopped.describe();
  EXPECT_TRUE(scheduler().process().find_event("SHUTDOWN_REQUESTED").has_value());
  EXPECT_TRUE(scheduler().process().find_event("STOPPED").has_value())
      << scheduler().process().log();
  EXPECT_EQ(test::integrity_of(scheduler()), "ok");

  scheduler().restart();
  reconnect();
  EXPECT_EQ(task("task-calm"), before);
  ApiClient agent = client(agent_token);
  const auto lease = claim(agent, "task-calm", "worker-calm");
  EXPECT_EQ(lease.at("revision"), 2);
  const auto fleet = require(owner().get("/v1/fleet"), 200, "fleet");
  ASSERT_EQ(fleet.at("workers").size(), 1u);
  EXPECT_EQ(fleet.at("workers")[0].at("used_slots"), 1);
}

}  // namespace
}  // namespace aios::taskapi_test
