// The rebind transaction beyond the seed's own tests: the exact audit record, every refusal
// before the Bridge is asked (and that it writes nothing), changes that happen while the Bridge
// answers, idempotency under concurrency, and databases that are not a task plane.
#include <atomic>
#include <latch>
#include <mutex>
#include <thread>

#include "rebind/seed_fixture.hpp"
#include "store/sqlite/database.hpp"

namespace aios::rebind_test {
namespace {

using RebindStore = SeedDbTest;

const std::string kOtherHex(64, 'c');

// Runs `sql` on the test's database through a connection of its own, as another process would.
void exec_sql(const std::filesystem::path& path, const std::string& sql) {
  SQLite::Database db(path.string(), SQLite::OPEN_READWRITE);
  db.exec(sql);
}

TEST_F(RebindStore, AuditRecordsAreExact) {
  // Given the seed's rebind, we should write the seed's event payload and receipt, field for
  // field, with the owner-control actor and the clock's time.
  make_db();
  store().rebind(kTaskId, request());
  const std::string old_digest = old_envelope()["execution_digest"];
  const std::string new_digest = new_envelope()["execution_digest"];
  const std::string request_sha = digest(request().to_public());
  const std::string now = format_iso8601(clock_.now());

  const auto events =
      rows("SELECT task_id,event_type,agent_id,created_at,payload_json FROM task_events");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ((std::vector<std::string>(events[0].begin(), events[0].end() - 1)),
            (std::vector<std::string>{kTaskId, "TASK_EXECUTION_REBIND_AUTHORIZED", "owner-control",
                                      now}));
  EXPECT_EQ(Json::parse(events[0].back()),
            (Json{{"schema", "aios.task-execution-rebind.event.v1"},
                  {"task_id", kTaskId},
                  {"job_id", kRebindJobId},
                  {"authorization_id", kAuthorization},
                  {"idempotency_key", "rebind-task-a-v1"},
                  {"reason", "projection-before-plan race recovery"},
                  {"previous_verification_sha256", canon(seed_verification())},
                  {"old_execution_digest", old_digest},
                  {"new_execution_digest", new_digest},
                  {"old_action", "source_capture"},
                  {"new_action", "deterministic"},
                  {"previous_revision", 5},
                  {"applied_revision", 6},
                  {"attempt", 2},
                  {"request_sha256", request_sha},
                  {"previous_claimed_by", "previous-worker"},
                  {"stale_claim_normalized", true}}));

  EXPECT_EQ(rows("SELECT * FROM task_execution_rebinds"),
            (std::vector<std::vector<std::string>>{
                {kTaskId, "rebind-task-a-v1", request_sha, std::string(kAuthorization),
                 canon(seed_verification()), old_digest, new_digest, "5", "6", "2",
                 "projection-before-plan race recovery", now}}));

  // The projection is rebuilt for the new digest, not patched.
  EXPECT_EQ(Json::parse(task_row()[4])["execution_projection"],
            (Json{{"schema", "aios.online-agent.task-projection.v1"},
                  {"task_id", kTaskId},
                  {"job_id", kRebindJobId},
                  {"execution_digest", new_digest}}));
}

TEST_F(RebindStore, TaskWithoutStaleClaimIsNotNormalized) {
  // Given a task whose claimed_by is already NULL, the CAS must match NULL (IS, not =) and the
  // event should say no stale claim was cleared.
  make_db();
  exec_sql(path(), "UPDATE tasks SET claimed_by=NULL");
  store().rebind(kTaskId, request());
  const Json payload = Json::parse(rows("SELECT payload_json FROM task_events").at(0).at(0));
  EXPECT_EQ(payload["previous_claimed_by"], nullptr);
  EXPECT_EQ(payload["stale_claim_normalized"], false);
  EXPECT_EQ(task_row()[2], "6");
}

TEST_F(RebindStore, ReusedKeyWithAnotherRequestIsAConflict) {
  // Given an applied rebind, the same key with another reason should conflict, even though the
  // revision it names is stale, and write nothing more.
  make_db();
  auto rebind_store = store();
  rebind_store.rebind(kTaskId, request());
  Json other = request_body();
  other["reason"] = "another reason";
  EXPECT_EQ(
      code_of([&] { rebind_store.rebind(kTaskId, ExecutionRebindRequest::from_mapping(other)); }),
      "EXECUTION_REBIND_IDEMPOTENCY_CONFLICT");
  EXPECT_EQ(count("task_events"), 1);
  EXPECT_EQ(count("task_execution_rebinds"), 1);
  // A replay answers with the recorded outcome, not with the request's stale revision.
  const Json replayed = rebind_store.rebind(kTaskId, request());
  EXPECT_EQ(replayed, (Json{{"task_id", kTaskId},
                            {"status", "QUEUED"},
                            {"attempt", 2},
                            {"revision", 6},
                            {"old_execution_digest", old_envelope()["execution_digest"]},
                            {"new_execution_digest", new_envelope()["execution_digest"]},
                            {"authorization_id", kAuthorization},
                            {"idempotent", true}}));
}

struct Refusal {
  const char* name;
  const char* sql;  // run on the seed's database first ("" for none)
  std::function<void(Json&)> mutate;
  std::string task_id = kTaskId;
  const char* code = "";
};

TEST_F(RebindStore, RefusalsBeforeResolutionNeverAskTheBridgeAndWriteNothing) {
  // Given a request or task that fails a snapshot check, we should refuse with its code before
  // the Bridge is asked, leaving the task, events and receipts as they were.
  const auto none = [](Json&) {};
  const Json deterministic_metadata = {{"execution", new_envelope()}};
  const std::vector<Refusal> cases = {
      {"task id outside the pattern", "", none, "t", "TASK_ID_INVALID"},
      {"task id with a slash", "", none, "task/rebind-a", "TASK_ID_INVALID"},
      {"another authorization id", "",
       [](Json& b) { b["authorization_id"] = "someone-else-20260818"; }, kTaskId,
       "EXECUTION_REBIND_AUTHORIZATION_ID_MISMATCH"},
      {"unknown task", "", none, "task-rebind-b", "TASK_NOT_FOUND"},
      {"stale revision", "", [](Json& b) { b["expected_revision"] = 4; }, kTaskId,
       "EXECUTION_REBIND_CAS_MISMATCH"},
      {"stale attempt", "", [](Json& b) { b["expected_attempt"] = 1; }, kTaskId,
       "EXECUTION_REBIND_CAS_MISMATCH"},
      {"only an expiry left", "UPDATE tasks SET lease_expires_at='2099-01-01T00:00:00Z'", none,
       kTaskId, "EXECUTION_REBIND_ACTIVE_LEASE_DENY"},
      {"verification not JSON", "UPDATE tasks SET verification_json='{'", none, kTaskId,
       "TASK_VERIFICATION_INVALID"},
      {"never verified", "UPDATE tasks SET verification_json=NULL", none, kTaskId,
       "EXECUTION_REBIND_VERIFICATION_DRIFT"},
      {"metadata NULL", "UPDATE tasks SET metadata_json=NULL", none, kTaskId,
       "TASK_METADATA_INVALID"},
      {"metadata a list", "UPDATE tasks SET metadata_json='[]'", none, kTaskId,
       "TASK_METADATA_INVALID"},
      {"no execution", "UPDATE tasks SET metadata_json='{\"execution\":\"x\"}'", none, kTaskId,
       "TASK_EXECUTION_METADATA_MISSING"},
      {"tampered envelope",
       "UPDATE tasks SET metadata_json=json_set(metadata_json,'$.execution.adapter',"
       "'source_capture')",
       none, kTaskId, "EXECUTION_DIGEST_MISMATCH"},
      {"owner expects another old digest", "",
       [](Json& b) { b["expected_old_execution_digest"] = kOtherHex; }, kTaskId,
       "EXECUTION_REBIND_OLD_DIGEST_DRIFT"},
      {"projection names another digest",
       "UPDATE tasks SET metadata_json=json_set(metadata_json,"
       "'$.execution_projection.execution_digest','"
       "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc')",
       none, kTaskId, "EXECUTION_REBIND_PROJECTION_DRIFT"},
  };
  for (const auto& item : cases) {
    SCOPED_TRACE(item.name);
    remake_db();
    if (*item.sql != '\0') exec_sql(path(), item.sql);
    Json body = request_body();
    item.mutate(body);
    int asked = 0;
    auto rebind_store = store([&asked](const std::string&, const Json&) {
      ++asked;
      return new_envelope();
    });
    EXPECT_EQ(code_of([&] {
                rebind_store.rebind(item.task_id, ExecutionRebindRequest::from_mapping(body));
              }),
              item.code);
    EXPECT_EQ(asked, 0);
    EXPECT_EQ(count("task_events"), 0);
    EXPECT_EQ(count("task_execution_rebinds"), 0);
    EXPECT_EQ(task_row()[2], "5");
  }
}

TEST_F(RebindStore, StoredDeterministicEnvelopeIsNotRebound) {
  // Given a task that already runs a deterministic envelope, only source_capture may be
  // replaced: we should refuse even when every digest the owner names is right.
  make_db();
  const Json metadata = {{"execution", new_envelope()}};
  {
    SQLite::Database db(path().string(), SQLite::OPEN_READWRITE);
    SQLite::Statement update(db, "UPDATE tasks SET metadata_json=?");
    update.bind(1, metadata.dump());
    update.exec();
  }
  Json body = request_body();
  body["expected_old_execution_digest"] = new_envelope()["execution_digest"];
  body["expected_new_execution_digest"] = kOtherHex;
  EXPECT_EQ(code_of([&] { store().rebind(kTaskId, ExecutionRebindRequest::from_mapping(body)); }),
            "EXECUTION_REBIND_SOURCE_CAPTURE_REQUIRED");
}

TEST_F(RebindStore, ResolvedDigestMustBeTheOwnersExpectation) {
  // Given a Bridge plan whose digest is not the one the owner approved, we should refuse.
  make_db();
  Json body = request_body();
  body["expected_new_execution_digest"] = kOtherHex;
  EXPECT_EQ(code_of([&] { store().rebind(kTaskId, ExecutionRebindRequest::from_mapping(body)); }),
            "EXECUTION_REBIND_NEW_DIGEST_DRIFT");
  expect_untouched();
}

TEST_F(RebindStore, BridgeRefusalsPassThroughAndWriteNothing) {
  // Given a Bridge that refuses, we should give its code and status and write nothing.
  make_db();
  const auto refusing = [](const std::string&, const Json&) -> Json {
    throw Error::remote("EXECUTION_PLAN_NOT_REGISTERED", 409);
  };
  try {
    store(refusing).rebind(kTaskId, request());
    ADD_FAILURE() << "the rebind did not throw";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), "EXECUTION_PLAN_NOT_REGISTERED");
    EXPECT_EQ(error.http_status(), 409);
  }
  expect_untouched();
}

