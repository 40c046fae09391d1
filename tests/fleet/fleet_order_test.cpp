// Ports of the seed's P2-B fleet tests (test_task_plane_fleet_order_preservation.py,
// test_task_plane_fleet_runtime_integration.py), adapted to TaskPlane: rank, then offer one
// candidate at a time to the claim CAS, which reserves the slot in the same transaction.

#include <algorithm>
#include <array>
#include <barrier>
#include <string>
#include <thread>
#include <vector>

#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

using Rows = std::vector<std::vector<std::string>>;

class FleetOrderTest : public PlaneTest {
 protected:
  // The task ids claim_next hands `worker` until it returns nullopt.
  std::vector<std::string> drain(const Agent& agent, const std::string& worker, std::size_t max) {
    std::vector<std::string> order;
    while (order.size() < max) {
      const auto claimed = plane_.claim_next(agent, worker);
      if (!claimed) break;
      order.push_back((*claimed)["task_id"].get<std::string>());
    }
    return order;
  }

  std::vector<std::string> ids(const Json& tasks) {
    std::vector<std::string> out;
    for (const auto& task : tasks) out.push_back(task["task_id"].get<std::string>());
    return out;
  }
};

TEST_F(FleetOrderTest, FleetOrderIsPreservedThroughTheClaimOracle) {
  // Given a1, a2 (tenant-a/project-a) and b1 (tenant-b/project-b) at equal priority, we should
  // serve a1 and then b1 (cross-scope fairness), not a2 (queue order).
  const Agent agent = make_agent("agent-order");
  register_worker(agent, "worker-order", {{"max_concurrency", 3}, {"failure_domain", "zone-a"}});
  create_task(project_task("p2b-order-a1", "tenant-a", "project-a"));
  create_task(project_task("p2b-order-a2", "tenant-a", "project-a"));
  create_task(project_task("p2b-order-b1", "tenant-b", "project-b"));

  const auto first = plane_.claim_next(agent, "worker-order");
  const auto second = plane_.claim_next(agent, "worker-order");

  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ((*first)["task_id"], "p2b-order-a1");
  EXPECT_EQ((*second)["task_id"], "p2b-order-b1");
  EXPECT_EQ(rows("SELECT scope_key, dispatch_count FROM fleet_scope_state ORDER BY scope_key"),
            (Rows{{"project:tenant-a/project-a", "1"}, {"project:tenant-b/project-b", "1"}}));
}

TEST_F(FleetOrderTest, RealDispatchBindsTheReservationToTheClaim) {
  // Given a successful claim_next, we should find its fleet dispatch CLAIMED under the claim's
  // claim_id and the worker, written in the claim's own transaction.
  const Agent agent = make_agent("agent-real");
  register_worker(agent, "worker-real",
                  {{"max_concurrency", 2},
                   {"failure_domain", "zone-real"},
                   {"labels", {{"runtime", "task-plane"}}}});
  create_task("task-p2b-real-1");

  const auto first = plane_.claim_next(agent, "worker-real");

  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)["task_id"], "task-p2b-real-1");
  EXPECT_EQ(
      rows("SELECT state, claim_id, worker_id, failure_domain FROM fleet_dispatches "
           "WHERE task_id=?",
           {"task-p2b-real-1"}),
      (Rows{{"CLAIMED", (*first)["claim_id"].get<std::string>(), "worker-real", "zone-real"}}));
  EXPECT_EQ(rows("SELECT status, worker_id FROM claims WHERE claim_id=?",
                 {(*first)["claim_id"].get<std::string>()}),
            (Rows{{"ACTIVE", "worker-real"}}));
}

