// claim_next: the fleet's pick and the claim CAS in one transaction, a resolver's envelope in
// the same one, the worker-level refusals answered before the queue is read, the refusal
// release that spares the circuit, and the queue-change signal the long poll waits on.

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

const Json kPlanScope = {"code.read", "git.read", "git.test", "governed.write.branch",
                         "governed.write.file"};

// A deterministic plan request for a task, as the Bridge stores a registered one: one file at
// `path`.
Json plan_for_task(const std::string& path) {
  return {{"action", "deterministic"},
          {"adapter", "deterministic"},
          {"capability_scope", kPlanScope},
          {"change_set", {{{"path", path}, {"operation", "write_file"}, {"content", "x\n"}}}},
          {"verification", Json::array()},
          {"governance", Json::object()}};
}

class ClaimNextTest : public OneWorkerTest {
 protected:
  ClaimNextTest() : OneWorkerTest("agent-next", "worker-next", 2) {}

  // A deterministic task whose one verification command starts `executable`.
  static TaskSpec verified_task(const std::string& task_id, const std::string& executable) {
    TaskSpec spec;
    spec.task_id = task_id;
    spec.execution = plan_for_task("docs/NOTE.md");
    spec.execution["verification"] = {
        {{"label", "check"}, {"argv", {executable}}, {"cwd", "."}, {"timeout_seconds", 60}}};
    spec.execution.erase("governance");
    return spec;
  }

  // Registers `request` as the task's plan, as the Bridge's POST /v2/plans stores one.
  void store_plan(const std::string& task_id, const Json& request) {
    store_.write([&](store::Transaction& tx) {
      tx.insert_plan({task_id, std::string(64, 'f'), request.dump(), std::string(64, 'e'),
                      "2030-01-01T00:00:00Z"});
    });
  }
  // A plan whose change no longer validates (a path out of the repository): the task's
  // envelope does not resolve.
  void store_broken_plan(const std::string& task_id) {
    store_plan(task_id, plan_for_task("../escape.md"));
  }

  // The codes of the task's TASK_ENVELOPE_UNRESOLVED events, oldest first.
  std::vector<std::string> unresolved_codes(const std::string& task_id) {
    std::vector<std::string> codes;
    const Json events = plane_.task_events(task_id, nullptr, 100, 0);
    for (const auto& event : events["events"]) {
      if (event["event_type"] == "TASK_ENVELOPE_UNRESOLVED")
        codes.push_back(event["payload"]["code"]);
    }
    return codes;
  }

  // The scheduler's resolution (verification may start /usr/bin/true only) and a plane over the
  // same store that resolves with it, beside plane_, which does not resolve.
  resolution::Resolver resolver_{{"/usr/bin/true"}};
  TaskPlane resolving_{store_, environment_, options_, &resolver_};
};

TEST_F(ClaimNextTest, ClaimsTheFleetOrderHeadWithItsEventAndReservation) {
  // Given two queued tasks of different priority, we should claim the higher one: CLAIMED,
  // attempt 1, revision 2, one TASK_CLAIMED, one slot used; the other stays QUEUED.
  TaskSpec low;
  low.task_id = "next-low";
  create_task(low);
  TaskSpec high;
  high.task_id = "next-high";
  high.priority = 5;
  create_task(high);

  const auto claimed = plane_.claim_next(agent_, "worker-next");

  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ((*claimed)["task_id"], "next-high");
  EXPECT_EQ((*claimed)["attempt"], 1);
  EXPECT_EQ((*claimed)["revision"], 2);
  EXPECT_EQ((*claimed)["execution_digest"], view("next-high")["execution_digest"]);
  EXPECT_FALSE(claimed->contains("envelope"));
  EXPECT_EQ(view("next-high")["status"], "CLAIMED");
  EXPECT_EQ(view("next-high")["claimed_by"], "worker-next");
  EXPECT_EQ(view("next-low")["status"], "QUEUED");
  EXPECT_EQ(event_types("next-high"), (std::vector<std::string>{"TASK_CREATED", "TASK_CLAIMED"}));
  EXPECT_EQ(worker_entry("worker-next")["used_slots"], 1);
  // The lease token it handed out fences the attempt like a claim's.
  EXPECT_EQ(submit(agent_, *claimed).first, 201);
}

