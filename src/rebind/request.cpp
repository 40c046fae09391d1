// The rebind request: exactly nine fields, validated in the seed's order so that a request with
// several faults is refused with the same code the Python service gives.
#include <limits>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/rebind.hpp"

namespace aios {
namespace {

using envelope::fail;

constexpr std::size_t kMaxReasonCodePoints = 512;

// The seed's _require_string with a pattern: a non-blank string, stripped, then matched.
std::string require_key(const nlohmann::json& value, ErrorCode code) {
  std::string text = envelope::require_text(value, code);
  if (!envelope::is_idempotency_key(text)) fail(code);
  return text;
}

}  // namespace

ExecutionRebindRequest ExecutionRebindRequest::from_mapping(const nlohmann::json& value) {
  envelope::require_exact_keys(
      value,
      {"expected_status", "expected_revision", "expected_attempt", "previous_verification_sha256",
       "expected_old_execution_digest", "expected_new_execution_digest", "authorization_id",
       "idempotency_key", "reason"},
      ErrorCode::EXECUTION_REBIND_FIELDS_INVALID);

  ExecutionRebindRequest request;
  request.expected_status =
      envelope::require_text(value["expected_status"], ErrorCode::EXPECTED_STATUS_INVALID);
  if (request.expected_status != "QUEUED") fail(ErrorCode::EXPECTED_STATUS_INVALID);

  // One code for both integers, as the seed checks them in one condition.
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  request.expected_revision = envelope::require_int(value["expected_revision"], 0, kMax,
                                                    ErrorCode::EXECUTION_REBIND_INTEGER_INVALID);
  request.expected_attempt = envelope::require_int(value["expected_attempt"], 1, kMax,
                                                   ErrorCode::EXECUTION_REBIND_INTEGER_INVALID);

  // All three must be strings before any is checked for its shape.
  request.previous_verification_sha256 = envelope::require_text(
      value["previous_verification_sha256"], ErrorCode::VERIFICATION_SHA256_INVALID);
  request.expected_old_execution_digest = envelope::require_text(
      value["expected_old_execution_digest"], ErrorCode::OLD_EXECUTION_DIGEST_INVALID);
  request.expected_new_execution_digest = envelope::require_text(
      value["expected_new_execution_digest"], ErrorCode::NEW_EXECUTION_DIGEST_INVALID);
  if (!is_sha256_hex(request.previous_verification_sha256)) {
    fail(ErrorCode::VERIFICATION_SHA256_INVALID);
  }
  if (!is_sha256_hex(request.expected_old_execution_digest)) {
    fail(ErrorCode::OLD_EXECUTION_DIGEST_INVALID);
  }
  if (!is_sha256_hex(request.expected_new_execution_digest)) {
    fail(ErrorCode::NEW_EXECUTION_DIGEST_INVALID);
  }
  if (request.expected_old_execution_digest == request.expected_new_execution_digest) {
    fail(ErrorCode::EXECUTION_REBIND_DIGEST_UNCHANGED);
  }

  request.authorization_id =
      require_key(value["authorization_id"], ErrorCode::AUTHORIZATION_ID_INVALID);
  request.idempotency_key =
      require_key(value["idempotency_key"], ErrorCode::IDEMPOTENCY_KEY_INVALID);
  request.reason =
      envelope::require_text(value["reason"], ErrorCode::EXECUTION_REBIND_REASON_INVALID);
  if (count_code_points(request.reason) > kMaxReasonCodePoints) {
    fail(ErrorCode::EXECUTION_REBIND_REASON_INVALID);
  }
  return request;
}

nlohmann::json ExecutionRebindRequest::to_public() const {
  return {{"expected_status", expected_status},
          {"expected_revision", expected_revision},
          {"expected_attempt", expected_attempt},
          {"previous_verification_sha256", previous_verification_sha256},
          {"expected_old_execution_digest", expected_old_execution_digest},
          {"expected_new_execution_digest", expected_new_execution_digest},
          {"authorization_id", authorization_id},
          {"idempotency_key", idempotency_key},
          {"reason", reason}};
}

std::string require_execution_rebind_authorization_id(std::string_view configured) {
  const std::string value(python_strip(configured));
  if (value.empty()) fail(ErrorCode::TASK_EXECUTION_REBIND_AUTHORIZATION_ID_MISSING);
  if (!envelope::is_idempotency_key(value)) {
    fail(ErrorCode::TASK_EXECUTION_REBIND_AUTHORIZATION_ID_INVALID);
  }
  return value;
}

}  // namespace aios
