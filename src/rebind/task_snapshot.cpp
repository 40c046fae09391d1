#include "rebind/task_snapshot.hpp"

#include <algorithm>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"

namespace aios::rebind {
namespace {

using envelope::fail;

bool blank(const std::optional<std::string>& value) {
  return !value || value->empty();
}

// The digest of the stored verification; a task never verified hashes as {}.
std::string verification_sha(const std::optional<std::string>& raw) {
  if (blank(raw)) return digest(nlohmann::json::object());
  const auto value = parse_json(*raw);
  if (value.is_discarded()) fail(ErrorCode::TASK_VERIFICATION_INVALID);
  return digest(value);
}

nlohmann::json metadata_object(const std::optional<std::string>& raw) {
  if (!raw) fail(ErrorCode::TASK_METADATA_INVALID);
  auto value = parse_json(*raw);
  if (!value.is_object()) fail(ErrorCode::TASK_METADATA_INVALID);
  return value;
}

bool is_string_list(const nlohmann::json& value) {
  return value.is_array() &&
         std::all_of(value.begin(), value.end(), [](const auto& item) { return item.is_string(); });
}

// The task's stored requirement (stripped, blanks dropped), else the envelope's scope.
nlohmann::json required_capabilities(const std::optional<std::string>& raw,
                                     const nlohmann::json& old_execution) {
  if (!blank(raw)) {
    const auto value = parse_json(*raw);
    if (is_string_list(value)) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : value) {
        const auto text = python_strip(item.get_ref<const std::string&>());
        if (!text.empty()) out.push_back(std::string(text));
      }
      return out;
    }
  }
  // A validated envelope always has a sorted list of known names here.
  return old_execution.at("capability_scope");
}

}  // namespace

TaskSnapshot load_and_validate(store::Transaction& transaction, const std::string& task_id,
                               const ExecutionRebindRequest& request) {
  const auto task = transaction.load_rebind_task(task_id);
  if (!task) fail(ErrorCode::TASK_NOT_FOUND);
  if (task->status != request.expected_status || task->revision != request.expected_revision ||
      task->attempt != request.expected_attempt) {
    fail(ErrorCode::EXECUTION_REBIND_CAS_MISMATCH);
  }
  TaskSnapshot snapshot;
  snapshot.claimed_by = task->claimed_by;
  if (!blank(task->lease_token_hash) || !blank(task->lease_expires_at)) {
    fail(ErrorCode::EXECUTION_REBIND_ACTIVE_LEASE_DENY);
  }
  if (verification_sha(task->verification_json) != request.previous_verification_sha256) {
    fail(ErrorCode::EXECUTION_REBIND_VERIFICATION_DRIFT);
  }

  snapshot.metadata = metadata_object(task->metadata_json);
  const auto execution = snapshot.metadata.find("execution");
  if (execution == snapshot.metadata.end() || !execution->is_object()) {
    fail(ErrorCode::TASK_EXECUTION_METADATA_MISSING);
  }
  snapshot.old_execution = validate_execution_envelope(*execution);
  if (snapshot.old_execution.at("execution_digest") != request.expected_old_execution_digest) {
    fail(ErrorCode::EXECUTION_REBIND_OLD_DIGEST_DRIFT);
  }
  if (snapshot.old_execution.at("action") != "source_capture") {
    fail(ErrorCode::EXECUTION_REBIND_SOURCE_CAPTURE_REQUIRED);
  }

  const auto projection = snapshot.metadata.find("execution_projection");
  if (projection != snapshot.metadata.end() && projection->is_object()) {
    const auto projected = projection->find("execution_digest");
    if (projected != projection->end() && envelope::python_truthy(*projected) &&
        *projected != request.expected_old_execution_digest) {
      fail(ErrorCode::EXECUTION_REBIND_PROJECTION_DRIFT);
    }
  }
  snapshot.required_capabilities =
      required_capabilities(task->required_capabilities_json, snapshot.old_execution);
  return snapshot;
}

}  // namespace aios::rebind
