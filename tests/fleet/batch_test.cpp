// The batch calls: each item checked and applied as its single call is, under a savepoint of its
// own in one transaction, answered in request order with the single call's answer or its code;
// several claims in one transaction bounded by the worker's free slots; the wake-ups a batch
// owes.

#include <string>
#include <vector>

#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

class BatchTest : public OneWorkerTest {
 protected:
  BatchTest() : OneWorkerTest("agent-batch", "worker-batch", 3) {}

  Json task(const std::string& task_id) {
    TaskSpec spec;
    spec.task_id = task_id;
    return task_body(spec);
  }

  // A result item for `claimed` as POST /v1/tasks/results carries it, without its task_id,
  // parsed as the Task API parses it; `attempt`: another attempt than the claim's.
  TaskPlane::BatchItem<fleet::ResultSubmission> result_item(
      const Json& claimed, const std::string& key, std::optional<std::int64_t> attempt = {}) {
    const Json body = {{"lease_token", claimed["lease_token"]},
                       {"attempt", attempt ? Json(*attempt) : claimed["attempt"]},
                       {"execution_digest", claimed["execution_digest"]},
                       {"idempotency_key", key},
                       {"result", {{"summary", "done"}}}};
    return TaskPlane::BatchItem<fleet::ResultSubmission>::of(
        claimed["task_id"].get<std::string>(), body, [this](const Json& item) {
          return fleet::result_submission_of(item, plane_.options().max_result_bytes);
        });
  }
};

TEST_F(BatchTest, CreatesEachTaskOrRefusesItAloneInRequestOrder) {
  // Given a batch of a new task, a malformed one, a replay of a stored task, a conflicting
  // body under a stored id, the same new id twice and a last new task, we should get one
  // answer per item in order: the views of the new and replayed tasks, and the codes of the
  // others; only the new ones stored, each with its TASK_CREATED.
  create_task("stored");
  Json changed = task("stored-2");
  create_task("stored-2");
  changed["goal"] = "Another goal under the same id";
  Json malformed = task("malformed");
  malformed["max_attempts"] = 0;
  int signalled = 0;
  plane_.on_queue_change(
      [&](const TaskPlane::QueueChange& change) { signalled += static_cast<int>(change.claims); });

  std::vector<TaskPlane::BatchItem<fleet::TaskSubmission>> items_in;
  for (const auto& body : {task("new-1"), malformed, task("stored"), changed, task("twice"),
                           task("twice"), task("new-2")}) {
    items_in.push_back(TaskPlane::BatchItem<fleet::TaskSubmission>::of(body["task_id"], body,
                                                                       fleet::task_submission_of));
  }
  const auto answer = plane_.create_tasks(items_in);
  plane_.on_queue_change(nullptr);

  const auto& items = answer["tasks"];
  ASSERT_EQ(items.size(), 7U);
  EXPECT_EQ(items[0]["task_id"], "new-1");
  EXPECT_EQ(items[0]["status"], "QUEUED");
  EXPECT_EQ(items[1], Json({{"task_id", "malformed"}, {"error", "TASK_MAX_ATTEMPTS_INVALID"}}));
  EXPECT_EQ(items[2], view("stored"));
  EXPECT_EQ(items[3], Json({{"task_id", "stored-2"}, {"error", "TASK_ALREADY_EXISTS"}}));
  EXPECT_EQ(items[4]["task_id"], "twice");
  EXPECT_EQ(items[5], Json({{"task_id", "twice"}, {"error", "TASK_ALREADY_EXISTS"}}));
  EXPECT_EQ(items[6]["task_id"], "new-2");
  EXPECT_EQ(count("SELECT COUNT(*) FROM tasks"), 5);
  EXPECT_EQ(event_types("new-2"), std::vector<std::string>{"TASK_CREATED"});
  EXPECT_EQ(event_types("twice"), std::vector<std::string>{"TASK_CREATED"});
  EXPECT_EQ(view("stored-2")["goal"], task("stored-2")["goal"]);
  // Three new tasks: three claims' worth of wake-ups, in one signal.
  EXPECT_EQ(signalled, 3);
}

TEST_F(BatchTest, ClaimsSeveralInOneTransactionUpToTheFreeSlots) {
  // Given five queued tasks and a worker with three slots, one of them taken, a claim of up to
  // four should take two (the free slots), in fleet order, each with its own lease token and
  // claim; the next should take none.
  for (const auto* id : {"many-1", "many-2", "many-3", "many-4", "many-5"}) create_task(id);
  ASSERT_TRUE(plane_.claim_next(agent_, "worker-batch").has_value());

  const auto claims = plane_.claim_next_many(agent_, "worker-batch", 4);

  ASSERT_EQ(claims.size(), 2U);
  EXPECT_EQ(claims[0]["task_id"], "many-2");
  EXPECT_EQ(claims[1]["task_id"], "many-3");
  EXPECT_NE(claims[0]["lease_token"], claims[1]["lease_token"]);
  EXPECT_NE(claims[0]["claim_id"], claims[1]["claim_id"]);
  EXPECT_EQ(worker_entry("worker-batch")["used_slots"], 3);
  EXPECT_EQ(view("many-4")["status"], "QUEUED");
  EXPECT_TRUE(plane_.claim_next_many(agent_, "worker-batch", 4).empty());
  // Each lease fences its own attempt.
  EXPECT_EQ(submit(agent_, claims[1]).first, 201);
}

