// What the PostgreSQL backend adds to the conformance suite: where --db points (open_store), a
// URL's password refused, the database clock, and a failed statement voiding its transaction.
#include "support/postgres.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "aios/store.hpp"
#include "aios/sys.hpp"
#include "support/code_of.hpp"
#include "support/daemon.hpp"

namespace aios::store_test {
namespace {

using test::code_of;

std::string open_code(const std::string& url) {
  const ManualClock clock(TimePoint(std::chrono::seconds(1900000000)));
  return code_of([&] { (void)store::open_store({.url = url}, clock); });
}

TEST(OpenStore, APathAndAnAbsoluteSqliteUrlOpenSqlite) {
  // Given a plain path and a sqlite:/// URL, we should get a migrated SQLite file at each.
  test::ScopedTempDir dir("aios-open-store");
  const ManualClock clock(TimePoint(std::chrono::seconds(1900000000)));
  EXPECT_EQ(store::open_store({.url = (dir / "a.sqlite3").string()}, clock)->schema_version(),
            store::kSchemaVersion);
  EXPECT_EQ(store::open_store({.url = "sqlite://" + (dir / "b.sqlite3").string()}, clock)
                ->schema_version(),
            store::kSchemaVersion);
  EXPECT_TRUE(std::filesystem::exists(dir / "b.sqlite3"));
}

TEST(OpenStore, UnknownSchemesAndRelativeSqliteUrlsAreRefused) {
  EXPECT_EQ(open_code("mysql://db/aios"), "STORE_URL_INVALID");
  EXPECT_EQ(open_code("sqlite://relative/state.sqlite3"), "STORE_URL_INVALID");
  EXPECT_EQ(open_code(""), "STORE_URL_INVALID");
}

TEST(OpenStore, APasswordInThePostgresUrlIsRefusedBeforeAnyConnection) {
  // Given a password in the URL (argv is visible to every process), we should refuse it, and
  // the error should not repeat it.
  const ManualClock clock(TimePoint(std::chrono::seconds(1900000000)));
  try {
    (void)store::open_store({.url = "postgresql://aios:hunter2secret@127.0.0.1:1/aios"}, clock);
    FAIL() << "opened";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), "STORE_URL_PASSWORD_REFUSED");
    EXPECT_EQ(std::string(error.what()).find("hunter2secret"), std::string::npos);
    EXPECT_EQ(error.detail().find("hunter2secret"), std::string::npos);
  }
  EXPECT_EQ(open_code("postgresql://127.0.0.1:1/aios?password=hunter2secret"),
            "STORE_URL_PASSWORD_REFUSED");
}

TEST(OpenStore, AnUnreachableServerIsUnavailable) {
  EXPECT_EQ(open_code("postgresql://aios@127.0.0.1:1/aios?connect_timeout=2"), "STORE_UNAVAILABLE");
}

class PostgresStore : public ::testing::Test {
 protected:
  void SetUp() override {
    AIOS_SKIP_WITHOUT_POSTGRES();
    database_ = std::make_unique<test::ScopedPostgresDatabase>(*test::postgres_admin_url());
  }

  std::unique_ptr<test::ScopedPostgresDatabase> database_;
  ManualClock clock_{TimePoint(std::chrono::seconds(1900000000))};
};

TEST_F(PostgresStore, LeaseTimeIsTheDatabaseServersClock) {
  // Given an injected clock years off, the store should still date by the server's clock (the
  // server here shares this host's, so they agree within a second).
  const auto opened = store::open_store({.url = database_->url()}, clock_);
  const auto gap = opened->now() - std::chrono::system_clock::now();
  EXPECT_LT(std::chrono::abs(gap), std::chrono::seconds(1));
  EXPECT_EQ(opened->schema_version(), store::kSchemaVersion);
}

TEST_F(PostgresStore, ABodyThatSwallowsAFailedStatementCommitsNothing) {
  // Given a body that catches a refused insert and goes on writing, we should be told the
  // write failed and find nothing of it: the server voided the transaction.
  store::PostgresOptions options;
  options.url = database_->url();
  options.database_clock = false;
  const auto opened = store::open_postgres_store(std::move(options), clock_);
  store::TaskRow row;
  row.task_id = "task-a";
  row.status = "QUEUED";
  row.scope_key = "global";
  opened->write([&](store::Transaction& tx) { tx.insert_task(row); });
  const auto code = code_of([&] {
    opened->write([&](store::Transaction& tx) {
      try {
        tx.insert_task(row);
      } catch (const Error&) {
      }
      auto second = row;
      second.task_id = "task-b";
      tx.insert_task(second);
    });
  });
  EXPECT_EQ(code, "STORE_FAILURE");
  std::optional<store::TaskRow> loaded;
  opened->read([&](store::Transaction& tx) { loaded = tx.load_task("task-b"); });
  EXPECT_FALSE(loaded);
}