TEST_F(RebindStore, BridgeIsAskedOutsideTheWriteLockWithTheTasksRequirement) {
  // Given a Bridge call in flight, the scheduler must still be able to write the database: we
  // should hold no lock then, and ask for the task's stored required capabilities.
  make_db();
  std::string asked_task;
  Json asked_capabilities;
  std::string writer_error = "not run";
  const auto resolver = [&](const std::string& task_id, const Json& capabilities) {
    asked_task = task_id;
    asked_capabilities = capabilities;
    try {
      SQLite::Database other(path().string(), SQLite::OPEN_READWRITE, 0);
      other.exec("BEGIN IMMEDIATE");
      other.exec("ROLLBACK");
      writer_error.clear();
    } catch (const SQLite::Exception& error) {
      writer_error = error.what();
    }
    return new_envelope();
  };
  EXPECT_EQ(store(resolver).rebind(kTaskId, request())["revision"], 6);
  EXPECT_EQ(writer_error, "");
  EXPECT_EQ(asked_task, kTaskId);
  EXPECT_EQ(asked_capabilities, envelope_test::rebind_scope());
}

TEST_F(RebindStore, RequirementFallsBackToTheEnvelopeScope) {
  // Given a task with no usable required_capabilities, we should ask with the stored
  // envelope's capability scope; stored names are stripped and blanks dropped.
  make_db();
  Json asked;
  const auto resolver = [&asked](const std::string&, const Json& capabilities) {
    asked = capabilities;
    return new_envelope();
  };
  exec_sql(path(), "UPDATE tasks SET required_capabilities_json='[\" git.read \",\"  \"]'");
  store(resolver).rebind(kTaskId, request(seed_verification(), 5, "rebind-task-a-v1"));
  EXPECT_EQ(asked, (Json{"git.read"}));

  remake_db();
  exec_sql(path(), "UPDATE tasks SET required_capabilities_json='{\"not\":\"a list\"}'");
  store(resolver).rebind(kTaskId, request());
  EXPECT_EQ(asked, old_envelope()["capability_scope"]);
}

