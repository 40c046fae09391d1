// The transitions and the poll never scan a table that grows with the queue: every statement a
// poll, claim, heartbeat, result, release or verification runs is traced and its query plan must
// reach tasks, task_events, claims, results and fleet_dispatches through an index. This is why
// claim cost does not grow with the number of queued tasks (docs/performance.md).
#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include <set>
#include <string>
#include <vector>

#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

const std::set<std::string> kGrowingTables = {"tasks", "task_events", "claims", "results",
                                              "fleet_dispatches"};

int record_statement(unsigned, void* context, void* statement, void*) {
  const char* sql = sqlite3_sql(static_cast<sqlite3_stmt*>(statement));
  if (sql != nullptr) static_cast<std::set<std::string>*>(context)->insert(sql);
  return 0;
}

class QueryPlanTest : public PlaneTest {
 protected:
  // A one-connection Database on the same file, traced, and a TaskPlane over it.
  QueryPlanTest()
      : traced_db_(DatabaseOptions{.path = db_path(), .connections = 1}),
        traced_store_(traced_db_, clock_),
        traced_(traced_store_, system_environment(), options_) {
    traced_db_.read([this](SQLite::Database& db) {
      sqlite3_trace_v2(db.getHandle(), SQLITE_TRACE_STMT, record_statement, &statements_);
    });
  }

  // "SCAN <table>" lines of the plans of every traced statement, for growing tables.
  std::vector<std::string> scans() {
    std::vector<std::string> found;
    traced_db_.read([&](SQLite::Database& db) {
      sqlite3_trace_v2(db.getHandle(), 0, nullptr, nullptr);
      for (const auto& sql : statements_) {
        if (sql.starts_with("BEGIN") || sql.starts_with("COMMIT") || sql.starts_with("ROLLBACK") ||
            sql.starts_with("PRAGMA") || sql.starts_with("SAVEPOINT") ||
            sql.starts_with("RELEASE")) {
          continue;
        }
        SQLite::Statement plan(db, "EXPLAIN QUERY PLAN " + sql);
        while (plan.executeStep()) {
          const std::string detail = plan.getColumn(3).getString();
          if (!detail.starts_with("SCAN ")) continue;
          const auto table = detail.substr(5, detail.find(' ', 5) - 5);
          if (kGrowingTables.contains(table)) found.push_back(detail + "  <-  " + sql);
        }
      }
    });
    return found;
  }

  Database traced_db_;
  store::SqliteStore traced_store_;
  TaskPlane traced_;
  std::set<std::string> statements_;
};

TEST_F(QueryPlanTest, TransitionsReachGrowingTablesOnlyThroughIndexes) {
  // Given a queue of tasks, the claim, heartbeat, result, verification and release of one of
  // them should run no statement that scans a table growing with the queue.
  const auto agent = make_agent("agent-plans");
  register_worker(agent, "worker-plans", {{"max_concurrency", 4}});
  for (int i = 0; i < 50; ++i) create_task("plan-" + std::to_string(i));

  const auto body = claim_body("plan-7", "worker-plans");
  const auto claimed = traced_.claim(agent, "plan-7", fleet::claim_request_of(body));
  traced_.heartbeat(agent, "plan-7",
                    fleet::heartbeat_of({{"lease_token", claimed["lease_token"]}}));
  traced_.submit_result(
      agent, "plan-7",
      fleet::result_submission_of({{"lease_token", claimed["lease_token"]},
                                   {"attempt", claimed["attempt"]},
                                   {"execution_digest", claimed["execution_digest"]},
                                   {"idempotency_key", "result-plan-7"},
                                   {"result", {{"summary", "done"}}}},
                                  traced_.options().max_result_bytes));
  traced_.verify("plan-7",
                 fleet::verification_of({{"expected_revision", view("plan-7")["revision"]},
                                         {"decision", "NEEDS_REWORK"},
                                         {"reason", "again"}}));
  const auto again =
      traced_.claim(agent, "plan-7", fleet::claim_request_of(claim_body("plan-7", "worker-plans")));
  traced_.release(agent, "plan-7",
                  fleet::release_of(
                      {{"lease_token", again["lease_token"]}, {"failure_class", "runtime_crash"}}));

  ASSERT_GT(statements_.size(), 10u);
  EXPECT_EQ(scans(), std::vector<std::string>{});
}

TEST_F(QueryPlanTest, PollReachesTheQueueOnlyThroughIndexes) {
  // Given a queue over three tenants, a poll should find its tasks through indexes: it reads
  // the queue in fleet order group by group and stops at its limit, never scanning tasks.
  const auto agent = make_agent("agent-poll-plans");
  register_worker(agent, "worker-poll-plans", {{"max_concurrency", 4}});
  for (int i = 0; i < 60; ++i) {
    create_task(project_task("poll-plan-" + std::to_string(i), "tenant-" + std::to_string(i % 3),
                             "project"));
  }
  claim(agent, "poll-plan-4", "worker-poll-plans");

  const auto polled = traced_.poll(
      agent, fleet::poll_request_of({{"worker_id", "worker-poll-plans"}, {"limit", 5}}));

  ASSERT_EQ(polled["tasks"].size(), 5u);
  EXPECT_EQ(scans(), std::vector<std::string>{});
}

}  // namespace
}  // namespace aios::fleet_test
