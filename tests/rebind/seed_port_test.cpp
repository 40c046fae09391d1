// The seed's test_agent_task_execution_rebind.py, test for test, on its own minimal schema.
// (test_execution_rebind_unit_is_unprivileged_and_owner_credential_bound is in
// tests/deploy/units_test.cpp with the other unit files.)
#include "rebind/seed_fixture.hpp"

namespace aios::rebind_test {
namespace {

using SeedPort = SeedDbTest;

TEST_F(SeedPort, RebindCasUpdatesOnlyExecutionProjectionAndAudits) {
  // Given the seed's task, we should swap in the deterministic envelope and its projection,
  // bump the revision, clear the stale claim, keep other metadata, and audit it once.
  make_db();
  const Json result = store().rebind(kTaskId, request());
  EXPECT_EQ(result["status"], "QUEUED");
  EXPECT_EQ(result["revision"], 6);
  EXPECT_EQ(result["idempotent"], false);

  const auto row = task_row();
  EXPECT_EQ((std::vector<std::string>{row[0], row[1], row[2], row[3]}),
            (std::vector<std::string>{"QUEUED", "2", "6", "NULL"}));
  const Json metadata = Json::parse(row[4]);
  EXPECT_EQ(metadata["preserved"], (Json{{"value", "unchanged"}}));
  EXPECT_EQ(metadata["execution"]["action"], "deterministic");
  EXPECT_EQ(metadata["execution"]["execution_digest"], new_envelope()["execution_digest"]);
  EXPECT_EQ(metadata["execution_projection"]["execution_digest"],
            new_envelope()["execution_digest"]);

  const auto events = rows("SELECT event_type,payload_json FROM task_events");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0][0], "TASK_EXECUTION_REBIND_AUTHORIZED");
  const Json payload = Json::parse(events[0][1]);
  EXPECT_EQ(payload["old_action"], "source_capture");
  EXPECT_EQ(payload["new_action"], "deterministic");
  EXPECT_EQ(payload["stale_claim_normalized"], true);
  EXPECT_EQ(count("task_execution_rebinds"), 1);
}

TEST_F(SeedPort, RebindIdempotentReplay) {
  // Given the same request twice, we should apply it once and replay the recorded outcome.
  make_db();
  auto rebind_store = store();
  const Json first = rebind_store.rebind(kTaskId, request());
  const Json second = rebind_store.rebind(kTaskId, request());
  EXPECT_EQ(first["idempotent"], false);
  EXPECT_EQ(second["idempotent"], true);
  EXPECT_EQ(second["new_execution_digest"], first["new_execution_digest"]);
}

TEST_F(SeedPort, RebindRejectsActiveLease) {
  // Given a QUEUED task that still carries a lease, we should refuse and write nothing.
  const SeedTask leased{.lease = true};
  make_db(leased);
  EXPECT_EQ(code_of([&] { store().rebind(kTaskId, request()); }),
            "EXECUTION_REBIND_ACTIVE_LEASE_DENY");
  expect_untouched(leased);
}

TEST_F(SeedPort, RebindRejectsVerificationDrift) {
  // Given an owner who saw another verification, we should refuse.
  make_db();
  EXPECT_EQ(code_of([&] {
              store().rebind(kTaskId, request({{"decision", "NEEDS_REWORK"}, {"reason", "other"}}));
            }),
            "EXECUTION_REBIND_VERIFICATION_DRIFT");
  expect_untouched();
}

TEST_F(SeedPort, RebindRejectsNonqueuedTask) {
  // Given a task that is VERIFYING, the request's QUEUED no longer holds: a CAS mismatch.
  const SeedTask verifying{.status = "VERIFYING"};
  make_db(verifying);
  EXPECT_EQ(code_of([&] { store().rebind(kTaskId, request()); }), "EXECUTION_REBIND_CAS_MISMATCH");
  expect_untouched(verifying);
}

TEST_F(SeedPort, RebindRejectsNonDeterministicCanonicalResolution) {
  // Given a Bridge that resolves the source_capture envelope again (no plan), we should refuse.
  make_db();
  const auto wrong = [](const std::string&, const Json&) { return old_envelope(); };
  EXPECT_EQ(code_of([&] { store(wrong).rebind(kTaskId, request()); }),
            "EXECUTION_REBIND_DETERMINISTIC_PLAN_REQUIRED");
  expect_untouched();
}

TEST_F(SeedPort, RebindRejectsBindingDrift) {
  // Given a Bridge envelope for another job of the same task, we should refuse it as a binding
  // mismatch (the seed only asserts "an exception"; ours is the envelope's own code).
  make_db();
  const auto wrong = [](const std::string&, const Json&) {
    return envelope_test::drift_envelope();
  };
  EXPECT_EQ(code_of([&] { store(wrong).rebind(kTaskId, request()); }),
            "EXECUTION_BINDING_MISMATCH");
  expect_untouched();
}

TEST(SeedPortRequest, RebindRequestIsNarrowAndDigestBound) {
  // Given a request with any field beyond the nine, we should refuse it before anything else.
  Json data = request({{"decision", "NEEDS_REWORK"}}).to_public();
  data["arbitrary_metadata"] = {{"x", 1}};
  EXPECT_EQ(code_of([&] { ExecutionRebindRequest::from_mapping(data); }),
            "EXECUTION_REBIND_FIELDS_INVALID");
}

}  // namespace
}  // namespace aios::rebind_test
