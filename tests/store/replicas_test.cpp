// Scheduler replicas on one PostgreSQL store, as real daemons on loopback: one of them holds the
// lead of governed commits and the lead moves when it dies; the others refuse commits with
// BRIDGE_NOT_LEADER; a long poll on one replica wakes for a task another made claimable; every
// replica's lease sweeper runs and each lease expires once.
#include <signal.h>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/postgres.hpp"
#include "support/store_rows.hpp"
#include "taskapi/client.hpp"

namespace aios::store_test {
namespace {

using taskapi_test::ApiClient;
using taskapi_test::eventually;
using taskapi_test::Json;
using taskapi_test::require;

class ReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AIOS_SKIP_WITHOUT_POSTGRES();
    database_ = std::make_unique<test::ScopedPostgresDatabase>(*test::postgres_admin_url());
  }

  // `count` replicas on the database; long polls recheck only every minute, so a wake-up that
  // arrives sooner came through the store's announcements.
  void start(std::size_t count, int lease_seconds = 60) {
    for (std::size_t i = 0; i < count; ++i) {
      test::SchedulerConfig config;
      config.store = database_->url();
      config.lease_seconds = lease_seconds;
      config.extra_args = {"--leader-check-ms", "100", "--claim-recheck-ms", "60000"};
      replicas_.push_back(std::make_unique<test::SchedulerDaemon>(config));
      replicas_.back()->start();
    }
  }

  test::SchedulerDaemon& replica(std::size_t i) { return *replicas_.at(i); }
  ApiClient owner(std::size_t i) { return {replica(i).port(), replica(i).control_token()}; }

  // The replicas that are running and say they lead, on the Task API's and the Bridge's /health;
  // nullopt while one of them is between the two reads of a lead changing hands.
  std::optional<std::vector<std::size_t>> leaders() {
    std::vector<std::size_t> found;
    for (std::size_t i = 0; i < replicas_.size(); ++i) {
      if (!replica(i).process().running()) continue;
      const Json api = require(owner(i).get("/health"), 200, "health");
      const Json bridge =
          require(ApiClient(replica(i).bridge_port(), replica(i).control_token()).get("/health"),
                  200, "bridge health");
      EXPECT_EQ(api.at("store"), "postgresql");
      if (api.at("leader") != bridge.at("leader")) return std::nullopt;
      if (api.at("leader") == true) found.push_back(i);
    }
    return found;
  }

  // Waits until exactly one running replica leads, on both of its listeners, and returns it.
  std::optional<std::size_t> settled_leader() {
    std::optional<std::size_t> leader;
    eventually([&] {
      const auto found = leaders();
      leader.reset();
      if (found && found->size() == 1) leader = found->front();
      return leader.has_value();
    });
    return leader;
  }

  std::string metrics(std::size_t i) { return owner(i).get("/metrics").raw; }

  std::string create_agent(const Json& granted) {
    return require(owner(0).post("/v1/agents", {{"agent_id", "agent-replicas"},
                                                {"granted_capabilities", granted}}),
                   201, "agent")
        .at("token");
  }

  void TearDown() override {
    for (auto& daemon : replicas_) {
      if (!daemon->process().running()) continue;
      const auto status = daemon->stop();
      EXPECT_TRUE(status.exited_with(0)) << status.describe() << daemon->process().log();
    }
  }

  std::unique_ptr<test::ScopedPostgresDatabase> database_;
  std::vector<std::unique_ptr<test::SchedulerDaemon>> replicas_;  // stopped before the drop
};

TEST_F(ReplicasTest, OneReplicaLeadsAndTheLeadMovesWhenItIsKilled) {
  start(3);
  const auto settled = settled_leader();
  ASSERT_TRUE(settled.has_value());
  const auto first = *settled;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_THAT(metrics(i), ::testing::HasSubstr(i == first ? "aios_scheduler_leader 1\n"
                                                            : "aios_scheduler_leader 0\n"));
    EXPECT_THAT(metrics(i), ::testing::HasSubstr("aios_store_backend{backend=\"postgresql\"} 1"));
    // The pool of --threads 4 plus one; the /metrics request itself holds none.
    EXPECT_THAT(metrics(i), ::testing::HasSubstr("aios_store_connections_limit 5\n"));
    EXPECT_THAT(metrics(i), ::testing::HasSubstr("aios_store_connections{state=\"busy\"} "));
    EXPECT_THAT(metrics(i), ::testing::HasSubstr("\naios_store_conflicts_total "));
  }

  EXPECT_TRUE(replica(first).kill().killed_by(SIGKILL));
  const auto moved = settled_leader();
  ASSERT_TRUE(moved.has_value());
  const auto second = *moved;
  EXPECT_NE(second, first);
  EXPECT_TRUE(replica(second).process().find_event("LEAD_ACQUIRED").has_value());

  // A stopped leader hands the lead on too (its session closes).
  EXPECT_TRUE(replica(second).stop().exited_with(0));
  const auto third = settled_leader();
  ASSERT_TRUE(third.has_value());
  EXPECT_NE(*third, second);
}

