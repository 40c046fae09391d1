#include <SQLiteCpp/SQLiteCpp.h>

#include "aios/store.hpp"

namespace aios::store {
namespace {

constexpr const char* kColumns =
    "task_id,status,attempt,max_attempts,revision,claimed_by,lease_token_hash,lease_expires_at,"
    "claim_id,verification_json,result_json,metadata_json,required_capabilities_json,job_id,"
    "action,adapter,priority,scope_key,scope_weight,task_json,request_sha256,created_at,"
    "updated_at,execution_digest,capability_scope_json,seq";

std::string text(const SQLite::Column& column) {
  return column.isNull() ? std::string() : column.getString();
}

TaskRow read_row(SQLite::Statement& query) {
  TaskRow row;
  row.task_id = text(query.getColumn(0));
  row.status = text(query.getColumn(1));
  row.attempt = query.getColumn(2).getInt64();
  row.max_attempts = query.getColumn(3).getInt64();
  row.revision = query.getColumn(4).getInt64();
  row.claimed_by = text(query.getColumn(5));
  row.lease_token_hash = text(query.getColumn(6));
  row.lease_expires_at = text(query.getColumn(7));
  row.claim_id = text(query.getColumn(8));
  row.verification_json = text(query.getColumn(9));
  row.result_json = text(query.getColumn(10));
  row.metadata_json = text(query.getColumn(11));
  row.required_capabilities_json = text(query.getColumn(12));
  row.job_id = text(query.getColumn(13));
  row.action = text(query.getColumn(14));
  row.adapter = text(query.getColumn(15));
  row.priority = query.getColumn(16).getInt64();
  row.scope_key = text(query.getColumn(17));
  row.scope_weight = query.getColumn(18).getDouble();
  row.task_json = text(query.getColumn(19));
  row.request_sha256 = text(query.getColumn(20));
  row.created_at = text(query.getColumn(21));
  row.updated_at = text(query.getColumn(22));
  row.execution_digest = text(query.getColumn(23));
  row.capability_scope_json = text(query.getColumn(24));
  row.seq = query.getColumn(25).getInt64();
  return row;
}

// NULL for the empty string: the seed's CAS predicates test `IS NULL`.
void bind_text(SQLite::Statement& statement, int index, const std::string& value) {
  if (value.empty()) {
    statement.bind(index);
  } else {
    statement.bind(index, value);
  }
}

}  // namespace

std::optional<TaskRow> load_task(SQLite::Database& db, const std::string& task_id) {
  SQLite::Statement query(db, std::string("SELECT ") + kColumns + " FROM tasks WHERE task_id=?");
  query.bind(1, task_id);
  if (!query.executeStep()) return std::nullopt;
  return read_row(query);
}

void insert_task(SQLite::Database& db, const TaskRow& row) {
  SQLite::Statement insert(db, std::string("INSERT INTO tasks(") + kColumns +
                                   ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                                   "(SELECT COALESCE(MAX(seq), 0) + 1 FROM tasks))");
  insert.bind(1, row.task_id);
  insert.bind(2, row.status);
  insert.bind(3, row.attempt);
  insert.bind(4, row.max_attempts);
  insert.bind(5, row.revision);
  bind_text(insert, 6, row.claimed_by);
  bind_text(insert, 7, row.lease_token_hash);
  bind_text(insert, 8, row.lease_expires_at);
  bind_text(insert, 9, row.claim_id);
  bind_text(insert, 10, row.verification_json);
  bind_text(insert, 11, row.result_json);
  bind_text(insert, 12, row.metadata_json);
  bind_text(insert, 13, row.required_capabilities_json);
  bind_text(insert, 14, row.job_id);
  bind_text(insert, 15, row.action);
  bind_text(insert, 16, row.adapter);
  insert.bind(17, row.priority);
  insert.bind(18, row.scope_key);
  insert.bind(19, row.scope_weight);
  bind_text(insert, 20, row.task_json);
  bind_text(insert, 21, row.request_sha256);
  bind_text(insert, 22, row.created_at);
  bind_text(insert, 23, row.updated_at);
  bind_text(insert, 24, row.execution_digest);
  bind_text(insert, 25, row.capability_scope_json);
  insert.exec();
}

bool update_task(SQLite::Database& db, const TaskRow& row, std::int64_t expected_revision) {
  SQLite::Statement update(
      db,
      "UPDATE tasks SET status=?, attempt=?, revision=?, claimed_by=?, lease_token_hash=?, "
      "lease_expires_at=?, claim_id=?, verification_json=?, result_json=?, metadata_json=?, "
      "updated_at=?, execution_digest=?, action=?, adapter=?, capability_scope_json=? "
      "WHERE task_id=? AND revision=?");
  update.bind(1, row.status);
  update.bind(2, row.attempt);
  update.bind(3, row.revision);
  bind_text(update, 4, row.claimed_by);
  bind_text(update, 5, row.lease_token_hash);
  bind_text(update, 6, row.lease_expires_at);
  bind_text(update, 7, row.claim_id);
  bind_text(update, 8, row.verification_json);
  bind_text(update, 9, row.result_json);
  bind_text(update, 10, row.metadata_json);
  bind_text(update, 11, row.updated_at);
  bind_text(update, 12, row.execution_digest);
  bind_text(update, 13, row.action);
  bind_text(update, 14, row.adapter);
  bind_text(update, 15, row.capability_scope_json);
  update.bind(16, row.task_id);
  update.bind(17, expected_revision);
  return update.exec() == 1;
}

void append_event(SQLite::Database& db, const std::string& task_id, const std::string& event_type,
                  const std::string& agent_id, const nlohmann::json& payload,
                  const std::string& created_at) {
  SQLite::Statement insert(db,
                           "INSERT INTO task_events(task_id,event_type,agent_id,payload_json,"
                           "created_at) VALUES (?,?,?,?,?)");
  insert.bind(1, task_id);
  insert.bind(2, event_type);
  insert.bind(3, agent_id);
  insert.bind(4, payload.dump());
  insert.bind(5, created_at);
  insert.exec();
}

std::vector<TaskRow> tasks_with_status(SQLite::Database& db, const std::string& status,
                                       std::int64_t after_seq, std::size_t limit) {
  SQLite::Statement query(
      db, std::string("SELECT ") + kColumns +
              " FROM tasks WHERE (?1='' OR status=?1) AND seq>?2 ORDER BY seq LIMIT ?3");
  query.bind(1, status);
  query.bind(2, after_seq);
  query.bind(3, static_cast<std::int64_t>(limit));
  std::vector<TaskRow> rows;
  while (query.executeStep()) rows.push_back(read_row(query));
  return rows;
}

std::vector<TaskRow> queued_tasks_in_fleet_order(SQLite::Database& db) {
  std::string columns;
  for (std::string_view rest = kColumns; !rest.empty();) {
    const auto comma = rest.find(',');
    columns += (columns.empty() ? "t." : ",t.") + std::string(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  SQLite::Statement query(
      db, "SELECT " + columns +
              " FROM tasks t LEFT JOIN fleet_scope_state s ON s.scope_key=t.scope_key "
              "WHERE t.status='QUEUED' AND t.attempt<t.max_attempts ORDER BY t.priority DESC, "
              "COALESCE(s.dispatch_count,0)/t.scope_weight ASC, t.seq ASC");
  std::vector<TaskRow> rows;
  while (query.executeStep()) rows.push_back(read_row(query));
  return rows;
}

}  // namespace aios::store
