// Lifecycle rules of the task plane with a ManualClock: lease expiry and the sweeper,
// heartbeats, stale leases and attempts, release and task quarantine, worker circuits, worker
// liveness and tenant scope, revisions and task_events, and the NEEDS_REWORK row shape the
// rebind daemon's CAS depends on.

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

using Rows = std::vector<std::vector<std::string>>;

bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

class LifecycleTest : public OneWorkerTest {
 protected:
  LifecycleTest() : OneWorkerTest("agent-life", "worker-life", 4) {}
};

TEST_F(LifecycleTest, ExpiredLeaseIsSweptBackToTheQueue) {
  // Given a claim whose lease ran out, we should sweep it once: QUEUED, attempt kept, lease and
  // claimant cleared, TASK_LEASE_EXPIRED, the claim and dispatch ended, one worker failure.
  create_task("expire-1");
  const Json claimed = claim(agent_, "expire-1", "worker-life");
  clock_.advance(options_.lease - seconds(1));
  ASSERT_EQ(plane_.sweep_expired_leases(), 0u);

  clock_.advance(seconds(1));
  EXPECT_EQ(plane_.sweep_expired_leases(), 1u);
  EXPECT_EQ(plane_.sweep_expired_leases(), 0u);

  const Json task = view("expire-1");
  EXPECT_EQ(task["status"], "QUEUED");
  EXPECT_EQ(task["attempt"], 1);
  EXPECT_EQ(task["revision"], 3);
  EXPECT_TRUE(task["claimed_by"].is_null());
  EXPECT_TRUE(task["lease_expires_at"].is_null());
  EXPECT_EQ(event_types("expire-1"),
            (std::vector<std::string>{"TASK_CREATED", "TASK_CLAIMED", "TASK_LEASE_EXPIRED"}));
  EXPECT_EQ(
      rows("SELECT status FROM claims WHERE claim_id=?", {claimed["claim_id"].get<std::string>()}),
      (Rows{{"EXPIRED"}}));
  EXPECT_EQ(rows("SELECT state FROM fleet_dispatches WHERE task_id='expire-1'"),
            (Rows{{"EXPIRED"}}));
  EXPECT_EQ(worker_entry("worker-life")["consecutive_failures"], 1);
  EXPECT_EQ(worker_entry("worker-life")["used_slots"], 0);
}

TEST_F(LifecycleTest, ExpiredLeaseOnTheLastAttemptFailsTheTask) {
  // Given a task with max_attempts 1 whose only lease expired, we should sweep it to FAILED.
  TaskSpec spec;
  spec.task_id = "expire-last";
  spec.max_attempts = 1;
  create_task(spec);
  claim(agent_, "expire-last", "worker-life");
  clock_.advance(options_.lease + seconds(1));

  EXPECT_EQ(plane_.sweep_expired_leases(), 1u);

  const Json task = view("expire-last");
  EXPECT_EQ(task["status"], "FAILED");
  EXPECT_EQ(task["attempt"], 1);
  EXPECT_EQ(event_types("expire-last").back(), "TASK_LEASE_EXPIRED");
  EXPECT_EQ(code_of([&] { claim(agent_, "expire-last", "worker-life"); }), "TASK_NOT_CLAIMABLE");
}

TEST_F(LifecycleTest, ClaimTakesItsTokensFromTheEnvironmentAndMarksItsCommitOnce) {
  // Given the environment's randomness, the lease token and the claim id should be its next two
  // draws; the commit point should be reached once per committed claim and never by a refusal.
  create_task("draw-1");
  Json stale = claim_body("draw-1", "worker-life");
  stale["expected_revision"] = stale["expected_revision"].get<int>() + 7;
  EXPECT_EQ(code_of([&] { plane_.claim(agent_, "draw-1", fleet::claim_request_of(stale)); }),
            "TASK_REVISION_CONFLICT");
  EXPECT_TRUE(faults_.phases().empty());

  const Json claimed = claim(agent_, "draw-1", "worker-life");
  const auto lease_token = claimed["lease_token"].get<std::string>();
  const auto claim_id = claimed["claim_id"].get<std::string>();
  ASSERT_EQ(lease_token.size(), 64U);
  ASSERT_EQ(claim_id.size(), 6U + 32U);
  EXPECT_EQ(std::stoull(claim_id.substr(6), nullptr, 16),
            std::stoull(lease_token.substr(48), nullptr, 16) + 1);
  EXPECT_EQ(faults_.phases(), std::vector<std::string>{"scheduler_claim_committed"});
}

