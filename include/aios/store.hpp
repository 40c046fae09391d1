#pragma once
// The task-plane database: a pool of SQLite connections (WAL, synchronous=FULL, busy timeout)
// with numbered migrations, and the row-level operations every transition is built from.
//
// Writes run inside Database::write, each in its own savepoint of a BEGIN IMMEDIATE
// transaction, so a transition and its task_events row commit together or not at all. Writes
// that arrive while another commits are group-committed: one transaction and one fsync for the
// queued writes, each acknowledged only after that COMMIT. Another process (the rebind daemon)
// may write the same file; nothing here assumes a single writer.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace SQLite {
class Database;
class Statement;
}  // namespace SQLite

namespace aios {

struct DatabaseOptions {
  std::filesystem::path path;
  std::chrono::milliseconds busy_timeout{30000};
  std::size_t connections = 4;
  bool migrate = true;  // false for a process that must not change the schema
};

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

// One row of `tasks`, typed. Optional text columns are empty strings when NULL.
struct TaskRow {
  std::string task_id;
  std::string status;
  std::int64_t attempt = 0;
  std::int64_t max_attempts = 0;
  std::int64_t revision = 0;
  std::string claimed_by;
  std::string lease_token_hash;
  std::string lease_expires_at;
  std::string claim_id;
  std::string verification_json;
  std::string result_json;
  std::string metadata_json;
  std::string required_capabilities_json;
  std::string job_id;
  std::string action;
  std::string adapter;
  std::int64_t priority = 0;
  std::string scope_key;
  double scope_weight = 1.0;
  std::string task_json;
  std::string request_sha256;
  std::string created_at;
  std::string updated_at;
  std::string execution_digest;
  std::string capability_scope_json;
  std::int64_t seq = 0;

  bool operator==(const TaskRow&) const = default;
};

std::optional<TaskRow> load_task(SQLite::Database& db, const std::string& task_id);

// Inserts a new task with the next queue sequence number.
void insert_task(SQLite::Database& db, const TaskRow& row);

// Writes every mutable column of `row` where the stored revision is `expected_revision`;
// false when another transition got there first.
bool update_task(SQLite::Database& db, const TaskRow& row, std::int64_t expected_revision);

void append_event(SQLite::Database& db, const std::string& task_id, const std::string& event_type,
                  const std::string& agent_id, const nlohmann::json& payload,
                  const std::string& created_at);

// Tasks in `status` (any status when empty), in queue order (seq), at most `limit`, after
// `after_seq`.
std::vector<TaskRow> tasks_with_status(SQLite::Database& db, const std::string& status,
                                       std::int64_t after_seq, std::size_t limit);

// Calls `visit` on the QUEUED tasks with attempts left, in fleet order (legacy priority first,
// then the scope served least: dispatch_count / scope_weight, then queue order), until it
// returns false. Reads only the rows it visits, through indexes.
void visit_queued_tasks_in_fleet_order(SQLite::Database& db,
                                       const std::function<bool(const TaskRow&)>& visit);

}  // namespace store
}  // namespace aios