TEST_F(FleetOrderTest, RealCircuitBlocksTheSchedulerEvenWithAFreeSlot) {
  // Given a worker with one of two slots free whose circuit a runtime_crash opened (threshold
  // 1), we should hand it nothing until a success closes the circuit, then task 2.
  const Agent agent = make_agent("agent-circuit");
  register_worker(agent, "worker-circuit", {{"max_concurrency", 2}});
  create_task("task-p2b-real-1");
  ASSERT_TRUE(plane_.claim_next(agent, "worker-circuit").has_value());

  plane_.record_worker_failure("worker-circuit", "runtime_crash", 1);
  create_task("task-p2b-real-2");

  EXPECT_EQ(worker_entry("worker-circuit")["used_slots"], 1);
  EXPECT_FALSE(plane_.claim_next(agent, "worker-circuit").has_value());
  EXPECT_EQ(code_of([&] { claim(agent, "task-p2b-real-2", "worker-circuit"); }),
            "FLEET_WORKER_CIRCUIT_OPEN");
  EXPECT_EQ(count("SELECT COUNT(*) FROM fleet_dispatches WHERE task_id='task-p2b-real-2'"), 0);

  clock_.advance(seconds(1));
  plane_.record_worker_success("worker-circuit");
  const auto second = plane_.claim_next(agent, "worker-circuit");

  ASSERT_TRUE(second.has_value());
  EXPECT_EQ((*second)["task_id"], "task-p2b-real-2");
}

TEST_F(FleetOrderTest, CapacityReservationIsAtomicUnderConcurrentPullers) {
  // Given one single-slot worker and two tasks claimed from two threads released together, we
  // should book the slot once and refuse the other claim, in every one of many rounds.
  const Agent agent = make_agent("agent-race");
  register_worker(agent, "worker-race", {{"max_concurrency", 1}});
  constexpr int kRounds = 50;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::array<std::string, 2> tasks = {"race-" + std::to_string(round) + "-a",
                                              "race-" + std::to_string(round) + "-b"};
    std::array<Json, 2> bodies;
    for (std::size_t i = 0; i < 2; ++i) {
      create_task(tasks[i]);
      bodies[i] = claim_body(tasks[i], "worker-race");
    }
    std::array<std::string, 2> outcomes;
    std::barrier start(2);
    {
      std::vector<std::jthread> pullers;
      for (std::size_t i = 0; i < 2; ++i) {
        pullers.emplace_back([&, i] {
          start.arrive_and_wait();
          outcomes[i] =
              code_of([&] { plane_.claim(agent, tasks[i], fleet::claim_request_of(bodies[i])); });
        });
      }
    }
    std::array<std::string, 2> sorted = outcomes;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, (std::array<std::string, 2>{"FLEET_WORKER_CAPACITY_EXHAUSTED", "OK"}))
        << outcomes[0] << " / " << outcomes[1];
    EXPECT_EQ(worker_entry("worker-race")["used_slots"], 1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM fleet_dispatches WHERE worker_id='worker-race' AND "
                    "state='CLAIMED'"),
              1);
    const std::string& winner = outcomes[0] == kOk ? tasks[0] : tasks[1];
    const std::string& loser = outcomes[0] == kOk ? tasks[1] : tasks[0];
    EXPECT_EQ(view(loser)["status"], "QUEUED");
    EXPECT_EQ(view(loser)["revision"], 1);
    // Free the slot for the next round.
    plane_.cancel(winner, fleet::cancellation_of({{"reason", "round over"}}));
    EXPECT_EQ(worker_entry("worker-race")["used_slots"], 0);
  }
}