TEST_F(PostgresStore, AnswersKeptFromOneRoundTripComeBackInOrderAndNoneAfterAFailure) {
  // Given two statements sent to be kept ahead of one run, we should read their rows in the
  // order sent; after a round trip that failed, none.
  store::pg::Connection db({{"dbname", database_->url()}});
  db.send_kept("SELECT 1", {});
  db.send("SELECT 2", {});
  db.send_kept("SELECT $1::text", store::pg::Params().text("three"));
  EXPECT_EQ(db.run("SELECT 4").text(0, 0), "4");
  auto kept = db.take_kept();
  ASSERT_EQ(kept.size(), 2U);
  EXPECT_EQ(kept[0].text(0, 0), "1");
  EXPECT_EQ(kept[1].text(0, 0), "three");
  EXPECT_TRUE(db.take_kept().empty());
  db.send_kept("SELECT 5", {});
  EXPECT_EQ(code_of([&] { db.run("SELECT * FROM no_such_table"); }), "STORE_FAILURE");
  EXPECT_TRUE(db.take_kept().empty());
}

// The minor page faults of the server process `pid` so far (/proc/PID/stat's tenth field), or
// nullopt where this host cannot see it (a server on another host).
std::optional<long long> server_faults(const std::string& pid) {
  const auto stat = test::read_proc_file("/proc/" + pid + "/stat");
  const auto name_end = stat.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(name_end + 1));  // from the third field on
  std::string skipped;
  for (int field = 3; field < 10; ++field) fields >> skipped;
  long long minor = 0;
  if (!(fields >> minor)) return std::nullopt;
  return minor;
}

TEST_F(PostgresStore, ASessionsServerProcessKeepsItsHeapBetweenStatements) {
  // Given a statement of a dozen index scans (each scan's state a malloc block of its own on the
  // server) run forty times on a session of ours and on a bare libpq session, the server process
  // behind ours should fault in next to no pages for it, while the bare one gives its heap back
  // after every run and faults it in again.
  const auto url = database_->url();
  store::pg::Connection setup({{"dbname", url}});
  setup.exec(
      "CREATE TABLE heap_probe(id INTEGER PRIMARY KEY, v INTEGER);"
      "INSERT INTO heap_probe SELECT g, g FROM generate_series(1, 10000) g; ANALYZE heap_probe");
  std::string probe = "SET enable_seqscan TO off; SELECT 0";
  for (int id = 1; id <= 12; ++id) {
    probe += ", (SELECT v FROM heap_probe WHERE id=" + std::to_string(id) + ")";
  }
  const auto faults_of = [&](const std::string& pid, const std::function<void()>& run) {
    for (int warm = 0; warm < 3; ++warm) run();
    const auto before = server_faults(pid);
    for (int again = 0; again < 40; ++again) run();
    const auto after = server_faults(pid);
    return before && after ? std::optional<long long>(*after - *before) : std::nullopt;
  };

  store::pg::Connection ours({{"dbname", url}});
  const auto ours_faults =
      faults_of(ours.exec("SELECT pg_backend_pid()").text(0, 0), [&] { ours.exec(probe); });

  const char* names[] = {"dbname", nullptr};
  const char* values[] = {url.c_str(), nullptr};
  const std::unique_ptr<PGconn, decltype(&PQfinish)> bare(PQconnectdbParams(names, values, 1),
                                                          &PQfinish);
  ASSERT_EQ(PQstatus(bare.get()), CONNECTION_OK) << PQerrorMessage(bare.get());
  const auto bare_exec = [&](const std::string& sql) {
    PGresult* result = PQexec(bare.get(), sql.c_str());
    std::string first = PQntuples(result) > 0 ? PQgetvalue(result, 0, 0) : "";
    PQclear(result);
    return first;
  };
  const auto bare_faults =
      faults_of(bare_exec("SELECT pg_backend_pid()"), [&] { bare_exec(probe); });

  if (!ours_faults || !bare_faults) GTEST_SKIP() << "the server's processes are not on this host";
  // A bare session here faults in some twenty pages a run (the heap above glibc's trim
  // threshold); one that kept its heap, none.
  if (*bare_faults < 40 * 5) GTEST_SKIP() << "this server keeps its heap on its own";
  EXPECT_LT(*ours_faults * 10, *bare_faults)
      << "ours " << *ours_faults << ", bare " << *bare_faults;
}

