// The rebind service's statements on PostgreSQL. The schema is always the task plane's own
// (migrations run by the scheduler), but the checks of the SQLite backend stand, so a database
// that is not a task plane is refused with the same codes.
#include <set>

#include "aios/error.hpp"
#include "store/columns.hpp"
#include "store/postgres/transaction.hpp"

namespace aios::store {
namespace pg {
namespace {

constexpr const char* kRebindRequiredColumns[] = {
    "task_id",    "status",           "attempt",          "revision",
    "claimed_by", "lease_token_hash", "lease_expires_at", "verification_json"};

std::set<std::string> columns_of(Connection& db, const std::string& table) {
  const auto rows = db.run(
      "SELECT column_name FROM information_schema.columns WHERE table_schema=current_schema() "
      "AND table_name=$1",
      Params().text(table));
  std::set<std::string> names;
  for (int at = 0; at < rows.size(); ++at) names.insert(rows.text(at, 0));
  return names;
}

}  // namespace
}  // namespace pg

std::optional<RebindTask> PgTransaction::load_rebind_task(const std::string& task_id) {
  const auto columns = pg::columns_of(db_, "tasks");
  for (const char* name : pg::kRebindRequiredColumns) {
    if (!columns.contains(name)) throw Error(ErrorCode::TASK_SCHEMA_EXECUTION_REBIND_UNSUPPORTED);
  }
  if (!columns.contains("metadata_json")) throw Error(ErrorCode::TASK_METADATA_SCHEMA_UNSUPPORTED);
  const bool has_requirement = columns.contains("required_capabilities_json");
  const auto rows = db_.run(std::string("SELECT status,revision,attempt,claimed_by,"
                                        "lease_token_hash,lease_expires_at,verification_json,"
                                        "metadata_json,") +
                                (has_requirement ? "required_capabilities_json" : "NULL") +
                                " FROM tasks WHERE task_id=$1" + (writing_ ? " FOR UPDATE" : ""),
                            pg::Params().text(task_id));
  if (rows.empty()) return std::nullopt;
  return RebindTask{.status = rows.text(0, 0),
                    .revision = rows.integer(0, 1),
                    .attempt = rows.integer(0, 2),
                    .claimed_by = rows.optional(0, 3),
                    .lease_token_hash = rows.optional(0, 4),
                    .lease_expires_at = rows.optional(0, 5),
                    .verification_json = rows.optional(0, 6),
                    .metadata_json = rows.optional(0, 7),
                    .required_capabilities_json = rows.optional(0, 8)};
}

std::optional<RebindReceipt> PgTransaction::rebind_receipt(const std::string& task_id,
                                                           const std::string& key) {
  lock_task(task_id);
  const auto rows = db_.run(
      "SELECT request_sha256,authorization_id,previous_verification_sha256,old_execution_digest,"
      "new_execution_digest,expected_revision,applied_revision,attempt,reason,created_at "
      "FROM task_execution_rebinds WHERE task_id=$1 AND idempotency_key=$2",
      pg::Params().text(task_id).text(key));
  if (rows.empty()) return std::nullopt;
  return RebindReceipt{.task_id = task_id,
                       .idempotency_key = key,
                       .request_sha256 = rows.text(0, 0),
                       .authorization_id = rows.text(0, 1),
                       .previous_verification_sha256 = rows.text(0, 2),
                       .old_execution_digest = rows.text(0, 3),
                       .new_execution_digest = rows.text(0, 4),
                       .expected_revision = rows.integer(0, 5),
                       .applied_revision = rows.integer(0, 6),
                       .attempt = rows.integer(0, 7),
                       .reason = rows.text(0, 8),
                       .created_at = rows.text(0, 9)};
}

// The seed's full CAS predicate; the columns derived from the envelope follow the new one.
bool PgTransaction::apply_rebind(const RebindUpdate& update) {
  // It writes the envelope itself: an update after it stores whatever envelope it carries.
  fetched_.reset();
  envelopes_.erase(update.task_id);
  const auto events = pg::columns_of(db_, "task_events");
  for (const char* name : {"task_id", "event_type", "agent_id", "created_at"}) {
    if (!events.contains(name)) throw Error(ErrorCode::TASK_EVENT_TABLE_UNSUPPORTED);
  }
  if (!events.contains("payload_json")) throw Error(ErrorCode::TASK_EVENT_PAYLOAD_UNSUPPORTED);
  // The row's fences are no longer the ones this transaction read.
  if (const auto held = locked_tasks_.find(update.task_id); held != locked_tasks_.end()) {
    held->second.reset();
  }
  return db_.run(
                "UPDATE tasks SET metadata_json=$1, revision=$2, claimed_by=NULL, "
                "lease_token_hash=NULL, lease_expires_at=NULL, execution_digest=$3, action=$4, "
                "adapter=$5, capability_scope_json=$6, updated_at=$7 WHERE task_id=$8 AND "
                "status=$9 AND revision=$10 AND attempt=$11 AND claimed_by IS NOT DISTINCT FROM "
                "$12 AND lease_token_hash IS NULL AND lease_expires_at IS NULL",
                pg::Params()
                    .text(update.metadata_json)
                    .integer(update.applied_revision)
                    .text(update.execution_digest)
                    .text(update.action)
                    .text(update.adapter)
                    .text(names_text(update.capability_scope))
                    .text(update.updated_at)
                    .text(update.task_id)
                    .text(update.expected_status)
                    .integer(update.expected_revision)
                    .integer(update.expected_attempt)
                    .optional(update.expected_claimed_by))
             .affected() == 1;
}

void PgTransaction::insert_rebind_receipt(const RebindReceipt& receipt) {
  db_.run(
      "INSERT INTO task_execution_rebinds(task_id,idempotency_key,request_sha256,"
      "authorization_id,previous_verification_sha256,old_execution_digest,new_execution_digest,"
      "expected_revision,applied_revision,attempt,reason,created_at) "
      "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)",
      pg::Params()
          .text(receipt.task_id)
          .text(receipt.idempotency_key)
          .text(receipt.request_sha256)
          .text(receipt.authorization_id)
          .text(receipt.previous_verification_sha256)
          .text(receipt.old_execution_digest)
          .text(receipt.new_execution_digest)
          .integer(receipt.expected_revision)
          .integer(receipt.applied_revision)
          .integer(receipt.attempt)
          .text(receipt.reason)
          .text(receipt.created_at));
}

}  // namespace aios::store
