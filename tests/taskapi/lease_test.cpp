// Lease expiry against the real daemon with a one-second lease: the sweeper returns a silent
// claim to the queue (or fails the task when its attempts are spent), the old lease token is
// refused with the exact code for each state, and heartbeats keep a live lease alive.
#include <chrono>
#include <string>
#include <thread>

#include "aios/sys.hpp"
#include "taskapi/client.hpp"

namespace aios::taskapi_test {
namespace {

using ::testing::ElementsAre;

class LeaseTest : public SchedulerTest {
 protected:
  test::SchedulerConfig config() const override {
    test::SchedulerConfig result;
    result.lease_seconds = 1;
    result.sweep_interval_ms = 50;
    return result;
  }

  void SetUp() override {
    SchedulerTest::SetUp();
    agent_.emplace(client(create_agent("agent-lease", {"agent.runtime.hermes"})));
    register_worker(*agent_, "worker-a", {"agent.runtime.hermes"}, {"hermes"}, 4);
    register_worker(*agent_, "worker-b", {"agent.runtime.hermes"}, {"hermes"}, 4);
  }

  ApiClient& agent() { return *agent_; }

  Reply heartbeat(const Json& lease) {
    return agent().post("/v1/tasks/" + lease.at("task_id").get<std::string>() + "/heartbeat",
                        {{"lease_token", lease.at("lease_token")}});
  }

  Reply result(const Json& lease, const std::string& key) {
    const std::string task_id = lease.at("task_id");
    return agent().post("/v1/tasks/" + task_id + "/result",
                        result_body(lease, lease.at("execution_digest"), key, {{"late", true}}));
  }

  bool status_becomes(const std::string& task_id, const std::string& status) {
    return eventually([&] { return task(task_id).at("status") == status; });
  }

  std::optional<ApiClient> agent_;
};

TEST_F(LeaseTest, ExpiredLeaseReturnsTheTaskToTheQueue) {
  // Given a silent lease holder, we should requeue the task and refuse its old lease token.
  create_task(hermes_task("task-expire", 3));
  const auto lease = claim(agent(), "task-expire", "worker-a");
  ASSERT_TRUE(status_becomes("task-expire", "QUEUED")) << task("task-expire").dump();

  const auto view = task("task-expire");
  EXPECT_EQ(view.at("revision"), 3);
  EXPECT_EQ(view.at("attempt"), 1);
  EXPECT_EQ(view.at("claimed_by"), nullptr);
  EXPECT_EQ(view.at("lease_expires_at"), nullptr);
  const auto history = events("task-expire");
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[2].at("event_type"), "TASK_LEASE_EXPIRED");
  EXPECT_EQ(history[2].at("agent_id"), "lease-sweeper");
  EXPECT_EQ(history[2].at("payload"),
            (Json{{"worker_id", "worker-a"}, {"attempt", 1}, {"status", "QUEUED"}}));

  const auto beat = heartbeat(lease);
  EXPECT_EQ(beat.status, 409) << describe(beat);
  EXPECT_EQ(beat.code(), "TASK_NOT_CLAIMED");
  const auto late = result(lease, "result-expire-late");
  EXPECT_EQ(late.status, 409) << describe(late);
  EXPECT_EQ(late.code(), "TASK_NOT_CLAIMED");
  const auto release =
      agent().post("/v1/tasks/task-expire/release",
                   {{"lease_token", lease.at("lease_token")}, {"failure_class", "runtime_crash"}});
  EXPECT_EQ(release.code(), "TASK_NOT_CLAIMED") << describe(release);
  EXPECT_EQ(task("task-expire").at("revision"), 3);

  const auto metrics = metrics_text();
  EXPECT_EQ(metric(metrics, "aios_lease_expiries_total"), 1.0) << metrics;