TEST_F(PostgresStore, AStateChangeWritesNoNewCopyOfTheTasksEnvelope) {
  // Given a task whose envelope and body are kilobytes, three transitions that change its state
  // alone should leave them where they were (the same out-of-line values), and one that changes
  // the envelope should store the new one.
  const auto opened = store::open_store({.url = database_->url()}, clock_);
  store::TaskRow row;
  row.task_id = "task-a";
  row.status = "QUEUED";
  row.scope_key = "global";
  row.revision = 1;
  row.metadata_json = R"({"execution":{},"note":")" + std::string(3000, 'm') + R"("})";
  row.task_json = R"({"goal":")" + std::string(3000, 'g') + R"("})";
  opened->write([&](store::Transaction& tx) { tx.insert_task(row); });
  store::pg::Connection db({{"dbname", database_->url()}});
  const auto toast = db.run(
                           "SELECT reltoastrelid::regclass::text FROM pg_class "
                           "WHERE relname='tasks'")
                         .text(0, 0);
  const auto values = [&] {
    const auto rows = db.run("SELECT DISTINCT chunk_id::text FROM " + toast + " ORDER BY 1");
    std::vector<std::string> ids;
    for (int at = 0; at < rows.size(); ++at) ids.push_back(rows.text(at, 0));
    return ids;
  };
  const auto before = values();
  ASSERT_EQ(before.size(), 2U) << "the envelope and the body, each out of line";
  const auto transition = [&](const std::function<void(store::TaskRow&)>& change) {
    opened->write([&](store::Transaction& tx) {
      auto next = *tx.load_task("task-a");
      change(next);
      ++next.revision;
      ASSERT_TRUE(tx.update_task(next, next.revision - 1, next.lease_generation));
    });
  };
  for (const char* status : {"CLAIMED", "VERIFYING", "SUCCEEDED"}) {
    transition([&](store::TaskRow& next) { next.status = status; });
  }
  EXPECT_EQ(values(), before);
  const std::string rebound = R"({"execution":{},"note":")" + std::string(3000, 'n') + R"("})";
  transition([&](store::TaskRow& next) { next.metadata_json = rebound; });
  EXPECT_NE(values(), before);
  std::optional<store::TaskRow> loaded;
  opened->read([&](store::Transaction& tx) { loaded = tx.load_task("task-a"); });
  EXPECT_EQ(loaded->metadata_json, rebound);
  EXPECT_EQ(loaded->task_json, row.task_json);
  EXPECT_EQ(loaded->status, "SUCCEEDED");
}

TEST_F(PostgresStore, AnEndedClaimWritesNoEntryIntoTheFleetIndexes) {
  // Given two claims of one worker, one completed and one released, the indexes by worker and
  // by task should hold only the entries their inserts wrote (the updates that ended them wrote
  // none), and the index by domain only the released one: no reader seeks an ended claim by
  // worker or task, nor a completed one by domain.
  const auto opened = store::open_store({.url = database_->url()}, clock_);
  for (const auto& ended : {std::pair{"task-a", "COMPLETED"}, {"task-b", "RELEASED"}}) {
    // Named copies, not structured bindings: the lambdas below capture them (clang 14 cannot).
    const std::string task_id = ended.first;
    const std::string end = ended.second;
    const std::string claim_id = std::string("claim-") + task_id;
    opened->write([&](store::Transaction& tx) {
      tx.insert_claim({.claim_id = claim_id,
                       .reservation_id = std::string("reservation-") + task_id,
                       .task_id = task_id,
                       .worker_id = "worker-a",
                       .agent_id = "agent-a",
                       .attempt = 1,
                       .scope_key = "global",
                       .failure_domain = "rack-1",
                       .lease_expires_at = 1900000600,
                       .now = 1900000000,
                       .created_at = "2030-03-17T17:46:40Z"});
    });
    opened->write([&](store::Transaction& tx) {
      tx.end_claim(claim_id, end == "COMPLETED" ? "SUCCEEDED" : "RELEASED", "2030-03-17T17:46:41Z");
      tx.end_dispatch(task_id, end, 1900000001);
    });
  }
  store::pg::Connection db({{"dbname", database_->url()}});
  db.exec("CREATE EXTENSION IF NOT EXISTS pageinspect");
  // Every entry, live or not (no vacuum has run), of the one page past the metapage a small
  // index has, its root and only leaf.
  const auto entries = [&](const std::string& index) {
    return db.run("SELECT count(*) FROM bt_page_items($1, 1)", store::pg::Params().text(index))
        .integer(0, 0);
  };
  EXPECT_EQ(entries("claims_by_worker"), 2);
  EXPECT_EQ(entries("fleet_dispatches_by_worker"), 2);
  EXPECT_EQ(entries("fleet_dispatches_by_task"), 2);
  EXPECT_EQ(entries("fleet_dispatches_by_domain"), 1);
}