TEST_F(LifecycleTest, HeartbeatExtendsTheLease) {
  // Given a heartbeat before expiry, we should not sweep the task past its original expiry,
  // and should sweep it once the extended lease ends.
  create_task("beat-1");
  const Json claimed = claim(agent_, "beat-1", "worker-life");
  clock_.advance(seconds(100));

  const Json beat = plane_.heartbeat(
      agent_, "beat-1",
      fleet::heartbeat_of({{"lease_token", claimed["lease_token"]}, {"stage", "run"}}));

  EXPECT_EQ(beat["lease_expires_at"], format_iso8601(clock_.now() + options_.lease));
  EXPECT_EQ(beat["revision"], claimed["revision"]);
  clock_.advance(seconds(50));  // past the original expiry, inside the extended one
  EXPECT_EQ(plane_.sweep_expired_leases(), 0u);
  EXPECT_EQ(view("beat-1")["status"], "CLAIMED");
  EXPECT_EQ(worker_entry("worker-life")["used_slots"], 1);

  clock_.advance(options_.lease);
  EXPECT_EQ(plane_.sweep_expired_leases(), 1u);
}

TEST_F(LifecycleTest, ResultAfterExpiryIsRefusedBeforeTheSweeperRuns) {
  // Given a lease that ended but was not swept yet, we should refuse the result, the
  // heartbeat and the release with LEASE_EXPIRED and change nothing.
  create_task("late-1");
  const Json claimed = claim(agent_, "late-1", "worker-life");
  clock_.advance(options_.lease + seconds(1));

  EXPECT_EQ(code_of([&] { submit(agent_, claimed); }), "LEASE_EXPIRED");
  EXPECT_EQ(code_of([&] {
              plane_.heartbeat(agent_, "late-1",
                               fleet::heartbeat_of({{"lease_token", claimed["lease_token"]}}));
            }),
            "LEASE_EXPIRED");
  EXPECT_EQ(code_of([&] { release(agent_, claimed); }), "LEASE_EXPIRED");

  EXPECT_EQ(view("late-1")["status"], "CLAIMED");
  EXPECT_EQ(view("late-1")["revision"], 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM results"), 0);
  EXPECT_EQ(plane_.sweep_expired_leases(), 1u);
}

TEST_F(LifecycleTest, StaleAttemptAndStaleLeaseAreRefused) {
  // Given a task reclaimed after its first lease expired, we should refuse the old attempt
  // number (ATTEMPT_STALE) and the old lease token (LEASE_INVALID), and accept the current.
  create_task("stale-1");
  const Json first = claim(agent_, "stale-1", "worker-life");
  clock_.advance(options_.lease + seconds(1));
  ASSERT_EQ(plane_.sweep_expired_leases(), 1u);
  const Json second = claim(agent_, "stale-1", "worker-life");
  ASSERT_EQ(second["attempt"], 2);

  Json old_attempt = second;
  old_attempt["attempt"] = 1;
  EXPECT_EQ(code_of([&] { submit(agent_, old_attempt); }), "ATTEMPT_STALE");
  Json old_token = second;
  old_token["lease_token"] = first["lease_token"];
  EXPECT_EQ(code_of([&] { submit(agent_, old_token); }), "LEASE_INVALID");
  EXPECT_EQ(code_of([&] { submit(agent_, first); }), "LEASE_INVALID");
  Json stale_digest = second;
  stale_digest["execution_digest"] = std::string(64, '0');
  EXPECT_EQ(code_of([&] { submit(agent_, stale_digest); }), "TASK_EXECUTION_DIGEST_MISMATCH");

  const auto [status, response] = submit(agent_, second);
  EXPECT_EQ(status, 201);
  EXPECT_EQ(response["status"], "VERIFYING");
}

TEST_F(LifecycleTest, ReleaseRequeuesAndQuarantinesTheTaskForThatWorker) {
  // Given a release, we should requeue the task and keep the releasing worker (not another
  // worker) away from it for task_quarantine seconds, then let it claim again.
  register_worker(agent_, "worker-other");
  create_task("release-1");
  const Json claimed = claim(agent_, "release-1", "worker-life");

  const Json released = release(agent_, claimed);

  EXPECT_EQ(released["status"], "QUEUED");
  EXPECT_EQ(released["attempt"], 1);
  EXPECT_TRUE(released["claimed_by"].is_null());
  EXPECT_EQ(event_types("release-1").back(), "TASK_RELEASED");
  EXPECT_EQ(worker_entry("worker-life")["used_slots"], 0);
  EXPECT_EQ(worker_entry("worker-life")["consecutive_failures"], 1);
  EXPECT_EQ(plane_.fleet_view()["task_quarantines"],
            Json::parse(R"([{"task_id":"release-1","worker_id":"worker-life",
                             "failure_class":"runtime_crash","failures":1}])"));
  EXPECT_TRUE(contains(reasons("release-1", "worker-life"), "task_quarantined"));
  EXPECT_FALSE(contains(reasons("release-1", "worker-other"), "task_quarantined"));
  EXPECT_EQ(code_of([&] { claim(agent_, "release-1", "worker-life"); }), "FLEET_TASK_QUARANTINED");
  EXPECT_FALSE(plane_.claim_next(agent_, "worker-life").has_value());

  clock_.advance(options_.task_quarantine - seconds(1));
  EXPECT_EQ(code_of([&] { claim(agent_, "release-1", "worker-life"); }), "FLEET_TASK_QUARANTINED");
  clock_.advance(seconds(1));
  const Json again = claim(agent_, "release-1", "worker-life");
  EXPECT_EQ(again["attempt"], 2);
}

