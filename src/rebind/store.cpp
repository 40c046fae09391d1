// The rebind transaction. The Bridge is asked between two store transactions, never inside
// one: a slow Bridge must not hold the task store's write lock that the scheduler needs. So
// everything checked in the snapshot is checked again in the write transaction, and the update
// repeats the whole CAS predicate.
#include <optional>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/rebind.hpp"
#include "rebind/task_snapshot.hpp"

namespace aios {
namespace {

using envelope::fail;

// The answer to a request whose receipt exists: the recorded outcome, or a conflict when the
// same key came with another request.
std::optional<nlohmann::json> replay(store::Transaction& transaction, const std::string& task_id,
                                     const std::string& key, const std::string& request_sha) {
  const auto receipt = transaction.rebind_receipt(task_id, key);
  if (!receipt) return std::nullopt;
  if (receipt->request_sha256 != request_sha) {
    fail(ErrorCode::EXECUTION_REBIND_IDEMPOTENCY_CONFLICT);
  }
  return nlohmann::json{{"task_id", task_id},
                        {"status", "QUEUED"},
                        {"attempt", receipt->attempt},
                        {"revision", receipt->applied_revision},
                        {"old_execution_digest", receipt->old_execution_digest},
                        {"new_execution_digest", receipt->new_execution_digest},
                        {"authorization_id", receipt->authorization_id},
                        {"idempotent", true}};
}

}  // namespace

ExecutionRebindStore::ExecutionRebindStore(store::Store& store, ExecutionResolver resolver,
                                           std::string authorization_id, const FaultPlan& faults)
    : store_(store),
      resolver_(std::move(resolver)),
      authorization_id_(std::move(authorization_id)),
      faults_(faults) {
  store_.prepare_rebinds();
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
  store_.read([&](store::Transaction& transaction) {
    recorded = replay(transaction, task_id, request.idempotency_key, request_sha);
    if (!recorded) snapshot = rebind::load_and_validate(transaction, task_id, request);
  });
  if (recorded) return *recorded;

  const auto binding = GovernedBinding::from_mapping(snapshot.old_execution);
  const auto resolved = resolver_(task_id, snapshot.required_capabilities);
  faults_.point("rebind_resolved");
  const auto new_execution = validate_execution_envelope(resolved, {.binding = &binding});
  if (new_execution.at("action") != "deterministic") {
    fail(ErrorCode::EXECUTION_REBIND_DETERMINISTIC_PLAN_REQUIRED);
  }
  if (new_execution.at("execution_digest") != request.expected_new_execution_digest) {
    fail(ErrorCode::EXECUTION_REBIND_NEW_DIGEST_DRIFT);
  }

  nlohmann::json result;
  store_.write([&](store::Transaction& transaction) {
    if ((recorded = replay(transaction, task_id, request.idempotency_key, request_sha))) return;
    const auto current = rebind::load_and_validate(transaction, task_id, request);
    const auto old_digest = current.old_execution.at("execution_digest").get<std::string>();
    const auto new_digest = new_execution.at("execution_digest").get<std::string>();
    const std::int64_t applied_revision = request.expected_revision + 1;
    const std::string now = format_iso8601(store_.now());

    nlohmann::json metadata = current.metadata;
    metadata["execution"] = new_execution;
    metadata["execution_projection"] = {{"schema", kTaskProjectionSchema},
                                        {"task_id", binding.task_id},
                                        {"job_id", binding.job_id},
                                        {"execution_digest", new_digest}};
    if (!transaction.apply_rebind(
            {.task_id = task_id,
             .expected_status = request.expected_status,
             .expected_revision = request.expected_revision,
             .expected_attempt = request.expected_attempt,
             .expected_claimed_by = current.claimed_by,
             .metadata_json = canonical_json(metadata),
             .applied_revision = applied_revision,
             .execution_digest = new_digest,
             .action = new_execution.at("action").get<std::string>(),
             .adapter = new_execution.at("adapter").get<std::string>(),
             .capability_scope = new_execution.at("capability_scope").get<store::Names>(),
             .updated_at = now})) {
      fail(ErrorCode::EXECUTION_REBIND_CAS_MISMATCH);
    }
    const nlohmann::json claimed_by =
        current.claimed_by ? nlohmann::json(*current.claimed_by) : nlohmann::json();
    transaction.append_event(
        task_id, std::string(kExecutionRebindEventType), std::string(kExecutionRebindActor),
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
    transaction.insert_rebind_receipt(
        {.task_id = task_id,
         .idempotency_key = request.idempotency_key,
         .request_sha256 = request_sha,
         .authorization_id = request.authorization_id,
         .previous_verification_sha256 = request.previous_verification_sha256,
         .old_execution_digest = old_digest,
         .new_execution_digest = new_digest,
         .expected_revision = request.expected_revision,
         .applied_revision = applied_revision,
         .attempt = request.expected_attempt,
         .reason = request.reason,
         .created_at = now});
    result = {{"task_id", task_id},
              {"status", "QUEUED"},
              {"attempt", request.expected_attempt},
              {"revision", applied_revision},
              {"old_execution_digest", old_digest},
              {"new_execution_digest", new_digest},
              {"authorization_id", request.authorization_id},
              {"idempotent", false}};
  });
  if (recorded) return *recorded;
  // The task is QUEUED again: the scheduler's long polls hear it (it is another process).
  store_.announce_queue_change();
  faults_.point("rebind_committed");
  return result;
}

}  // namespace aios
