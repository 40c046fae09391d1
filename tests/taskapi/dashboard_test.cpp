// GET /v1/dashboard and the page's files against the real daemon: what one look of the
// operator's page gets (counts, the live queue by status, tenant and priority, the newest tasks
// as summaries, the event feed from a cursor, the fleet, the counters' history, a task's view,
// heartbeats, timeline and eligibility), who may read it, and how bad parameters are refused.
#include <string>

#include "taskapi/client.hpp"

namespace aios::taskapi_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class DashboardTest : public SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    token_ = create_agent("agent-dash", {"agent.runtime.hermes"});
    agent_.emplace(client(token_));
    register_worker(*agent_, "w-dash", {"agent.runtime.hermes"}, {"hermes"}, 2);
  }

  Json dashboard(const std::string& query = "") {
    return require(owner().get("/v1/dashboard" + query), 200, "dashboard " + query);
  }

  static Json scoped(Json task, const std::string& tenant, int priority) {
    task["scope_type"] = "tenant";
    task["tenant_id"] = tenant;
    task["priority"] = priority;
    return task;
  }

  std::string token_;
  std::optional<ApiClient> agent_;
};

TEST_F(DashboardTest, OneLookHoldsCountsQueueNewestTasksEventsAndFleet) {
  // Given tasks of two tenants and priorities, one claimed, we should count them by status,
  // group the live ones by status, tenant and priority, list the newest first as summaries and
  // show the fleet with its slots in use.
  create_task(scoped(hermes_task("dash-a1"), "acme", 0));
  create_task(scoped(hermes_task("dash-a2"), "acme", 0));
  create_task(scoped(hermes_task("dash-a3"), "acme", 7));
  create_task(scoped(hermes_task("dash-b1"), "beta", 0));
  claim(*agent_, "dash-b1", "w-dash");

  const auto view = dashboard();
  EXPECT_EQ(view.at("tasks"), (Json{{"CLAIMED", 1}, {"QUEUED", 3}}));
  EXPECT_EQ(view.at("queue"), (Json::array({{{"status", "CLAIMED"},
                                             {"scope_key", "tenant:beta"},
                                             {"tenant", "beta"},
                                             {"priority", 0},
                                             {"count", 1}},
                                            {{"status", "QUEUED"},
                                             {"scope_key", "tenant:acme"},
                                             {"tenant", "acme"},
                                             {"priority", 0},
                                             {"count", 2}},
                                            {{"status", "QUEUED"},
                                             {"scope_key", "tenant:acme"},
                                             {"tenant", "acme"},
                                             {"priority", 7},
                                             {"count", 1}}})));
  std::vector<std::string> recent;
  for (const auto& row : view.at("recent")) recent.push_back(row.at("task_id"));
  EXPECT_THAT(recent, ElementsAre("dash-b1", "dash-a3", "dash-a2", "dash-a1"));
  const auto& newest = view.at("recent")[0];
  EXPECT_EQ(newest.at("status"), "CLAIMED");
  EXPECT_EQ(newest.at("claimed_by"), "w-dash");
  EXPECT_EQ(newest.at("execution_digest"), task("dash-b1").at("execution_digest"));
  // A summary, not the envelope: the task's own page carries that.
  EXPECT_FALSE(newest.contains("metadata")) << newest.dump();
  EXPECT_EQ(view.at("fleet").at("workers")[0].at("used_slots"), 1);
  EXPECT_EQ(view.at("backend"), test::test_store_is_postgres() ? "postgresql" : "sqlite");
  EXPECT_EQ(view.at("leader"), true);
  EXPECT_EQ(view.at("service"), "aios-task-scheduler");
  EXPECT_EQ(dashboard("?recent=2").at("recent").size(), 2u);
}

TEST_F(DashboardTest, TheEventFeedStartsAtTheNewestAndFollowsItsCursor) {
  // Given more events than a first look shows, we should get the newest 50, then from the
  // cursor only what came after.
  for (int i = 0; i < 60; ++i) create_task(hermes_task("dash-e" + std::to_string(i)));
  const auto first = dashboard();
  const auto& events = first.at("events");
  ASSERT_EQ(events.size(), 50u);
  EXPECT_EQ(events.back().at("task_id"), "dash-e59");
  EXPECT_EQ(events.back().at("event_type"), "TASK_CREATED");
  const auto cursor = first.at("next_after").get<std::int64_t>();
  EXPECT_EQ(cursor, events.back().at("event_id").get<std::int64_t>());

  EXPECT_TRUE(dashboard("?after=" + std::to_string(cursor)).at("events").empty());
  claim(*agent_, "dash-e3", "w-dash");
  const auto next = dashboard("?after=" + std::to_string(cursor));
  ASSERT_EQ(next.at("events").size(), 1u) << next.at("events").dump();
  EXPECT_EQ(next.at("events")[0].at("event_type"), "TASK_CLAIMED");
  EXPECT_EQ(next.at("events")[0].at("task_id"), "dash-e3");
  EXPECT_GT(next.at("next_after").get<std::int64_t>(), cursor);
}