TEST_F(LifecycleTest, ReleasedTaskGoesToAnotherWorkerAtOnce) {
  // Given a task released by one worker, we should let another worker of the fleet take it.
  register_worker(agent_, "worker-other");
  create_task("handoff-1");
  release(agent_, claim(agent_, "handoff-1", "worker-life"));

  const auto next = plane_.claim_next(agent_, "worker-other");

  ASSERT_TRUE(next.has_value());
  EXPECT_EQ((*next)["task_id"], "handoff-1");
  EXPECT_EQ((*next)["attempt"], 2);
}

TEST_F(LifecycleTest, CircuitOpensAtTheThresholdAndHalfOpensAfterTheCooldown) {
  // Given circuit_threshold consecutive failures, we should open the circuit (claims refused),
  // let a claim probe once circuit_cooldown passed, and reopen it at the probe's failure.
  for (const char* id : {"circuit-1", "circuit-2", "circuit-3"}) create_task(std::string(id));
  for (int failure = 1; failure < options_.circuit_threshold; ++failure) {
    plane_.record_worker_failure("worker-life", "runtime_crash");
    EXPECT_FALSE(contains(reasons("circuit-1", "worker-life"), "circuit_open"))
        << "after " << failure << " failures";
  }
  plane_.record_worker_failure("worker-life", "runtime_crash");
  EXPECT_TRUE(contains(reasons("circuit-1", "worker-life"), "circuit_open"));
  EXPECT_EQ(worker_entry("worker-life")["circuit_state"], "OPEN");
  EXPECT_EQ(code_of([&] { claim(agent_, "circuit-1", "worker-life"); }),
            "FLEET_WORKER_CIRCUIT_OPEN");

  clock_.advance(options_.circuit_cooldown - seconds(1));
  EXPECT_EQ(code_of([&] { claim(agent_, "circuit-1", "worker-life"); }),
            "FLEET_WORKER_CIRCUIT_OPEN");
  clock_.advance(seconds(1));
  const Json probe = claim(agent_, "circuit-1", "worker-life");

  release(agent_, probe);  // the probe fails: the circuit reopens at once
  EXPECT_EQ(code_of([&] { claim(agent_, "circuit-2", "worker-life"); }),
            "FLEET_WORKER_CIRCUIT_OPEN");

  clock_.advance(options_.circuit_cooldown);
  const Json good_probe = claim(agent_, "circuit-2", "worker-life");
  submit(agent_, good_probe);  // the probe succeeds: the circuit closes
  EXPECT_EQ(worker_entry("worker-life")["circuit_state"], "CLOSED");
  EXPECT_EQ(worker_entry("worker-life")["consecutive_failures"], 0);
  EXPECT_EQ(code_of([&] { claim(agent_, "circuit-3", "worker-life"); }), kOk);
}

