// Storage faults through the store: every task-plane operation is run with its n-th write made
// to fail (n = 0, 1, 2, ... until the operation gets through), on SQLite and on PostgreSQL; under
// a SQLITE_BUSY storm from another connection, and on a full disk. Every failing operation must
// throw its STORE_* code and leave the database exactly as it was (no partial transition, no
// orphan event, on PostgreSQL no session left inside a transaction), and the same operation must
// succeed once the fault is gone.
//
// The n-th write fails through triggers armed on every table (RAISE(ABORT) on SQLite, RAISE
// EXCEPTION on PostgreSQL, on the n-th INSERT, UPDATE or DELETE of a row), so the production code
// runs unchanged: on PostgreSQL that includes the statements sent ahead in pipeline mode, whose
// failure is read with a later statement's answer.
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "fleet/fleet_fixture.hpp"
#include "store/postgres/connection.hpp"
#include "support/postgres.hpp"

namespace aios::fleet_test {
namespace {

const std::vector<std::string> kFaultTables = {"tasks",
                                               "task_events",
                                               "claims",
                                               "agents",
                                               "workers",
                                               "results",
                                               "fleet_dispatches",
                                               "fleet_worker_capacity",
                                               "fleet_scope_state",
                                               "fleet_task_quarantine"};

// A backend's fault triggers and its rows, seen from a connection of the test's own.
class FaultPlan {
 public:
  virtual ~FaultPlan() = default;
  // The n-th write (0-based) of the next transaction fails; -1 disarms.
  virtual void arm(int n) = 0;
  // Every row of every table but the plan's own, as text, in a stable order.
  virtual std::string snapshot() = 0;
  // "ok", or what is wrong with the database beyond its rows.
  virtual std::string health() = 0;
};

class SqliteFaultPlan final : public FaultPlan {
 public:
  explicit SqliteFaultPlan(const std::filesystem::path& path)
      : raw_(path.string(), SQLite::OPEN_READWRITE) {
    raw_.setBusyTimeout(30000);
    raw_.exec("CREATE TABLE IF NOT EXISTS fault_plan(remaining INTEGER NOT NULL)");
    raw_.exec("INSERT INTO fault_plan VALUES (-1)");
    for (const auto& table : kFaultTables) {
      for (const char* op : {"INSERT", "UPDATE", "DELETE"}) {
        raw_.exec(std::string("CREATE TRIGGER fault_") + table + "_" + op + " BEFORE " + op +
                  " ON " + table +
                  " WHEN (SELECT remaining FROM fault_plan) >= 0 BEGIN "
                  "UPDATE fault_plan SET remaining = remaining - 1; "
                  "SELECT RAISE(ABORT, 'injected storage fault') "
                  "WHERE (SELECT remaining FROM fault_plan) < 0; END");
      }
    }
  }

  void arm(int n) override {
    SQLite::Statement update(raw_, "UPDATE fault_plan SET remaining=?");
    update.bind(1, n);
    update.exec();
  }

  std::string snapshot() override {
    std::string out;
    std::vector<std::string> tables;
    SQLite::Statement names(raw_,
                            "SELECT name FROM sqlite_master WHERE type='table' AND "
                            "name NOT IN ('fault_plan','sqlite_sequence') ORDER BY name");
    while (names.executeStep()) tables.push_back(names.getColumn(0).getString());
    for (const auto& table : tables) {
      out += "## " + table + "\n";
      SQLite::Statement query(raw_, "SELECT * FROM " + table + " ORDER BY rowid");
      while (query.executeStep()) {
        for (int c = 0; c < query.getColumnCount(); ++c) {
          const auto column = query.getColumn(c);
          out += (column.isNull() ? std::string("NULL") : column.getString()) + "|";
        }
        out += "\n";
      }
    }
    return out;
  }

  std::string health() override { return raw_.execAndGet("PRAGMA integrity_check").getString(); }

 private:
  SQLite::Database raw_;
};

class PostgresFaultPlan final : public FaultPlan {
 public:
  explicit PostgresFaultPlan(const std::string& url) : db_({{"dbname", url}}) {
    db_.exec(
        "CREATE TABLE fault_plan(remaining BIGINT NOT NULL); INSERT INTO fault_plan VALUES (-1);"
        "CREATE FUNCTION fault_step() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "DECLARE remaining_now BIGINT; BEGIN "
        "UPDATE fault_plan SET remaining = remaining - 1 WHERE remaining >= 0 "
        "RETURNING remaining INTO remaining_now; "
        "IF remaining_now < 0 THEN RAISE EXCEPTION 'injected storage fault'; END IF; "
        "RETURN COALESCE(NEW, OLD); END $$");
    for (const auto& table : kFaultTables) {
      db_.exec("CREATE TRIGGER fault_" + table + " BEFORE INSERT OR UPDATE OR DELETE ON " + table +
               " FOR EACH ROW EXECUTE FUNCTION fault_step()");
    }
  }

