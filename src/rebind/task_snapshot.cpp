#include "rebind/task_snapshot.hpp"

#include <algorithm>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"

namespace aios::rebind {
namespace {

using envelope::fail;

// Columns every supported schema has; a database without them was never a task plane.
constexpr const char* kRequiredColumns[] = {
    "task_id",    "status",           "attempt",          "revision",
    "claimed_by", "lease_token_hash", "lease_expires_at", "verification_json"};

std::optional<std::string> optional_text(const SQLite::Column& column) {
  if (column.isNull()) return std::nullopt;
  return column.getString();
}

bool blank(const std::optional<std::string>& value) {
  return !value || value->empty();
}

// Python truthiness of a JSON value, for the seed's `value or default`.
bool truthy(const nlohmann::json& value) {
  if (value.is_null()) return false;
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value != 0;
  if (value.is_string() || value.is_array() || value.is_object()) return !value.empty();
  return true;
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

std::set<std::string> columns_of(SQLite::Database& db, const std::string& table) {
  store::Prepared query(db, "SELECT name FROM pragma_table_info(?)");
  query->bind(1, table);
  std::set<std::string> names;
  while (query->executeStep()) names.insert(query->getColumn(0).getString());
  return names;
}

TaskSnapshot load_and_validate(SQLite::Database& db, const std::string& task_id,
                               const ExecutionRebindRequest& request) {
  TaskSnapshot snapshot;
  snapshot.columns = columns_of(db, "tasks");
  for (const char* name : kRequiredColumns) {
    if (!snapshot.columns.contains(name)) fail(ErrorCode::TASK_SCHEMA_EXECUTION_REBIND_UNSUPPORTED);
  }
  if (!snapshot.columns.contains("metadata_json"))
    fail(ErrorCode::TASK_METADATA_SCHEMA_UNSUPPORTED);
  const bool has_requirement = snapshot.columns.contains("required_capabilities_json");

  store::Prepared query(db,
                        std::string("SELECT status,revision,attempt,claimed_by,lease_token_hash,"
                                    "lease_expires_at,verification_json,metadata_json,") +
                            (has_requirement ? "required_capabilities_json" : "NULL") +
                            " FROM tasks WHERE task_id=?");
  query->bind(1, task_id);
  if (!query->executeStep()) fail(ErrorCode::TASK_NOT_FOUND);

  if (query->getColumn(0).getString() != request.expected_status ||
      query->getColumn(1).getInt64() != request.expected_revision ||
      query->getColumn(2).getInt64() != request.expected_attempt) {
    fail(ErrorCode::EXECUTION_REBIND_CAS_MISMATCH);
  }
  snapshot.claimed_by = optional_text(query->getColumn(3));
  if (!blank(optional_text(query->getColumn(4))) || !blank(optional_text(query->getColumn(5)))) {
    fail(ErrorCode::EXECUTION_REBIND_ACTIVE_LEASE_DENY);
  }
  if (verification_sha(optional_text(query->getColumn(6))) !=
      request.previous_verification_sha256) {
    fail(ErrorCode::EXECUTION_REBIND_VERIFICATION_DRIFT);
  }

  snapshot.metadata = metadata_object(optional_text(query->getColumn(7)));
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
    if (projected != projection->end() && truthy(*projected) &&
        *projected != request.expected_old_execution_digest) {
      fail(ErrorCode::EXECUTION_REBIND_PROJECTION_DRIFT);
    }
  }
  snapshot.required_capabilities =
      required_capabilities(optional_text(query->getColumn(8)), snapshot.old_execution);
  return snapshot;
}

}  // namespace aios::rebind