TEST_F(LifecycleTest, HalfOpenCircuitAdmitsOneProbeAtATime) {
  // Given a circuit past its cooldown (half-open: "one claim may probe", fleet.hpp), we should
  // refuse a second claim while the probe is still out, even with free slots.
  for (const char* id : {"probe-1", "probe-2"}) create_task(std::string(id));
  plane_.record_worker_failure("worker-life", "runtime_crash", 1);
  clock_.advance(options_.circuit_cooldown);
  ASSERT_EQ(code_of([&] { claim(agent_, "probe-1", "worker-life"); }), kOk);

  EXPECT_EQ(code_of([&] { claim(agent_, "probe-2", "worker-life"); }), "FLEET_WORKER_CIRCUIT_OPEN");
}

TEST_F(LifecycleTest, OwnerQuarantineAndCircuitResetAreEnforcedOnClaim) {
  // Given the owner quarantining a worker, we should refuse its claims until lifted; given the
  // owner resetting an open circuit, we should let the worker claim at once.
  create_task("owner-1");
  plane_.configure_worker("worker-life", fleet::worker_configuration_of({{"quarantined", true}}));

  EXPECT_EQ(reasons("owner-1", "worker-life"), (std::vector<std::string>{"worker_quarantined"}));
  EXPECT_FALSE(plane_.claim_next(agent_, "worker-life").has_value());
  EXPECT_EQ(code_of([&] { claim(agent_, "owner-1", "worker-life"); }), "FLEET_WORKER_QUARANTINED");

  plane_.configure_worker("worker-life", fleet::worker_configuration_of({{"quarantined", false}}));
  plane_.record_worker_failure("worker-life", "runtime_crash", 1);
  EXPECT_EQ(code_of([&] { claim(agent_, "owner-1", "worker-life"); }), "FLEET_WORKER_CIRCUIT_OPEN");
  const Json reset = plane_.configure_worker(
      "worker-life", fleet::worker_configuration_of({{"reset_circuit", true}}));

  EXPECT_EQ(reset["circuit_state"], "CLOSED");
  EXPECT_EQ(code_of([&] { claim(agent_, "owner-1", "worker-life"); }), kOk);
}

TEST_F(LifecycleTest, OfflineWorkerIsReportedAndPollIsItsLivenessSignal) {
  // Given a worker not seen for worker_online_window, we should report it "offline" to the
  // owner; its own poll is a liveness signal, so the poll brings it back online and ranks.
  create_task("offline-1");
  clock_.advance(options_.worker_online_window);
  EXPECT_FALSE(contains(reasons("offline-1", "worker-life"), "offline"));
  clock_.advance(seconds(1));

  EXPECT_EQ(reasons("offline-1", "worker-life"), (std::vector<std::string>{"offline"}));
  EXPECT_EQ(worker_entry("worker-life")["online"], false);

  const Json polled = plane_.poll(agent_, fleet::poll_request_of({{"worker_id", "worker-life"}}));
  ASSERT_EQ(polled["tasks"].size(), 1u);
  EXPECT_EQ(polled["tasks"][0]["task_id"], "offline-1");
  EXPECT_TRUE(reasons("offline-1", "worker-life").empty());
  EXPECT_EQ(worker_entry("worker-life")["online"], true);
}

TEST_F(LifecycleTest, AClaimIsALivenessSignalRecordedAtMostOncePerSecond) {
  // Given a worker last seen at registration, a claim later should record it seen at the
  // claim; a second claim within the same second should leave that record as it was.
  create_task("seen-1");
  create_task("seen-2");
  clock_.advance(seconds(30));
  const auto first = clock_.now();
  claim(agent_, "seen-1", "worker-life");
  EXPECT_EQ(worker_entry("worker-life")["last_seen_at"], format_iso8601(first));
  clock_.advance(std::chrono::milliseconds(500));
  claim(agent_, "seen-2", "worker-life");
  EXPECT_EQ(worker_entry("worker-life")["last_seen_at"], format_iso8601(first));
  clock_.advance(std::chrono::milliseconds(500));
  plane_.poll(agent_, fleet::poll_request_of({{"worker_id", "worker-life"}}));
  EXPECT_EQ(worker_entry("worker-life")["last_seen_at"], format_iso8601(clock_.now()));
}

