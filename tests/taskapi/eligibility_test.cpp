// What the owner can see of the fleet against the real daemon: per-worker eligibility with its
// reasons, circuits and quarantines in GET /v1/fleet, owner changes to a worker, and the
// Prometheus counters of /metrics.
#include <string>

#include "taskapi/client.hpp"

namespace aios::taskapi_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class EligibilityTest : public SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    agent_.emplace(client(create_agent("agent-fleet", {"agent.runtime.hermes", "git.read"})));
    register_worker(*agent_, "w-full", {"agent.runtime.hermes", "git.read"},
                    {"hermes", "source_capture"}, 1);
    register_worker(*agent_, "w-hermes", {"agent.runtime.hermes"}, {"hermes"}, 4);
  }

  ApiClient& agent() { return *agent_; }

  // worker id -> its entry of GET /v1/tasks/{id}/eligibility.
  Json eligibility(const std::string& task_id) {
    const auto body =
        require(owner().get("/v1/tasks/" + task_id + "/eligibility"), 200, "eligibility");
    Json by_worker = Json::object();
    for (const auto& entry : body.at("workers")) by_worker[entry.at("worker_id")] = entry;
    return by_worker;
  }

  std::optional<ApiClient> agent_;
};

TEST_F(EligibilityTest, ExplainsWhyEachWorkerCanOrCannotTakeATask) {
  // Given two kinds of worker, we should explain per worker why it can or cannot take a task.
  create_task(source_capture_task("task-src"));
  create_task(hermes_task("task-h"));

  auto report = eligibility("task-src");
  ASSERT_EQ(report.size(), 2u) << report.dump();
  EXPECT_EQ(report["w-hermes"].at("eligible"), false);
  EXPECT_THAT(report["w-hermes"].at("reasons").get<std::vector<std::string>>(),
              ElementsAre("capability_missing", "adapter_not_allowed"));
  EXPECT_EQ(report["w-full"].at("eligible"), true);
  EXPECT_TRUE(report["w-full"].at("reasons").empty());

  claim(agent(), "task-h", "w-full");
  report = eligibility("task-src");
  EXPECT_EQ(report["w-full"].at("eligible"), false);
  EXPECT_THAT(report["w-full"].at("reasons").get<std::vector<std::string>>(),
              ElementsAre("no_free_slot"));
  const auto refused = try_claim(agent(), "task-src", "w-full");
  EXPECT_EQ(refused.code(), "FLEET_WORKER_CAPACITY_EXHAUSTED") << describe(refused);

  const auto claimed = require(owner().get("/v1/tasks/task-h/eligibility"), 200, "eligibility");
  EXPECT_EQ(claimed.at("status"), "CLAIMED");
  for (const auto& entry : claimed.at("workers")) {
    EXPECT_EQ(entry.at("eligible"), false);
    EXPECT_EQ(entry.at("reasons")[0], "task_not_queued") << entry.dump();
  }

  // The owner raises the slots and labels the worker; the full worker may take the second task.
  const auto raised =
      owner().put("/v1/fleet/workers/w-full", {{"max_slots", 2}, {"labels", {{"rack", "r7"}}}});
  ASSERT_EQ(raised.status, 200) << describe(raised);
  EXPECT_EQ(raised.body.at("max_slots"), 2);
  EXPECT_EQ(raised.body.at("used_slots"), 1);
  EXPECT_EQ(raised.body.at("labels"), Json({{"rack", "r7"}}));
  EXPECT_EQ(fleet_worker("w-full").at("labels"), Json({{"rack", "r7"}}));
  EXPECT_EQ(eligibility("task-src")["w-full"].at("eligible"), true);
  claim(agent(), "task-src", "w-full");
  EXPECT_EQ(fleet_worker("w-full").at("used_slots"), 2);
}

