#pragma once
// The tests' window into a scheduler's rows that its API does not show (claims per attempt,
// rebind receipts, result events), whichever backend the daemon runs on (support/daemon.hpp
// test_store_is_postgres): one SELECT answering one integer, its parameters written $1, $2, …
// (SQLite and PostgreSQL both read them), on a connection of its own.

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "aios/store.hpp"
#include "aios/sys.hpp"
#include "store/postgres/connection.hpp"
#include "support/daemon.hpp"

namespace aios::test {

// `location`: a --db value (a PostgreSQL URL or a SQLite path).
inline std::int64_t count_in(const std::string& location, const std::string& sql,
                             const std::vector<std::string>& params = {}) {
  if (is_postgres_location(location)) {
    store::pg::Connection connection({{"dbname", location}});
    store::pg::Params values;
    for (const auto& param : params) values.text(param);
    return connection.run(sql, values).integer(0, 0);
  }
  SQLite::Database db(location, SQLite::OPEN_READONLY);
  SQLite::Statement query(db, sql);
  for (std::size_t i = 0; i < params.size(); ++i) query.bind(static_cast<int>(i + 1), params[i]);
  query.executeStep();
  return query.getColumn(0).getInt64();
}

// Runs `sql` as is on the scheduler's store, the statement for its backend: a test that puts a
// fault into the store from outside, as an operator's damaged database would.
inline void exec_in(const SchedulerDaemon& scheduler, const std::string& sqlite_sql,
                    const std::string& postgres_sql) {
  const auto& location = scheduler.store_location();
  if (is_postgres_location(location)) {
    store::pg::Connection({{"dbname", location}}).exec(postgres_sql);
    return;
  }
  SQLite::Database(location, SQLite::OPEN_READWRITE).exec(sqlite_sql);
}

inline std::int64_t count_in(const SchedulerDaemon& scheduler, const std::string& sql,
                             const std::vector<std::string>& params = {}) {
  return count_in(scheduler.store_location(), sql, params);
}

// Whether the store came through a crash whole, "ok" when it did: SQLite's integrity_check of
// the file; on PostgreSQL, whose server keeps its own pages whole, the store opening at its
// schema version (what the restarted daemon needs) with every claim and result naming a task.
inline std::string integrity_of(const SchedulerDaemon& scheduler) {
  if (!scheduler.on_postgres()) {
    SQLite::Database db(scheduler.db_path().string(), SQLite::OPEN_READONLY);
    std::string answer;
    SQLite::Statement check(db, "PRAGMA integrity_check");
    while (check.executeStep()) {
      answer += (answer.empty() ? "" : "\n") + check.getColumn(0).getString();
    }
    return answer;
  }
  const SystemClock clock;
  store::open_store({.url = scheduler.store_location(), .connections = 1, .migrate = false}, clock);
  const auto orphans = count_in(scheduler,
                                "SELECT (SELECT COUNT(*) FROM claims c WHERE NOT EXISTS (SELECT 1 "
                                "FROM tasks t WHERE t.task_id=c.task_id)) + (SELECT COUNT(*) FROM "
                                "results r WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE "
                                "t.task_id=r.task_id))");
  return orphans == 0 ? "ok" : std::to_string(orphans) + " claims or results name no task";
}

}  // namespace aios::test
