// The task-plane database: durability pragmas, idempotent migrations, several Database
// objects (processes) on one file, rollback of a failed write, error mapping, and migration of
// the seed's minimal schema fixture (test_agent_task_execution_rebind.py's make_db).

#include <SQLiteCpp/SQLiteCpp.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fleet/fleet_fixture.hpp"
#include "store/sqlite/schema.sql.hpp"

namespace aios::fleet_test {
namespace {

constexpr int kLatestSchema = static_cast<int>(store::kMigrations.size());

using Rows = std::vector<std::vector<std::string>>;

class StoreTest : public ::testing::Test {
 protected:
  std::filesystem::path path() const { return dir_.path() / "state.sqlite3"; }

  std::int64_t count(Database& db, const std::string& sql) {
    std::int64_t value = -1;
    db.read([&](SQLite::Database& connection) { value = connection.execAndGet(sql).getInt64(); });
    return value;
  }

  ScopedTempDir dir_;
};

// The task plane over a test's database, as the scheduler runs it.
struct PlaneOver {
  explicit PlaneOver(Database& db) : store(db, clock), plane(store, system_environment()) {}
  // A new task of the default spec under `task_id`; its create's status.
  int create(const std::string& task_id) {
    TaskSpec spec;
    spec.task_id = task_id;
    return plane.create_task(fleet::task_submission_of(task_body(spec))).first;
  }
  ManualClock clock{start_time()};
  store::SqliteStore store;
  TaskPlane plane;
};

TEST_F(StoreTest, FileIsWalAndEveryConnectionIsSynchronousFull) {
  // Given a fresh database, we should find journal_mode=wal persisted in the file (seen by a
  // plain connection) and synchronous=FULL (2) and temp_store=MEMORY on the pooled connections.
  Database db(DatabaseOptions{.path = path(), .connections = 3});

  SQLite::Database plain(path().string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(plain.execAndGet("PRAGMA journal_mode").getString(), "wal");
  // Take all three pooled connections, in turn, by nesting reads.
  std::vector<int> synchronous;
  db.read([&](SQLite::Database& a) {
    synchronous.push_back(a.execAndGet("PRAGMA synchronous").getInt());
    db.read([&](SQLite::Database& b) {
      synchronous.push_back(b.execAndGet("PRAGMA synchronous").getInt());
      db.read([&](SQLite::Database& c) {
        synchronous.push_back(c.execAndGet("PRAGMA synchronous").getInt());
        EXPECT_EQ(c.execAndGet("PRAGMA foreign_keys").getInt(), 1);
        // Statement journals of the group commit's savepoints stay in memory (2).
        EXPECT_EQ(c.execAndGet("PRAGMA temp_store").getInt(), 2);
      });
    });
  });
  EXPECT_EQ(synchronous, (std::vector<int>{2, 2, 2}));
}

TEST_F(StoreTest, InMemoryDatabaseIsRefusedForDurability) {
  // Given a path that can never be WAL (":memory:"), we should refuse to run.
  EXPECT_EQ(code_of([] { Database db(DatabaseOptions{.path = ":memory:"}); }),
            "STORE_DURABILITY_UNAVAILABLE");
}

TEST_F(StoreTest, MissingDirectoryIsStoreUnavailable) {
  // Given a database path inside a directory that does not exist, we should fail with
  // STORE_UNAVAILABLE and create nothing.
  const auto missing = dir_.path() / "missing" / "state.sqlite3";

  EXPECT_EQ(code_of([&] { Database db(DatabaseOptions{.path = missing}); }), "STORE_UNAVAILABLE");
  EXPECT_FALSE(std::filesystem::exists(missing.parent_path()));
}

TEST_F(StoreTest, MigrationsAreIdempotent) {
  // Given the same file opened again (after and while another Database holds it), we should
  // stay at schema version 1 with one schema_migrations row, and keep the data.
  {
    Database first(DatabaseOptions{.path = path()});
    EXPECT_EQ(first.schema_version(), kLatestSchema);
    first.write([](SQLite::Database& db) {
      db.exec("INSERT INTO task_events(task_id,event_type) VALUES ('t-1','MARK')");
    });
  }
  Database second(DatabaseOptions{.path = path()});
  Database third(DatabaseOptions{.path = path()});

  EXPECT_EQ(second.schema_version(), kLatestSchema);
  EXPECT_EQ(third.schema_version(), kLatestSchema);
  EXPECT_EQ(count(third, "SELECT COUNT(*) FROM schema_migrations"), kLatestSchema);
  EXPECT_EQ(count(third, "SELECT COUNT(*) FROM task_events"), 1);
}

TEST_F(StoreTest, SecondDatabaseSeesCommittedWrites) {
  // Given two Database objects on one file (two processes), we should see in one what the other
  // committed, including a task created and claimed through two TaskPlanes.
  Database one(DatabaseOptions{.path = path()});
  Database two(DatabaseOptions{.path = path(), .migrate = false});
  ManualClock clock(start_time());
  store::SqliteStore store_one(one, clock);
  store::SqliteStore store_two(two, clock);
  TaskPlane plane_one(store_one, system_environment());
  TaskPlane plane_two(store_two, system_environment());
  const Json agent_created = plane_one.create_agent(
      fleet::agent_grant_of({{"agent_id", "agent-x"}, {"granted_capabilities", {"code.read"}}}));
  TaskSpec spec;
  spec.task_id = "shared-1";
  ASSERT_EQ(plane_one.create_task(fleet::task_submission_of(task_body(spec))).first, 201);

  const auto agent = plane_two.authenticate_agent(agent_created["token"].get<std::string>());
  ASSERT_TRUE(agent.has_value());
  plane_two.register_worker(
      *agent,
      fleet::worker_registration_of({{"worker_id", "worker-x"}, {"capabilities", {"code.read"}}}));
  const auto claimed = plane_two.claim_next(*agent, "worker-x");

  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ((*claimed)["task_id"], "shared-1");
  EXPECT_EQ(plane_one.task_view("shared-1", nullptr)["status"], "CLAIMED");
  EXPECT_EQ(plane_one.task_view("shared-1", nullptr)["claimed_by"], "worker-x");
}

TEST_F(StoreTest, FailedWriteRollsBackEverything) {
  // Given a write body that inserts and then fails (an exception of its own, or a constraint),
  // we should find none of its rows, and the error should come out as it was or as STORE_*.
  Database db(DatabaseOptions{.path = path()});
  const std::string insert =
      "INSERT INTO agents(agent_id,token_sha256,granted_capabilities_json,created_at) "
      "VALUES ('agent-1','hash-1','[]','now')";

  EXPECT_THROW(db.write([&](SQLite::Database& connection) {
    connection.exec(insert);
    connection.exec("INSERT INTO task_events(task_id,event_type) VALUES ('t','E')");
    throw std::runtime_error("body failed");
  }),
               std::runtime_error);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM agents"), 0);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM task_events"), 0);