TEST_F(EligibilityTest, RepeatedFailuresOpenTheCircuit) {
  // Given three releases in a row, we should open the worker's circuit until the owner resets it.
  for (const auto* id : {"task-c1", "task-c2", "task-c3", "task-c4"}) create_task(hermes_task(id));
  for (const auto* id : {"task-c1", "task-c2", "task-c3"}) {
    const auto lease = claim(agent(), id, "w-hermes");
    require(agent().post(
                std::string("/v1/tasks/") + id + "/release",
                {{"lease_token", lease.at("lease_token")}, {"failure_class", "adapter_crash"}}),
            200, "release");
  }
  const auto fleet = require(owner().get("/v1/fleet"), 200, "fleet");
  Json broken;
  for (const auto& item : fleet.at("workers")) {
    if (item.at("worker_id") == "w-hermes") broken = item;
  }
  EXPECT_EQ(broken.at("circuit_state"), "OPEN") << fleet.dump();
  EXPECT_EQ(broken.at("consecutive_failures"), 3);
  EXPECT_EQ(broken.at("used_slots"), 0);
  ASSERT_EQ(fleet.at("task_quarantines").size(), 3u) << fleet.dump();
  EXPECT_EQ(fleet.at("task_quarantines")[0], (Json{{"task_id", "task-c1"},
                                                   {"worker_id", "w-hermes"},
                                                   {"failure_class", "adapter_crash"},
                                                   {"failures", 1}}));
  EXPECT_EQ(fleet_worker("w-full").at("circuit_state"), "CLOSED");

  const auto refused = try_claim(agent(), "task-c4", "w-hermes");
  EXPECT_EQ(refused.status, 409) << describe(refused);
  EXPECT_EQ(refused.code(), "FLEET_WORKER_CIRCUIT_OPEN");
  EXPECT_THAT(eligibility("task-c4")["w-hermes"].at("reasons").get<std::vector<std::string>>(),
              ElementsAre("circuit_open"));
  // The quarantined tasks name both reasons.
  EXPECT_THAT(eligibility("task-c1")["w-hermes"].at("reasons").get<std::vector<std::string>>(),
              ElementsAre("task_quarantined", "circuit_open"));
  // An open circuit is offered nothing.
  const auto polled = agent().post("/v1/tasks/poll", {{"worker_id", "w-hermes"}});
  ASSERT_EQ(polled.status, 200) << describe(polled);
  EXPECT_TRUE(polled.body.at("tasks").empty()) << describe(polled);

  // Registering again does not let a worker close its own circuit.
  register_worker(agent(), "w-hermes", {"agent.runtime.hermes"}, {"hermes"}, 4);
  EXPECT_EQ(fleet_worker("w-hermes").at("circuit_state"), "OPEN");
  EXPECT_EQ(try_claim(agent(), "task-c4", "w-hermes").code(), "FLEET_WORKER_CIRCUIT_OPEN");

  const auto reset = owner().put("/v1/fleet/workers/w-hermes", {{"reset_circuit", true}});
  ASSERT_EQ(reset.status, 200) << describe(reset);
  EXPECT_EQ(reset.body.at("circuit_state"), "CLOSED");
  EXPECT_EQ(reset.body.at("consecutive_failures"), 0);
  claim(agent(), "task-c4", "w-hermes");
}

TEST_F(EligibilityTest, OwnerQuarantineKeepsAWorkerAway) {
  // Given an owner quarantine, we should refuse the worker's claims until it is lifted.
  create_task(hermes_task("task-q"));
  const auto parked = owner().put("/v1/fleet/workers/w-hermes", {{"quarantined", true}});
  ASSERT_EQ(parked.status, 200) << describe(parked);
  EXPECT_EQ(parked.body.at("quarantined"), true);
  EXPECT_THAT(eligibility("task-q")["w-hermes"].at("reasons").get<std::vector<std::string>>(),
              ElementsAre("worker_quarantined"));
  const auto refused = try_claim(agent(), "task-q", "w-hermes");
  EXPECT_EQ(refused.code(), "FLEET_WORKER_QUARANTINED") << describe(refused);
  // Registering again does not lift the owner's quarantine.
  register_worker(agent(), "w-hermes", {"agent.runtime.hermes"}, {"hermes"}, 4);
  EXPECT_EQ(fleet_worker("w-hermes").at("quarantined"), true);
  EXPECT_EQ(try_claim(agent(), "task-q", "w-hermes").code(), "FLEET_WORKER_QUARANTINED");
  require(owner().put("/v1/fleet/workers/w-hermes", {{"quarantined", false}}), 200, "lift");
  claim(agent(), "task-q", "w-hermes");
}

