// Replays against the real daemon: the same create or result sent again is answered from the
// store without a second write; the same id or key with other content is a conflict.
#include <iterator>
#include <string>

#include "taskapi/client.hpp"

namespace aios::taskapi_test {
namespace {

using ::testing::ElementsAre;

class IdempotencyTest : public SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    agent_.emplace(client(create_agent("agent-replay", {"agent.runtime.hermes"})));
    register_worker(*agent_, "worker-replay", {"agent.runtime.hermes"}, {"hermes"}, 4);
  }

  ApiClient& agent() { return *agent_; }

  std::optional<ApiClient> agent_;
};

TEST_F(IdempotencyTest, CreateReplaysTheSameBodyAndRefusesAnother) {
  // Given a created task, we should replay the same body (200) and refuse another one (409).
  const auto body = hermes_task("task-once");
  const auto created = owner().post("/v1/tasks", body);
  ASSERT_EQ(created.status, 201) << describe(created);

  const auto replay = owner().post("/v1/tasks", body);
  ASSERT_EQ(replay.status, 200) << describe(replay);
  EXPECT_EQ(replay.body, created.body);

  // The same JSON value written differently: keys reversed, indented.
  std::string reordered = "{\n";
  for (auto it = body.crbegin(); it != body.crend(); ++it) {
    reordered += "  \"" + it.key() + "\" : " + it.value().dump(2) +
                 (std::next(it) == body.crend() ? "\n" : ",\n");
  }
  reordered += "}";
  const auto respaced = owner().send("POST", "/v1/tasks", reordered);
  ASSERT_EQ(respaced.status, 200) << describe(respaced);
  EXPECT_EQ(respaced.body, created.body);

  auto other = body;
  other["priority"] = 7;
  const auto conflict = owner().post("/v1/tasks", other);
  EXPECT_EQ(conflict.status, 409) << describe(conflict);
  EXPECT_EQ(conflict.code(), "TASK_ALREADY_EXISTS");
  auto rebound = body;
  rebound["binding"]["generation"] = 2;
  const auto rebound_conflict = owner().post("/v1/tasks", rebound);
  EXPECT_EQ(rebound_conflict.code(), "TASK_ALREADY_EXISTS") << describe(rebound_conflict);

  EXPECT_EQ(task("task-once"), created.body);
  EXPECT_THAT(event_types("task-once"), ElementsAre("TASK_CREATED"));

  // A replay after the task moved on answers with what it is now.
  claim(agent(), "task-once", "worker-replay");
  const auto late = owner().post("/v1/tasks", body);
  ASSERT_EQ(late.status, 200) << describe(late);
  EXPECT_EQ(late.body.at("status"), "CLAIMED");
  EXPECT_EQ(late.body.at("revision"), 2);
  EXPECT_THAT(event_types("task-once"), ElementsAre("TASK_CREATED", "TASK_CLAIMED"));
}

TEST_F(IdempotencyTest, ResultReplaysTheStoredAnswerAndRefusesOtherContent) {
  // Given an accepted result, we should replay it (200) and refuse other content under its key.
  const auto view = create_task(hermes_task("task-result-once"));
  const std::string digest = view.at("execution_digest");
  const auto lease = claim(agent(), "task-result-once", "worker-replay");
  const auto request = result_body(lease, digest, "result-once-1", {{"answer", 42}});

  const auto first = agent().post("/v1/tasks/task-result-once/result", request);
  ASSERT_EQ(first.status, 201) << describe(first);
  EXPECT_EQ(first.body.at("idempotent"), false);
  const auto stored = task("task-result-once");

  const auto replay = agent().post("/v1/tasks/task-result-once/result", request);
  ASSERT_EQ(replay.status, 200) << describe(replay);
  auto expected = first.body;
  expected["idempotent"] = true;
  EXPECT_EQ(replay.body, expected);

  // The lease ended with the result; a replay is still recognised by its content.
  auto without_lease = request;
  without_lease["lease_token"] = std::string(64, '0');
  const auto tokenless = agent().post("/v1/tasks/task-result-once/result", without_lease);
  EXPECT_EQ(tokenless.status, 200) << describe(tokenless);
  EXPECT_EQ(tokenless.body, expected);

  auto other_content = request;
  other_content["result"] = {{"answer", 43}};
  const auto conflict = agent().post("/v1/tasks/task-result-once/result", other_content);
  EXPECT_EQ(conflict.status, 409) << describe(conflict);
  EXPECT_EQ(conflict.code(), "RESULT_IDEMPOTENCY_CONFLICT");
  auto other_attempt = request;
  other_attempt["attempt"] = 2;
  const auto attempt_conflict = agent().post("/v1/tasks/task-result-once/result", other_attempt);
  EXPECT_EQ(attempt_conflict.code(), "RESULT_IDEMPOTENCY_CONFLICT") << describe(attempt_conflict);
  // A new key is a new submission, and the task no longer has a lease for it.
  auto other_key = request;
  other_key["idempotency_key"] = "result-once-2";
  const auto second = agent().post("/v1/tasks/task-result-once/result", other_key);
  EXPECT_EQ(second.code(), "TASK_NOT_CLAIMED") << describe(second);

  EXPECT_EQ(task("task-result-once"), stored);
  EXPECT_THAT(event_types("task-result-once"),
              ElementsAre("TASK_CREATED", "TASK_CLAIMED", "TASK_RESULT_SUBMITTED"));
  EXPECT_EQ(metric(metrics_text(), "aios_results_total"), 1.0);
}

TEST_F(IdempotencyTest, FirstAttemptReplayDoesNotTouchTheSecondAttempt) {
  // Given a rework and a new claim, we should replay attempt 1's result, leaving attempt 2 alone.
  const auto view = create_task(hermes_task("task-two-tries"));
  const std::string digest = view.at("execution_digest");
  const auto first_lease = claim(agent(), "task-two-tries", "worker-replay");
  const auto first = result_body(first_lease, digest, "result-try-1", {{"try", 1}});
  require(agent().post("/v1/tasks/task-two-tries/result", first), 201, "first result");
  verify("task-two-tries", "NEEDS_REWORK");
  const auto second_lease = claim(agent(), "task-two-tries", "worker-replay");
  const auto claimed = task("task-two-tries");

  const auto replay = agent().post("/v1/tasks/task-two-tries/result", first);
  EXPECT_EQ(replay.status, 200) << describe(replay);
  EXPECT_EQ(replay.body.at("attempt"), 1);
  EXPECT_EQ(replay.body.at("idempotent"), true);
  EXPECT_EQ(task("task-two-tries"), claimed);

  // The second attempt reuses the key by mistake: refused, not merged.
  const auto reused = agent().post("/v1/tasks/task-two-tries/result",
                                   result_body(second_lease, digest, "result-try-1", {{"try", 2}}));
  EXPECT_EQ(reused.code(), "RESULT_IDEMPOTENCY_CONFLICT") << describe(reused);
  const auto fresh = agent().post("/v1/tasks/task-two-tries/result",
                                  result_body(second_lease, digest, "result-try-2", {{"try", 2}}));
  EXPECT_EQ(fresh.status, 201) << describe(fresh);
  EXPECT_EQ(fresh.body.at("attempt"), 2);
}

}  // namespace
}  // namespace aios::taskapi_test