  EXPECT_EQ(code_of([&] {
              db.write([&](SQLite::Database& connection) {
                connection.exec("INSERT INTO task_events(task_id,event_type) VALUES ('t','E')");
                connection.exec(insert);
                connection.exec(insert);  // primary key violation
              });
            }),
            "STORE_FAILURE");
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM agents"), 0);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM task_events"), 0);

  // The connection is usable again afterwards (no transaction left open on it).
  for (int i = 0; i < 8; ++i) {
    db.write([&](SQLite::Database& connection) {
      connection.exec("INSERT INTO task_events(task_id,event_type) VALUES ('t','OK')");
    });
  }
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM task_events"), 8);
}

TEST_F(StoreTest, LockHeldPastTheBusyTimeoutIsStoreBusy) {
  // Given another process holding the write lock longer than the busy timeout, we should fail
  // the write with STORE_BUSY and write nothing.
  Database db(DatabaseOptions{.path = path(), .busy_timeout = std::chrono::milliseconds(50)});
  SQLite::Database other(path().string(), SQLite::OPEN_READWRITE);
  other.exec("BEGIN IMMEDIATE");

  EXPECT_EQ(code_of([&] {
              db.write([](SQLite::Database& connection) {
                connection.exec("INSERT INTO task_events(task_id,event_type) VALUES ('t','E')");
              });
            }),
            "STORE_BUSY");
  other.exec("ROLLBACK");
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM task_events"), 0);
}

