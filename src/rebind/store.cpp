// The rebind transaction. The Bridge is asked between two database transactions, never inside
// one: a slow Bridge must not hold the task database's write lock that the scheduler needs. So
// everything checked in the snapshot is checked again under BEGIN IMMEDIATE, and the UPDATE
// repeats the whole CAS predicate.
#include <optional>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/fault.hpp"
#include "aios/rebind.hpp"
#include "rebind/task_snapshot.hpp"

namespace aios {
namespace {

using envelope::fail;

constexpr const char* kCreateReceipts = R"sql(
CREATE TABLE IF NOT EXISTS task_execution_rebinds (
  task_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  request_sha256 TEXT NOT NULL,
  authorization_id TEXT NOT NULL,
  previous_verification_sha256 TEXT NOT NULL,
  old_execution_digest TEXT NOT NULL,
  new_execution_digest TEXT NOT NULL,
  expected_revision INTEGER NOT NULL,
  applied_revision INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  reason TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(task_id,idempotency_key)
))sql";

// The answer to a request whose receipt exists: the recorded outcome, or a conflict when the
// same key came with another request.
std::optional<nlohmann::json> replay(SQLite::Database& db, const std::string& task_id,
                                     const std::string& key, const std::string& request_sha) {
  store::Prepared query(db,
                        "SELECT request_sha256,attempt,applied_revision,old_execution_digest,"
                        "new_execution_digest,authorization_id FROM task_execution_rebinds "
                        "WHERE task_id=? AND idempotency_key=?");
  query->bind(1, task_id);
  query->bind(2, key);
  if (!query->executeStep()) return std::nullopt;
  if (query->getColumn(0).getString() != request_sha) {
    fail(ErrorCode::EXECUTION_REBIND_IDEMPOTENCY_CONFLICT);
  }
  return nlohmann::json{{"task_id", task_id},
                        {"status", "QUEUED"},
                        {"attempt", query->getColumn(1).getInt64()},
                        {"revision", query->getColumn(2).getInt64()},
                        {"old_execution_digest", query->getColumn(3).getString()},
                        {"new_execution_digest", query->getColumn(4).getString()},
                        {"authorization_id", query->getColumn(5).getString()},
                        {"idempotent", true}};
}

// The seed's event table contract; checked before the UPDATE so that a database that cannot
// take the audit row is refused with nothing written.
void require_event_table(SQLite::Database& db) {
  const auto columns = rebind::columns_of(db, "task_events");
  for (const char* name : {"task_id", "event_type", "agent_id", "created_at"}) {
    if (!columns.contains(name)) fail(ErrorCode::TASK_EVENT_TABLE_UNSUPPORTED);
  }
  if (!columns.contains("payload_json")) fail(ErrorCode::TASK_EVENT_PAYLOAD_UNSUPPORTED);
}

void bind_optional(SQLite::Statement& statement, int index, const std::optional<std::string>& v) {
  if (v) {
    statement.bind(index, *v);
  } else {
    statement.bind(index);
  }
}

// The UPDATE with the seed's full CAS predicate. On the task plane's schema the columns it
// derives from the envelope (digest, action, adapter, scope) and updated_at follow the new
// envelope too, so no reader of them ever sees the old plan; the seed's minimal schema has none.
bool apply_update(SQLite::Database& db, const std::string& task_id,
                  const ExecutionRebindRequest& request, const rebind::TaskSnapshot& snapshot,
                  const nlohmann::json& metadata, const nlohmann::json& new_execution,
                  std::int64_t applied_revision, const std::string& now) {
  std::vector<std::pair<std::string, std::string>> derived;
  const auto derive = [&](const char* column, std::string value) {
    if (snapshot.columns.contains(column)) derived.emplace_back(column, std::move(value));
  };
  derive("execution_digest", new_execution.at("execution_digest"));
  derive("action", new_execution.at("action"));
  derive("adapter", new_execution.at("adapter"));
  derive("capability_scope_json", canonical_json(new_execution.at("capability_scope")));
  derive("updated_at", now);

  std::string sql =
      "UPDATE tasks SET metadata_json=?, revision=?, claimed_by=NULL, lease_token_hash=NULL, "
      "lease_expires_at=NULL";
  for (const auto& [column, value] : derived) sql += ", " + column + "=?";
  sql +=
      " WHERE task_id=? AND status=? AND revision=? AND attempt=? AND claimed_by IS ? AND "
      "lease_token_hash IS NULL AND lease_expires_at IS NULL";
  store::Prepared update(db, sql);
  int index = 0;
  update->bind(++index, canonical_json(metadata));
  update->bind(++index, applied_revision);
  for (const auto& [column, value] : derived) update->bind(++index, value);
  update->bind(++index, task_id);
  update->bind(++index, request.expected_status);
  update->bind(++index, request.expected_revision);
  update->bind(++index, request.expected_attempt);
  bind_optional(*update, ++index, snapshot.claimed_by);
  return update->exec() == 1;
}

void insert_receipt(SQLite::Database& db, const std::string& task_id,
                    const ExecutionRebindRequest& request, const std::string& request_sha,
                    const nlohmann::json& old_digest, const nlohmann::json& new_digest,
                    std::int64_t applied_revision, const std::string& now) {
  store::Prepared insert(
      db,
      "INSERT INTO task_execution_rebinds(task_id,idempotency_key,request_sha256,"
      "authorization_id,previous_verification_sha256,old_execution_digest,new_execution_digest,"
      "expected_revision,applied_revision,attempt,reason,created_at) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  insert->bind(1, task_id);
  insert->bind(2, request.idempotency_key);
  insert->bind(3, request_sha);
  insert->bind(4, request.authorization_id);
  insert->bind(5, request.previous_verification_sha256);
  insert->bind(6, old_digest.get<std::string>());
  insert->bind(7, new_digest.get<std::string>());
  insert->bind(8, request.expected_revision);
  insert->bind(9, applied_revision);
  insert->bind(10, request.expected_attempt);
  insert->bind(11, request.reason);
  insert->bind(12, now);
  insert->exec();
}

}  // namespace

ExecutionRebindStore::ExecutionRebindStore(Database& db, ExecutionResolver resolver,
                                           std::string authorization_id, const Clock& clock)
    : db_(db),
      resolver_(std::move(resolver)),
      authorization_id_(std::move(authorization_id)),
      clock_(clock) {
  db_.write([](SQLite::Database& connection) { connection.exec(kCreateReceipts); });
}

nlohmann::json ExecutionRebindStore::rebind(std::string_view task_id_text,
                                            const ExecutionRebindRequest& request) {
  const std::string task_id(python_strip(task_id_text));
  if (!envelope::is_task_id(task_id)) fail(ErrorCode::TASK_ID_INVALID);
  if (request.authorization_id != authorization_id_) {
    fail(ErrorCode::EXECUTION_REBIND_AUTHORIZATION_ID_MISMATCH);
  }
  const std::string request_sha = digest(request.to_public());

  // The replay must win before the CAS checks: an applied rebind has moved the revision on.
  std::optional<nlohmann::json> recorded;
  rebind::TaskSnapshot snapshot;
  db_.read([&](SQLite::Database& db) {
    recorded = replay(db, task_id, request.idempotency_key, request_sha);
    if (!recorded) snapshot = rebind::load_and_validate(db, task_id, request);
  });
  if (recorded) return *recorded;

  const auto binding = GovernedBinding::from_mapping(snapshot.old_execution);
  const auto resolved = resolver_(task_id, snapshot.required_capabilities);
  fault_point("rebind_resolved");
  const auto new_execution = validate_execution_envelope(resolved, {.binding = &binding});
  if (new_execution.at("action") != "deterministic") {
    fail(ErrorCode::EXECUTION_REBIND_DETERMINISTIC_PLAN_REQUIRED);
  }
  if (new_execution.at("execution_digest") != request.expected_new_execution_digest) {
    fail(ErrorCode::EXECUTION_REBIND_NEW_DIGEST_DRIFT);
  }

  nlohmann::json result;
  db_.write([&](SQLite::Database& db) {
    if ((recorded = replay(db, task_id, request.idempotency_key, request_sha))) return;
    const auto current = rebind::load_and_validate(db, task_id, request);
    const auto& old_digest = current.old_execution.at("execution_digest");
    const auto& new_digest = new_execution.at("execution_digest");
    const std::int64_t applied_revision = request.expected_revision + 1;
    const std::string now = format_iso8601(clock_.now());

    nlohmann::json metadata = current.metadata;
    metadata["execution"] = new_execution;
    metadata["execution_projection"] = {{"schema", kTaskProjectionSchema},
                                        {"task_id", binding.task_id},
                                        {"job_id", binding.job_id},
                                        {"execution_digest", new_digest}};
    require_event_table(db);
    if (!apply_update(db, task_id, request, current, metadata, new_execution, applied_revision,
                      now)) {
      fail(ErrorCode::EXECUTION_REBIND_CAS_MISMATCH);
    }
    const nlohmann::json claimed_by =
        current.claimed_by ? nlohmann::json(*current.claimed_by) : nlohmann::json();
    store::append_event(
        db, task_id, std::string(kExecutionRebindEventType), std::string(kExecutionRebindActor),
        {{"schema", kExecutionRebindEventSchema},
         {"task_id", task_id},
         {"job_id", binding.job_id},
         {"authorization_id", request.authorization_id},
         {"idempotency_key", request.idempotency_key},
         {"reason", request.reason},
         {"previous_verification_sha256", request.previous_verification_sha256},
         {"old_execution_digest", old_digest},
         {"new_execution_digest", new_digest},
         {"old_action", current.old_execution.at("action")},
         {"new_action", new_execution.at("action")},
         {"previous_revision", request.expected_revision},
         {"applied_revision", applied_revision},
         {"attempt", request.expected_attempt},
         {"request_sha256", request_sha},
         {"previous_claimed_by", claimed_by},
         {"stale_claim_normalized", current.claimed_by && !current.claimed_by->empty()}},
        now);
    insert_receipt(db, task_id, request, request_sha, old_digest, new_digest, applied_revision,
                   now);
    result = {{"task_id", task_id},
              {"status", "QUEUED"},
              {"attempt", request.expected_attempt},
              {"revision", applied_revision},
              {"old_execution_digest", old_digest},
              {"new_execution_digest", new_digest},
              {"authorization_id", request.authorization_id},
              {"idempotent", false}};
  });
  if (!recorded) fault_point("rebind_committed");
  return recorded ? *recorded : result;
}

}  // namespace aios