TEST_F(LifecycleTest, TenantRestrictedWorkerIsKeptToItsTenants) {
  // Given a worker restricted to tenant-a, we should offer it only tenant-a work: other
  // tenants' and global tasks are ineligible by "scope" and their claim is WORKER_SCOPE_DENY.
  register_worker(agent_, "worker-tenant", {{"tenants", {"tenant-a"}}, {"max_concurrency", 4}});
  create_task(project_task("tenant-a-1", "tenant-a", "project-a"));
  create_task(project_task("tenant-b-1", "tenant-b", "project-b"));
  TaskSpec tenant_only;
  tenant_only.task_id = "tenant-a-2";
  tenant_only.scope_type = "tenant";
  tenant_only.tenant_id = "tenant-a";
  create_task(tenant_only);
  create_task("global-1");

  struct Case {
    std::string task_id;
    std::vector<std::string> reasons;
    std::string claim_code;
  };
  const std::vector<Case> cases = {
      {"tenant-b-1", {"scope"}, "WORKER_SCOPE_DENY"},
      {"global-1", {"scope"}, "WORKER_SCOPE_DENY"},
      {"tenant-a-1", {}, "OK"},
      {"tenant-a-2", {}, "OK"},
  };
  const Json polled = plane_.poll(agent_, fleet::poll_request_of({{"worker_id", "worker-tenant"}}));
  std::vector<std::string> offered;
  for (const auto& task : polled["tasks"]) offered.push_back(task["task_id"]);
  EXPECT_EQ(offered, (std::vector<std::string>{"tenant-a-1", "tenant-a-2"}));
  for (const auto& c : cases) {
    SCOPED_TRACE(c.task_id);
    EXPECT_EQ(reasons(c.task_id, "worker-tenant"), c.reasons);
    EXPECT_EQ(code_of([&] { claim(agent_, c.task_id, "worker-tenant"); }), c.claim_code);
  }
}

TEST_F(LifecycleTest, EveryTransitionBumpsTheRevisionOnceWithOneEvent) {
  // Given a task walked through every transition (and some refusals), we should see the
  // revision rise by exactly one with exactly one task_events row per transition, and no change
  // for a heartbeat or a refused call.
  register_worker(agent_, "worker-second");
  create_task("walk-1");
  Json lease;
  struct Step {
    std::string name;
    std::function<void()> run;
    std::string status;
    std::int64_t revision;
    std::string last_event;
  };
  const auto rev = [&] { return view("walk-1")["revision"].get<std::int64_t>(); };
  const std::vector<Step> steps = {
      {"claim", [&] { lease = claim(agent_, "walk-1", "worker-life"); }, "CLAIMED", 2,
       "TASK_CLAIMED"},
      {"heartbeat (not a transition)",
       [&] {
         plane_.heartbeat(agent_, "walk-1",
                          fleet::heartbeat_of({{"lease_token", lease["lease_token"]}}));
       },
       "CLAIMED", 2, "TASK_CLAIMED"},
      {"result", [&] { submit(agent_, lease); }, "VERIFYING", 3, "TASK_RESULT_SUBMITTED"},
      {"result replay (idempotent)", [&] { submit(agent_, lease); }, "VERIFYING", 3,
       "TASK_RESULT_SUBMITTED"},
      {"verify with a stale revision (refused)",
       [&] {
         EXPECT_EQ(code_of([&] {
                     plane_.verify("walk-1", fleet::verification_of(
                                                 {{"expected_revision", 2}, {"decision", "PASS"}}));
                   }),
                   "TASK_REVISION_CONFLICT");
       },
       "VERIFYING", 3, "TASK_RESULT_SUBMITTED"},
      {"verify NEEDS_REWORK",
       [&] {
         plane_.verify("walk-1", fleet::verification_of(
                                     {{"expected_revision", rev()}, {"decision", "NEEDS_REWORK"}}));
       },
       "QUEUED", 4, "TASK_VERIFIED"},
      {"claim again", [&] { lease = claim(agent_, "walk-1", "worker-life"); }, "CLAIMED", 5,
       "TASK_CLAIMED"},
      {"release", [&] { release(agent_, lease); }, "QUEUED", 6, "TASK_RELEASED"},
      {"claim by the quarantined worker (refused)",
       [&] {
         EXPECT_EQ(code_of([&] { claim(agent_, "walk-1", "worker-life"); }),
                   "FLEET_TASK_QUARANTINED");
       },
       "QUEUED", 6, "TASK_RELEASED"},
      {"claim by another worker", [&] { lease = claim(agent_, "walk-1", "worker-second"); },
       "CLAIMED", 7, "TASK_CLAIMED"},
      {"result", [&] { submit(agent_, lease, "result-key-0003"); }, "VERIFYING", 8,
       "TASK_RESULT_SUBMITTED"},
      {"verify PASS",
       [&] {
         plane_.verify("walk-1", fleet::verification_of(
                                     {{"expected_revision", rev()}, {"decision", "PASS"}}));
       },
       "SUCCEEDED", 9, "TASK_VERIFIED"},
      {"cancel a terminal task (refused)",
       [&] {
         EXPECT_EQ(
             code_of([&] { plane_.cancel("walk-1", fleet::cancellation_of(Json::object())); }),
             "TASK_TERMINAL");
       },
       "SUCCEEDED", 9, "TASK_VERIFIED"},
  };
  std::int64_t previous_events = count("SELECT COUNT(*) FROM task_events WHERE task_id='walk-1'");
  std::int64_t previous_revision = rev();
  for (const auto& step : steps) {
    SCOPED_TRACE(step.name);
    step.run();
    const Json task = view("walk-1");
    const auto events = count("SELECT COUNT(*) FROM task_events WHERE task_id='walk-1'");
    EXPECT_EQ(task["status"], step.status);
    EXPECT_EQ(task["revision"], step.revision);
    EXPECT_EQ(events - previous_events, step.revision - previous_revision)
        << "one event per revision";
    EXPECT_EQ(event_types("walk-1").back(), step.last_event);
    previous_events = events;
    previous_revision = step.revision;
  }
}

