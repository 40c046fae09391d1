// aios-store migrate against the real daemons: a scheduler's SQLite store, written through its
// API, copied into a fresh PostgreSQL database on the tests' server, and a scheduler started on
// the copy that serves the same tasks, events and agent tokens and goes on where the first
// stopped. Refusals leave the target as it was.
#include <SQLiteCpp/SQLiteCpp.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>

#include "support/postgres.hpp"
#include "support/run_command.hpp"
#include "support/store_rows.hpp"
#include "taskapi/client.hpp"

namespace aios::store_test {
namespace {

using taskapi_test::ApiClient;
using taskapi_test::Json;
using taskapi_test::require;

struct Migration {
  int exit_code = -1;
  Json report;         // stdout, when it is JSON
  std::string errors;  // stderr: the code and reason of a refusal, and the progress log
};

class MigrateTest : public taskapi_test::SchedulerTest {
 protected:
  void SetUp() override {
    AIOS_SKIP_WITHOUT_POSTGRES();
    target_.emplace(*test::postgres_admin_url());
    SchedulerTest::SetUp();
  }

  const std::string& target() const { return target_->url(); }

  Migration migrate(const std::string& from, const std::string& to) {
    const auto out = scheduler().dir() / "migrate.out";
    const auto err = scheduler().dir() / "migrate.err";
    const auto run = test::run_command(
        "(" + (std::filesystem::path(AIOS_BINARY_DIR) / "tools" / "aios-store").string() +
        " migrate --from '" + from + "' --to '" + to + "' >" + out.string() + " 2>" + err.string() +
        ")");
    return {.exit_code = run.exit_code,
            .report = Json::parse(test::read_text_file(out), nullptr, false),
            .errors = test::read_text_file(err)};
  }

  static const Json& table_of(const Json& report, const std::string& name) {
    for (const auto& table : report.at("tables")) {
      if (table.at("table") == name) return table;
    }
    throw std::runtime_error("no table " + name + " in the report " + report.dump());
  }

  std::int64_t target_rows(const std::string& table) {
    return test::count_in(target(), "SELECT COUNT(*) FROM " + table);
  }