TEST_F(BatchTest, SubmitsEachResultAloneThenClaimsWithTheSlotsTheyFreed) {
  // Given three claimed tasks and two queued, a batch of their three results where the second
  // carries a stale attempt, then a claim of up to three, we should store the first and third
  // (201-style answers), refuse the second with ATTEMPT_STALE (still CLAIMED), and claim two:
  // the slots the two stored results freed.
  for (const auto* id : {"res-1", "res-2", "res-3", "res-4", "res-5"}) create_task(id);
  const auto held = plane_.claim_next_many(agent_, "worker-batch", 3);
  ASSERT_EQ(held.size(), 3U);
  const auto stale = result_item(held[1], "key-res-2", 2);

  const auto out = plane_.submit_results(
      agent_, {result_item(held[0], "key-res-1"), stale, result_item(held[2], "key-res-3")},
      "worker-batch", 3);

  ASSERT_EQ(out.results.size(), 3U);
  EXPECT_EQ(out.results[0]["status"], "VERIFYING");
  EXPECT_EQ(out.results[0]["idempotent"], false);
  EXPECT_EQ(out.results[1], Json({{"task_id", "res-2"}, {"error", "ATTEMPT_STALE"}}));
  EXPECT_EQ(out.results[2]["task_id"], "res-3");
  EXPECT_EQ(out.stored, 2U);
  EXPECT_FALSE(out.claim_error);
  ASSERT_EQ(out.claims.size(), 2U);
  EXPECT_EQ(out.claims[0]["task_id"], "res-4");
  EXPECT_EQ(out.claims[1]["task_id"], "res-5");
  EXPECT_EQ(view("res-2")["status"], "CLAIMED");
  EXPECT_EQ(event_types("res-2"), (std::vector<std::string>{"TASK_CREATED", "TASK_CLAIMED"}));

  // The same batch again: the stored two answer as replays, nothing is claimed (no slot).
  const auto again = plane_.submit_results(
      agent_, {result_item(held[0], "key-res-1"), result_item(held[2], "key-res-3")},
      "worker-batch", 3);
  EXPECT_EQ(again.results[0]["idempotent"], true);
  EXPECT_EQ(again.results[1]["idempotent"], true);
  EXPECT_EQ(again.stored, 0U);
  EXPECT_TRUE(again.claims.empty());
}

TEST_F(BatchTest, ARefusedClaimLeavesTheResultsStanding) {
  // Given a result batch that asks claims for another agent's worker, the results should
  // commit and the claim's refusal come back apart.
  create_task("apart-1");
  const auto held = plane_.claim_next_many(agent_, "worker-batch", 1);
  ASSERT_EQ(held.size(), 1U);
  const auto other = make_agent("agent-other");
  register_worker(other, "worker-other");

  const auto out =
      plane_.submit_results(agent_, {result_item(held[0], "key-apart-1")}, "worker-other", 2);

  EXPECT_EQ(out.stored, 1U);
  EXPECT_EQ(code_of([&] { std::rethrow_exception(out.claim_error); }), "WORKER_AGENT_MISMATCH");
  EXPECT_EQ(view("apart-1")["status"], "VERIFYING");
}

TEST_F(BatchTest, VerifiesEachTaskAloneAndWakesForTheOnesSentBack) {
  // Given three tasks in VERIFYING, a batch of PASS, a stale revision and NEEDS_REWORK, we
  // should find the first SUCCEEDED, the second refused (TASK_REVISION_CONFLICT, still
  // VERIFYING), the third QUEUED again, and one claim's worth of wake-up.
  std::vector<Json> verifying;
  for (const auto* id : {"ver-1", "ver-2", "ver-3"}) create_task(id);
  for (const auto& claimed : plane_.claim_next_many(agent_, "worker-batch", 3)) {
    verifying.push_back(
        submit(agent_, claimed, "key-" + claimed["task_id"].get<std::string>()).second);
  }
  ASSERT_EQ(verifying.size(), 3U);
  const auto item = [&](std::size_t i, const std::string& decision, std::int64_t revision) {
    return TaskPlane::BatchItem<fleet::Verification>::of(
        verifying[i]["task_id"].get<std::string>(),
        {{"expected_revision", revision}, {"decision", decision}, {"reason", "checked"}},
        fleet::verification_of);
  };
  int signalled = 0;
  plane_.on_queue_change(
      [&](const TaskPlane::QueueChange& change) { signalled += static_cast<int>(change.claims); });

  const auto answer =
      plane_.verify_many({item(0, "PASS", verifying[0]["revision"]), item(1, "PASS", 1),
                          item(2, "NEEDS_REWORK", verifying[2]["revision"]),
                          TaskPlane::BatchItem<fleet::Verification>::of("ver-1", Json::array(),
                                                                        fleet::verification_of)});
  plane_.on_queue_change(nullptr);

  const auto& items = answer["verifications"];
  ASSERT_EQ(items.size(), 4U);
  EXPECT_EQ(items[0]["status"], "SUCCEEDED");
  EXPECT_EQ(items[1], Json({{"task_id", "ver-2"}, {"error", "TASK_REVISION_CONFLICT"}}));
  EXPECT_EQ(items[2]["status"], "QUEUED");
  EXPECT_EQ(items[3], Json({{"task_id", "ver-1"}, {"error", "REQUEST_INVALID"}}));
  EXPECT_EQ(view("ver-2")["status"], "VERIFYING");
  EXPECT_EQ(signalled, 1);
}

}  // namespace
}  // namespace aios::fleet_test
