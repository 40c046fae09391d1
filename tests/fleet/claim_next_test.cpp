// claim_next: the fleet's pick and the claim CAS in one transaction, a resolver's envelope in
// the same one, the worker-level refusals answered before the queue is read, the refusal
// release that spares the circuit, and the queue-change signal the long poll waits on.

#include <set>
#include <string>
#include <vector>

#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

// Resolves every task to a small envelope naming it, except those in `refused`, and counts
// what it was asked to record.
class TestResolver final : public fleet::ClaimResolver {
 public:
  std::set<std::string> refused;
  std::set<std::string> drifted;      // resolved to another digest (a plan awaiting a rebind)
  std::vector<std::string> recorded;  // task_id:attempt:worker_id
  std::vector<std::string> asked;     // every task resolve() was called for, in order
  bool refuse_new = false;            // check_resolvable() refuses every task

  Resolved resolve(store::Transaction&, const store::TaskRow& row, const Json&,
                   const Agent*) override {
    asked.push_back(row.task_id);
    if (refused.contains(row.task_id)) throw Error(ErrorCode::EXECUTION_PLAN_NOT_REGISTERED);
    const std::string digest =
        drifted.contains(row.task_id) ? std::string(64, 'e') : row.execution_digest;
    return {{{"resolved_for", row.task_id}, {"execution_digest", digest}}, "test"};
  }
  void record(store::Transaction&, const store::TaskRow& claimed, const std::string& worker_id,
              const Resolved&, const Agent&, const std::string&) override {
    recorded.push_back(claimed.task_id + ":" + std::to_string(claimed.attempt) + ":" + worker_id);
  }
  void check_resolvable(const store::TaskRow&, const Json&) override {
    if (refuse_new) throw Error(ErrorCode::VERIFICATION_EXECUTABLE_NOT_ALLOWED);
  }
};

class ClaimNextTest : public OneWorkerTest {
 protected:
  ClaimNextTest() : OneWorkerTest("agent-next", "worker-next", 2) {}
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
  // Given a resolver that finds the envelope unresolvable, a new task should be refused with
  // the resolution's code and leave nothing stored; the identical replay of a task stored
  // before the configuration changed should still answer 200 with that task.
  TestResolver resolver;
  TaskSpec stored;
  stored.task_id = "create-before";
  ASSERT_EQ(plane_.create_task(task_body(stored), &resolver).first, 201);
  resolver.refuse_new = true;

  const auto replay = plane_.create_task(task_body(stored), &resolver);
  EXPECT_EQ(replay.first, 200);
  EXPECT_EQ(replay.second["task_id"], "create-before");
  TaskSpec fresh;
  fresh.task_id = "create-after";
  try {
    plane_.create_task(task_body(fresh), &resolver);
    ADD_FAILURE() << "an unresolvable task was created";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), "VERIFICATION_EXECUTABLE_NOT_ALLOWED");
  }
  EXPECT_THROW(view("create-after"), Error);
  EXPECT_EQ(plane_.claim_next(agent_, "worker-next").value()["task_id"], "create-before");
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

TEST_F(ClaimNextTest, AResolverEnvelopeComesWithTheClaimAndAnUnresolvedTaskIsPassedOver) {
  // Given a resolver that refuses the queue head, we should leave that task QUEUED at its
  // revision, claim the next one with the resolver's envelope and the persisted execution, and
  // have the resolver record the claimed attempt.
  TaskSpec head;
  head.task_id = "resolve-head";
  head.priority = 9;
  create_task(head);
  create_task("resolve-next");
  TestResolver resolver;
  resolver.refused = {"resolve-head"};

  const auto claimed = plane_.claim_next(agent_, "worker-next", &resolver);

  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ((*claimed)["task_id"], "resolve-next");
  EXPECT_EQ((*claimed)["envelope"]["resolved_for"], "resolve-next");
  EXPECT_EQ((*claimed)["execution"], view("resolve-next")["metadata"]["execution"]);
  EXPECT_EQ(resolver.recorded, (std::vector<std::string>{"resolve-next:1:worker-next"}));
  EXPECT_EQ(view("resolve-head")["status"], "QUEUED");
  EXPECT_EQ(view("resolve-head")["revision"], 1);

  // One that resolves to another digest than its own is left for the owner's rebind.
  resolver.drifted.insert("resolve-drift");
  create_task("resolve-drift");
  EXPECT_FALSE(plane_.claim_next(agent_, "worker-next", &resolver).has_value());
  EXPECT_EQ(view("resolve-drift")["status"], "QUEUED");
}

TEST_F(ClaimNextTest, EachUnresolvedCandidateIsTriedOnceAndAtMostSixteenPerClaim) {
  // Given three unresolvable tasks ahead of a good one, we should ask the resolver once for
  // each, in fleet order, and claim the good one; given twenty ahead, we should give up after
  // sixteen and claim nothing rather than read the queue without end.
  for (int i = 0; i < 3; ++i) {
    TaskSpec head;
    head.task_id = "unresolved-" + std::to_string(i);
    head.priority = 9 - i;
    create_task(head);
  }
  create_task("resolvable");
  TestResolver resolver;
  resolver.refused = {"unresolved-0", "unresolved-1", "unresolved-2"};

  const auto claimed = plane_.claim_next(agent_, "worker-next", &resolver);

  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ((*claimed)["task_id"], "resolvable");
  EXPECT_EQ(resolver.asked, (std::vector<std::string>{"unresolved-0", "unresolved-1",
                                                      "unresolved-2", "resolvable"}));

  for (int i = 3; i < 20; ++i) {
    TaskSpec head;
    head.task_id = "unresolved-" + std::to_string(i);
    head.priority = 9;
    create_task(head);
    resolver.refused.insert(head.task_id);
  }
  create_task("resolvable-late");
  resolver.asked.clear();
  EXPECT_FALSE(plane_.claim_next(agent_, "worker-next", &resolver).has_value());
  EXPECT_EQ(resolver.asked.size(), 16U);
  EXPECT_EQ(std::set<std::string>(resolver.asked.begin(), resolver.asked.end()).size(), 16U);
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

  const Json released = plane_.release(agent_, "refuse-1",
                                       {{"lease_token", (*claimed)["lease_token"]},
                                        {"failure_class", fleet::kRefusedReleaseClass},
                                        {"reason", "TASK_ENVELOPE_DRIFT"}});

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
  plane_.heartbeat(agent_, "signal-1",
                   {{"lease_token", (*claimed)["lease_token"]}, {"stage", "running"}});
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
  plane_.cancel("signal-3", {{"reason", "claimed, then cancelled"}});
  plane_.cancel("signal-2", {{"reason", "cancelled while queued"}});
  plane_.configure_worker("worker-next", {{"max_slots", 3}});
  EXPECT_EQ(seen, (std::vector<std::string>{"1:", "0:worker-next",
                                            "1:", "1:", "1:", "0:worker-next", "0:worker-next"}));
  plane_.on_queue_change(nullptr);
}

}  // namespace
}  // namespace aios::fleet_test