TEST_F(EligibilityTest, MetricsCountClaimsResultsAndRefusals) {
  // Given claims, a refusal and a result, we should count each of them in /metrics.
  create_task(hermes_task("task-m1"));
  create_task(hermes_task("task-m2"));
  const auto first = claim(agent(), "task-m1", "w-hermes");
  claim(agent(), "task-m2", "w-hermes");
  const auto refused = try_claim(agent(), "task-m2", "w-hermes");
  ASSERT_EQ(refused.code(), "TASK_NOT_CLAIMABLE") << describe(refused);
  require(agent().post("/v1/tasks/task-m1/result",
                       result_body(first, task("task-m1").at("execution_digest"),
                                   "result-metrics-1", {{"ok", true}})),
          201, "result");

  // Anyone on loopback may scrape.
  ApiClient anonymous = client("");
  const auto scraped = anonymous.get("/metrics");
  ASSERT_EQ(scraped.status, 200);
  const std::string& text = scraped.raw;
  EXPECT_EQ(metric(text, "aios_claims_total"), 2.0) << text;
  EXPECT_EQ(metric(text, "aios_results_total"), 1.0) << text;
  EXPECT_EQ(metric(text, "aios_lease_expiries_total"), 0.0) << text;
  EXPECT_EQ(metric(text, R"(aios_tasks{status="CLAIMED"})"), 1.0) << text;
  EXPECT_EQ(metric(text, R"(aios_tasks{status="VERIFYING"})"), 1.0) << text;
  EXPECT_EQ(metric(text, R"(aios_http_requests_total{route="task_claim",status="200"})"), 2.0)
      << text;
  EXPECT_EQ(metric(text, R"(aios_http_requests_total{route="task_claim",status="409"})"), 1.0)
      << text;
  EXPECT_EQ(metric(text, R"(aios_http_requests_total{route="task_result",status="201"})"), 1.0)
      << text;
  EXPECT_THAT(text, HasSubstr("# TYPE aios_http_request_seconds histogram"));
}

TEST_F(EligibilityTest, AResultsModelUsageIsCountedInItsEventAndInMetrics) {
  // Given results whose model_usage the gateway counted, the submission event should carry it
  // and /metrics should add it up by runtime; a model_usage of another shape is refused.
  const Json usage = {{"requests", 2},  {"input", 20},  {"output", 10},   {"total", 30},
                      {"unmetered", 0}, {"refused", 1}, {"bytes_up", 99}, {"bytes_down", 512}};
  for (const std::string id : {"task-u1", "task-u2", "task-u3"}) create_task(hermes_task(id));
  const auto first = claim(agent(), "task-u1", "w-hermes");
  const auto second = claim(agent(), "task-u2", "w-hermes");
  const auto third = claim(agent(), "task-u3", "w-hermes");
  const auto submit = [&](const Json& lease, const std::string& id, const Json& result) {
    return agent().post(
        "/v1/tasks/" + id + "/result",
        result_body(lease, task(id).at("execution_digest"), "result-" + id, result));
  };
  require(submit(first, "task-u1", {{"agent_runtime", "hermes"}, {"model_usage", usage}}), 201,
          "result");
  require(submit(second, "task-u2", {{"agent_runtime", "hermes"}, {"model_usage", usage}}), 201,
          "result");
  auto wrong = usage;
  wrong["total"] = -1;
  EXPECT_EQ(submit(third, "task-u3", {{"model_usage", wrong}}).code(), "RESULT_INVALID");
  wrong = usage;
  wrong["extra"] = 1;
  EXPECT_EQ(submit(third, "task-u3", {{"model_usage", wrong}}).code(), "RESULT_INVALID");

  const auto events = require(owner().get("/v1/tasks/task-u1/events"), 200, "events");
  bool seen = false;
  for (const auto& item : events.at("events")) {
    if (item.at("event_type") != "TASK_RESULT_SUBMITTED") continue;
    seen = true;
    EXPECT_EQ(item.at("payload").at("model_usage"), usage) << item.dump();
    EXPECT_EQ(item.at("payload").at("runtime"), "hermes") << item.dump();
  }
  EXPECT_TRUE(seen) << events.dump();
  const auto text = client("").get("/metrics").raw;
  EXPECT_EQ(metric(text, R"(aios_model_requests_total{runtime="hermes"})"), 4.0) << text;
  EXPECT_EQ(metric(text, R"(aios_model_usage_total{runtime="hermes",kind="total"})"), 60.0) << text;
  EXPECT_EQ(metric(text, R"(aios_model_calls_refused_total{runtime="hermes"})"), 2.0) << text;
}

TEST_F(EligibilityTest, MetricsLabelRoutesFromAFixedSetOnly) {
  // Given requests to actions that do not exist, with names a caller chose,
  create_task(hermes_task("task-labels"));
  for (const std::string action : {"claimx", "q%22%0Aaios_claims_total%2099", "events2"}) {
    const auto answer = owner().get("/v1/tasks/task-labels/" + action);
    EXPECT_EQ(answer.status, 404) << action;
    EXPECT_EQ(answer.code(), "NOT_FOUND") << action;
  }
  // we should count them as "unknown" and never write the caller's text into /metrics.
  const std::string text = client("").get("/metrics").raw;
  EXPECT_EQ(metric(text, R"(aios_http_requests_total{route="unknown",status="404"})"), 3.0) << text;
  EXPECT_THAT(text, Not(HasSubstr("claimx")));
  EXPECT_THAT(text, Not(HasSubstr("events2")));
  EXPECT_EQ(metric(text, "aios_claims_total"), 0.0) << text;
}

}  // namespace
}  // namespace aios::taskapi_test