TEST_F(ClaimNextTest, ATaskThatCouldNeverResolveIsRefusedAtCreateUnlessItIsAReplay) {
  // Given a deterministic task verified with python3, stored before the allowlist was
  // /usr/bin/true alone, its identical replay should still answer 200 with that task; a new
  // one verified with python3 should be refused with the resolution's code and leave nothing
  // stored, and one verified with /usr/bin/true created.
  const auto stored = verified_task("create-before", "/usr/bin/python3");
  ASSERT_EQ(plane_.create_task(fleet::task_submission_of(task_body(stored))).first, 201);

  const auto replay = resolving_.create_task(fleet::task_submission_of(task_body(stored)));
  EXPECT_EQ(replay.first, 200);
  EXPECT_EQ(replay.second["task_id"], "create-before");
  EXPECT_EQ(code_of([&] {
              resolving_.create_task(fleet::task_submission_of(
                  task_body(verified_task("create-after", "/usr/bin/python3"))));
            }),
            "VERIFICATION_EXECUTABLE_NOT_ALLOWED");
  EXPECT_EQ(code_of([&] { view("create-after"); }), "TASK_NOT_FOUND");
  EXPECT_EQ(resolving_
                .create_task(fleet::task_submission_of(
                    task_body(verified_task("create-true", "/usr/bin/true"))))
                .first,
            201);
}

TEST_F(ClaimNextTest, AFullWorkerGetsNothingAndTheQueueIsUntouched) {
  // Given a worker whose slots are all used, we should claim nothing and change no task.
  for (const char* id : {"full-1", "full-2", "full-3"}) create_task(std::string(id));
  ASSERT_TRUE(plane_.claim_next(agent_, "worker-next").has_value());
  ASSERT_TRUE(plane_.claim_next(agent_, "worker-next").has_value());

  EXPECT_FALSE(plane_.claim_next(agent_, "worker-next").has_value());
  EXPECT_EQ(view("full-3")["status"], "QUEUED");
  EXPECT_EQ(view("full-3")["revision"], 1);
}

TEST_F(ClaimNextTest, AResolvedEnvelopeComesWithTheClaimAndAnUnresolvedTaskIsPassedOver) {
  // Given a queue head whose plan no longer validates, a resolving claim should leave that task
  // QUEUED at its revision with one TASK_ENVELOPE_UNRESOLVED, claim the next one with its
  // envelope (replayed as persisted) and the persisted execution, and record the resolution
  // for the attempt just claimed.
  TaskSpec head;
  head.task_id = "resolve-head";
  head.priority = 9;
  create_task(head);
  create_task("resolve-next");
  store_broken_plan("resolve-head");

  const auto claimed = resolving_.claim_next(agent_, "worker-next");

  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ((*claimed)["task_id"], "resolve-next");
  const auto persisted = view("resolve-next")["metadata"]["execution"];
  EXPECT_EQ((*claimed)["envelope"], persisted);
  EXPECT_EQ((*claimed)["execution"], persisted);
  EXPECT_EQ(event_types("resolve-next"),
            (std::vector<std::string>{"TASK_CREATED", "TASK_CLAIMED", "BRIDGE_ENVELOPE_RESOLVED"}));
  const auto resolved = plane_.task_events("resolve-next", nullptr, 10, 0)["events"][2]["payload"];
  EXPECT_EQ(resolved["attempt"], 1);
  EXPECT_EQ(resolved["worker_id"], "worker-next");
  EXPECT_EQ(resolved["source"], "persisted_replay");
  EXPECT_EQ(view("resolve-head")["status"], "QUEUED");
  EXPECT_EQ(view("resolve-head")["revision"], 1);
  EXPECT_EQ(unresolved_codes("resolve-head"), (std::vector<std::string>{"CHANGE_PATH_INVALID"}));
  // /metrics counts it once however often a claim passes it over at this revision.
  EXPECT_EQ(resolving_.envelopes_unresolved(), 1U);
  resolving_.claim_next(agent_, "worker-next");
  EXPECT_EQ(resolving_.envelopes_unresolved(), 1U);
  EXPECT_EQ(unresolved_codes("resolve-head"), (std::vector<std::string>{"CHANGE_PATH_INVALID"}));
  // A plane without a resolver reads no plan and claims without an envelope.
  const auto plain = plane_.claim_next(agent_, "worker-next");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ((*plain)["task_id"], "resolve-head");
  EXPECT_FALSE(plain->contains("envelope"));
}