TEST_F(LifecycleTest, CancelOfAClaimedTaskEndsTheClaimAndFreesTheSlot) {
  // Given a claimed task cancelled by the owner, we should end the claim and the dispatch,
  // free the slot, clear the lease, and refuse the old lease afterwards.
  create_task("cancel-1");
  const Json claimed = claim(agent_, "cancel-1", "worker-life");

  const Json cancelled = plane_.cancel(
      "cancel-1", fleet::cancellation_of({{"expected_revision", 2}, {"reason", "stop"}}));

  EXPECT_EQ(cancelled["status"], "CANCELLED");
  EXPECT_EQ(cancelled["revision"], 3);
  EXPECT_EQ(rows("SELECT claimed_by IS NULL, lease_token_hash IS NULL, lease_expires_at IS NULL, "
                 "claim_id IS NULL FROM tasks WHERE task_id='cancel-1'"),
            (Rows{{"1", "1", "1", "1"}}));
  EXPECT_EQ(rows("SELECT status FROM claims WHERE task_id='cancel-1'"), (Rows{{"CANCELLED"}}));
  EXPECT_EQ(worker_entry("worker-life")["used_slots"], 0);
  EXPECT_EQ(code_of([&] { submit(agent_, claimed); }), "TASK_NOT_CLAIMED");
}

TEST_F(LifecycleTest, NeedsReworkKeepsTheVerificationAndClearsTheLease) {
  // Given NEEDS_REWORK, we should store the canonical {"decision","reason"} and leave the row
  // exactly as the rebind CAS expects: QUEUED, attempt kept, claimant, claim and lease NULL.
  create_task("rework-1");
  submit(agent_, claim(agent_, "rework-1", "worker-life"));

  plane_.verify("rework-1", fleet::verification_of({{"expected_revision", 3},
                                                    {"decision", "NEEDS_REWORK"},
                                                    {"reason", "WRONG_ENVELOPE_BEFORE_PLAN"}}));

  EXPECT_EQ(rows("SELECT status, attempt, revision, verification_json, claimed_by IS NULL, "
                 "claim_id IS NULL, lease_token_hash IS NULL, lease_expires_at IS NULL "
                 "FROM tasks WHERE task_id='rework-1'"),
            (Rows{{"QUEUED", "1", "4",
                   R"({"decision":"NEEDS_REWORK","reason":"WRONG_ENVELOPE_BEFORE_PLAN"})", "1", "1",
                   "1", "1"}}));
  EXPECT_EQ(view("rework-1")["verification"],
            Json({{"decision", "NEEDS_REWORK"}, {"reason", "WRONG_ENVELOPE_BEFORE_PLAN"}}));
  EXPECT_EQ(rows("SELECT payload_json FROM task_events WHERE task_id='rework-1' AND "
                 "event_type='TASK_VERIFIED'")
                .size(),
            1u);
  const Json verified_payload = Json::parse(
      rows("SELECT payload_json FROM task_events WHERE event_type='TASK_VERIFIED'")[0][0]);
  EXPECT_EQ(verified_payload["verification_sha256"],
            digest({{"decision", "NEEDS_REWORK"}, {"reason", "WRONG_ENVELOPE_BEFORE_PLAN"}}));
}

}  // namespace
}  // namespace aios::fleet_test