TEST_F(PostgresStore, AClaimLocksOnlyTheHeadOfTheQueueItTakes) {
  // Given two queued tasks and a claim that holds the first while a second claim reads the
  // queue, the second should get the other task: a claim that locked a page of rows past the one
  // it takes would leave the second nothing to claim.
  const auto opened = store::open_store({.url = database_->url()}, clock_);
  for (const char* id : {"task-a", "task-b"}) {
    store::TaskRow row;
    row.task_id = id;
    row.status = "QUEUED";
    row.scope_key = "global";
    row.max_attempts = 3;
    opened->write([&](store::Transaction& tx) { tx.insert_task(row); });
  }
  const auto head = [&] {
    std::string first;
    opened->write([&](store::Transaction& tx) {
      first.clear();
      tx.visit_queued_tasks_in_fleet_order([&](const store::TaskRow& row) {
        first = row.task_id;
        return false;
      });
    });
    return first;
  };
  std::promise<void> holding;
  std::promise<void> done;
  auto released = done.get_future().share();
  std::string first;
  std::thread claim([&] {
    opened->write([&](store::Transaction& tx) {
      tx.visit_queued_tasks_in_fleet_order([&](const store::TaskRow& row) {
        first = row.task_id;
        return false;
      });
      holding.set_value();
      released.wait();
    });
  });
  holding.get_future().wait();
  const auto second = head();
  done.set_value();
  claim.join();
  EXPECT_EQ(first, "task-a");
  EXPECT_EQ(second, "task-b");
}

TEST_F(PostgresStore, AFailedStatementNamesItsSqlstate) {
  // Given a statement the server refuses, we should get its code with the server's SQLSTATE in
  // the detail the daemons log: STORE_BUSY covers a lost conflict, a deadlock and the timeouts,
  // and only the SQLSTATE tells an operator which it was.
  store::pg::Connection db({{"dbname", database_->url()}});
  std::string detail;
  const auto code = code_of([&] {
    try {
      db.exec("SELECT * FROM no_such_table");
    } catch (const Error& error) {
      detail = error.detail();
      throw;
    }
  });
  EXPECT_EQ(code, "STORE_FAILURE");
  EXPECT_NE(detail.find("(SQLSTATE 42P01)"), std::string::npos) << detail;
}

TEST_F(PostgresStore, PooledConnectionsTheServerClosedAreReplacedNotReported) {
  // Given pooled sessions the server ended (a restart, a failover to a standby), the next
  // writes and reads should run on new sessions rather than fail: nothing was begun on the old.
  const auto opened = store::open_store({.url = database_->url(), .connections = 2}, clock_);
  store::TaskRow row;
  row.task_id = "task-before";
  row.status = "QUEUED";
  row.scope_key = "global";
  opened->write([&](store::Transaction& tx) { tx.insert_task(row); });
  store::pg::Connection admin({{"dbname", *test::postgres_admin_url()}});
  const auto ended = admin.run(
      "SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
      "datname=$1 AND pid<>pg_backend_pid()) AS ended",
      store::pg::Params().text(database_->name()));
  ASSERT_GE(ended.integer(0, 0), 1);
  row.task_id = "task-after";
  opened->write([&](store::Transaction& tx) { tx.insert_task(row); });
  std::optional<store::TaskRow> loaded;
  opened->read([&](store::Transaction& tx) { loaded = tx.load_task("task-before"); });
  EXPECT_TRUE(loaded);
}