TEST_F(ClaimNextTest, ATaskWhosePlanResolvesToAnotherDigestWaitsForItsRebind) {
  // Given a valid plan registered after the task (its envelope now has another digest), a
  // resolving claim should leave the task QUEUED, saying TASK_ENVELOPE_DRIFT once.
  create_task("resolve-drift");
  store_plan("resolve-drift", plan_for_task("docs/NOTE.md"));

  EXPECT_FALSE(resolving_.claim_next(agent_, "worker-next").has_value());
  EXPECT_FALSE(resolving_.claim_next(agent_, "worker-next").has_value());

  EXPECT_EQ(view("resolve-drift")["status"], "QUEUED");
  EXPECT_EQ(unresolved_codes("resolve-drift"), (std::vector<std::string>{"TASK_ENVELOPE_DRIFT"}));
  EXPECT_EQ(resolving_.eligibility("resolve-drift")["envelope"],
            Json({{"resolves", false}, {"code", "TASK_ENVELOPE_DRIFT"}}));
}

TEST_F(ClaimNextTest, ADamagedStoredEnvelopeIsPassedOverAndTheQueueFlows) {
  // Given queue heads whose stored metadata was damaged by another writer (not JSON, an
  // execution that is not an object), a resolving claim should pass each over with
  // STORE_FAILURE in its events and claim the sound task behind them; eligibility says the
  // same of a damaged one.
  for (const auto& damaged : std::vector<std::pair<std::string, std::string>>{
           {"damaged-text", "not json"}, {"damaged-shape", R"({"execution":"x"})"}}) {
    TaskSpec head;
    head.task_id = damaged.first;
    head.priority = 9;
    create_task(head);
    db_.write([&](SQLite::Database& db) {
      SQLite::Statement update(db, "UPDATE tasks SET metadata_json=? WHERE task_id=?");
      update.bind(1, damaged.second);
      update.bind(2, damaged.first);
      update.exec();
    });
  }
  create_task("sound-next");

  const auto claimed = resolving_.claim_next(agent_, "worker-next");

  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ((*claimed)["task_id"], "sound-next");
  for (const char* id : {"damaged-text", "damaged-shape"}) {
    EXPECT_EQ(unresolved_codes(id), (std::vector<std::string>{"STORE_FAILURE"})) << id;
  }
  EXPECT_EQ(resolving_.eligibility("damaged-shape")["envelope"],
            Json({{"resolves", false}, {"code", "STORE_FAILURE"}}));
}

TEST_F(ClaimNextTest, EachUnresolvedCandidateIsTriedOnceAndAtMostSixteenPerClaim) {
  // Given three unresolvable tasks ahead of a good one, a resolving claim should try each once
  // (one event each) and claim the good one; given seventeen more ahead of another, it should
  // give up after sixteen and claim nothing rather than read the queue without end.
  for (int i = 0; i < 3; ++i) {
    TaskSpec head;
    head.task_id = "unresolved-" + std::to_string(i);
    head.priority = 9 - i;
    create_task(head);
    store_broken_plan(head.task_id);
  }
  create_task("resolvable");

  const auto claimed = resolving_.claim_next(agent_, "worker-next");

  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ((*claimed)["task_id"], "resolvable");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(unresolved_codes("unresolved-" + std::to_string(i)).size(), 1U) << i;
  }

  for (int i = 3; i < 20; ++i) {
    TaskSpec head;
    head.task_id = "unresolved-" + std::to_string(i);
    head.priority = 10;
    create_task(head);
    store_broken_plan(head.task_id);
  }
  create_task("resolvable-late");
  EXPECT_FALSE(resolving_.claim_next(agent_, "worker-next").has_value());
  std::size_t tried = 0;
  for (int i = 3; i < 20; ++i) tried += unresolved_codes("unresolved-" + std::to_string(i)).size();
  EXPECT_EQ(tried, 16U);
  EXPECT_TRUE(unresolved_codes("unresolved-19").empty());
  EXPECT_EQ(view("resolvable-late")["status"], "QUEUED");
}