TEST_F(RebindStore, ChangeWhileTheBridgeAnswersIsACasMismatch) {
  // Given a transition committed by the scheduler while the Bridge is being asked (a claim,
  // here), the re-read under the write lock should refuse and write nothing.
  make_db();
  const auto racing = [this](const std::string&, const Json&) {
    exec_sql(path(),
             "UPDATE tasks SET status='CLAIMED', revision=6, lease_token_hash='h', "
             "lease_expires_at='2099-01-01T00:00:00Z'");
    return new_envelope();
  };
  EXPECT_EQ(code_of([&] { store(racing).rebind(kTaskId, request()); }),
            "EXECUTION_REBIND_CAS_MISMATCH");
  EXPECT_EQ(count("task_events"), 0);
  EXPECT_EQ(count("task_execution_rebinds"), 0);
  EXPECT_EQ(Json::parse(task_row()[4])["execution"], old_envelope());
}

TEST_F(RebindStore, ChangeTheUpdatePredicateCannotSeeIsStillRefused) {
  // Given a write during resolution that keeps status, revision and attempt (the stored
  // verification rewritten), the full re-validation under the lock should still refuse.
  make_db();
  const auto racing = [this](const std::string&, const Json&) {
    exec_sql(path(), "UPDATE tasks SET verification_json='{\"decision\":\"FAIL\"}'");
    return new_envelope();
  };
  EXPECT_EQ(code_of([&] { store(racing).rebind(kTaskId, request()); }),
            "EXECUTION_REBIND_VERIFICATION_DRIFT");
  EXPECT_EQ(count("task_events"), 0);
  EXPECT_EQ(count("task_execution_rebinds"), 0);
  EXPECT_EQ(Json::parse(task_row()[4])["execution"], old_envelope());
}