TEST_F(PostgresStore, AWriterOfTheMetadataAloneMovesTheExecutionColumns) {
  // Given a task, and a writer that rewrites its metadata alone, we should find the narrow
  // columns the fleet decides on equal to the new execution (the scope as canonical JSON); a
  // metadata with no execution object leaves them; rows a pre-10 database left stale are
  // brought in line on upgrade.
  const auto url = database_->url();
  {
    const auto opened = store::open_store({.url = url}, clock_);
    store::TaskRow row;
    row.task_id = "task-columns";
    row.status = "QUEUED";
    row.scope_key = "global";
    row.metadata_json = "{}";
    row.adapter = "source_capture";
    opened->write([&](store::Transaction& tx) { tx.insert_task(row); });
  }
  store::pg::Connection db({{"dbname", url}});
  const auto columns = [&] {
    const auto rows =
        db.run("SELECT execution_digest, action, adapter, capability_scope_json FROM tasks",
               store::pg::Params());
    std::vector<std::string> values;
    for (int i = 0; i < 4; ++i) values.push_back(rows.text(0, i));
    return values;
  };
  const std::string digest(64, 'c');
  const std::vector<std::string> rebound{digest, "deterministic", "deterministic",
                                         R"(["code.read","git.read"])"};
  const std::string rebind =
      R"(UPDATE tasks SET metadata_json='{"execution": {"execution_digest": ")" + digest +
      R"(", "action": "deterministic", "adapter": "deterministic", )"
      R"("capability_scope": ["code.read", "git.read"]}}', revision=revision+1)";

  db.exec(rebind);
  EXPECT_EQ(columns(), rebound);
  db.exec(R"(UPDATE tasks SET metadata_json='{"execution":"x"}')");
  EXPECT_EQ(columns(), rebound);

  db.exec("DROP TRIGGER tasks_execution_columns ON tasks");
  db.exec("DROP FUNCTION tasks_execution_columns(), tasks_capability_scope_json(jsonb)");
  db.exec(rebind + ", adapter='stale'");
  // Before 11 the queue was numbered by a counter row, here past the highest seq.
  db.exec(
      "DROP SEQUENCE task_queue_seq; CREATE TABLE task_queue_sequence(id BIGINT PRIMARY KEY "
      "CHECK (id = 1), last_seq BIGINT NOT NULL); INSERT INTO task_queue_sequence VALUES (1, 41)");
  db.exec("DROP TABLE fleet_scope_dispatches CASCADE");
  db.exec("DELETE FROM schema_migrations WHERE version>=10");
  const auto upgraded = store::open_store({.url = url}, clock_);
  EXPECT_EQ(upgraded->schema_version(), store::kSchemaVersion);
  EXPECT_EQ(columns(), rebound);
  store::TaskRow next;
  next.task_id = "task-after-upgrade";
  next.status = "QUEUED";
  next.scope_key = "global";
  upgraded->write([&](store::Transaction& tx) { tx.insert_task(next); });
  std::optional<store::TaskRow> loaded;
  upgraded->read([&](store::Transaction& tx) { loaded = tx.load_task(next.task_id); });
  EXPECT_EQ(loaded->seq, 42) << "the queue goes on after the counter's last number";
}

// A second session that holds a transaction open after drawing an id (a writer in flight).
class InFlight {
 public:
  InFlight(const std::string& url, const std::string& insert) : db_({{"dbname", url}}) {
    db_.exec("BEGIN; SELECT pg_current_xact_id()");
    db_.exec(insert);
  }
  void commit() {
    committing_ = true;
    db_.exec("COMMIT");
  }
  // True from just before the commit: a reader that saw it false had not waited.
  bool committing() const { return committing_; }

 private:
  store::pg::Connection db_;
  std::atomic<bool> committing_{false};
};

// An event of task-a, written by a session of the test's own.
std::string event_insert(const std::string& type) {
  return "INSERT INTO task_events(task_id,event_type,agent_id,payload_json,created_at) "
         "VALUES ('task-a','" +
         type + "','agent','{}','t')";
}

// What a cursor reader sees while a writer that drew a smaller id than a committed row is still
// in flight: `read` runs on another thread, the writer commits after a pause.
template <typename Read>
auto read_beside_a_late_commit(InFlight& writer, Read read) {
  auto page = std::async(std::launch::async, read);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  writer.commit();
  return page.get();
}