TEST_F(ClaimNextTest, ARetryGoesToThisFailureDomainOnlyAfterItsOtherWork) {
  // Given a task that failed on a worker of zone-a (and is ahead in fleet order), a zone-a
  // worker should claim the other task first and the failed one once it is all there is.
  register_worker(agent_, "zone-a-1", {{"failure_domain", "zone-a"}});
  register_worker(agent_, "zone-a-2", {{"failure_domain", "zone-a"}, {"max_concurrency", 2}});
  TaskSpec failed;
  failed.task_id = "domain-failed";
  failed.priority = 9;
  create_task(failed);
  create_task("domain-fresh");
  release(agent_, *plane_.claim_next(agent_, "zone-a-1"));

  const auto first = plane_.claim_next(agent_, "zone-a-2");
  const auto second = plane_.claim_next(agent_, "zone-a-2");

  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ((*first)["task_id"], "domain-fresh");
  EXPECT_EQ((*second)["task_id"], "domain-failed");
}

TEST_F(ClaimNextTest, ARefusalReleaseSparesTheCircuitButQuarantinesTheTask) {
  // Given a worker that gives a claimed task back as envelope_refused, we should requeue it and
  // keep this worker from it for the quarantine, without counting a failure on its circuit.
  register_worker(agent_, "worker-peer");
  create_task("refuse-1");
  const auto claimed = plane_.claim_next(agent_, "worker-next");
  ASSERT_TRUE(claimed.has_value());

  const Json released =
      plane_.release(agent_, "refuse-1",
                     fleet::release_of({{"lease_token", (*claimed)["lease_token"]},
                                        {"failure_class", fleet::kRefusedReleaseClass},
                                        {"reason", "TASK_ENVELOPE_DRIFT"}}));

  EXPECT_EQ(released["status"], "QUEUED");
  EXPECT_EQ(worker_entry("worker-next")["consecutive_failures"], 0);
  EXPECT_EQ(worker_entry("worker-next")["circuit_state"], "CLOSED");
  EXPECT_FALSE(plane_.claim_next(agent_, "worker-next").has_value());
  const auto peer = plane_.claim_next(agent_, "worker-peer");
  ASSERT_TRUE(peer.has_value());
  EXPECT_EQ((*peer)["task_id"], "refuse-1");
  EXPECT_EQ((*peer)["attempt"], 2);
}

TEST_F(ClaimNextTest, TransitionsThatCanFreeWorkSignalTheQueue) {
  // Given a listener, we should signal one claim for anyone for a new task and a release,
  // the worker alone for a result (its slot freed), a cancelled claim and a reconfiguration,
  // and nothing for a claim, a heartbeat or a cancelled queued task.
  int signals = 0;
  std::vector<std::string> seen;  // "<claims>:<worker>"
  plane_.on_queue_change([&](const TaskPlane::QueueChange& change) {
    ++signals;
    seen.push_back(std::to_string(change.claims) + ":" + change.worker_id);
  });
  create_task("signal-1");
  EXPECT_EQ(signals, 1);
  const auto claimed = plane_.claim_next(agent_, "worker-next");
  ASSERT_TRUE(claimed.has_value());
  plane_.heartbeat(
      agent_, "signal-1",
      fleet::heartbeat_of({{"lease_token", (*claimed)["lease_token"]}, {"stage", "running"}}));
  EXPECT_EQ(signals, 1);
  EXPECT_EQ(submit(agent_, *claimed).first, 201);
  EXPECT_EQ(signals, 2);
  create_task("signal-2");
  release(agent_, *plane_.claim_next(agent_, "worker-next"));
  EXPECT_EQ(signals, 4);
  create_task("signal-3");
  const auto held = plane_.claim_next(agent_, "worker-next");
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ((*held)["task_id"], "signal-3");
  plane_.cancel("signal-3", fleet::cancellation_of({{"reason", "claimed, then cancelled"}}));
  plane_.cancel("signal-2", fleet::cancellation_of({{"reason", "cancelled while queued"}}));
  plane_.configure_worker("worker-next", fleet::worker_configuration_of({{"max_slots", 3}}));
  EXPECT_EQ(seen, (std::vector<std::string>{"1:", "0:worker-next",
                                            "1:", "1:", "1:", "0:worker-next", "0:worker-next"}));
  plane_.on_queue_change(nullptr);
}

}  // namespace
}  // namespace aios::fleet_test
