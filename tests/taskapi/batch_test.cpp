// The batch endpoints over HTTP against the real daemon: POST /v1/tasks/batch, claim-next with
// max_tasks (and its long poll), POST /v1/tasks/results with claim_next, and POST
// /v1/tasks/verifications; each item answered in order, a malformed batch refused whole, and
// the batch endpoints' own body limit.
#include <future>
#include <string>
#include <vector>

#include "taskapi/client.hpp"

namespace aios::taskapi_test {
namespace {

class BatchTest : public SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    agent_.emplace(client(create_agent("agent-batch", {"agent.runtime.hermes"})));
    register_worker(*agent_, "worker-batch", {"agent.runtime.hermes"}, {"hermes"}, 4);
  }

  ApiClient& agent() { return *agent_; }

  std::optional<ApiClient> agent_;
};

TEST_F(BatchTest, TasksGoFromCreateToVerificationInBatches) {
  // Given a batch of three tasks and a malformed one, we should get four answers in order (the
  // malformed one's code in its place); a claim-next for up to three should take the three;
  // their results in one batch with a claim_next should store all three and claim nothing (the
  // queue is empty); one verification batch should pass them all.
  Json malformed = hermes_task("batch-bad");
  malformed.erase("binding");
  const auto created = owner().post(
      "/v1/tasks/batch",
      {{"tasks",
        {hermes_task("batch-1"), hermes_task("batch-2"), malformed, hermes_task("batch-3")}}});
  ASSERT_EQ(created.status, 200) << describe(created);
  const auto& items = created.body.at("tasks");
  ASSERT_EQ(items.size(), 4U);
  EXPECT_EQ(items[0].at("task_id"), "batch-1");
  EXPECT_EQ(items[0].at("status"), "QUEUED");
  EXPECT_EQ(items[2], Json({{"task_id", "batch-bad"}, {"error", "BINDING_INVALID"}}));
  EXPECT_EQ(items[3].at("task_id"), "batch-3");

  const auto claimed =
      agent().post("/v1/tasks/claim-next", {{"worker_id", "worker-batch"}, {"max_tasks", 3}});
  ASSERT_EQ(claimed.status, 200) << describe(claimed);
  const auto& claims = claimed.body.at("claims");
  ASSERT_EQ(claims.size(), 3U);
  EXPECT_FALSE(claimed.body.contains("claim"));

  Json results = Json::array();
  for (const auto& claim : claims) {
    Json item = result_body(claim, claim.at("execution_digest"),
                            "key-" + claim.at("task_id").get<std::string>(), {{"ok", true}});
    item["task_id"] = claim.at("task_id");
    results.push_back(item);
  }
  const auto submitted = agent().post(
      "/v1/tasks/results",
      {{"results", results}, {"claim_next", {{"worker_id", "worker-batch"}, {"max_tasks", 2}}}});
  ASSERT_EQ(submitted.status, 200) << describe(submitted);
  ASSERT_EQ(submitted.body.at("results").size(), 3U);
  EXPECT_EQ(submitted.body.at("claims"), Json::array());
  Json verifications = Json::array();
  for (const auto& result : submitted.body.at("results")) {
    EXPECT_EQ(result.at("status"), "VERIFYING");
    EXPECT_EQ(result.at("idempotent"), false);
    verifications.push_back({{"task_id", result.at("task_id")},
                             {"expected_revision", result.at("revision")},
                             {"decision", "PASS"}});
  }

  const auto verified = owner().post("/v1/tasks/verifications", {{"verifications", verifications}});
  ASSERT_EQ(verified.status, 200) << describe(verified);
  for (const auto& view : verified.body.at("verifications")) {
    EXPECT_EQ(view.at("status"), "SUCCEEDED");
  }
  EXPECT_EQ(task("batch-2").at("status"), "SUCCEEDED");
  EXPECT_EQ(event_types("batch-2"),
            (std::vector<std::string>{"TASK_CREATED", "TASK_CLAIMED", "BRIDGE_ENVELOPE_RESOLVED",
                                      "TASK_RESULT_SUBMITTED", "TASK_VERIFIED"}));
}

