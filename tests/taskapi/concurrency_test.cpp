// Claim races against the real daemon: eight workers, each on its own thread and connection,
// all try to claim the same 200 tasks in the same order. Every task must be claimed exactly
// once, none lost, and no request may fail with a 5xx.
#include <array>
#include <atomic>
#include <latch>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "taskapi/client.hpp"

namespace aios::taskapi_test {
namespace {

constexpr std::size_t kTasks = 200;
constexpr std::size_t kWorkers = 8;

std::string task_id_of(std::size_t i) {
  std::string number = std::to_string(i);
  return "task-race-" + std::string(3 - number.size(), '0') + number;
}

// The parameter is the daemon's HTTP thread count: as many as the racing workers, and fewer,
// so requests also queue inside the server.
class ConcurrencyTest : public SchedulerTest, public ::testing::WithParamInterface<int> {
 protected:
  test::SchedulerConfig config() const override {
    test::SchedulerConfig result;
    result.lease_seconds = 300;
    result.extra_args = {"--threads", std::to_string(GetParam())};
    return result;
  }
};

// What one racing worker saw.
struct WorkerTally {
  std::vector<Json> leases;  // claims it still holds
  std::size_t results = 0;   // claims it turned into results to free a slot
  std::map<std::string, int> refusals;
};

TEST_P(ConcurrencyTest, EveryTaskIsClaimedExactlyOnce) {
  // Given 8 workers racing for 200 tasks, we should grant each exactly once, with no 5xx.
  std::array<std::string, 2> agent_tokens = {
      create_agent("agent-race-1", {"agent.runtime.hermes"}),
      create_agent("agent-race-2", {"agent.runtime.hermes"})};
  for (std::size_t w = 0; w < kWorkers; ++w) {
    ApiClient agent = client(agent_tokens[w % 2]);
    register_worker(agent, "worker-race-" + std::to_string(w), {"agent.runtime.hermes"}, {"hermes"},
                    64);
  }

  // Created from four connections at once: the store serializes the writes.
  std::vector<std::string> digests(kTasks);
  {
    std::vector<std::thread> creators;
    std::atomic<std::size_t> next{0};
    std::mutex failures_mutex;
    std::vector<std::string> failures;
    for (int c = 0; c < 4; ++c) {
      creators.emplace_back([&] {
        ApiClient owner_client = client(scheduler().control_token());
        for (std::size_t i = next++; i < kTasks; i = next++) {
          const auto reply = owner_client.post("/v1/tasks", hermes_task(task_id_of(i)));
          if (reply.status != 201) {
            const std::lock_guard lock(failures_mutex);
            failures.push_back(task_id_of(i) + ": " + describe(reply));
            continue;
          }
          digests[i] = reply.body.at("execution_digest");
        }
      });
    }
    for (auto& creator : creators) creator.join();
    ASSERT_TRUE(failures.empty()) << failures.front();
  }

  std::array<std::atomic<int>, kTasks> grants{};
  std::atomic<int> server_errors{0};
  std::vector<WorkerTally> tallies(kWorkers);
  std::mutex unexpected_mutex;
  std::vector<std::string> unexpected;
  std::latch start(static_cast<std::ptrdiff_t>(kWorkers));
  std::vector<std::thread> workers;
  for (std::size_t w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      const std::string worker_id = "worker-race-" + std::to_string(w);
      WorkerTally& tally = tallies[w];
      const auto note = [&](const std::string& what, const Reply& reply) {
        if (reply.status >= 500) ++server_errors;
        const std::lock_guard lock(unexpected_mutex);
        unexpected.push_back(worker_id + " " + what + ": " + describe(reply));
      };
      try {
        ApiClient agent = client(agent_tokens[w % 2]);
        start.arrive_and_wait();
        for (std::size_t i = 0; i < kTasks; ++i) {
          const std::string task_id = task_id_of(i);
          while (true) {
            const auto reply =
                agent.post("/v1/tasks/" + task_id + "/claim", {{"worker_id", worker_id},
                                                               {"expected_revision", 1},
                                                               {"execution_digest", digests[i]}});
            if (reply.status == 200) {
              ++grants[i];
              tally.leases.push_back(reply.body);
              break;
            }
            if (reply.code() == "FLEET_WORKER_CAPACITY_EXHAUSTED" && !tally.leases.empty()) {
              // Finish one held task to free a slot, then race for this one again.
              const Json lease = tally.leases.back();
              tally.leases.pop_back();
              const std::string held = lease.at("task_id");
              const auto done = agent.post("/v1/tasks/" + held + "/result",
                                           result_body(lease, lease.at("execution_digest"),
                                                       "result-" + held, Json::object()));
              if (done.status != 201) note("result " + held, done);
              ++tally.results;
              continue;
            }
            if (reply.status == 409 && reply.code() == "TASK_NOT_CLAIMABLE") {
              ++tally.refusals[reply.code()];
            } else {
              note("claim " + task_id, reply);
            }
            break;
          }
        }
      } catch (const std::exception& error) {
        const std::lock_guard lock(unexpected_mutex);
        unexpected.push_back(worker_id + " threw: " + error.what());
      }
    });
  }
  for (auto& worker : workers) worker.join();

