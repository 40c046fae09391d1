// The rebind service's statements. They run on the scheduler's schema and on the seed's own
// minimal one (tasks and task_events only), so each looks at the columns the tables have.
#include <SQLiteCpp/SQLiteCpp.h>

#include <set>
#include <utility>
#include <vector>

#include "aios/error.hpp"
#include "store/columns.hpp"
#include "store/sqlite/database.hpp"
#include "store/sqlite/transaction.hpp"

namespace aios::store {
namespace {

// Columns every supported schema has; a database without them was never a task plane.
constexpr const char* kRequiredColumns[] = {
    "task_id",    "status",           "attempt",          "revision",
    "claimed_by", "lease_token_hash", "lease_expires_at", "verification_json"};

// The column names of `table` (empty when there is no such table).
std::set<std::string> columns_of(SQLite::Database& db, const std::string& table) {
  Prepared query(db, "SELECT name FROM pragma_table_info(?)");
  query->bind(1, table);
  std::set<std::string> names;
  while (query->executeStep()) names.insert(query->getColumn(0).getString());
  return names;
}

std::optional<std::string> optional_text(const SQLite::Column& column) {
  if (column.isNull()) return std::nullopt;
  return column.getString();
}

void bind_optional(SQLite::Statement& statement, int index, const std::optional<std::string>& v) {
  if (v) {
    statement.bind(index, *v);
  } else {
    statement.bind(index);
  }
}

// The seed's event table contract; checked before the UPDATE so that a database that cannot
// take the audit row is refused with nothing written.
void require_event_table(SQLite::Database& db) {
  const auto columns = columns_of(db, "task_events");
  for (const char* name : {"task_id", "event_type", "agent_id", "created_at"}) {
    if (!columns.contains(name)) throw Error(ErrorCode::TASK_EVENT_TABLE_UNSUPPORTED);
  }
  if (!columns.contains("payload_json")) throw Error(ErrorCode::TASK_EVENT_PAYLOAD_UNSUPPORTED);
}

}  // namespace

std::optional<RebindTask> SqliteTransaction::load_rebind_task(const std::string& task_id) {
  const auto columns = columns_of(db_, "tasks");
  for (const char* name : kRequiredColumns) {
    if (!columns.contains(name)) throw Error(ErrorCode::TASK_SCHEMA_EXECUTION_REBIND_UNSUPPORTED);
  }
  if (!columns.contains("metadata_json")) {
    throw Error(ErrorCode::TASK_METADATA_SCHEMA_UNSUPPORTED);
  }
  const bool has_requirement = columns.contains("required_capabilities_json");
  Prepared query(db_, std::string("SELECT status,revision,attempt,claimed_by,lease_token_hash,"
                                  "lease_expires_at,verification_json,metadata_json,") +
                          (has_requirement ? "required_capabilities_json" : "NULL") +
                          " FROM tasks WHERE task_id=?");
  query->bind(1, task_id);
  if (!query->executeStep()) return std::nullopt;
  return RebindTask{.status = query->getColumn(0).getString(),
                    .revision = query->getColumn(1).getInt64(),
                    .attempt = query->getColumn(2).getInt64(),
                    .claimed_by = optional_text(query->getColumn(3)),
                    .lease_token_hash = optional_text(query->getColumn(4)),
                    .lease_expires_at = optional_text(query->getColumn(5)),
                    .verification_json = optional_text(query->getColumn(6)),
                    .metadata_json = optional_text(query->getColumn(7)),
                    .required_capabilities_json = optional_text(query->getColumn(8))};
}

std::optional<RebindReceipt> SqliteTransaction::rebind_receipt(const std::string& task_id,
                                                               const std::string& key) {
  Prepared query(db_,
                 "SELECT request_sha256,authorization_id,previous_verification_sha256,"
                 "old_execution_digest,new_execution_digest,expected_revision,applied_revision,"
                 "attempt,reason,created_at FROM task_execution_rebinds "
                 "WHERE task_id=? AND idempotency_key=?");
  query->bind(1, task_id);
  query->bind(2, key);
  if (!query->executeStep()) return std::nullopt;
  return RebindReceipt{.task_id = task_id,
                       .idempotency_key = key,
                       .request_sha256 = query->getColumn(0).getString(),
                       .authorization_id = query->getColumn(1).getString(),
                       .previous_verification_sha256 = query->getColumn(2).getString(),
                       .old_execution_digest = query->getColumn(3).getString(),
                       .new_execution_digest = query->getColumn(4).getString(),
                       .expected_revision = query->getColumn(5).getInt64(),
                       .applied_revision = query->getColumn(6).getInt64(),
                       .attempt = query->getColumn(7).getInt64(),
                       .reason = query->getColumn(8).getString(),
                       .created_at = query->getColumn(9).getString()};
}

// The UPDATE with the seed's full CAS predicate. On the task plane's schema the columns derived
// from the envelope (digest, action, adapter, scope) and updated_at follow the new envelope
// too, so no reader of them ever sees the old plan; the seed's minimal schema has none.
bool SqliteTransaction::apply_rebind(const RebindUpdate& update) {
  require_event_table(db_);
  const auto columns = columns_of(db_, "tasks");
  std::vector<std::pair<std::string, const std::string*>> derived;
  const auto derive = [&](const char* column, const std::string& value) {
    if (columns.contains(column)) derived.emplace_back(column, &value);
  };
  derive("execution_digest", update.execution_digest);
  derive("action", update.action);
  derive("adapter", update.adapter);
  const auto scope = names_text(update.capability_scope);
  derive("capability_scope_json", scope);
  derive("updated_at", update.updated_at);

  std::string sql =
      "UPDATE tasks SET metadata_json=?, revision=?, claimed_by=NULL, lease_token_hash=NULL, "
      "lease_expires_at=NULL";
  for (const auto& [column, value] : derived) sql += ", " + column + "=?";
  sql +=
      " WHERE task_id=? AND status=? AND revision=? AND attempt=? AND claimed_by IS ? AND "
      "lease_token_hash IS NULL AND lease_expires_at IS NULL";
  Prepared statement(db_, sql);
  int index = 0;
  statement->bind(++index, update.metadata_json);
  statement->bind(++index, update.applied_revision);
  for (const auto& [column, value] : derived) statement->bind(++index, *value);
  statement->bind(++index, update.task_id);
  statement->bind(++index, update.expected_status);
  statement->bind(++index, update.expected_revision);
  statement->bind(++index, update.expected_attempt);
  bind_optional(*statement, ++index, update.expected_claimed_by);
  return statement->exec() == 1;
}

void SqliteTransaction::insert_rebind_receipt(const RebindReceipt& receipt) {
  Prepared insert(
      db_,
      "INSERT INTO task_execution_rebinds(task_id,idempotency_key,request_sha256,"
      "authorization_id,previous_verification_sha256,old_execution_digest,new_execution_digest,"
      "expected_revision,applied_revision,attempt,reason,created_at) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  insert->bind(1, receipt.task_id);
  insert->bind(2, receipt.idempotency_key);
  insert->bind(3, receipt.request_sha256);
  insert->bind(4, receipt.authorization_id);
  insert->bind(5, receipt.previous_verification_sha256);
  insert->bind(6, receipt.old_execution_digest);
  insert->bind(7, receipt.new_execution_digest);
  insert->bind(8, receipt.expected_revision);
  insert->bind(9, receipt.applied_revision);
  insert->bind(10, receipt.attempt);
  insert->bind(11, receipt.reason);
  insert->bind(12, receipt.created_at);
  insert->exec();
}

}  // namespace aios::store
