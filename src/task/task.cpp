#include "aios/task.hpp"

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"

namespace aios::task {

store::TaskRow load(store::Transaction& tx, const std::string& task_id) {
  auto row = tx.load_task(task_id);
  if (!row) throw Error(ErrorCode::TASK_NOT_FOUND);
  return std::move(*row);
}

nlohmann::json parse_column(const std::string& text, const nlohmann::json& fallback) {
  if (text.empty()) return fallback;
  // Rows come from bounded input, but whoever can write the database is not trusted with the
  // daemon's stack: the nesting bound holds here too.
  nlohmann::json value;
  try {
    value = parse_json(text);
  } catch (const Error&) {
    value = nlohmann::json(nlohmann::json::value_t::discarded);
  }
  if (value.is_discarded()) throw Error(ErrorCode::STORE_FAILURE, "a stored JSON column");
  return value;
}

nlohmann::json execution_of(const store::TaskRow& row) {
  const auto metadata = parse_column(row.metadata_json, nlohmann::json::object());
  // What reads an envelope reads an object; a damaged one is refused here, with a code, rather
  // than as whatever a reader's first lookup would throw.
  const auto damaged = [] {
    return Error(ErrorCode::STORE_FAILURE, "a stored execution envelope");
  };
  if (!metadata.is_object()) throw damaged();
  const auto it = metadata.find("execution");
  if (it == metadata.end()) return nlohmann::json::object();
  if (!it->is_object()) throw damaged();
  return *it;
}

bool worker_belongs_to(store::Transaction& tx, const std::string& worker_id,
                       const std::string& agent_id) {
  return tx.worker_agent(worker_id) == agent_id;
}

std::string lease_token_of(const nlohmann::json& body) {
  const auto& token = envelope::get_or(body, "lease_token", envelope::kNull);
  if (!token.is_string() || token.get_ref<const std::string&>().empty()) {
    throw Error(ErrorCode::LEASE_INVALID);
  }
  return token;
}

LeaseProof lease_proof_of(const nlohmann::json& body) {
  LeaseProof proof;
  proof.token = lease_token_of(body);
  proof.attempt = envelope::require_int(envelope::get_or(body, "attempt", envelope::kNull), 1,
                                        INT64_MAX, ErrorCode::ATTEMPT_INVALID);
  const auto& digest_value = envelope::get_or(body, "execution_digest", envelope::kNull);
  if (!digest_value.is_string() || !is_sha256_hex(digest_value.get_ref<const std::string&>())) {
    throw Error(ErrorCode::EXECUTION_DIGEST_INVALID);
  }
  proof.execution_digest = digest_value;
  return proof;
}

void check_lease(store::Transaction& tx, const store::TaskRow& row, const std::string& agent_id,
                 const std::string& token, TimePoint now) {
  if (row.status != "CLAIMED") throw Error(ErrorCode::TASK_NOT_CLAIMED);
  if (!worker_belongs_to(tx, row.claimed_by, agent_id) ||
      !constant_time_equal(sha256_hex(token), row.lease_token_hash)) {
    throw Error(ErrorCode::LEASE_INVALID);
  }
  const auto expires = parse_iso8601(row.lease_expires_at);
  if (!expires || *expires <= now) throw Error(ErrorCode::LEASE_EXPIRED);
}

void check_attempt(store::Transaction& tx, const store::TaskRow& row, const std::string& agent_id,
                   const LeaseProof& proof, TimePoint now) {
  check_lease(tx, row, agent_id, proof.token, now);
  if (proof.attempt != row.attempt) throw Error(ErrorCode::ATTEMPT_STALE);
  if (proof.execution_digest != row.execution_digest) {
    throw Error(ErrorCode::TASK_EXECUTION_DIGEST_MISMATCH);
  }
}

FencedTask fence_attempt(store::Transaction& tx, const std::string& task_id,
                         const std::string& agent_id, const LeaseProof& proof, TimePoint now) {
  FencedTask fenced{load(tx, task_id), {}};
  check_attempt(tx, fenced.row, agent_id, proof, now);
  fenced.execution = execution_of(fenced.row);
  return fenced;
}

}  // namespace aios::task