  EXPECT_EQ(server_errors.load(), 0);
  EXPECT_TRUE(unexpected.empty()) << unexpected.size()
                                  << " unexpected answers, first: " << unexpected.front();
  int total = 0;
  for (std::size_t i = 0; i < kTasks; ++i) {
    EXPECT_EQ(grants[i].load(), 1) << task_id_of(i);
    total += grants[i].load();
  }
  EXPECT_EQ(total, static_cast<int>(kTasks));
  std::size_t held = 0;
  std::size_t finished = 0;
  for (const auto& tally : tallies) {
    held += tally.leases.size();
    finished += tally.results;
  }
  EXPECT_EQ(held + finished, kTasks);
  // Every worker tried every task once: each try was a grant or a lost race.
  std::size_t lost = 0;
  for (const auto& tally : tallies) {
    for (const auto& [code, count] : tally.refusals) lost += static_cast<std::size_t>(count);
  }
  EXPECT_EQ(lost + kTasks, kTasks * kWorkers);

  // The store agrees: nothing queued, every task claimed once in its history.
  const auto queued = require(owner().get("/v1/tasks?status=QUEUED"), 200, "queued");
  EXPECT_TRUE(queued.at("tasks").empty()) << queued.dump();
  const auto claimed = require(owner().get("/v1/tasks?status=CLAIMED&limit=1000"), 200, "claimed");
  EXPECT_EQ(claimed.at("tasks").size(), held);
  const auto verifying =
      require(owner().get("/v1/tasks?status=VERIFYING&limit=1000"), 200, "verifying");
  EXPECT_EQ(verifying.at("tasks").size(), finished);
  for (std::size_t i = 0; i < kTasks; ++i) {
    int claims = 0;
    for (const auto& event : events(task_id_of(i))) {
      if (event.at("event_type") == "TASK_CLAIMED") ++claims;
    }
    EXPECT_EQ(claims, 1) << task_id_of(i);
  }
  std::int64_t used = 0;
  for (const auto& worker : fleet_workers()) {
    used += worker.at("used_slots").get<std::int64_t>();
    EXPECT_LE(worker.at("used_slots"), 64) << worker.dump();
  }
  EXPECT_EQ(used, static_cast<std::int64_t>(held));
  const auto metrics = metrics_text();
  EXPECT_EQ(metric(metrics, "aios_claims_total"), static_cast<double>(kTasks)) << metrics;
}

INSTANTIATE_TEST_SUITE_P(HttpThreads, ConcurrencyTest, ::testing::Values(8, 2));

}  // namespace
}  // namespace aios::taskapi_test
