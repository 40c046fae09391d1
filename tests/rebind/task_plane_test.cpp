// The rebind on the task plane's own schema, next to a TaskPlane on the same file (two
// Database handles, as the two daemons have): a task returned by NEEDS_REWORK is rebound, then
// the plane offers and grants it to a governed writer under the new digest only.
#include <SQLiteCpp/SQLiteCpp.h>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/rebind.hpp"
#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

const Json kWriteScope = {"git.read", "git.test", "governed.write.branch", "governed.write.file"};
constexpr std::string_view kAuthorization = "owner-execution-rebind-20260818";

class RebindOnTaskPlane : public PlaneTest {
 protected:
  void SetUp() override {
    Json grant = kWriteScope;
    grant.push_back("code.read");
    agent_ = make_agent("agent-rebind", grant);
    register_worker(agent_, "worker-reader", {{"allowed_adapters", {"source_capture"}}});
    Json writer = kWriteScope;
    writer.push_back("code.read");
    register_worker(agent_, "worker-writer",
                    {{"capabilities", writer}, {"allowed_adapters", {"deterministic"}}});
    create_task("task-rebind-1");
    // The read-only attempt the plan should have replaced, sent back by the owner.
    const Json claimed = claim(agent_, "task-rebind-1", "worker-reader");
    submit(agent_, claimed);
    plane_.verify("task-rebind-1",
                  fleet::verification_of({{"expected_revision", view("task-rebind-1")["revision"]},
                                          {"decision", "NEEDS_REWORK"},
                                          {"reason", "WRONG_ENVELOPE_BEFORE_PLAN"}}));
    plan_ = project_execution_envelope(
        GovernedBinding::from_mapping(binding_for("task-rebind-1")),
        {{"action", "deterministic"},
         {"adapter", "deterministic"},
         {"capability_scope", kWriteScope},
         {"change_set",
          {{{"path", "app/example.py"}, {"operation", "write_file"}, {"content", "VALUE=1\n"}}}},
         {"governance", {{"commit_idempotency_key", "task-rebind-1-commit-v1"}}}});
  }

  // The owner's request, read off the task view as docs/api.md shows.
  ExecutionRebindRequest owner_request(const Json& task) {
    return ExecutionRebindRequest::from_mapping(
        {{"expected_status", task["status"]},
         {"expected_revision", task["revision"]},
         {"expected_attempt", task["attempt"]},
         {"previous_verification_sha256", digest(task["verification"])},
         {"expected_old_execution_digest", task["execution_digest"]},
         {"expected_new_execution_digest", plan_["execution_digest"]},
         {"authorization_id", kAuthorization},
         {"idempotency_key", "rebind-task-rebind-1-v1"},
         {"reason", "projection-before-plan race recovery"}});
  }

  Agent agent_;
  Json plan_;
};

TEST_F(RebindOnTaskPlane, ReboundTaskIsClaimableUnderTheNewDigestOnly) {
  // Given a task the owner sent back, we should rebind it on the scheduler's schema, keep the
  // columns derived from the envelope true, and let the writer claim only the new envelope.
  const Json before = view("task-rebind-1");
  ASSERT_EQ(before["status"], "QUEUED");
  ASSERT_EQ(before["attempt"], 1);
  Database rebind_db({.path = db_path(), .migrate = false});
  store::SqliteStore rebind_store(rebind_db, clock_);
  Json asked;
  ExecutionRebindStore store(
      rebind_store,
      [&](const std::string&, const Json& capabilities) {
        asked = capabilities;
        return plan_;
      },
      std::string(kAuthorization), system_environment().faults);
  const Json result = store.rebind("task-rebind-1", owner_request(before));
  EXPECT_EQ(result["revision"], before["revision"].get<int>() + 1);
  EXPECT_EQ(asked, (Json{"code.read"}));

  const Json after = view("task-rebind-1");
  EXPECT_EQ(after["status"], "QUEUED");
  EXPECT_EQ(after["execution_digest"], plan_["execution_digest"]);
  EXPECT_EQ(after["metadata"]["execution"], plan_);
  EXPECT_EQ(after["claimed_by"], nullptr);
  EXPECT_EQ(rows("SELECT execution_digest,action,adapter,capability_scope_json,updated_at "
                 "FROM tasks WHERE task_id='task-rebind-1'"),
            (std::vector<std::vector<std::string>>{{plan_["execution_digest"], "deterministic",
                                                    "deterministic", canonical_json(kWriteScope),
                                                    format_iso8601(clock_.now())}}));
  EXPECT_EQ(event_types("task-rebind-1").back(), "TASK_EXECUTION_REBIND_AUTHORIZED");

  EXPECT_EQ(reasons("task-rebind-1", "worker-reader"),
            (std::vector<std::string>{"capability_missing", "adapter_not_allowed"}));
  Json stale = claim_body("task-rebind-1", "worker-writer");
  stale["execution_digest"] = before["execution_digest"];
  EXPECT_EQ(code_of([&] { plane_.claim(agent_, "task-rebind-1", fleet::claim_request_of(stale)); }),
            "TASK_EXECUTION_DIGEST_MISMATCH");
  const Json claimed = claim(agent_, "task-rebind-1", "worker-writer");
  EXPECT_EQ(claimed["attempt"], 2);
  EXPECT_EQ(claimed["execution_digest"], plan_["execution_digest"]);
}

TEST_F(RebindOnTaskPlane, ClaimedTaskIsNotRebound) {
  // Given the task claimed again before the owner's request arrives, we should refuse it.
  const Json returned = view("task-rebind-1");
  register_worker(agent_, "worker-reader-2");
  claim(agent_, "task-rebind-1", "worker-reader-2");
  Database rebind_db({.path = db_path(), .migrate = false});
  store::SqliteStore rebind_store(rebind_db, clock_);
  ExecutionRebindStore store(
      rebind_store, [this](const std::string&, const Json&) { return plan_; },
      std::string(kAuthorization), system_environment().faults);
  EXPECT_EQ(code_of([&] { store.rebind("task-rebind-1", owner_request(returned)); }),
            "EXECUTION_REBIND_CAS_MISMATCH");
  EXPECT_EQ(view("task-rebind-1")["status"], "CLAIMED");
}

}  // namespace
}  // namespace aios::fleet_test