  std::optional<test::ScopedPostgresDatabase> target_;
};

TEST_F(MigrateTest, ASchedulerMovesToPostgreSQLWithItsTasksEventsTokensAndLeases) {
  // Given a store with an agent, a worker, a finished task, a held lease and queued tasks, we
  // should copy it whole and serve it from PostgreSQL, with the agent's token and lease valid.
  const std::string token = create_agent("agent-move", {"agent.runtime.hermes"});
  ApiClient agent = client(token);
  register_worker(agent, "worker-move", {"agent.runtime.hermes"}, {"hermes"}, 4);
  for (int i = 1; i <= 4; ++i)
    create_task(taskapi_test::hermes_task("task-move-" + std::to_string(i)));
  const Json done = claim(agent, "task-move-1", "worker-move");
  require(agent.post("/v1/tasks/task-move-1/result",
                     taskapi_test::result_body(done, task("task-move-1").at("execution_digest"),
                                               "result-1", {{"status", "SUCCEEDED"}})),
          201, "result");
  verify("task-move-1", "PASS");
  const Json held = claim(agent, "task-move-2", "worker-move");
  std::map<std::string, Json> views;
  std::map<std::string, Json> histories;
  for (int i = 1; i <= 4; ++i) {
    const std::string id = "task-move-" + std::to_string(i);
    views[id] = task(id);
    histories[id] = events(id);
  }
  const auto stopped = scheduler().stop();
  ASSERT_TRUE(stopped.exited_with(0)) << stopped.describe();

  const auto migration = migrate(scheduler().db_path().string(), target());
  ASSERT_EQ(migration.exit_code, 0) << migration.errors;
  EXPECT_EQ(migration.report.at("status"), "COPIED");
  EXPECT_EQ(table_of(migration.report, "tasks").at("rows"), 4);
  EXPECT_EQ(table_of(migration.report, "agents").at("rows"), 1);
  EXPECT_TRUE(
      is_sha256_hex(table_of(migration.report, "task_events").at("sha256").get<std::string>()));
  for (const auto& table : migration.report.at("tables")) {
    EXPECT_EQ(table.at("changed_after_snapshot"), false) << table;
    EXPECT_EQ(target_rows(table.at("table")), table.at("rows")) << table;
  }
  EXPECT_THAT(migration.errors, ::testing::HasSubstr("STORE_MIGRATION_TABLE_COPIED"));

  test::SchedulerConfig on_postgres;
  on_postgres.store = target();
  test::SchedulerDaemon moved(on_postgres);
  moved.start();
  ApiClient owner_on_pg(moved.port(), moved.control_token());
  ApiClient agent_on_pg(moved.port(), token);
  for (const auto& [id, view] : views) {
    EXPECT_EQ(require(owner_on_pg.get("/v1/tasks/" + id), 200, id), view) << id;
    EXPECT_EQ(require(owner_on_pg.get("/v1/tasks/" + id + "/events"), 200, id).at("events"),
              histories[id])
        << id;
  }
  // The lease taken on SQLite is honoured on PostgreSQL, and new events follow the copied ones.
  const auto digest = views["task-move-2"].at("execution_digest");
  require(agent_on_pg.post(
              "/v1/tasks/task-move-2/result",
              taskapi_test::result_body(held, digest, "result-2", {{"status", "SUCCEEDED"}})),
          201, "result on PostgreSQL");
  const Json after =
      require(owner_on_pg.get("/v1/tasks/task-move-2/events"), 200, "events").at("events");
  ASSERT_EQ(after.size(), histories["task-move-2"].size() + 1);
  EXPECT_GT(after.back().at("event_id"), histories["task-move-2"].back().at("event_id"));
  EXPECT_EQ(require(owner_on_pg.get("/v1/tasks/task-move-2"), 200, "view").at("status"),
            "VERIFYING");
  const auto status = moved.stop();
  EXPECT_TRUE(status.exited_with(0)) << status.describe() << moved.process().log();
  scheduler().start();  // TearDown stops it
}

TEST_F(MigrateTest, ATargetThatHoldsRowsIsRefusedAndKeptAsItWas) {
  create_task(taskapi_test::hermes_task("task-twice"));
  ASSERT_EQ(migrate(scheduler().db_path().string(), target()).exit_code, 0);
  create_task(taskapi_test::hermes_task("task-later"));
  const auto again = migrate(scheduler().db_path().string(), target());
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.errors, ::testing::HasSubstr("STORE_MIGRATION_TARGET_NOT_EMPTY: "));
  EXPECT_EQ(target_rows("tasks"), 1);
}

TEST_F(MigrateTest, AValueOfAnotherKindIsRefusedWithNothingWritten) {
  // Given a row SQLite kept against its column's type, we should refuse the copy whole.
  create_task(taskapi_test::hermes_task("task-good"));
  create_task(taskapi_test::hermes_task("task-odd"));
  ASSERT_TRUE(scheduler().stop().exited_with(0));
  {
    SQLite::Database raw(scheduler().db_path().string(), SQLite::OPEN_READWRITE);
    raw.exec("UPDATE tasks SET priority='high' WHERE task_id='task-odd'");
  }
  const auto migration = migrate(scheduler().db_path().string(), target());
  EXPECT_EQ(migration.exit_code, 1);
  EXPECT_THAT(migration.errors, ::testing::HasSubstr("STORE_MIGRATION_SCHEMA_MISMATCH: "));
  EXPECT_THAT(migration.errors, ::testing::HasSubstr("tasks.priority"));
  EXPECT_EQ(target_rows("tasks"), 0);
  EXPECT_EQ(target_rows("task_events"), 0);
  scheduler().start();
}

TEST_F(MigrateTest, ARunningSchedulerIsCopiedFromOneSnapshotAndLaterWritesAreReported) {
  // Given tasks created all through the copy, we should copy one consistent state and say
  // whether the source moved on (exit 3, the tasks table marked) rather than lose that quietly.
  std::atomic<bool> stop{false};
  std::atomic<int> created{0};
  std::thread writer([&] {
    ApiClient owner_client(port(), scheduler().control_token());
    while (!stop) {
      const auto id = "task-live-" + std::to_string(created.load());
      if (owner_client.post("/v1/tasks", taskapi_test::hermes_task(id)).status == 201) ++created;
    }
  });
  while (created < 20) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int before_copy = created;
  const auto migration = migrate(scheduler().db_path().string(), target());
  const int after_copy = created;
  stop = true;
  writer.join();
  ASSERT_TRUE(migration.exit_code == 0 || migration.exit_code == 3) << migration.errors;
  const auto& tasks = table_of(migration.report, "tasks");
  const std::int64_t copied = tasks.at("rows");
  EXPECT_EQ(target_rows("tasks"), copied);
  EXPECT_EQ(target_rows("task_events"), table_of(migration.report, "task_events").at("rows"));
  // Creation is in id order, so one snapshot holds exactly the first `copied` of them.
  EXPECT_EQ(target_rows("tasks WHERE task_id NOT IN (" +
                        [&] {
                          std::string ids;
                          for (std::int64_t i = 0; i < copied; ++i) {
                            ids += (i ? ",'" : "'") + std::string("task-live-") +
                                   std::to_string(i) + "'";
                          }
                          return ids;
                        }() +
                        ")"),
            0);
  EXPECT_GE(copied, before_copy);
  EXPECT_LE(copied, after_copy);
  EXPECT_EQ(migration.exit_code == 3, tasks.at("changed_after_snapshot").get<bool>());
}

TEST_F(MigrateTest, ABackendOfTheWrongKindOrAPasswordInTheURLIsRefused) {
  const auto sqlite_target =
      migrate(scheduler().db_path().string(), (scheduler().dir() / "other.sqlite3").string());
  EXPECT_THAT(sqlite_target.errors, ::testing::HasSubstr("STORE_URL_INVALID: "));
  EXPECT_EQ(sqlite_target.exit_code, 1);
  const auto postgres_source = migrate(target(), target());
  EXPECT_THAT(postgres_source.errors, ::testing::HasSubstr("STORE_URL_INVALID: "));
  const auto with_password =
      migrate(scheduler().db_path().string(), "postgresql://aios:hunter2secret@127.0.0.1/aios");
  EXPECT_THAT(with_password.errors, ::testing::HasSubstr("STORE_URL_PASSWORD_REFUSED: "));
  EXPECT_THAT(with_password.errors, ::testing::Not(::testing::HasSubstr("hunter2secret")));
  test::write_text_file(scheduler().dir() / "foreign.sqlite3", "");
  {
    SQLite::Database foreign((scheduler().dir() / "foreign.sqlite3").string(),
                             SQLite::OPEN_READWRITE);
    foreign.exec("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)");
  }
  const auto not_ours = migrate((scheduler().dir() / "foreign.sqlite3").string(), target());
  EXPECT_THAT(not_ours.errors, ::testing::HasSubstr("STORE_MIGRATION_SCHEMA_MISMATCH: "));
  EXPECT_EQ(target_rows("tasks"), 0);
}

}  // namespace
}  // namespace aios::store_test
