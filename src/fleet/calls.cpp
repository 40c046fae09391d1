// The typed bodies of the task plane's calls, parsed once at the Task API's edge: each refuses
// a malformed body with the single call's code before anything is looked up.
#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "aios/canonical.hpp"
#include "aios/capability.hpp"
#include "aios/envelope.hpp"
#include "aios/fleet.hpp"

namespace aios::fleet {
namespace {

using envelope::fail;
using envelope::kEmptyArray;
using envelope::kEmptyObject;
using envelope::kEmptyText;
using envelope::kNull;

const nlohmann::json kDefaultPollLimit = 10;
constexpr std::array<std::string_view, 6> kAdapters = {
    "deterministic", "source_capture", "compact_interface_map", "codex", "hermes", "openclaw"};
const nlohmann::json kDefaultAdapters = {"deterministic", "source_capture", "compact_interface_map",
                                         "codex"};
const nlohmann::json kOne = 1;
const nlohmann::json kDefaultDomain = "default";
constexpr std::size_t kMaxCertificateUri = 512;

bool is_name(const nlohmann::json& value) {
  return value.is_string() &&
         envelope::is_identifier(value.get_ref<const std::string&>(), "._:-", 0, 127);
}

// Worker-vocabulary names, each known (a name that grants nothing is a typo, not a no-op).
store::Names worker_capability_list(const nlohmann::json& value) {
  if (!value.is_array() || value.size() > 64) fail(ErrorCode::CAPABILITY_INVALID);
  std::set<std::string> names;
  for (const auto& item : value) {
    std::string name = clean_capability(item);
    if (normalize_worker_capabilities(nlohmann::json::array({name})).empty()) {
      fail(ErrorCode::CAPABILITY_UNKNOWN);
    }
    names.insert(std::move(name));
  }
  return {names.begin(), names.end()};
}

store::Names name_list(const nlohmann::json& value, ErrorCode code) {
  if (!value.is_array() || value.size() > 64) fail(code);
  std::set<std::string> names;
  for (const auto& item : value) {
    if (!is_name(item)) fail(code);
    names.insert(item.get<std::string>());
  }
  return {names.begin(), names.end()};
}

store::Labels labels_of(const nlohmann::json& value) {
  if (!value.is_object() || value.size() > 32) fail(ErrorCode::WORKER_REGISTRATION_INVALID);
  store::Labels labels;
  for (const auto& item : value.items()) {
    if (!is_name(nlohmann::json(item.key())) || !item.value().is_string() ||
        item.value().get_ref<const std::string&>().size() > 256) {
      fail(ErrorCode::WORKER_REGISTRATION_INVALID);
    }
    labels.emplace(item.key(), item.value().get<std::string>());
  }
  return labels;
}

std::string failure_domain_of(const nlohmann::json& value) {
  if (!is_name(value)) fail(ErrorCode::WORKER_REGISTRATION_INVALID);
  return value;
}

bool flag_of(const nlohmann::json& value) {
  if (!value.is_boolean()) fail(ErrorCode::WORKER_REGISTRATION_INVALID);
  return value.get<bool>();
}

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
  if (const auto usage = result.find("model_usage"); usage != result.end()) {
    submission.model_usage = gateway::parse_usage(*usage);
    if (!submission.model_usage) fail(ErrorCode::RESULT_INVALID);
    submission.runtime = "other";
    for (const char* name : {"agent_runtime", "engineering_backend"}) {
      const auto named = result.find(name);
      if (named != result.end() && named->is_string() &&
          envelope::is_identifier(named->get_ref<const std::string&>(), "_-", 0, 31)) {
        submission.runtime = named->get<std::string>();
      }
    }
  }
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

Requeue requeue_of(const nlohmann::json& body) {
  envelope::require_known_keys(
      body, {"expected_revision", "idempotency_key", "additional_attempts", "reason"},
      ErrorCode::REQUEST_FIELDS_INVALID);
  Requeue requeue{
      .expected_revision = revision_of(envelope::get_or(body, "expected_revision", kNull)),
      .idempotency_key = {},
      .additional_attempts =
          envelope::require_int(envelope::get_or(body, "additional_attempts", kOne), 1, 10,
                                ErrorCode::REQUEUE_ATTEMPTS_INVALID),
      .reason = reason_of(body)};
  const auto& key = envelope::get_or(body, "idempotency_key", kNull);
  if (!key.is_string() || !envelope::is_idempotency_key(key.get_ref<const std::string&>())) {
    fail(ErrorCode::IDEMPOTENCY_KEY_INVALID);
  }
  requeue.idempotency_key = key;
  return requeue;
}

CertificateBinding certificate_binding_of(const nlohmann::json& value) {
  if (!value.is_object()) fail(ErrorCode::AGENT_CERTIFICATE_BINDING_INVALID);
  envelope::require_known_keys(value, {"uri", "sha256"},
                               ErrorCode::AGENT_CERTIFICATE_BINDING_INVALID);
  CertificateBinding binding;
  if (const auto found = value.find("uri"); found != value.end()) {
    if (!found->is_string()) fail(ErrorCode::AGENT_CERTIFICATE_BINDING_INVALID);
    const auto& uri = binding.uri = found->get<std::string>();
    const bool visible =
        std::all_of(uri.begin(), uri.end(), [](char c) { return c > 0x20 && c < 0x7F; });
    if (uri.empty() || uri.size() > kMaxCertificateUri || !visible ||
        uri.find(':') == std::string::npos) {
      fail(ErrorCode::AGENT_CERTIFICATE_BINDING_INVALID);
    }
  }
  if (const auto found = value.find("sha256"); found != value.end()) {
    if (!found->is_string()) fail(ErrorCode::AGENT_CERTIFICATE_BINDING_INVALID);
    for (const char c : found->get<std::string>()) {
      if (c != ':') {
        binding.sha256.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      }
    }
    if (!is_sha256_hex(binding.sha256)) fail(ErrorCode::AGENT_CERTIFICATE_BINDING_INVALID);
  }
  return binding;
}

AgentGrant agent_grant_of(const nlohmann::json& body) {
  envelope::require_known_keys(
      body, {"agent_id", "granted_capabilities", "granted_tenants", "client_certificate"},
      ErrorCode::REQUEST_FIELDS_INVALID);
  if (!body.contains("granted_capabilities")) fail(ErrorCode::REQUEST_FIELDS_INVALID);
  const auto& id = envelope::get_or(body, "agent_id", kNull);
  if (!is_name(id)) fail(ErrorCode::AGENT_ID_INVALID);
  AgentGrant grant{
      .agent_id = id,
      .granted_capabilities = worker_capability_list(body["granted_capabilities"]),
      .granted_tenants = name_list(envelope::get_or(body, "granted_tenants", kEmptyArray),
                                   ErrorCode::AGENT_TENANTS_INVALID),
      .client_certificate = {}};
  if (const auto found = body.find("client_certificate"); found != body.end()) {
    grant.client_certificate = certificate_binding_of(*found);
  }
  return grant;
}

WorkerRegistration worker_registration_of(const nlohmann::json& body) {
  envelope::require_known_keys(body,
                               {"worker_id", "capabilities", "allowed_adapters", "max_concurrency",
                                "failure_domain", "labels", "tenants"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  const auto& id = envelope::get_or(body, "worker_id", kNull);
  if (!is_name(id)) fail(ErrorCode::WORKER_ID_INVALID);
  WorkerRegistration worker;
  worker.worker_id = id;
  worker.capabilities = worker_capability_list(envelope::get_or(body, "capabilities", kEmptyArray));
  worker.allowed_adapters = name_list(envelope::get_or(body, "allowed_adapters", kDefaultAdapters),
                                      ErrorCode::WORKER_ADAPTER_UNKNOWN);
  for (const auto& adapter : worker.allowed_adapters) {
    if (std::find(kAdapters.begin(), kAdapters.end(), adapter) == kAdapters.end()) {
      fail(ErrorCode::WORKER_ADAPTER_UNKNOWN);
    }
  }
  worker.max_concurrency = envelope::require_int(envelope::get_or(body, "max_concurrency", kOne), 1,
                                                 64, ErrorCode::WORKER_REGISTRATION_INVALID);
  worker.failure_domain =
      failure_domain_of(envelope::get_or(body, "failure_domain", kDefaultDomain));
  worker.labels = labels_of(envelope::get_or(body, "labels", kEmptyObject));
  worker.tenants = name_list(envelope::get_or(body, "tenants", kEmptyArray),
                             ErrorCode::WORKER_REGISTRATION_INVALID);
  return worker;
}

WorkerConfiguration worker_configuration_of(const nlohmann::json& body) {
  envelope::require_known_keys(
      body, {"max_slots", "failure_domain", "labels", "quarantined", "reset_circuit"},
      ErrorCode::REQUEST_FIELDS_INVALID);
  WorkerConfiguration configuration;
  if (const auto found = body.find("max_slots"); found != body.end()) {
    configuration.max_slots =
        envelope::require_int(*found, 1, 256, ErrorCode::WORKER_REGISTRATION_INVALID);
  }
  if (const auto found = body.find("failure_domain"); found != body.end()) {
    configuration.failure_domain = failure_domain_of(*found);
  }
  if (const auto found = body.find("labels"); found != body.end()) {
    configuration.labels = labels_of(*found);
  }
  if (const auto found = body.find("quarantined"); found != body.end()) {
    configuration.quarantined = flag_of(*found);
  }
  if (const auto found = body.find("reset_circuit"); found != body.end()) {
    configuration.reset_circuit = flag_of(*found);
  }
  return configuration;
}

PruneRequest prune_request_of(const nlohmann::json& body) {
  envelope::require_known_keys(body, {"older_than_seconds"}, ErrorCode::REQUEST_FIELDS_INVALID);
  return {.older_than = std::chrono::seconds(
              envelope::require_int(envelope::get_or(body, "older_than_seconds", kNull), 3600,
                                    100LL * 365 * 86400, ErrorCode::PRUNE_AGE_INVALID))};
}

}  // namespace aios::fleet