TEST_F(DashboardTest, ATasksPageHasItsViewHeartbeatsTimelineAndEligibility) {
  // Given a claimed task with two heartbeats, we should show its view, count the heartbeats,
  // give its events from the task cursor and say per worker why it cannot take it.
  create_task(hermes_task("dash-t"));
  const auto lease = claim(*agent_, "dash-t", "w-dash");
  for (int beat = 0; beat < 2; ++beat) {
    require(agent_->post("/v1/tasks/dash-t/heartbeat", {{"lease_token", lease.at("lease_token")}}),
            200, "heartbeat");
  }
  const auto view = dashboard("?task=dash-t");
  const auto& page = view.at("task");
  EXPECT_EQ(page.at("view"), task("dash-t"));
  EXPECT_EQ(page.at("heartbeats"), 2);
  std::vector<std::string> types;
  for (const auto& event : page.at("events")) types.push_back(event.at("event_type"));
  EXPECT_THAT(types, ElementsAre("TASK_CREATED", "TASK_CLAIMED"));
  EXPECT_EQ(page.at("eligibility"), require(owner().get("/v1/tasks/dash-t/eligibility"), 200, "e"));
  EXPECT_EQ(page.at("eligibility").at("workers")[0].at("reasons")[0], "task_not_queued");

  const auto after = page.at("next_after").get<std::int64_t>();
  EXPECT_TRUE(dashboard("?task=dash-t&task_after=" + std::to_string(after))
                  .at("task")
                  .at("events")
                  .empty());
}

TEST_F(DashboardTest, TheHistoryCountsWhatTheCountersCount) {
  // Given a claim and a result, the current slot of the history should count them as the
  // totals (the /metrics counters) do.
  create_task(hermes_task("dash-m"));
  auto lease = claim(*agent_, "dash-m", "w-dash");
  lease["execution_digest"] = task("dash-m").at("execution_digest");
  require(agent_->post("/v1/tasks/dash-m/result",
                       result_body(lease, lease.at("execution_digest"), "dash-m-r", {{"ok", 1}})),
          201, "result");
  const auto metrics = dashboard().at("metrics");
  EXPECT_EQ(metrics.at("claims_total"), 1);
  EXPECT_EQ(metrics.at("results_total"), 1);
  EXPECT_EQ(metrics.at("slot_seconds"), 10);
  std::uint64_t claims = 0;
  std::uint64_t results = 0;
  std::uint64_t requests = 0;
  for (const auto& slot : metrics.at("history")) {
    claims += slot.at("claims").get<std::uint64_t>();
    results += slot.at("results").get<std::uint64_t>();
    requests += slot.at("requests").get<std::uint64_t>();
    EXPECT_EQ(slot.at("at").get<std::int64_t>() % 10, 0) << slot.dump();
  }
  EXPECT_EQ(claims, 1u);
  EXPECT_EQ(results, 1u);
  EXPECT_GE(requests, 5u);
  EXPECT_LE(requests, metrics.at("requests_total").get<std::uint64_t>());
  EXPECT_EQ(metric(metrics_text(), "aios_claims_total"), 1.0);
}

TEST_F(DashboardTest, OnlyTheOwnerReadsItAndBadParametersAreRefused) {
  // Given other callers and bad parameters, we should refuse each with its code and serve the
  // page itself to anyone.
  EXPECT_EQ(client("").get("/v1/dashboard").code(), "UNAUTHORIZED");
  EXPECT_EQ(agent_->get("/v1/dashboard").code(), "FORBIDDEN");
  EXPECT_EQ(owner().get("/v1/dashboard?recent=0").code(), "LIMIT_INVALID");
  EXPECT_EQ(owner().get("/v1/dashboard?recent=201").code(), "LIMIT_INVALID");
  EXPECT_EQ(owner().get("/v1/dashboard?after=-1").code(), "LIMIT_INVALID");
  EXPECT_EQ(owner().get("/v1/dashboard?task=nope-404").code(), "TASK_NOT_FOUND");
  EXPECT_EQ(owner().get("/v1/dashboard?task=..%2F..").code(), "TASK_NOT_FOUND");
  create_task(hermes_task("dash-p"));
  EXPECT_EQ(owner().get("/v1/dashboard?task=dash-p&task_after=x").code(), "LIMIT_INVALID");

  const auto page = client("").get("/ui/");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.raw, HasSubstr("<script src=\"/ui/app.js\""));
  EXPECT_EQ(client("").get("/ui").status, 308);
  EXPECT_EQ(client("").get("/ui/secrets.json").code(), "NOT_FOUND");
  EXPECT_EQ(client("").send("POST", "/ui/", "{}").code(), "NOT_FOUND");
}

}  // namespace
}  // namespace aios::taskapi_test
