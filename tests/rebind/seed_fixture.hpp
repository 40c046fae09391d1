#pragma once
// The seed's test_agent_task_execution_rebind.py fixture: its minimal two-table schema (tasks,
// task_events, exactly as the seed creates them), one QUEUED task after NEEDS_REWORK carrying
// the seed's source_capture envelope, the owner's request for the seed's deterministic plan, and
// raw SQL readers so a test can assert exactly what was (not) written.

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/rebind.hpp"
#include "aios/store.hpp"
#include "aios/sys.hpp"
#include "envelope/test_fixtures.hpp"
#include "store/sqlite/database.hpp"
#include "support/code_of.hpp"
#include "support/daemon.hpp"

namespace aios::rebind_test {

using Json = nlohmann::json;
using aios::test::code_of;
using aios::test::kOk;
using envelope_test::kRebindJobId;
using envelope_test::kRebindTaskId;
using envelope_test::new_envelope;
using envelope_test::old_envelope;

inline constexpr std::string_view kAuthorization = "owner-execution-rebind-20260818";
inline const std::string kTaskId(kRebindTaskId);

// The seed's canon(): sha256 of json.dumps(value, sort_keys=True, separators=(",", ":")).
inline std::string canon(const Json& value) {
  return sha256_hex(value.dump());
}

inline Json seed_verification() {
  return {{"decision", "NEEDS_REWORK"}, {"reason", "WRONG_ENVELOPE_BEFORE_PLAN"}};
}

struct SeedTask {
  std::string status = "QUEUED";
  std::int64_t revision = 5;
  std::int64_t attempt = 2;
  bool lease = false;
};

// Creates the seed's schema and task at `path` with Python's own SQL (no migrations).
inline void make_seed_db(const std::filesystem::path& path, const SeedTask& task = {}) {
  SQLite::Database db(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  db.exec(R"sql(
    CREATE TABLE tasks(
      task_id TEXT PRIMARY KEY,
      status TEXT NOT NULL,
      attempt INTEGER NOT NULL,
      max_attempts INTEGER NOT NULL,
      revision INTEGER NOT NULL,
      claimed_by TEXT,
      lease_token_hash TEXT,
      lease_expires_at TEXT,
      verification_json TEXT,
      result_json TEXT,
      metadata_json TEXT,
      required_capabilities_json TEXT
    );
    CREATE TABLE task_events(
      event_id INTEGER PRIMARY KEY AUTOINCREMENT,
      task_id TEXT,
      event_type TEXT,
      agent_id TEXT,
      payload_json TEXT,
      created_at TEXT
    );
  )sql");
  const Json old = old_envelope();
  const Json metadata = {{"execution", old},
                         {"execution_projection",
                          {{"schema", "aios.online-agent.task-projection.v1"},
                           {"task_id", kTaskId},
                           {"job_id", kRebindJobId},
                           {"execution_digest", old["execution_digest"]}}},
                         {"preserved", {{"value", "unchanged"}}}};
  SQLite::Statement insert(db, "INSERT INTO tasks VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  insert.bind(1, kTaskId);
  insert.bind(2, task.status);
  insert.bind(3, task.attempt);
  insert.bind(4, 3);
  insert.bind(5, task.revision);
  insert.bind(6, task.lease ? "active-worker" : "previous-worker");
  if (task.lease) {
    insert.bind(7, "lease-hash");
    insert.bind(8, "2099-01-01T00:00:00Z");
  } else {
    insert.bind(7);
    insert.bind(8);
  }
  insert.bind(9, seed_verification().dump());
  insert.bind(10, Json{{"status", "SUCCEEDED"}}.dump());
  insert.bind(11, metadata.dump());
  insert.bind(12, envelope_test::rebind_scope().dump());
  insert.exec();
}

// The seed's request(verification, revision=, old=, new=, key=) as the wire mapping.
inline Json request_body(const Json& verification = seed_verification(), std::int64_t revision = 5,
                         const std::string& key = "rebind-task-a-v1") {
  return {{"expected_status", "QUEUED"},
          {"expected_revision", revision},
          {"expected_attempt", 2},
          {"previous_verification_sha256", canon(verification)},
          {"expected_old_execution_digest", old_envelope()["execution_digest"]},
          {"expected_new_execution_digest", new_envelope()["execution_digest"]},
          {"authorization_id", kAuthorization},
          {"idempotency_key", key},
          {"reason", "projection-before-plan race recovery"}};
}

inline ExecutionRebindRequest request(const Json& verification = seed_verification(),
                                      std::int64_t revision = 5,
                                      const std::string& key = "rebind-task-a-v1") {
  return ExecutionRebindRequest::from_mapping(request_body(verification, revision, key));
}

// The seed's resolver(): the registered deterministic plan, whatever is asked.
inline Json seed_resolver(const std::string&, const Json&) {
  return new_envelope();
}

// A seed database in a temporary directory, opened the way the daemon opens it (no
// migrations), with a ManualClock for the rebind store.
class SeedDbTest : public ::testing::Test {
 protected:
  SeedDbTest() : dir_("aios-rebind"), clock_(TimePoint(std::chrono::seconds(1900000000))) {}

  // Creates the database; call once per test, before store().
  void make_db(const SeedTask& task = {}) {
    make_seed_db(path(), task);
    db_ = std::make_unique<Database>(DatabaseOptions{.path = path(), .migrate = false});
    sqlite_ = std::make_unique<store::SqliteStore>(*db_, clock_);
  }

  // Closes the database, deletes it and makes a new one, for table tests.
  void remake_db(const SeedTask& task = {}) {
    sqlite_.reset();
    db_.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::filesystem::remove(path().string() + suffix);
    }
    make_db(task);
  }

  std::filesystem::path path() const { return dir_ / "state.sqlite3"; }

  ExecutionRebindStore store(ExecutionResolver resolver = seed_resolver) {
    return {*sqlite_, std::move(resolver), std::string(kAuthorization),
            system_environment().faults};
  }

  // Every row of `sql`, each column as text ("NULL" for NULL).
  std::vector<std::vector<std::string>> rows(const std::string& sql) {
    std::vector<std::vector<std::string>> out;
    db_->read([&](SQLite::Database& db) {
      SQLite::Statement query(db, sql);
      while (query.executeStep()) {
        std::vector<std::string> row;
        for (int c = 0; c < query.getColumnCount(); ++c) {
          const auto column = query.getColumn(c);
          row.push_back(column.isNull() ? std::string("NULL") : column.getString());
        }
        out.push_back(std::move(row));
      }
    });
    return out;
  }

  std::int64_t count(const std::string& table) {
    return std::stoll(rows("SELECT COUNT(*) FROM " + table).at(0).at(0));
  }

  // status, attempt, revision, claimed_by, metadata_json of the seed's task.
  std::vector<std::string> task_row() {
    return rows("SELECT status,attempt,revision,claimed_by,metadata_json FROM tasks").at(0);
  }

  // Asserts that the task, its events and the receipts are as make_db left them.
  void expect_untouched(const SeedTask& task = {}) {
    const auto row = task_row();
    EXPECT_EQ(row[0], task.status);
    EXPECT_EQ(row[2], std::to_string(task.revision));
    EXPECT_EQ(Json::parse(row[4])["execution"], old_envelope());
    EXPECT_EQ(count("task_events"), 0);
    EXPECT_EQ(count("task_execution_rebinds"), 0);
  }

  test::ScopedTempDir dir_;
  ManualClock clock_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<store::SqliteStore> sqlite_;  // over db_
};

}  // namespace aios::rebind_test
