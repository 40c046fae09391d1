// The typed bodies of the task plane's calls, parsed once at the Task API's edge: each refuses
// a malformed body with the single call's code before anything is looked up.
#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/fleet.hpp"

namespace aios::fleet {
namespace {

using envelope::fail;
using envelope::kEmptyText;
using envelope::kNull;

const nlohmann::json kDefaultPollLimit = 10;

std::string reason_of(const nlohmann::json& body) {
  const auto& reason = envelope::get_or(body, "reason", kEmptyText);
  if (!reason.is_string() || count_code_points(reason.get_ref<const std::string&>()) > 512) {
    fail(ErrorCode::REASON_INVALID);
  }
  return reason;
}

std::int64_t revision_of(const nlohmann::json& value) {
  return envelope::require_int(value, 0, INT64_MAX, ErrorCode::REVISION_INVALID);
}

}  // namespace

std::string worker_id_of(const nlohmann::json& body) {
  const auto& id = envelope::get_or(body, "worker_id", kNull);
  if (!id.is_string() || id.get_ref<const std::string&>().empty()) {
    fail(ErrorCode::WORKER_ID_INVALID);
  }
  return id;
}

PollRequest poll_request_of(const nlohmann::json& body) {
  envelope::require_known_keys(body, {"worker_id", "limit"}, ErrorCode::REQUEST_FIELDS_INVALID);
  PollRequest request{.worker_id = worker_id_of(body)};
  request.limit = static_cast<std::size_t>(envelope::require_int(
      envelope::get_or(body, "limit", kDefaultPollLimit), 1, 100, ErrorCode::LIMIT_INVALID));
  return request;
}

ClaimRequest claim_request_of(const nlohmann::json& body) {
  envelope::require_exact_keys(body, {"worker_id", "expected_revision", "execution_digest"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  ClaimRequest request{.worker_id = worker_id_of(body),
                       .expected_revision = revision_of(body["expected_revision"]),
                       .execution_digest = {}};
  const auto& digest_value = body["execution_digest"];
  if (!digest_value.is_string() || !is_sha256_hex(digest_value.get_ref<const std::string&>())) {
    fail(ErrorCode::EXECUTION_DIGEST_INVALID);
  }
  request.execution_digest = digest_value;
  return request;
}

Heartbeat heartbeat_of(const nlohmann::json& body) {
  envelope::require_known_keys(body, {"lease_token", "stage"}, ErrorCode::REQUEST_FIELDS_INVALID);
  Heartbeat heartbeat{.lease_token = task::lease_token_of(body), .stage = {}};
  const auto& stage = envelope::get_or(body, "stage", kEmptyText);
  if (!stage.is_string() || stage.get_ref<const std::string&>().size() > 64) {
    fail(ErrorCode::STAGE_INVALID);
  }
  heartbeat.stage = stage;
  return heartbeat;
}

ResultSubmission result_submission_of(const nlohmann::json& body, std::size_t max_result_bytes) {
  if (!body.is_object()) fail(ErrorCode::REQUEST_INVALID);
  envelope::require_exact_keys(
      body, {"lease_token", "attempt", "execution_digest", "idempotency_key", "result"},
      ErrorCode::REQUEST_FIELDS_INVALID);
  ResultSubmission submission{.proof = task::lease_proof_of(body)};
  const auto& key = body["idempotency_key"];
  if (!key.is_string() || !envelope::is_idempotency_key(key.get_ref<const std::string&>())) {
    fail(ErrorCode::IDEMPOTENCY_KEY_INVALID);
  }
  submission.idempotency_key = key;
  const auto& result = body["result"];
  if (!result.is_object()) fail(ErrorCode::RESULT_INVALID);
  submission.result_json = canonical_json(result);
  if (submission.result_json.size() > max_result_bytes) fail(ErrorCode::RESULT_TOO_LARGE);
  // The token is left out: a replay after the lease ended must still find the stored answer.
  submission.request_sha256 = digest({{"attempt", submission.proof.attempt},
                                      {"execution_digest", submission.proof.execution_digest},
                                      {"idempotency_key", key},
                                      {"result", result}});
  return submission;
}

Release release_of(const nlohmann::json& body) {
  envelope::require_known_keys(body, {"lease_token", "failure_class", "reason"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  Release release{.lease_token = task::lease_token_of(body), .failure_class = {}, .reason = {}};
  const auto& failure_class = envelope::get_or(body, "failure_class", kNull);
  if (!failure_class.is_string() ||
      !envelope::is_identifier(failure_class.get_ref<const std::string&>(), "_", 2, 63)) {
    fail(ErrorCode::FAILURE_CLASS_INVALID);
  }
  release.failure_class = failure_class;
  release.reason = reason_of(body);
  return release;
}

Verification verification_of(const nlohmann::json& body) {
  if (!body.is_object()) fail(ErrorCode::REQUEST_INVALID);
  envelope::require_known_keys(body, {"expected_revision", "decision", "reason"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  Verification verification;
  verification.expected_revision = revision_of(envelope::get_or(body, "expected_revision", kNull));
  const auto& decision = envelope::get_or(body, "decision", kNull);
  if (decision != "PASS" && decision != "NEEDS_REWORK" && decision != "FAIL") {
    fail(ErrorCode::VERIFICATION_DECISION_INVALID);
  }
  verification.decision = decision;
  verification.reason = reason_of(body);
  return verification;
}

Cancellation cancellation_of(const nlohmann::json& body) {
  envelope::require_known_keys(body, {"expected_revision", "reason"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  Cancellation cancellation{.expected_revision = std::nullopt, .reason = reason_of(body)};
  if (const auto found = body.find("expected_revision"); found != body.end()) {
    cancellation.expected_revision = revision_of(*found);
  }
  return cancellation;
}

}  // namespace aios::fleet
