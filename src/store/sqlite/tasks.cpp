#include <SQLiteCpp/SQLiteCpp.h>

#include "aios/canonical.hpp"
#include "aios/error.hpp"
#include "store/columns.hpp"
#include "store/queries.hpp"
#include "store/sqlite/database.hpp"

namespace aios::store {
namespace {

constexpr const char* kColumns =
    "task_id,status,attempt,max_attempts,revision,claimed_by,lease_token_hash,lease_expires_at,"
    "claim_id,verification_json,result_json,metadata_json,required_capabilities_json,job_id,"
    "action,adapter,priority,scope_key,scope_weight,task_json,request_sha256,created_at,"
    "updated_at,execution_digest,capability_scope_json,seq,lease_generation,requeues";

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
  row.capability_scope = scope_of(text(query.getColumn(24)));
  row.seq = query.getColumn(25).getInt64();
  row.lease_generation = query.getColumn(26).getInt64();
  row.requeues = query.getColumn(27).getInt64();
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
  store::Prepared query(db, std::string("SELECT ") + kColumns + " FROM tasks WHERE task_id=?");
  query->bind(1, task_id);
  if (!query->executeStep()) return std::nullopt;
  return read_row(*query);
}

void insert_task(SQLite::Database& db, const TaskRow& row) {
  // The counter row is the queue's order: each insert takes the next number under the row's
  // write lock, so no two tasks share one whatever the backend's isolation.
  store::Prepared next(db, "UPDATE task_queue_sequence SET last_seq=last_seq+1 RETURNING last_seq");
  if (!next->executeStep()) throw Error(ErrorCode::STORE_FAILURE, "the queue sequence is missing");
  const std::int64_t seq = next->getColumn(0).getInt64();
  store::Prepared insert(db,
                         std::string("INSERT INTO tasks(") + kColumns +
                             ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  insert->bind(1, row.task_id);
  insert->bind(2, row.status);
  insert->bind(3, row.attempt);
  insert->bind(4, row.max_attempts);
  insert->bind(5, row.revision);
  bind_text(*insert, 6, row.claimed_by);
  bind_text(*insert, 7, row.lease_token_hash);
  bind_text(*insert, 8, row.lease_expires_at);
  bind_text(*insert, 9, row.claim_id);
  bind_text(*insert, 10, row.verification_json);
  bind_text(*insert, 11, row.result_json);
  bind_text(*insert, 12, row.metadata_json);
  bind_text(*insert, 13, row.required_capabilities_json);
  bind_text(*insert, 14, row.job_id);
  bind_text(*insert, 15, row.action);
  bind_text(*insert, 16, row.adapter);
  insert->bind(17, row.priority);
  insert->bind(18, row.scope_key);
  insert->bind(19, row.scope_weight);
  bind_text(*insert, 20, row.task_json);
  bind_text(*insert, 21, row.request_sha256);
  bind_text(*insert, 22, row.created_at);
  bind_text(*insert, 23, row.updated_at);
  bind_text(*insert, 24, row.execution_digest);
  bind_text(*insert, 25, scope_text(row.capability_scope));
  insert->bind(26, seq);
  insert->bind(27, row.lease_generation);
  insert->bind(28, row.requeues);
  insert->exec();
}

bool update_task(SQLite::Database& db, const TaskRow& row, std::int64_t expected_revision,
                 std::int64_t expected_lease_generation) {
  store::Prepared update(
      db,
      "UPDATE tasks SET status=?, attempt=?, revision=?, claimed_by=?, lease_token_hash=?, "
      "lease_expires_at=?, claim_id=?, verification_json=?, result_json=?, metadata_json=?, "
      "updated_at=?, execution_digest=?, action=?, adapter=?, capability_scope_json=?, "
      "lease_generation=?, max_attempts=?, requeues=? WHERE task_id=? AND revision=? AND "
      "lease_generation=?");
  update->bind(1, row.status);
  update->bind(2, row.attempt);
  update->bind(3, row.revision);
  bind_text(*update, 4, row.claimed_by);
  bind_text(*update, 5, row.lease_token_hash);
  bind_text(*update, 6, row.lease_expires_at);
  bind_text(*update, 7, row.claim_id);
  bind_text(*update, 8, row.verification_json);
  bind_text(*update, 9, row.result_json);
  bind_text(*update, 10, row.metadata_json);
  bind_text(*update, 11, row.updated_at);
  bind_text(*update, 12, row.execution_digest);
  bind_text(*update, 13, row.action);
  bind_text(*update, 14, row.adapter);
  bind_text(*update, 15, scope_text(row.capability_scope));
  update->bind(16, row.lease_generation);
  update->bind(17, row.max_attempts);
  update->bind(18, row.requeues);
  update->bind(19, row.task_id);
  update->bind(20, expected_revision);
  update->bind(21, expected_lease_generation);
  return update->exec() == 1;
}

void append_event(SQLite::Database& db, const std::string& task_id, const std::string& event_type,
                  const std::string& agent_id, const nlohmann::json& payload,
                  const std::string& created_at) {
  store::Prepared insert(db,
                         "INSERT INTO task_events(task_id,event_type,agent_id,payload_json,"
                         "created_at) VALUES (?,?,?,?,?)");
  insert->bind(1, task_id);
  insert->bind(2, event_type);
  insert->bind(3, agent_id);
  insert->bind(4, canonical_json(payload));
  insert->bind(5, created_at);
  insert->exec();
}

std::vector<TaskRow> tasks_matching(SQLite::Database& db, const TaskFilter& filter,
                                    std::int64_t after_seq, std::size_t limit) {
  store::Prepared query(db, std::string("SELECT ") + kColumns + kTasksWhere);
  // SQLite numbers $N parameters in the order they first appear, so they are bound by name.
  query->bind("$1", filter.status);
  query->bind("$2", filter.tenant);
  query->bind("$3", after_seq);
  query->bind("$4", static_cast<std::int64_t>(limit));
  query->bind("$5", filter.id_prefix);
  std::vector<TaskRow> rows;
  while (query->executeStep()) rows.push_back(read_row(*query));
  return rows;
}

std::vector<TaskRow> newest_tasks(SQLite::Database& db, std::size_t limit) {
  store::Prepared query(db, std::string("SELECT ") + kColumns + kNewestTasks);
  query->bind(1, static_cast<std::int64_t>(limit));
  std::vector<TaskRow> rows;
  while (query->executeStep()) rows.push_back(read_row(*query));
  return rows;
}

// The fleet order, merged from its groups: the queued tasks of one (priority, scope_key,
// scope_weight) share their first two sort keys, so each group is read in seq order straight
// from the tasks_by_status_scope index and only the group heads are compared. A poll that
// stops after `limit` eligible tasks reads a few rows, not the queue, and sorts nothing.
void visit_queued_tasks_in_fleet_order(SQLite::Database& db,
                                       const std::function<bool(const TaskRow&)>& visit) {
  struct Group {
    std::unique_ptr<Prepared> rows;
    double served = 0;  // dispatch_count / scope_weight, as the SQL ordering computed it
    std::optional<TaskRow> head;
  };
  std::vector<Group> groups;
  // The groups are found by a loose index scan of tasks_by_status_scope: the first group, then
  // each next one by a seek past the previous, trying the next weight of the same scope, the
  // next scope of the same priority, then the next priority. Each seek binds an equality
  // prefix and one range, which SQLite follows in the index; a row-value range
  // (priority, scope_key, scope_weight) > (?, ?, ?) seeks on priority alone and walks a group.
  const std::string group_columns =
      "SELECT priority, scope_key, scope_weight FROM tasks INDEXED BY tasks_by_status_scope "
      "WHERE status='QUEUED' AND ";
  store::Prepared first(db, group_columns +
                                "priority IS NOT NULL "
                                "ORDER BY priority, scope_key, scope_weight LIMIT 1");
  store::Prepared next_weight(db, group_columns +
                                      "priority=?1 AND scope_key=?2 AND "
                                      "scope_weight>?3 ORDER BY scope_weight LIMIT 1");
  store::Prepared next_scope(db, group_columns +
                                     "priority=?1 AND scope_key>?2 "
                                     "ORDER BY scope_key, scope_weight LIMIT 1");
  store::Prepared next_priority(db, group_columns +
                                        "priority>?1 "
                                        "ORDER BY priority, scope_key, scope_weight "
                                        "LIMIT 1");
  store::Prepared dispatched(db, "SELECT dispatch_count FROM fleet_scope_state WHERE scope_key=?");
  std::int64_t priority = 0;
  std::string scope_key;
  double weight = 0;
  // Steps `seek`; on a row, makes it the current group.
  const auto found = [&](SQLite::Statement& seek) {
    const bool row = seek.executeStep();
    if (row) {
      priority = seek.getColumn(0).getInt64();
      scope_key = seek.getColumn(1).getString();
      weight = seek.getColumn(2).getDouble();
    }
    seek.reset();
    return row;
  };
  const auto advance = [&] {
    next_weight->bind(1, priority);
    next_weight->bind(2, scope_key);
    next_weight->bind(3, weight);
    if (found(*next_weight)) return true;
    next_scope->bind(1, priority);
    next_scope->bind(2, scope_key);
    if (found(*next_scope)) return true;
    next_priority->bind(1, priority);
    return found(*next_priority);
  };
  for (bool more = found(*first); more; more = advance()) {
    dispatched->bind(1, scope_key);
    const auto count = dispatched->executeStep() ? dispatched->getColumn(0).getInt64() : 0;
    dispatched->reset();
    Group group;
    group.served = static_cast<double>(count) / weight;
    group.rows = std::make_unique<Prepared>(
        db, std::string("SELECT ") + kColumns +
                " FROM tasks INDEXED BY tasks_by_status_scope WHERE status='QUEUED' AND "
                "priority=?1 AND scope_key=?2 AND scope_weight=?3 AND attempt<max_attempts "
                "ORDER BY seq");
    (*group.rows)->bind(1, priority);
    (*group.rows)->bind(2, scope_key);
    (*group.rows)->bind(3, weight);
    if ((*group.rows)->executeStep()) {
      group.head = read_row(**group.rows);
      groups.push_back(std::move(group));
    }
  }
  // Legacy priority first, then the scope served least, then queue order.
  const auto before = [](const Group& a, const Group& b) {
    if (a.head->priority != b.head->priority) return a.head->priority > b.head->priority;
    if (a.served != b.served) return a.served < b.served;
    return a.head->seq < b.head->seq;
  };
  while (true) {
    Group* next = nullptr;
    for (auto& group : groups) {
      if (group.head && (next == nullptr || before(group, *next))) next = &group;
    }
    if (next == nullptr || !visit(*next->head)) return;
    next->head =
        (*next->rows)->executeStep() ? std::optional(read_row(**next->rows)) : std::nullopt;
  }
}

}  // namespace aios::store