TEST_F(BatchTest, AResultsClaimNextTakesTheNextTasksInTheSameAnswer) {
  // Given four tasks claimed (every slot) and a fifth queued, the single result with a
  // claim_next of up to two should answer "claims" with the one task the freed slot allows.
  for (const auto* id : {"next-1", "next-2", "next-3", "next-4", "next-5"}) {
    create_task(hermes_task(id));
  }
  const auto held =
      agent().post("/v1/tasks/claim-next", {{"worker_id", "worker-batch"}, {"max_tasks", 4}});
  ASSERT_EQ(held.body.at("claims").size(), 4U) << describe(held);
  const auto& first = held.body.at("claims")[0];
  Json body = result_body(first, first.at("execution_digest"), "key-next-1", {{"ok", true}});
  body["claim_next"] = {{"worker_id", "worker-batch"}, {"max_tasks", 2}};

  const auto reply =
      agent().post("/v1/tasks/" + first.at("task_id").get<std::string>() + "/result", body);

  ASSERT_EQ(reply.status, 201) << describe(reply);
  ASSERT_EQ(reply.body.at("claims").size(), 1U);  // one slot was freed
  EXPECT_EQ(reply.body.at("claims")[0].at("task_id"), "next-5");
  EXPECT_FALSE(reply.body.contains("claim"));
}

TEST_F(BatchTest, AWaitingClaimForSeveralAnswersOnceOneIsClaimed) {
  // Given an empty queue and a claim-next for up to three that waits, a task created meanwhile
  // should be its answer: {"claims": [that task]}.
  auto waiter = std::async(std::launch::async, [this] {
    ApiClient waiting = client(agent().token());
    return waiting.post("/v1/tasks/claim-next",
                        {{"worker_id", "worker-batch"}, {"max_tasks", 3}, {"wait_ms", 10000}});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  create_task(hermes_task("waited-1"));

  const auto reply = waiter.get();

  ASSERT_EQ(reply.status, 200) << describe(reply);
  ASSERT_EQ(reply.body.at("claims").size(), 1U);
  EXPECT_EQ(reply.body.at("claims")[0].at("task_id"), "waited-1");
}

TEST_F(BatchTest, AMalformedBatchIsRefusedWholeWithItsCode) {
  // Given batch bodies that are not a list of 1 to 1,000 items, max_tasks out of 1..64, and the
  // wrong role, we should get each one's code and find no task stored.
  Json many = Json::array();
  for (int i = 0; i < 1001; ++i) many.push_back(Json::object());
  const std::vector<std::pair<Json, std::string>> creates = {
      {{{"tasks", hermes_task("not-a-list")}}, "BATCH_INVALID"},
      {{{"tasks", Json::array()}}, "BATCH_INVALID"},
      {{{"tasks", many}}, "BATCH_INVALID"},
      {{{"tasks", {hermes_task("extra")}}, {"other", 1}}, "REQUEST_FIELDS_INVALID"},
  };
  for (const auto& [body, code] : creates) {
    const auto reply = owner().post("/v1/tasks/batch", body);
    EXPECT_EQ(reply.status, 400) << describe(reply);
    EXPECT_EQ(reply.code(), code) << describe(reply);
  }
  for (const auto& max_tasks : {Json(0), Json(65), Json("2"), Json(1.5)}) {
    const auto reply = agent().post("/v1/tasks/claim-next",
                                    {{"worker_id", "worker-batch"}, {"max_tasks", max_tasks}});
    EXPECT_EQ(reply.code(), "CLAIM_MAX_TASKS_INVALID") << max_tasks.dump();
  }
  EXPECT_EQ(agent().post("/v1/tasks/batch", {{"tasks", {hermes_task("by-agent")}}}).code(),
            "FORBIDDEN");
  EXPECT_EQ(owner().post("/v1/tasks/results", {{"results", Json::array({Json::object()})}}).code(),
            "FORBIDDEN");
  EXPECT_EQ(agent().post("/v1/tasks/verifications", {{"verifications", {Json::object()}}}).code(),
            "FORBIDDEN");
  const auto listed = require(owner().get("/v1/tasks"), 200, "list tasks");
  EXPECT_EQ(listed.at("tasks"), Json::array());
}

TEST_F(BatchTest, TheBatchEndpointsTakeLargerBodiesThanTheSingleCalls) {
  // Given 300 tasks of some 2 KiB each (over the single calls' 512 KiB), we should create them
  // in one batch, and refuse the same bytes on the single create with REQUEST_SIZE_INVALID.
  Json tasks = Json::array();
  for (int i = 0; i < 300; ++i) {
    Json body = hermes_task("big-" + std::to_string(i));
    body["goal"] = std::string(2000, 'g');
    tasks.push_back(body);
  }
  const Json batch = {{"tasks", tasks}};
  ASSERT_GT(batch.dump().size(), 512U * 1024);

  const auto created = owner().post("/v1/tasks/batch", batch);
  ASSERT_EQ(created.status, 200) << describe(created);
  EXPECT_EQ(created.body.at("tasks").size(), 300U);
  EXPECT_EQ(task("big-299").at("status"), "QUEUED");

  const auto single = owner().post("/v1/tasks", batch);
  EXPECT_EQ(single.status, 413);
  EXPECT_EQ(single.code(), "REQUEST_SIZE_INVALID");
}

}  // namespace
}  // namespace aios::taskapi_test
