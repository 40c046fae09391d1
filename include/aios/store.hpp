#pragma once
// The task store: the seam every module reaches durable state through (store::Store, one
// transaction's operations in store::Transaction), and its SQLite backend (src/store/sqlite/,
// the only code that knows SQL or SQLiteCpp): a pool of SQLite connections (WAL,
// synchronous=FULL, busy timeout) with numbered migrations, and the row-level operations every
// transition is built from.
//
// The seam is being put in place module by module (issue 21): the rebind service goes through
// store::Store only; the task plane, the Bridge and the worker's checkpoints still take the
// SQLite connection that Database::write hands out, and move behind the seam next.
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

#include "aios/sys.hpp"

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

// --- the seam ------------------------------------------------------------------------------

// A receipt of one applied execution rebind: what a replay of the same idempotency key answers.
struct RebindReceipt {
  std::string task_id;
  std::string idempotency_key;
  std::string request_sha256;
  std::string authorization_id;
  std::string previous_verification_sha256;
  std::string old_execution_digest;
  std::string new_execution_digest;
  std::int64_t expected_revision = 0;
  std::int64_t applied_revision = 0;
  std::int64_t attempt = 0;
  std::string reason;
  std::string created_at;

  bool operator==(const RebindReceipt&) const = default;
};

// A task as the rebind service checks it, each column as stored (nullopt for NULL). The store
// may hold the seed's own minimal schema, which has no required_capabilities_json.
struct RebindTask {
  std::string status;
  std::int64_t revision = 0;
  std::int64_t attempt = 0;
  std::optional<std::string> claimed_by;  // NULL and "" differ in the CAS predicate
  std::optional<std::string> lease_token_hash;
  std::optional<std::string> lease_expires_at;
  std::optional<std::string> verification_json;
  std::optional<std::string> metadata_json;
  std::optional<std::string> required_capabilities_json;
};

// The compare-and-swap of a rebind: where the task still is exactly as checked (status,
// revision, attempt, claimed_by, and no lease), its metadata and revision are replaced, any
// stale claimant cleared, and the columns derived from the envelope follow the new one.
struct RebindUpdate {
  std::string task_id;
  std::string expected_status;
  std::int64_t expected_revision = 0;
  std::int64_t expected_attempt = 0;
  std::optional<std::string> expected_claimed_by;
  std::string metadata_json;
  std::int64_t applied_revision = 0;
  std::string execution_digest;
  std::string action;
  std::string adapter;
  std::string capability_scope_json;
  std::string updated_at;
};

// One transaction's operations. Valid only inside the Store::write or Store::read body it was
// handed to; a read body must call only the reading ones.
class Transaction {
 public:
  virtual ~Transaction() = default;

  virtual std::optional<TaskRow> load_task(const std::string& task_id) = 0;
  // A new task, given the next queue sequence number. STORE_FAILURE for a task id that exists.
  virtual void insert_task(const TaskRow& row) = 0;
  // Every mutable column of `row` where the stored revision is `expected_revision`; false when
  // another transition got there first.
  virtual bool update_task(const TaskRow& row, std::int64_t expected_revision) = 0;

  // The event row a transition commits with.
  virtual void append_event(const std::string& task_id, const std::string& event_type,
                            const std::string& agent_id, const nlohmann::json& payload,
                            const std::string& created_at) = 0;

  // The task's rebind view; nullopt when there is no such task. Throws
  // TASK_SCHEMA_EXECUTION_REBIND_UNSUPPORTED when the store's tasks lack a column every task
  // plane has, then TASK_METADATA_SCHEMA_UNSUPPORTED when they lack metadata_json, whether or
  // not the task exists.
  virtual std::optional<RebindTask> load_rebind_task(const std::string& task_id) = 0;
  virtual std::optional<RebindReceipt> rebind_receipt(const std::string& task_id,
                                                      const std::string& idempotency_key) = 0;
  // False when the task is no longer as `update` expects. Throws TASK_EVENT_TABLE_UNSUPPORTED
  // or TASK_EVENT_PAYLOAD_UNSUPPORTED, with nothing written, when the store could not take the
  // rebind's event row.
  virtual bool apply_rebind(const RebindUpdate& update) = 0;
  virtual void insert_rebind_receipt(const RebindReceipt& receipt) = 0;
};

// A task store backend. Thread-safe.
class Store {
 public:
  virtual ~Store() = default;

  // Runs `body` in one write transaction and returns once it is durable. A backend may run
  // `body` again when its transaction lost a serialisation conflict to another writer, so a
  // body does store calls and pure computation only (no I/O, nothing it cannot repeat). An
  // exception from `body` rolls back all of its writes and propagates. STORE_BUSY,
  // STORE_FULL or STORE_FAILURE when the backend fails.
  virtual void write(const std::function<void(Transaction&)>& body) = 0;
  // Runs `body` against one consistent snapshot.
  virtual void read(const std::function<void(Transaction&)>& body) = 0;

  // The store's clock: every time a transition records and every lease is judged by it, so
  // processes sharing a store agree (the injected clock for SQLite, whose processes share a
  // host; the database server's for a networked backend).
  virtual TimePoint now() const = 0;

  // Makes the store ready to keep rebind receipts (the seed's own database has no table for
  // them). Idempotent.
  virtual void prepare_rebinds() = 0;
};

// The SQLite backend over a Database (which must outlive it), on `clock`.
class SqliteStore final : public Store {
 public:
  SqliteStore(Database& db, const Clock& clock);

  void write(const std::function<void(Transaction&)>& body) override;
  void read(const std::function<void(Transaction&)>& body) override;
  TimePoint now() const override;
  void prepare_rebinds() override;

 private:
  Database& db_;
  const Clock& clock_;
};

}  // namespace store
}  // namespace aios