TEST_F(PostgresStore, TheEventFeedNeverSkipsAnEventThatCommitsLateWithASmallerId) {
  // Given a writer that drew event id 2 and has not committed, and event 3 committed after it,
  // a reader of the feed from 1 should get 2 then 3 once the writer commits, never 3 alone
  // (which would move its cursor past 2 for good); the first id a new reader starts after
  // waits for the writer too.
  const auto opened = store::open_store({.url = database_->url()}, clock_);
  const auto append = [&](const std::string& type) {
    opened->write(
        [&](store::Transaction& tx) { tx.append_event("task-a", type, "agent", {}, "t"); });
  };
  append("first");
  InFlight writer(database_->url(), event_insert("late"));
  append("third");
  const auto page = read_beside_a_late_commit(writer, [&] {
    std::vector<std::string> types;
    opened->read([&](store::Transaction& tx) {
      for (const auto& event : tx.events_after(1, 10)) types.push_back(event.event_type);
    });
    return types;
  });
  EXPECT_EQ(page, (std::vector<std::string>{"late", "third"}));

  InFlight another(database_->url(), event_insert("late"));
  append("fifth");
  std::int64_t last = 0;
  const bool waited = read_beside_a_late_commit(another, [&] {
    opened->read([&](store::Transaction& tx) { last = tx.last_event_id(); });
    return another.committing();
  });
  EXPECT_EQ(last, 5);
  EXPECT_TRUE(waited) << "a reader starting after 5 must wait for event 4's writer";
}

TEST_F(PostgresStore, TheTaskListNeverSkipsATaskThatCommitsLateWithASmallerSeq) {
  // Given a create in flight that drew its queue number before one that committed, a reader
  // paging the tasks by seq should get both, in queue order.
  const auto opened = store::open_store({.url = database_->url()}, clock_);
  const auto create = [&](const std::string& task_id) {
    store::TaskRow row;
    row.task_id = task_id;
    row.status = "QUEUED";
    row.scope_key = "global";
    opened->write([&](store::Transaction& tx) { tx.insert_task(row); });
  };
  create("task-1");
  InFlight writer(database_->url(),
                  "INSERT INTO tasks(task_id,status,attempt,max_attempts,revision,scope_key,"
                  "scope_weight,priority,seq,lease_generation) VALUES "
                  "('task-2','QUEUED',0,3,1,'global',1,0,nextval('task_queue_seq'),0)");
  create("task-3");
  const auto page = read_beside_a_late_commit(writer, [&] {
    std::vector<std::string> ids;
    opened->read([&](store::Transaction& tx) {
      for (const auto& row : tx.tasks_matching({}, 1, 10)) ids.push_back(row.task_id);
    });
    return ids;
  });
  EXPECT_EQ(page, (std::vector<std::string>{"task-2", "task-3"}));
}

TEST_F(PostgresStore, AWriterInAnotherDatabaseDoesNotHoldTheFeedBack) {
  // Given a transaction left open in another database of the same server (a shared server's
  // other application), the feed should answer at once: that transaction cannot write here.
  const auto opened = store::open_store({.url = database_->url()}, clock_);
  const test::ScopedPostgresDatabase elsewhere(*test::postgres_admin_url());
  store::pg::Connection({{"dbname", elsewhere.url()}}).exec("CREATE TABLE other(x INTEGER)");
  InFlight writer(elsewhere.url(), "INSERT INTO other VALUES (1)");
  opened->write([&](store::Transaction& tx) { tx.append_event("task-a", "here", "a", {}, "t"); });
  std::size_t seen = 0;
  EXPECT_EQ(code_of([&] {
              opened->read([&](store::Transaction& tx) { seen = tx.events_after(0, 10).size(); });
            }),
            test::kOk);
  EXPECT_EQ(seen, 1U);
  writer.commit();
}

TEST_F(PostgresStore, AWriterInFlightTooLongIsReportedBusyNotSkipped) {
  // Given a writer that holds its drawn id past the reader's wait, the reader should be told the
  // store is busy (and retry) rather than handed a page that skips the writer's row.
  const auto opened = store::open_store({.url = database_->url()}, clock_);
  InFlight writer(database_->url(), event_insert("held"));
  opened->write([&](store::Transaction& tx) { tx.append_event("task-a", "after", "a", {}, "t"); });
  EXPECT_EQ(
      code_of([&] { opened->read([&](store::Transaction& tx) { (void)tx.events_after(0, 10); }); }),
      "STORE_BUSY");
  writer.commit();
  std::size_t seen = 0;
  opened->read([&](store::Transaction& tx) { seen = tx.events_after(0, 10).size(); });
  EXPECT_EQ(seen, 2U);
}

}  // namespace
}  // namespace aios::store_test