TEST_F(FleetOrderTest, RankIsReadOnly) {
  // Given two queued tasks, we should poll them in queue order and reserve nothing: no
  // dispatch, no claim, no scope count, no task revision or event.
  const Agent agent = make_agent("agent-rank");
  register_worker(agent, "worker-rank", {{"max_concurrency", 1}});
  create_task(project_task("task-a", "tenant-a", "project-a"));
  create_task(project_task("task-b", "tenant-a", "project-a"));

  const Json polled = plane_.poll(agent, fleet::poll_request_of({{"worker_id", "worker-rank"}}));

  EXPECT_EQ(ids(polled["tasks"]), (std::vector<std::string>{"task-a", "task-b"}));
  EXPECT_EQ(count("SELECT COUNT(*) FROM fleet_dispatches"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM claims"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM fleet_scope_state"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM task_events"), 2);
  EXPECT_EQ(rows("SELECT task_id, status, revision FROM tasks ORDER BY seq"),
            (Rows{{"task-a", "QUEUED", "1"}, {"task-b", "QUEUED", "1"}}));
  EXPECT_EQ(worker_entry("worker-rank")["used_slots"], 0);
}

TEST_F(FleetOrderTest, PollLimitKeepsTheRankPrefix) {
  // Given three queued tasks and limit 2, we should poll the first two of the ranking.
  const Agent agent = make_agent("agent-limit");
  register_worker(agent, "worker-limit");
  for (const char* id : {"limit-1", "limit-2", "limit-3"}) create_task(std::string(id));

  const Json polled =
      plane_.poll(agent, fleet::poll_request_of({{"worker_id", "worker-limit"}, {"limit", 2}}));

  EXPECT_EQ(ids(polled["tasks"]), (std::vector<std::string>{"limit-1", "limit-2"}));
}

TEST_F(FleetOrderTest, PollFollowsTheFleetOrderOfTheWholeQueue) {
  // Given a queue mixing priorities, scopes, weights and scopes already served, we should poll
  // exactly the order the one-statement SQL ranking gives (priority, served / weight, seq),
  // though the poll reads it group by group and stops at its limit.
  const Agent agent = make_agent("agent-mixed");
  register_worker(agent, "worker-mixed", {{"max_concurrency", 8}});
  for (int i = 0; i < 3; ++i) {
    auto spec = project_task("served-" + std::to_string(i), "tenant-" + std::to_string(i % 2),
                             "project-" + std::to_string(i % 2));
    spec.priority = 50;
    create_task(spec);
  }
  ASSERT_EQ(drain(agent, "worker-mixed", 3).size(), 3u);
  for (int i = 0; i < 36; ++i) {
    auto spec = project_task("mixed-" + std::to_string(i), "tenant-" + std::to_string(i % 3),
                             "project-" + std::to_string(i % 3));
    spec.priority = (i % 4 == 0) ? 2 : 0;
    if (i % 5 == 0) spec.metadata = {{"fleet_scope_weight", 2.5}};
    create_task(spec);
  }
  std::vector<std::string> expected;
  for (const auto& row :
       rows("SELECT t.task_id FROM tasks t LEFT JOIN fleet_scope_state s ON "
            "s.scope_key=t.scope_key WHERE t.status='QUEUED' AND t.attempt<t.max_attempts "
            "ORDER BY t.priority DESC, COALESCE(s.dispatch_count,0)/t.scope_weight ASC, t.seq")) {
    expected.push_back(row[0]);
  }
  ASSERT_EQ(expected.size(), 36u);

  EXPECT_EQ(ids(plane_.poll(agent, fleet::poll_request_of(
                                       {{"worker_id", "worker-mixed"}, {"limit", 100}}))["tasks"]),
            expected);
  EXPECT_EQ(ids(plane_.poll(agent, fleet::poll_request_of(
                                       {{"worker_id", "worker-mixed"}, {"limit", 7}}))["tasks"]),
            std::vector<std::string>(expected.begin(), expected.begin() + 7));
}

TEST_F(FleetOrderTest, LegacyPriorityComesAheadOfFairness) {
  // Given scope A already served and a higher-priority A task beside a lower-priority task of
  // the unserved scope B, we should serve the A task first.
  const Agent agent = make_agent("agent-priority");
  register_worker(agent, "worker-priority", {{"max_concurrency", 4}});
  auto served = project_task("prio-a-served", "tenant-a", "project-a");
  served.priority = 10;
  create_task(served);
  ASSERT_EQ(drain(agent, "worker-priority", 1), (std::vector<std::string>{"prio-a-served"}));

  auto high = project_task("prio-a-high", "tenant-a", "project-a");
  high.priority = 5;
  create_task(project_task("prio-b-low", "tenant-b", "project-b"));
  create_task(high);

  EXPECT_EQ(drain(agent, "worker-priority", 4),
            (std::vector<std::string>{"prio-a-high", "prio-b-low"}));
}

TEST_F(FleetOrderTest, ScopeWeightShiftsFairness) {
  // Given scopes A (tasks a1..a4 first) and B (b1..b3), we should serve them in the order the
  // seed's dispatch_count / fleet_scope_weight gives, ties in queue order.
  struct Case {
    double weight_a;
    std::vector<std::string> order;
  };
  const std::vector<Case> cases = {
      {1.0, {"a1", "b1", "a2", "b2", "a3", "b3", "a4"}},
      {2.0, {"a1", "b1", "a2", "a3", "b2", "a4", "b3"}},
      {0.5, {"a1", "b1", "b2", "a2", "b3", "a3", "a4"}},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    SCOPED_TRACE("weight of A = " + std::to_string(c.weight_a));
    const std::string suffix = "-" + std::to_string(i);
    const Agent agent = make_agent("agent-weight" + suffix);
    const std::string worker = "worker-weight" + suffix;
    register_worker(agent, worker, {{"max_concurrency", 8}});
    for (const char* name : {"a1", "a2", "a3", "a4"}) {
      auto spec = project_task(name + suffix, "tenant-a" + suffix, "project-a");
      spec.metadata = {{"fleet_scope_weight", c.weight_a}};
      create_task(spec);
    }
    for (const char* name : {"b1", "b2", "b3"}) {
      create_task(project_task(name + suffix, "tenant-b" + suffix, "project-b"));
    }
    std::vector<std::string> expected;
    for (const auto& name : c.order) expected.push_back(name + suffix);

    EXPECT_EQ(drain(agent, worker, 8), expected);
  }
}

TEST_F(FleetOrderTest, FullWorkerGetsNothingAndLeavesNoReservation) {
  // Given a worker whose only slot is taken, we should return nullopt from claim_next and
  // leave the queued task untouched, with no dispatch row for it.
  const Agent agent = make_agent("agent-full");
  register_worker(agent, "worker-full", {{"max_concurrency", 1}});
  create_task("full-1");
  create_task("full-2");
  ASSERT_TRUE(plane_.claim_next(agent, "worker-full").has_value());

  EXPECT_FALSE(plane_.claim_next(agent, "worker-full").has_value());
  EXPECT_EQ(count("SELECT COUNT(*) FROM fleet_dispatches WHERE task_id='full-2'"), 0);
  EXPECT_EQ(view("full-2")["revision"], 1);
  // The poll still shows what it could take next; only the claim enforces the slot.
  EXPECT_EQ(
      ids(plane_.poll(agent, fleet::poll_request_of({{"worker_id", "worker-full"}}))["tasks"]),
      (std::vector<std::string>{"full-2"}));
}

TEST_F(FleetOrderTest, RetryGoesToAnotherFailureDomainFirst) {
  // Given a task that failed on a worker in zone-a, we should offer it to zone-a's other
  // workers only after their other work, to zone-b in plain fleet order, and say so in the
  // eligibility answer; with nothing else queued zone-a still gets it at once.
  const auto agent = make_agent("agent-domains");
  register_worker(agent, "zone-a-1", {{"failure_domain", "zone-a"}});
  register_worker(agent, "zone-a-2", {{"failure_domain", "zone-a"}});
  register_worker(agent, "zone-b-1", {{"failure_domain", "zone-b"}});
  create_task("domain-1");
  create_task("domain-2");
  release(agent, claim(agent, "domain-1", "zone-a-1"));

  EXPECT_EQ(ids(plane_.poll(agent, fleet::poll_request_of({{"worker_id", "zone-a-2"}}))["tasks"]),
            (std::vector<std::string>{"domain-2", "domain-1"}));
  EXPECT_EQ(ids(plane_.poll(
                agent, fleet::poll_request_of({{"worker_id", "zone-a-2"}, {"limit", 1}}))["tasks"]),
            (std::vector<std::string>{"domain-2"}));
  EXPECT_EQ(ids(plane_.poll(agent, fleet::poll_request_of({{"worker_id", "zone-b-1"}}))["tasks"]),
            (std::vector<std::string>{"domain-1", "domain-2"}));
  // Keep the answer alive: a range-for over a member of a temporary would dangle.
  const Json eligibility = plane_.eligibility("domain-1");
  for (const auto& worker : eligibility["workers"]) {
    EXPECT_EQ(worker["retry_deferred"], worker["failure_domain"] == "zone-a") << worker.dump();
  }

  claim(agent, "domain-2", "zone-b-1");
  EXPECT_EQ(ids(plane_.poll(agent, fleet::poll_request_of({{"worker_id", "zone-a-2"}}))["tasks"]),
            (std::vector<std::string>{"domain-1"}));
}

}  // namespace
}  // namespace aios::fleet_test