  // A new claim: attempt 2. While it is live (the heartbeats around the probe prove it), the
  // first token is a stale attempt.
  const auto second = claim(agent(), "task-expire", "worker-b");
  EXPECT_EQ(second.at("attempt"), 2);
  EXPECT_EQ(second.at("revision"), 4);
  ASSERT_EQ(heartbeat(second).status, 200);
  const auto stale = heartbeat(lease);
  const auto stale_result = result(lease, "result-expire-stale");
  ASSERT_EQ(heartbeat(second).status, 200);
  EXPECT_EQ(stale.status, 409) << describe(stale);
  EXPECT_EQ(stale.code(), "LEASE_INVALID");
  EXPECT_EQ(stale_result.status, 409) << describe(stale_result);
  EXPECT_EQ(stale_result.code(), "LEASE_INVALID");
}

TEST_F(LeaseTest, ExpiryWithNoAttemptLeftFailsTheTask) {
  // Given a single-attempt task whose lease expires, we should end it FAILED, not requeue it.
  create_task(hermes_task("task-expire-last", 1));
  claim(agent(), "task-expire-last", "worker-a");
  ASSERT_TRUE(status_becomes("task-expire-last", "FAILED")) << task("task-expire-last").dump();
  const auto view = task("task-expire-last");
  EXPECT_EQ(view.at("revision"), 3);
  EXPECT_EQ(view.at("claimed_by"), nullptr);
  EXPECT_THAT(event_types("task-expire-last"),
              ElementsAre("TASK_CREATED", "TASK_CLAIMED", "TASK_LEASE_EXPIRED"));
  EXPECT_EQ(events("task-expire-last")[2].at("payload").at("status"), "FAILED");
}

TEST_F(LeaseTest, HeartbeatsKeepTheLeaseAlive) {
  // Given heartbeats every 100 ms, we should keep the claim through three lease lengths.
  create_task(hermes_task("task-beating"));
  const auto lease = claim(agent(), "task-beating", "worker-a");
  std::string last_expiry = lease.at("lease_expires_at");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int beats = 0;
  while (std::chrono::steady_clock::now() < until) {
    const auto beat = heartbeat(lease);
    ASSERT_EQ(beat.status, 200) << "beat " << beats << ": " << describe(beat);
    EXPECT_GE(beat.body.at("lease_expires_at").get<std::string>(), last_expiry);
    last_expiry = beat.body.at("lease_expires_at");
    ++beats;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto view = task("task-beating");
  EXPECT_EQ(view.at("status"), "CLAIMED");
  EXPECT_EQ(view.at("revision"), 2);
  EXPECT_THAT(event_types("task-beating"), ElementsAre("TASK_CREATED", "TASK_CLAIMED"));
  const auto done = result(lease, "result-beating-1");
  EXPECT_EQ(done.status, 201) << describe(done);
}

TEST_F(LeaseTest, LeaseThatExpiredWhileTheDaemonWasDownIsSwept) {
  // Given a lease that ran out while the daemon was down, we should requeue the task on restart.
  create_task(hermes_task("task-orphan"));
  const auto lease = claim(agent(), "task-orphan", "worker-a");
  const auto expires = parse_iso8601(lease.at("lease_expires_at").get<std::string>());
  ASSERT_TRUE(expires.has_value());
  scheduler().kill();
  ASSERT_TRUE(eventually([&] { return SystemClock().now() > *expires; }));
  scheduler().restart();
  reconnect();
  agent_.emplace(client(agent().token()));
  ASSERT_TRUE(status_becomes("task-orphan", "QUEUED")) << task("task-orphan").dump();
  EXPECT_THAT(event_types("task-orphan"),
              ElementsAre("TASK_CREATED", "TASK_CLAIMED", "TASK_LEASE_EXPIRED"));
  EXPECT_EQ(heartbeat(lease).code(), "TASK_NOT_CLAIMED");
}

// A sweep interval far beyond the test: an expired lease stays CLAIMED in the store.
class UnsweptLeaseTest : public LeaseTest {
 protected:
  test::SchedulerConfig config() const override {
    test::SchedulerConfig result;
    result.lease_seconds = 1;
    result.sweep_interval_ms = 60000;
    return result;
  }
};

TEST_F(UnsweptLeaseTest, ExpiredButUnsweptLeaseIsRefusedAsExpired) {
  // Given an expired lease not yet swept, we should refuse it with LEASE_EXPIRED and write nothing.
  create_task(hermes_task("task-unswept"));
  const auto lease = claim(agent(), "task-unswept", "worker-a");
  const auto expires = parse_iso8601(lease.at("lease_expires_at").get<std::string>());
  ASSERT_TRUE(expires.has_value());
  // The daemon and the test read the same system clock.
  ASSERT_TRUE(eventually([&] { return SystemClock().now() > *expires; }));

  const auto beat = heartbeat(lease);
  EXPECT_EQ(beat.status, 409) << describe(beat);
  EXPECT_EQ(beat.code(), "LEASE_EXPIRED");
  const auto late = result(lease, "result-unswept-1");
  EXPECT_EQ(late.status, 409) << describe(late);
  EXPECT_EQ(late.code(), "LEASE_EXPIRED");
  const auto release =
      agent().post("/v1/tasks/task-unswept/release",
                   {{"lease_token", lease.at("lease_token")}, {"failure_class", "runtime_crash"}});
  EXPECT_EQ(release.code(), "LEASE_EXPIRED") << describe(release);

  const auto view = task("task-unswept");
  EXPECT_EQ(view.at("status"), "CLAIMED");
  EXPECT_EQ(view.at("revision"), 2);
  EXPECT_EQ(view.at("lease_expires_at"), lease.at("lease_expires_at"));
  EXPECT_THAT(event_types("task-unswept"), ElementsAre("TASK_CREATED", "TASK_CLAIMED"));

  // SIGTERM wakes the idle sweeper: the daemon stops without waiting out its interval.
  const auto stopped = scheduler().stop();
  EXPECT_TRUE(stopped.exited_with(0)) << stopped.describe();
}

}  // namespace
}  // namespace aios::taskapi_test
