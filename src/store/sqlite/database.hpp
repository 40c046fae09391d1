#pragma once
// The SQLite backend's own pieces, private to src/store/sqlite/ (and the tests of it): a pool of
// SQLite connections (WAL, synchronous=FULL, busy timeout) with numbered migrations, statements
// kept per connection, the row-level task operations, and SqliteStore, the store::Store over a
// Database. Everything else reaches the store through include/aios/store.hpp.
//
// Writes run inside Database::write, each in its own savepoint of a BEGIN IMMEDIATE
// transaction, so a transition and its task_events row commit together or not at all. Writes
// that arrive while another commits are group-committed: one transaction and one fsync for the
// queued writes, each acknowledged only after that COMMIT. Another process (the rebind daemon)
// may write the same file; nothing here assumes a single writer.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "aios/store.hpp"

namespace SQLite {
class Database;
class Statement;
}  // namespace SQLite

namespace aios {

using DatabaseOptions = store::SqliteOptions;

// Thread-safe. Throws aios::Error STORE_UNAVAILABLE when the file cannot be opened and
// STORE_DURABILITY_UNAVAILABLE when WAL or synchronous=FULL cannot be had.
class Database {
 public:
  explicit Database(DatabaseOptions options);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs `body` in BEGIN IMMEDIATE … COMMIT on a pooled connection, possibly beside other
  // threads' writes queued at the same moment (in their order, each in its own savepoint);
  // returns once the COMMIT holding it is durable. An exception from `body` rolls back `body`'s
  // writes alone and propagates. SQLite failures become STORE_BUSY (lock timeout), STORE_FULL
  // or STORE_FAILURE. A body must not call write (STORE_FAILURE).
  void write(const std::function<void(SQLite::Database&)>& body);

  // Runs `body` in a read transaction (a consistent snapshot).
  void read(const std::function<void(SQLite::Database&)>& body);

  // The schema version after migrations.
  int schema_version();

  const std::filesystem::path& path() const { return options_.path; }

 private:
  class Pool;
  class Writer;
  DatabaseOptions options_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Writer> writer_;
};

namespace store {

// A prepared statement for one use. Inside Database::write or read, on that call's connection,
// it is kept by the connection for the next use of the same SQL (reset and unbound when this
// goes out of scope): preparing is most of the cost of the task plane's short queries. On any
// other connection, or when the connection keeps its limit of statements, it is prepared for
// this use only. Either way it behaves as a fresh SQLite::Statement.
class Prepared {
 public:
  Prepared(SQLite::Database& db, const std::string& sql);
  ~Prepared();
  Prepared(const Prepared&) = delete;
  Prepared& operator=(const Prepared&) = delete;

  SQLite::Statement& operator*() const { return *statement_; }
  SQLite::Statement* operator->() const { return statement_; }

 private:
  std::unique_ptr<SQLite::Statement> owned_;
  SQLite::Statement* statement_ = nullptr;
  bool* in_use_ = nullptr;  // the kept statement's flag, cleared when this is done with it
};

std::optional<TaskRow> load_task(SQLite::Database& db, const std::string& task_id);

// Inserts a new task with the next queue sequence number.
void insert_task(SQLite::Database& db, const TaskRow& row);

// Writes every mutable column of `row` where the stored revision and lease generation are the
// expected ones; false when another transition got there first.
bool update_task(SQLite::Database& db, const TaskRow& row, std::int64_t expected_revision,
                 std::int64_t expected_lease_generation);

void append_event(SQLite::Database& db, const std::string& task_id, const std::string& event_type,
                  const std::string& agent_id, const nlohmann::json& payload,
                  const std::string& created_at);

// The tasks `filter` keeps, in queue order (seq), at most `limit`, after `after_seq`.
std::vector<TaskRow> tasks_matching(SQLite::Database& db, const TaskFilter& filter,
                                    std::int64_t after_seq, std::size_t limit);
// The newest tasks, highest seq first, at most `limit`.
std::vector<TaskRow> newest_tasks(SQLite::Database& db, std::size_t limit);

// Calls `visit` on the QUEUED tasks with attempts left, in fleet order (legacy priority first,
// then the scope served least: dispatch_count / scope_weight, then queue order), until it
// returns false. Reads only the rows it visits, through indexes.
void visit_queued_tasks_in_fleet_order(SQLite::Database& db,
                                       const std::function<bool(const TaskRow&)>& visit);

// `step` under a savepoint of `db`'s write transaction (store::Transaction::attempt): its
// error, mapped as write maps it, with its writes rolled back; rethrown when the transaction
// itself ended.
std::exception_ptr attempt_in_savepoint(SQLite::Database& db, const std::function<void()>& step);

// The SQLite backend over a Database (which must outlive it), on `clock`.
class SqliteStore final : public Store {
 public:
  SqliteStore(Database& db, const Clock& clock);

  void write(const std::function<void(Transaction&)>& body) override;
  void read(const std::function<void(Transaction&)>& body) override;
  TimePoint now() const override;
  void prepare_rebinds() override;
  int schema_version() override;
  std::string_view backend() const override { return "sqlite"; }
  std::unique_ptr<Leadership> leadership() override;

 private:
  Database& db_;
  const Clock& clock_;
};

}  // namespace store
}  // namespace aios