TEST_F(ReplicasTest, GovernedCommitsAreRefusedOffTheLeaderAndEverythingElseIsServed) {
  start(2);
  const auto settled = settled_leader();
  ASSERT_TRUE(settled.has_value());
  const auto leader = *settled;
  const auto other = 1 - leader;
  const std::string token = create_agent({"git.read"});
  ApiClient at_other(replica(other).bridge_port(), token);
  ApiClient at_leader(replica(leader).bridge_port(), token);

  const auto refused = at_other.post("/v2/governed-commits", Json::object());
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.code(), "BRIDGE_NOT_LEADER");
  // The leader reads the same request as a commit (and finds it incomplete).
  const auto read = at_leader.post("/v2/governed-commits", Json::object());
  EXPECT_NE(read.code(), "BRIDGE_NOT_LEADER");
  EXPECT_EQ(read.status / 100, 4) << taskapi_test::describe(read);
  // Routes that are the store's alone answer on every replica.
  EXPECT_NE(at_other.post("/v2/writer-leases", Json::object()).code(), "BRIDGE_NOT_LEADER");
}

TEST_F(ReplicasTest, ALongPollOnOneReplicaWakesForATaskCreatedOnAnother) {
  start(2);
  const std::string token = create_agent({"agent.runtime.hermes"});
  ApiClient agent_b(replica(1).port(), token);
  taskapi_test::register_worker(agent_b, "worker-replicas", {"agent.runtime.hermes"}, {"hermes"},
                                1);
  auto waiting = std::async(std::launch::async, [&] {
    ApiClient poller(replica(1).port(), token);
    return poller.post("/v1/tasks/claim-next",
                       {{"worker_id", "worker-replicas"}, {"wait_ms", 20000}});
  });
  // The poll is waiting on replica 1 (its recheck a minute away) when replica 0 takes the task.
  ASSERT_EQ(waiting.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout);
  require(owner(0).post("/v1/tasks", taskapi_test::hermes_task("task-across")), 201, "create");

  const auto answer = waiting.get();
  ASSERT_EQ(answer.status, 200) << taskapi_test::describe(answer);
  ASSERT_TRUE(answer.body.at("claim").is_object()) << answer.raw;
  EXPECT_EQ(answer.body.at("claim").at("task_id"), "task-across");
}

TEST_F(ReplicasTest, EveryReplicaSweepsAndEachLeaseExpiresOnce) {
  start(3, 1);
  const std::string token = create_agent({"agent.runtime.hermes"});
  ApiClient agent(replica(0).port(), token);
  taskapi_test::register_worker(agent, "worker-sweep", {"agent.runtime.hermes"}, {"hermes"}, 16);
  constexpr std::size_t kTasks = 12;
  for (std::size_t i = 0; i < kTasks; ++i) {
    require(owner(i % 3).post("/v1/tasks",
                              taskapi_test::hermes_task("task-sweep-" + std::to_string(i))),
            201, "create");
    require(agent.post("/v1/tasks/claim-next", {{"worker_id", "worker-sweep"}}), 200, "claim");
  }
  // Nobody heartbeats: the one-second leases run out under three sweepers.
  ASSERT_TRUE(eventually(
      [&] {
        return test::count_in(replica(0),
                              "SELECT COUNT(*) FROM task_events WHERE "
                              "event_type='TASK_LEASE_EXPIRED'") >=
               static_cast<std::int64_t>(kTasks);
      },
      std::chrono::seconds(30)));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a late double would show now
  EXPECT_EQ(test::count_in(replica(0),
                           "SELECT COUNT(*) FROM (SELECT task_id FROM task_events "
                           "WHERE event_type='TASK_LEASE_EXPIRED' GROUP BY "
                           "task_id HAVING COUNT(*) > 1) AS twice"),
            0);
  EXPECT_EQ(
      test::count_in(replica(0),
                     "SELECT COUNT(*) FROM task_events WHERE event_type='TASK_LEASE_EXPIRED'"),
      kTasks);
}

}  // namespace
}  // namespace aios::store_test