TEST_F(RebindStore, ConcurrentIdenticalRequestsApplyOnce) {
  // Given 12 threads sending the same request at once, we should apply it exactly once and
  // replay it to every other thread.
  make_db();
  auto rebind_store = store();
  constexpr int kThreads = 12;
  std::latch start(kThreads);
  std::mutex mutex;
  std::vector<std::string> outcomes;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      std::string outcome;
      try {
        const Json result = rebind_store.rebind(kTaskId, request());
        outcome = result["idempotent"] ? "replayed" : "applied";
      } catch (const Error& error) {
        outcome = error.code();
      }
      const std::lock_guard lock(mutex);
      outcomes.push_back(outcome);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), "applied"), 1);
  EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), "replayed"), kThreads - 1);
  EXPECT_EQ(count("task_events"), 1);
  EXPECT_EQ(count("task_execution_rebinds"), 1);
  EXPECT_EQ(task_row()[2], "6");
}

struct Schema {
  const char* name;
  const char* sql;
  const char* code;
};

TEST_F(RebindStore, DatabasesThatAreNotATaskPlaneAreRefused) {
  // Given a database without the columns or tables a rebind needs, we should refuse with the
  // seed's schema codes and write nothing, whether the gap is found before or after the Bridge.
  const std::vector<Schema> cases = {
      {"no lease expiry column", "ALTER TABLE tasks DROP COLUMN lease_expires_at",
       "TASK_SCHEMA_EXECUTION_REBIND_UNSUPPORTED"},
      {"no tasks table", "DROP TABLE tasks", "TASK_SCHEMA_EXECUTION_REBIND_UNSUPPORTED"},
      {"metadata under another name", "ALTER TABLE tasks RENAME COLUMN metadata_json TO metadata",
       "TASK_METADATA_SCHEMA_UNSUPPORTED"},
      {"no event table", "DROP TABLE task_events", "TASK_EVENT_TABLE_UNSUPPORTED"},
      {"events without an actor", "ALTER TABLE task_events DROP COLUMN agent_id",
       "TASK_EVENT_TABLE_UNSUPPORTED"},
      {"events without a payload", "ALTER TABLE task_events DROP COLUMN payload_json",
       "TASK_EVENT_PAYLOAD_UNSUPPORTED"},
  };
  for (const auto& item : cases) {
    SCOPED_TRACE(item.name);
    remake_db();
    exec_sql(path(), item.sql);
    EXPECT_EQ(code_of([&] { store().rebind(kTaskId, request()); }), item.code);
    EXPECT_EQ(count("task_execution_rebinds"), 0);
    if (std::string_view(item.sql).find("tasks") == std::string_view::npos) {
      EXPECT_EQ(task_row()[2], "5");
    }
  }
}

}  // namespace
}  // namespace aios::rebind_test