// The seed's make_db(): the two tables exactly as test_agent_task_execution_rebind.py creates
// them, with its one task row (status QUEUED, revision 5, attempt 2, NEEDS_REWORK).
constexpr const char* kSeedSchema = R"sql(
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
)sql";

constexpr const char* kSeedVerification =
    R"({"decision": "NEEDS_REWORK", "reason": "WRONG_ENVELOPE_BEFORE_PLAN"})";
constexpr const char* kSeedMetadata = R"({"preserved": {"value": "unchanged"}})";

void make_seed_db(const std::filesystem::path& path) {
  SQLite::Database seed(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  seed.exec(kSeedSchema);
  SQLite::Statement insert(seed, "INSERT INTO tasks VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  insert.bind(1, "task-rebind-a");
  insert.bind(2, "QUEUED");
  insert.bind(3, 2);
  insert.bind(4, 3);
  insert.bind(5, 5);
  insert.bind(6, "previous-worker");
  insert.bind(7);
  insert.bind(8);
  insert.bind(9, kSeedVerification);
  insert.bind(10, R"({"status": "SUCCEEDED"})");
  insert.bind(11, kSeedMetadata);
  insert.bind(12, R"(["git.read", "git.test", "governed.write.branch", "governed.write.file"])");
  insert.exec();
  seed.exec(
      "INSERT INTO task_events(task_id,event_type,agent_id,payload_json,created_at) VALUES "
      "('task-rebind-a','TASK_VERIFIED','owner','{}','2026-01-01T00:00:00+00:00')");
}

TEST_F(StoreTest, SeedMinimalSchemaIsMigratedInPlace) {
  // Given the seed's minimal tasks/task_events fixture, we should migrate it: the row and the
  // event kept byte for byte, our columns added with their defaults, our tables created.
  make_seed_db(path());

  Database db(DatabaseOptions{.path = path()});

  EXPECT_EQ(db.schema_version(), kLatestSchema);
  std::set<std::string> columns;
  std::set<std::string> tables;
  std::optional<store::TaskRow> row;
  db.read([&](SQLite::Database& connection) {
    SQLite::Statement info(connection, "PRAGMA table_info(tasks)");
    while (info.executeStep()) columns.insert(info.getColumn(1).getString());
    SQLite::Statement names(connection, "SELECT name FROM sqlite_master WHERE type='table'");
    while (names.executeStep()) tables.insert(names.getColumn(0).getString());
    row = store::load_task(connection, "task-rebind-a");
  });
  for (const char* column : {"task_id",
                             "status",
                             "attempt",
                             "max_attempts",
                             "revision",
                             "claimed_by",
                             "lease_token_hash",
                             "lease_expires_at",
                             "verification_json",
                             "result_json",
                             "metadata_json",
                             "required_capabilities_json",
                             "seq",
                             "job_id",
                             "action",
                             "adapter",
                             "priority",
                             "scope_key",
                             "scope_weight",
                             "claim_id",
                             "execution_digest",
                             "capability_scope_json",
                             "task_json",
                             "request_sha256",
                             "created_at",
                             "updated_at"}) {
    EXPECT_TRUE(columns.contains(column)) << column;
  }
  for (const char* table :
       {"claims", "agents", "workers", "results", "fleet_dispatches", "fleet_worker_capacity",
        "fleet_scope_state", "fleet_task_quarantine", "task_execution_rebinds"}) {
    EXPECT_TRUE(tables.contains(table)) << table;
  }
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->status, "QUEUED");
  EXPECT_EQ(row->attempt, 2);
  EXPECT_EQ(row->max_attempts, 3);
  EXPECT_EQ(row->revision, 5);
  EXPECT_EQ(row->claimed_by, "previous-worker");
  EXPECT_EQ(row->verification_json, kSeedVerification);
  EXPECT_EQ(row->metadata_json, kSeedMetadata);
  EXPECT_EQ(row->priority, 0);
  EXPECT_EQ(row->scope_key, "global");
  EXPECT_EQ(row->scope_weight, 1.0);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM task_events WHERE event_type='TASK_VERIFIED'"), 1);

  // Reopening the migrated file migrates nothing more.
  Database again(DatabaseOptions{.path = path()});
  EXPECT_EQ(again.schema_version(), kLatestSchema);
}

TEST_F(StoreTest, SeedRebindCasStillAppliesAfterMigration) {
  // Given the migrated seed fixture, we should accept the seed rebind daemon's exact CAS
  // statement (same columns, IS NULL predicates) and then a new task beside the old row.
  make_seed_db(path());
  Database db(DatabaseOptions{.path = path()});
  int changed = 0;

  db.write([&](SQLite::Database& connection) {
    SQLite::Statement cas(connection,
                          "UPDATE tasks SET \"metadata_json\"=?, revision=?, claimed_by=NULL, "
                          "lease_token_hash=NULL, lease_expires_at=NULL "
                          "WHERE task_id=? AND status=? AND revision=? AND attempt=? "
                          "AND claimed_by IS ? AND lease_token_hash IS NULL AND "
                          "lease_expires_at IS NULL");
    cas.bind(1, R"({"rebound":true})");
    cas.bind(2, 6);
    cas.bind(3, "task-rebind-a");
    cas.bind(4, "QUEUED");
    cas.bind(5, 5);
    cas.bind(6, 2);
    cas.bind(7, "previous-worker");
    changed = cas.exec();
  });

  EXPECT_EQ(changed, 1);
  PlaneOver over(db);
  EXPECT_EQ(over.create("after-migration"), 201);
  EXPECT_EQ(over.plane.task_view("after-migration", nullptr)["status"], "QUEUED");
}

TEST_F(StoreTest, AWriterOfTheMetadataAloneMovesTheExecutionColumns) {
  // Given a task, and a writer that rewrites its metadata alone (the seed's rebind), we should
  // find the narrow columns the fleet decides on equal to the new execution; a metadata with no
  // execution object leaves them; rows a pre-10 file left stale are brought in line on upgrade.
  Database db(DatabaseOptions{.path = path()});
  PlaneOver over(db);
  ASSERT_EQ(over.create("task-columns"), 201);
  const auto columns = [&] {
    Rows rows;
    db.read([&](SQLite::Database& connection) {
      SQLite::Statement query(connection,
                              "SELECT execution_digest, action, adapter, capability_scope_json "
                              "FROM tasks WHERE task_id='task-columns'");
      while (query.executeStep()) {
        rows.push_back({});
        for (int i = 0; i < 4; ++i) rows.back().push_back(query.getColumn(i).getString());
      }
    });
    return rows;
  };
  const auto write = [&](const std::string& sql) {
    db.write([&](SQLite::Database& connection) { connection.exec(sql); });
  };
  const std::string digest(64, 'c');
  const Rows rebound{{digest, "deterministic", "deterministic", R"(["code.read","git.read"])"}};
  const std::string rebind =
      "UPDATE tasks SET metadata_json='{\"execution\":{\"execution_digest\":\"" + digest +
      "\",\"action\":\"deterministic\",\"adapter\":\"deterministic\","
      "\"capability_scope\":[\"code.read\",\"git.read\"]}}', revision=revision+1";

  write(rebind);
  EXPECT_EQ(columns(), rebound);
  write(R"(UPDATE tasks SET metadata_json='{"execution":"x"}')");
  EXPECT_EQ(columns(), rebound);

  // A file from before schema 10: no trigger, a metadata-only write left the columns stale.
  write("DROP TRIGGER tasks_execution_columns");
  write(rebind + ", adapter='stale'");
  write("ALTER TABLE tasks DROP COLUMN requeues");      // schema 15's
  write("ALTER TABLE workers DROP COLUMN stopped_at");  // and 16's
  write("DELETE FROM schema_migrations WHERE version>=10");
  Database upgraded(DatabaseOptions{.path = path()});
  EXPECT_EQ(upgraded.schema_version(), kLatestSchema);
  EXPECT_EQ(columns(), rebound);
}

TEST_F(StoreTest, ADamagedScopeLoadsUnusableAndADamagedWorkerColumnIsAStoreFailure) {
  // Given a task whose capability scope column was written as no list of names, we should load
  // the task with no scope (nothing is claimed under it, the other tasks stay claimable); given
  // a worker whose capabilities column was, we should refuse to load it with STORE_FAILURE
  // rather than decide on part of it.
  Database db(DatabaseOptions{.path = path()});
  PlaneOver over(db);
  ASSERT_EQ(over.create("task-damaged"), 201);
  over.store.write([&](store::Transaction& tx) {
    tx.register_worker({.worker_id = "worker-damaged",
                        .agent_id = "agent",
                        .capabilities = {"code.read"},
                        .allowed_adapters = {"deterministic"},
                        .labels = {},
                        .tenants = {},
                        .registered_at = "2026-12-06T00:00:00Z",
                        .seen_at = 1,
                        .max_slots = 1,
                        .failure_domain = "default"});
  });
  const auto load_task = [&] {
    std::optional<store::TaskRow> row;
    over.store.read([&](store::Transaction& tx) { row = tx.load_task("task-damaged"); });
    return row;
  };
  ASSERT_TRUE(load_task()->capability_scope.has_value());
  for (const char* damaged : {R"({"not":"a list"})", R"(["code.read",7])", "[not json"}) {
    db.write([&](SQLite::Database& connection) {
      SQLite::Statement update(connection, "UPDATE tasks SET capability_scope_json=?");
      update.bind(1, damaged);
      update.exec();
    });
    EXPECT_FALSE(load_task()->capability_scope.has_value()) << damaged;
  }

  db.write([&](SQLite::Database& connection) {
    connection.exec(R"(UPDATE workers SET capabilities_json='{"code.read":true}')");
  });
  EXPECT_EQ(code_of([&] {
              over.store.read([&](store::Transaction& tx) { tx.load_worker("worker-damaged", 1); });
            }),
            "STORE_FAILURE");
}

TEST_F(StoreTest, MigratedRowsAreListedWithNewOnes) {
  // Given the migrated seed fixture (its row has no queue sequence number) and one new task,
  // we should list both to the owner, the old row first.
  make_seed_db(path());
  Database db(DatabaseOptions{.path = path()});
  PlaneOver over(db);
  ASSERT_EQ(over.create("after-migration"), 201);

  std::vector<std::string> listed;
  const Json all = over.plane.list_tasks({}, 10, 0);
  for (const auto& task : all["tasks"]) listed.push_back(task["task_id"]);
  std::vector<std::string> queued;
  const Json queued_only = over.plane.list_tasks({"QUEUED", "", ""}, 10, 0);
  for (const auto& task : queued_only["tasks"]) {
    queued.push_back(task["task_id"]);
  }

  EXPECT_EQ(listed, (std::vector<std::string>{"task-rebind-a", "after-migration"}));
  EXPECT_EQ(queued, (std::vector<std::string>{"task-rebind-a", "after-migration"}));
}

TEST_F(StoreTest, AnotherProcessesAnnouncementWakesTheListenerAndItsOwnDoesNot) {
  // Given two stores on one file (the scheduler and the rebind service), the first listening,
  // we should hear once at start, once for each announcement of the second, and nothing for
  // the listener's own (its process wakes its waiters itself); with nobody listening, an
  // announcement leaves nothing behind.
  const SystemClock clock;
  const auto scheduler = store::open_sqlite_store({.path = path()}, clock);
  const auto rebind = store::open_sqlite_store({.path = path(), .migrate = false}, clock);
  const auto announcement = path().string() + "-queue";
  rebind->announce_queue_change();
  EXPECT_FALSE(std::filesystem::exists(announcement));

  std::mutex mutex;
  std::condition_variable changed;
  int heard = 0;
  const auto heard_at_least = [&](int count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10), [&] { return heard >= count; });
  };
  auto listening = scheduler->listen_queue_changes([&] {
    const std::lock_guard lock(mutex);
    ++heard;
    changed.notify_all();
  });
  ASSERT_NE(listening, nullptr);
  ASSERT_TRUE(heard_at_least(1)) << "a listener hears once at start";

  rebind->announce_queue_change();
  ASSERT_TRUE(heard_at_least(2));
  scheduler->announce_queue_change();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  {
    const std::lock_guard lock(mutex);
    EXPECT_EQ(heard, 2) << "the listener's own announcement wakes nobody";
  }
  rebind->announce_queue_change();
  EXPECT_TRUE(heard_at_least(3));
}

}  // namespace
}  // namespace aios::fleet_test