  void arm(int n) override {
    db_.run("UPDATE fault_plan SET remaining=$1", store::pg::Params().integer(n));
  }

  std::string snapshot() override {
    std::string out;
    const auto tables = db_.exec(
        "SELECT table_name FROM information_schema.tables WHERE table_schema=current_schema() "
        "AND table_type='BASE TABLE' AND table_name<>'fault_plan' ORDER BY table_name");
    for (int t = 0; t < tables.size(); ++t) {
      const auto table = tables.text(t, 0);
      out += "## " + table + "\n";
      const auto rows = db_.exec("SELECT r::text FROM " + table + " r ORDER BY 1");
      for (int r = 0; r < rows.size(); ++r) out += rows.text(r, 0) + "\n";
    }
    return out;
  }

  // A session the store gave back to its pool inside a transaction would run the next one in it.
  std::string health() override {
    const auto open = db_.exec(
                             "SELECT count(*) FROM pg_stat_activity WHERE "
                             "datname=current_database() AND pid<>pg_backend_pid() AND "
                             "state LIKE 'idle in transaction%'")
                          .integer(0, 0);
    return open == 0 ? "ok" : std::to_string(open) + " sessions idle inside a transaction";
  }

 private:
  store::pg::Connection db_;
};

// The PostgreSQL database of a case, made before the plane that runs on it (a base listed
// before PlaneTest) and dropped after it.
struct ScratchPostgres {
  std::unique_ptr<test::ScopedPostgresDatabase> database;
};

class StorageFaultTest : public ScratchPostgres,
                         public PlaneTest,
                         public ::testing::WithParamInterface<std::string> {
 protected:
  StorageFaultTest() : PlaneTest(opener(GetParam(), database)) {}

  void SetUp() override {
    if (GetParam() == "postgresql") {
      if (!database) AIOS_SKIP_WITHOUT_POSTGRES();
      plan_ = std::make_unique<PostgresFaultPlan>(database->url());
    } else {
      plan_ = std::make_unique<SqliteFaultPlan>(db_path());
    }
  }

  // PostgreSQL's store on the plane's clock (not the server's: the cases move time), on a fresh
  // database; none on SQLite or without a server.
  static StoreOpener opener(const std::string& backend,
                            std::unique_ptr<test::ScopedPostgresDatabase>& database) {
    if (backend != "postgresql" || !test::postgres_admin_url()) return {};
    return [&database](const Clock& clock) {
      database = std::make_unique<test::ScopedPostgresDatabase>(*test::postgres_admin_url());
      return store::open_postgres_store(
          {.url = database->url(), .connections = 2, .database_clock = false}, clock);
    };
  }

  // Runs `op` with its n-th write failing for n = 0, 1, ... until it succeeds. Each failure
  // must carry a STORE_* code and leave no trace. Returns how many writes it took.
  int fail_each_write(const std::string& name, const std::function<void()>& op) {
    for (int n = 0; n < 100; ++n) {
      const std::string before = plan_->snapshot();
      plan_->arm(n);
      std::string code = "ok";
      try {
        op();
      } catch (const Error& error) {
        code = error.code();
      }
      plan_->arm(-1);
      if (code == "ok") return n;
      EXPECT_EQ(code, "STORE_FAILURE") << name << " with write " << n << " failing";
      EXPECT_EQ(plan_->snapshot(), before)
          << name << " left partial state when write " << n << " failed";
      EXPECT_EQ(plan_->health(), "ok");
    }
    ADD_FAILURE() << name << " never succeeded";
    return -1;
  }

  std::unique_ptr<FaultPlan> plan_;
};

INSTANTIATE_TEST_SUITE_P(Backends, StorageFaultTest, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& param) { return param.param; });

TEST_P(StorageFaultTest, EveryWriteOfEveryTransitionCanFailWithoutPartialState) {
  // Given each task-plane operation and each write inside it failing in turn, we should get
  // STORE_FAILURE and an unchanged database every time, and the operation once the fault is
  // gone.
  Agent agent;
  std::map<std::string, int> writes;
  writes["create_agent"] = fail_each_write("create_agent", [&] { agent = make_agent("agent-1"); });
  writes["register_worker"] =
      fail_each_write("register_worker", [&] { register_worker(agent, "worker-1"); });
  writes["configure_worker"] = fail_each_write("configure_worker", [&] {
    plane_.configure_worker("worker-1", fleet::worker_configuration_of(
                                            {{"max_slots", 8}, {"failure_domain", "rack-1"}}));
  });

  int round = 0;
  const auto fresh_task = [&] {
    const std::string id = "task-fault-" + std::to_string(++round);
    create_task(id);
    return id;
  };
  std::string id = "task-fault-0";
  writes["create_task"] = fail_each_write("create_task", [&] { create_task(id); });

  Json claimed;
  writes["claim"] = fail_each_write("claim", [&] { claimed = claim(agent, id, "worker-1"); });
  clock_.advance(seconds(5));
  writes["heartbeat"] = fail_each_write("heartbeat", [&] {
    plane_.heartbeat(
        agent, id,
        fleet::heartbeat_of({{"lease_token", claimed["lease_token"]}, {"stage", "run"}}));
  });
  writes["submit_result"] = fail_each_write("submit_result", [&] { submit(agent, claimed); });
  writes["verify_needs_rework"] = fail_each_write("verify", [&] {
    plane_.verify(id, fleet::verification_of({{"expected_revision", view(id)["revision"]},
                                              {"decision", "NEEDS_REWORK"},
                                              {"reason", "again"}}));
  });
  claimed = claim(agent, id, "worker-1");
  writes["release"] = fail_each_write("release", [&] { release(agent, claimed); });

  id = fresh_task();
  claimed = claim(agent, id, "worker-1");
  clock_.advance(options_.lease + seconds(1));
  writes["sweep_expired_leases"] =
      fail_each_write("sweep", [&] { EXPECT_EQ(plane_.sweep_expired_leases(), 1u); });

  id = fresh_task();
  writes["cancel"] = fail_each_write("cancel", [&] {
    plane_.cancel(id, fleet::cancellation_of({{"reason", "not needed"}}));
  });

  // Each operation wrote at least once, so its failure paths were really taken.
  for (const auto& [name, n] : writes) EXPECT_GE(n, 1) << name;
  EXPECT_EQ(view("task-fault-0")["status"], "QUEUED");
  EXPECT_EQ(plan_->health(), "ok");
}

// SQLite's one writer under another connection's lock.
class SqliteBusyTest : public PlaneTest {};

TEST_F(SqliteBusyTest, BusyStormFailsWithStoreBusyAndLosesNothing) {
  // Given another connection that keeps taking the write lock, operations over a short busy
  // timeout should either commit whole or fail with STORE_BUSY and change nothing; retried,
  // every one of them gets through exactly once.
  Database impatient(
      DatabaseOptions{.path = db_path(), .busy_timeout = std::chrono::milliseconds(5)});
  store::SqliteStore impatient_store(impatient, clock_);
  TaskPlane plane(impatient_store, system_environment(), options_);
  std::atomic<bool> stop{false};
  std::atomic<bool> holding{false};
  std::thread storm([&] {
    SQLite::Database locker(db_path().string(), SQLite::OPEN_READWRITE);
    locker.setBusyTimeout(1000);
    while (!stop.load()) {
      locker.exec("BEGIN IMMEDIATE");
      holding = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      holding = false;
      locker.exec("COMMIT");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  constexpr int kTasks = 40;
  int busy = 0;
  for (int i = 0; i < kTasks; ++i) {
    TaskSpec spec;
    spec.task_id = "task-storm-" + std::to_string(i);
    // Every other task starts while the storm holds the lock, so the storm surely bites.
    while (i % 2 == 0 && !holding.load()) std::this_thread::yield();
    while (true) {
      try {
        plane.create_task(fleet::task_submission_of(task_body(spec)));
        break;
      } catch (const Error& error) {
        ASSERT_EQ(error.code(), "STORE_BUSY");
        ++busy;
      }
    }
  }
  stop = true;
  storm.join();
  EXPECT_GT(busy, 0) << "the storm never made a write wait past its timeout";
  EXPECT_EQ(count("SELECT COUNT(*) FROM tasks WHERE task_id LIKE 'task-storm-%'"), kTasks);
  EXPECT_EQ(count("SELECT COUNT(*) FROM task_events WHERE task_id LIKE 'task-storm-%'"), kTasks);
  EXPECT_EQ(rows("PRAGMA integrity_check").at(0).at(0), "ok");
}

// A 1 MiB tmpfs mounted for the test; skipped where mounting is not allowed.
class DiskFullTest : public ::testing::Test {
 protected:
  static void test_write(const std::filesystem::path& path, const std::string& content) {
    std::ofstream out(path, std::ios::binary);
    out << content;
    ASSERT_TRUE(out.good());
  }
  static std::int64_t count_of(Database& db, const std::string& sql) {
    std::int64_t n = -1;
    db.read([&](SQLite::Database& raw) { n = raw.execAndGet(sql).getInt64(); });
    return n;
  }
  // The rows of tasks and task_events as text.
  static std::string dump(Database& db) {
    std::string out;
    db.read([&](SQLite::Database& raw) {
      for (const char* sql : {"SELECT task_id, revision, status FROM tasks ORDER BY task_id",
                              "SELECT event_id, task_id, event_type FROM task_events "
                              "ORDER BY event_id"}) {
        SQLite::Statement query(raw, sql);
        while (query.executeStep()) {
          for (int c = 0; c < query.getColumnCount(); ++c) {
            out += query.getColumn(c).getString() + "|";
          }
          out += "\n";
        }
      }
    });
    return out;
  }

  void SetUp() override {
    if (::mount("aios-disk-full", dir_.path().c_str(), "tmpfs", 0, "size=1m,mode=0700") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here (needs CAP_SYS_ADMIN)";
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  ScopedTempDir dir_;
  bool mounted_ = false;
};

TEST_F(DiskFullTest, FullDiskFailsTheWriteAndLeavesEveryCommittedTaskWhole) {
  // Given a database on a tiny file system, we should create tasks until the disk is full,
  // get STORE_FULL for the one that does not fit, keep every committed task with its event,
  // and create it after space is freed.
  const auto path = dir_.path() / "tasks.sqlite3";
  ManualClock clock(start_time());
  Database db(DatabaseOptions{.path = path, .connections = 1});
  store::SqliteStore task_store(db, clock);
  TaskPlane plane(task_store, system_environment());
  // What the migrated database left free goes, but for room for a few tasks, to a file the test
  // deletes later to free it (so the room does not depend on the schema's size).
  struct statvfs disk {};
  ASSERT_EQ(::statvfs(dir_.path().c_str(), &disk), 0);
  const auto free_bytes = static_cast<std::size_t>(disk.f_bavail) * disk.f_frsize;
  constexpr std::size_t kRoom = 160 * 1024;
  ASSERT_GT(free_bytes, kRoom);
  const auto ballast = dir_.path() / "ballast";
  test_write(ballast, std::string(free_bytes - kRoom, 'b'));
  TaskSpec spec;
  spec.metadata = {{"notes", std::string(20000, 'x')}};
  int created = 0;
  std::string code;
  for (; created < 1000; ++created) {
    spec.task_id = "task-full-" + std::to_string(created);
    const std::string before = dump(db);
    try {
      plane.create_task(fleet::task_submission_of(task_body(spec)));
    } catch (const Error& error) {
      code = error.code();
      EXPECT_EQ(dump(db), before) << "a failed create left partial state";
      break;
    }
  }
  ASSERT_FALSE(code.empty()) << "the disk never filled";
  EXPECT_EQ(code, "STORE_FULL");
  EXPECT_GT(created, 0);
  EXPECT_EQ(count_of(db, "SELECT COUNT(*) FROM tasks"), created);
  EXPECT_EQ(count_of(db, "SELECT COUNT(*) FROM task_events"), created);

  // Space freed: the same task goes in, once.
  std::filesystem::remove(ballast);
  std::string retry_code = "ok";
  try {
    plane.create_task(fleet::task_submission_of(task_body(spec)));
  } catch (const Error& error) {
    retry_code = error.code();
  }
  EXPECT_EQ(retry_code, "ok");
  EXPECT_EQ(count_of(db, "SELECT COUNT(*) FROM tasks"), created + 1);
  EXPECT_EQ(count_of(db, "SELECT COUNT(*) FROM task_events"), created + 1);
  std::string integrity;
  db.read([&](SQLite::Database& raw) {
    integrity = raw.execAndGet("PRAGMA integrity_check").getString();
  });
  EXPECT_EQ(integrity, "ok");
}

}  // namespace
}  // namespace aios::fleet_test
