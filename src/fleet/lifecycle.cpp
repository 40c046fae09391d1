#include <SQLiteCpp/SQLiteCpp.h>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/fault.hpp"
#include "aios/log.hpp"
#include "fleet/internal.hpp"

namespace aios {
namespace {

using envelope::fail;
using envelope::kEmptyText;
using envelope::kNull;

bool is_terminal(const std::string& status) {
  return status == "SUCCEEDED" || status == "FAILED" || status == "CANCELLED";
}

std::string reason_of(const nlohmann::json& body) {
  const auto& reason = envelope::get_or(body, "reason", kEmptyText);
  if (!reason.is_string() || count_code_points(reason.get_ref<const std::string&>()) > 512) {
    fail(ErrorCode::REASON_INVALID);
  }
  return reason;
}

// Back to the queue, or FAILED when no attempt is left; the lease and claimant are cleared.
void requeue_or_fail(store::TaskRow& row) {
  row.status = row.attempt >= row.max_attempts ? "FAILED" : "QUEUED";
  row.claimed_by.clear();
  row.claim_id.clear();
  row.lease_token_hash.clear();
  row.lease_expires_at.clear();
}

void commit_row(SQLite::Database& db, store::TaskRow& row, const std::string& now_iso) {
  const auto previous = row.revision;
  row.revision += 1;
  row.updated_at = now_iso;
  if (!store::update_task(db, row, previous)) fail(ErrorCode::TASK_REVISION_CONFLICT);
}

// A claimed task's claim and dispatch end in `state` (RELEASED, EXPIRED) and the task goes back
// to the queue, or to FAILED with no attempt left, in the caller's transaction. Returns the
// worker that held it.
std::string return_to_queue(SQLite::Database& db, store::TaskRow& row, const char* state,
                            TimePoint now) {
  const std::string worker_id = row.claimed_by;
  const std::string now_iso = format_iso8601(now);
  fleet::end_claim(db, row.claim_id, state, now_iso);
  fleet::end_dispatch(db, row.task_id, state, to_epoch_seconds(now));
  requeue_or_fail(row);
  commit_row(db, row, now_iso);
  return worker_id;
}

void quarantine_task_for_worker(SQLite::Database& db, const store::TaskRow& row,
                                const std::string& failure_class, double now,
                                std::chrono::seconds period) {
  store::Prepared upsert(
      db,
      "INSERT INTO fleet_task_quarantine(task_id,worker_id,failure_class,failures,"
      "quarantined_until) VALUES (?,?,?,1,?) ON CONFLICT(task_id,worker_id) DO UPDATE SET "
      "failure_class=excluded.failure_class, failures=failures+1, "
      "quarantined_until=excluded.quarantined_until");
  upsert->bind(1, row.task_id);
  upsert->bind(2, row.claimed_by);
  upsert->bind(3, failure_class);
  upsert->bind(4, now + static_cast<double>(period.count()));
  upsert->exec();
}

}  // namespace

namespace fleet {

std::string lease_token_of(const nlohmann::json& body) {
  const auto& token = envelope::get_or(body, "lease_token", kNull);
  if (!token.is_string() || token.get_ref<const std::string&>().empty()) {
    fail(ErrorCode::LEASE_INVALID);
  }
  return token;
}

// The lease token fences every side effect: only the current holder of a live lease, through
// a worker of its own agent, may act on a claimed task.
void check_lease(SQLite::Database& db, const store::TaskRow& row, const Agent& agent,
                 const std::string& token, TimePoint now) {
  if (row.status != "CLAIMED") fail(ErrorCode::TASK_NOT_CLAIMED);
  if (!fleet::worker_belongs_to(db, row.claimed_by, agent.agent_id) ||
      !constant_time_equal(sha256_hex(token), row.lease_token_hash)) {
    fail(ErrorCode::LEASE_INVALID);
  }
  const auto expires = parse_iso8601(row.lease_expires_at);
  if (!expires || *expires <= now) fail(ErrorCode::LEASE_EXPIRED);
}

LeaseProof lease_proof_of(const nlohmann::json& body) {
  LeaseProof proof;
  proof.token = lease_token_of(body);
  proof.attempt = envelope::require_int(body["attempt"], 1, INT64_MAX, ErrorCode::ATTEMPT_INVALID);
  const auto& digest_value = body["execution_digest"];
  if (!digest_value.is_string() || !is_sha256_hex(digest_value.get_ref<const std::string&>())) {
    fail(ErrorCode::EXECUTION_DIGEST_INVALID);
  }
  proof.execution_digest = digest_value;
  return proof;
}

void check_attempt(SQLite::Database& db, const store::TaskRow& row, const Agent& agent,
                   const LeaseProof& proof, TimePoint now, const std::string& current_digest) {
  check_lease(db, row, agent, proof.token, now);
  if (proof.attempt != row.attempt) fail(ErrorCode::ATTEMPT_STALE);
  if (proof.execution_digest != current_digest) fail(ErrorCode::TASK_EXECUTION_DIGEST_MISMATCH);
}

}  // namespace fleet

nlohmann::json TaskPlane::heartbeat(const Agent& agent, const std::string& task_id,
                                    const nlohmann::json& body) {
  envelope::require_known_keys(body, {"lease_token", "stage"}, ErrorCode::REQUEST_FIELDS_INVALID);
  const std::string token = fleet::lease_token_of(body);
  const auto& stage = envelope::get_or(body, "stage", kEmptyText);
  if (!stage.is_string() || stage.get_ref<const std::string&>().size() > 64) {
    fail(ErrorCode::STAGE_INVALID);
  }
  const auto now = clock_.now();
  const auto expires = now + options_.lease;
  nlohmann::json response;
  db_.write([&](SQLite::Database& db) {
    auto row = fleet::load_existing_task(db, task_id);
    fleet::check_lease(db, row, agent, token, now);
    // A heartbeat extends the lease; it is not a lifecycle transition, so the revision stays.
    row.lease_expires_at = format_iso8601(expires);
    if (!store::update_task(db, row, row.revision)) fail(ErrorCode::TASK_REVISION_CONFLICT);
    store::Prepared claim(db, "UPDATE claims SET lease_expires_at=? WHERE claim_id=?");
    claim->bind(1, to_epoch_seconds(expires));
    claim->bind(2, row.claim_id);
    claim->exec();
    store::Prepared dispatch(
        db, "UPDATE fleet_dispatches SET reserved_until=? WHERE claim_id=? AND state='CLAIMED'");
    dispatch->bind(1, to_epoch_seconds(expires));
    dispatch->bind(2, row.claim_id);
    dispatch->exec();
    response = {{"task_id", task_id},
                {"lease_expires_at", row.lease_expires_at},
                {"stage", stage},
                {"revision", row.revision}};
  });
  return response;
}

std::pair<int, nlohmann::json> TaskPlane::submit_result(const Agent& agent,
                                                        const std::string& task_id,
                                                        const nlohmann::json& body) {
  envelope::require_exact_keys(
      body, {"lease_token", "attempt", "execution_digest", "idempotency_key", "result"},
      ErrorCode::REQUEST_FIELDS_INVALID);
  const auto proof = fleet::lease_proof_of(body);
  const auto attempt = proof.attempt;
  const auto& key = body["idempotency_key"];
  if (!key.is_string() || !envelope::is_idempotency_key(key.get_ref<const std::string&>())) {
    fail(ErrorCode::IDEMPOTENCY_KEY_INVALID);
  }
  const auto& result = body["result"];
  if (!result.is_object()) fail(ErrorCode::RESULT_INVALID);
  const std::string result_json = canonical_json(result);
  if (result_json.size() > options_.max_result_bytes) fail(ErrorCode::RESULT_TOO_LARGE);
  // The token is left out: a replay after the lease ended must still find the stored answer.
  const std::string request_sha = digest({{"attempt", attempt},
                                          {"execution_digest", body["execution_digest"]},
                                          {"idempotency_key", key},
                                          {"result", result}});
  const auto now = clock_.now();
  const std::string now_iso = format_iso8601(now);
  int status = 201;
  nlohmann::json response;
  db_.write([&](SQLite::Database& db) {
    store::Prepared replay(
        db,
        "SELECT request_sha256, response_json, agent_id FROM results WHERE task_id=? AND "
        "idempotency_key=?");
    replay->bind(1, task_id);
    replay->bind(2, key.get<std::string>());
    if (replay->executeStep()) {
      // Only the agent that submitted may replay: another learns nothing of the task.
      if (replay->getColumn(2).getString() != agent.agent_id) fail(ErrorCode::LEASE_INVALID);
      if (replay->getColumn(0).getString() != request_sha) {
        fail(ErrorCode::RESULT_IDEMPOTENCY_CONFLICT);
      }
      status = 200;
      response = fleet::parse_column(replay->getColumn(1).getString(), nlohmann::json::object());
      response["idempotent"] = true;
      return;
    }
    auto row = fleet::load_existing_task(db, task_id);
    fleet::check_attempt(db, row, agent, proof, now, facts_->get(row).execution_digest);
    const std::string worker_id = row.claimed_by;
    const std::string claim_id = row.claim_id;
    row.status = "VERIFYING";
    row.result_json = result_json;
    row.lease_token_hash.clear();
    row.lease_expires_at.clear();
    commit_row(db, row, now_iso);
    const double now_s = to_epoch_seconds(now);
    fleet::end_claim(db, claim_id, "SUBMITTED", now_iso);
    fleet::end_dispatch(db, task_id, "COMPLETED", now_s);
    fleet::note_worker_success(db, worker_id, now_s);
    const std::string result_sha = sha256_hex(result_json);
    store::append_event(db, task_id, "TASK_RESULT_SUBMITTED", agent.agent_id,
                        {{"attempt", attempt},
                         {"idempotency_key", key},
                         {"execution_digest", body["execution_digest"]},
                         {"result_sha256", result_sha},
                         {"worker_id", worker_id}},
                        now_iso);
    response = {{"task_id", task_id}, {"status", row.status},        {"revision", row.revision},
                {"attempt", attempt}, {"result_sha256", result_sha}, {"idempotent", false}};
    store::Prepared insert(db,
                           "INSERT INTO results(task_id,idempotency_key,attempt,agent_id,"
                           "request_sha256,response_json,created_at) VALUES (?,?,?,?,?,?,?)");
    insert->bind(1, task_id);
    insert->bind(2, key.get<std::string>());
    insert->bind(3, attempt);
    insert->bind(4, agent.agent_id);
    insert->bind(5, request_sha);
    insert->bind(6, canonical_json(response));
    insert->bind(7, now_iso);
    insert->exec();
  });
  if (status == 201) fault_point("scheduler_result_committed");
  return {status, response};
}

nlohmann::json TaskPlane::release(const Agent& agent, const std::string& task_id,
                                  const nlohmann::json& body) {
  envelope::require_known_keys(body, {"lease_token", "failure_class", "reason"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  const std::string token = fleet::lease_token_of(body);
  const auto& failure_class = envelope::get_or(body, "failure_class", kNull);
  if (!failure_class.is_string() ||
      !envelope::is_identifier(failure_class.get_ref<const std::string&>(), "_", 2, 63)) {
    fail(ErrorCode::FAILURE_CLASS_INVALID);
  }
  const std::string reason = reason_of(body);
  const auto now = clock_.now();
  const std::string now_iso = format_iso8601(now);
  nlohmann::json view;
  db_.write([&](SQLite::Database& db) {
    auto row = fleet::load_existing_task(db, task_id);
    fleet::check_lease(db, row, agent, token, now);
    const double now_s = to_epoch_seconds(now);
    fleet::note_worker_failure(db, row.claimed_by, now_s, options_.circuit_threshold,
                               options_.circuit_cooldown);
    quarantine_task_for_worker(db, row, failure_class, now_s, options_.task_quarantine);
    const std::string worker_id = return_to_queue(db, row, "RELEASED", now);
    store::append_event(db, task_id, "TASK_RELEASED", agent.agent_id,
                        {{"worker_id", worker_id},
                         {"failure_class", failure_class},
                         {"reason", reason},
                         {"attempt", row.attempt},
                         {"status", row.status}},
                        now_iso);
    view = fleet::view_of(row);
  });
  return view;
}

nlohmann::json TaskPlane::verify(const std::string& task_id, const nlohmann::json& body) {
  envelope::require_known_keys(body, {"expected_revision", "decision", "reason"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  const auto expected = envelope::require_int(envelope::get_or(body, "expected_revision", kNull), 0,
                                              INT64_MAX, ErrorCode::REVISION_INVALID);
  const auto& decision = envelope::get_or(body, "decision", kNull);
  if (decision != "PASS" && decision != "NEEDS_REWORK" && decision != "FAIL") {
    fail(ErrorCode::VERIFICATION_DECISION_INVALID);
  }
  const std::string reason = reason_of(body);
  const nlohmann::json verification = {{"decision", decision}, {"reason", reason}};
  const std::string now_iso = format_iso8601(clock_.now());
  nlohmann::json view;
  db_.write([&](SQLite::Database& db) {
    auto row = fleet::load_existing_task(db, task_id);
    if (row.status != "VERIFYING") fail(ErrorCode::TASK_NOT_VERIFYING);
    if (row.revision != expected) fail(ErrorCode::TASK_REVISION_CONFLICT);
    row.verification_json = canonical_json(verification);
    if (decision == "PASS") {
      row.status = "SUCCEEDED";
    } else if (decision == "FAIL") {
      row.status = "FAILED";
    } else {
      requeue_or_fail(row);
    }
    row.claimed_by.clear();
    row.claim_id.clear();
    commit_row(db, row, now_iso);
    store::append_event(db, task_id, "TASK_VERIFIED", "owner-control",
                        {{"decision", decision},
                         {"reason", reason},
                         {"status", row.status},
                         {"verification_sha256", digest(verification)}},
                        now_iso);
    view = fleet::view_of(row);
  });
  return view;
}

nlohmann::json TaskPlane::cancel(const std::string& task_id, const nlohmann::json& body) {
  envelope::require_known_keys(body, {"expected_revision", "reason"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  const std::string reason = reason_of(body);
  const auto now = clock_.now();
  const std::string now_iso = format_iso8601(now);
  nlohmann::json view;
  db_.write([&](SQLite::Database& db) {
    auto row = fleet::load_existing_task(db, task_id);
    if (is_terminal(row.status)) fail(ErrorCode::TASK_TERMINAL);
    if (body.contains("expected_revision") &&
        envelope::require_int(body["expected_revision"], 0, INT64_MAX,
                              ErrorCode::REVISION_INVALID) != row.revision) {
      fail(ErrorCode::TASK_REVISION_CONFLICT);
    }
    if (!row.claim_id.empty()) {
      fleet::end_claim(db, row.claim_id, "CANCELLED", now_iso);
      fleet::end_dispatch(db, task_id, "RELEASED", to_epoch_seconds(now));
    }
    row.status = "CANCELLED";
    row.claimed_by.clear();
    row.claim_id.clear();
    row.lease_token_hash.clear();
    row.lease_expires_at.clear();
    commit_row(db, row, now_iso);
    store::append_event(db, task_id, "TASK_CANCELLED", "owner-control", {{"reason", reason}},
                        now_iso);
    view = fleet::view_of(row);
  });
  return view;
}

namespace {

// In the caller's transaction: every claim a worker of `agent_id` holds goes back to the queue
// (or to FAILED), the way an expired lease does, with its TASK_RELEASED event.
nlohmann::json release_claims_of(SQLite::Database& db, const std::string& agent_id,
                                 const std::string& reason, TimePoint now) {
  std::vector<std::string> held;
  {
    store::Prepared query(
        db,
        "SELECT t.task_id FROM tasks t JOIN workers w ON w.worker_id=t.claimed_by "
        "WHERE t.status='CLAIMED' AND w.agent_id=? ORDER BY t.task_id");
    query->bind(1, agent_id);
    while (query->executeStep()) held.push_back(query->getColumn(0).getString());
  }
  nlohmann::json released = nlohmann::json::array();
  for (const auto& task_id : held) {
    auto row = fleet::load_existing_task(db, task_id);
    const std::string worker_id = return_to_queue(db, row, "RELEASED", now);
    store::append_event(db, task_id, "TASK_RELEASED", "owner-control",
                        {{"worker_id", worker_id},
                         {"attempt", row.attempt},
                         {"status", row.status},
                         {"reason", reason}},
                        format_iso8601(now));
    released.push_back(task_id);
  }
  return released;
}

void require_agent(SQLite::Database& db, const std::string& agent_id) {
  store::Prepared exists(db, "SELECT 1 FROM agents WHERE agent_id=?");
  exists->bind(1, agent_id);
  if (!exists->executeStep()) fail(ErrorCode::AGENT_NOT_FOUND);
}

}  // namespace

nlohmann::json TaskPlane::revoke_agent_token(const std::string& agent_id) {
  const auto now = clock_.now();
  const std::string now_iso = format_iso8601(now);
  nlohmann::json answer;
  db_.write([&](SQLite::Database& db) {
    require_agent(db, agent_id);
    store::Prepared revoke(db,
                           "UPDATE agents SET revoked_at=COALESCE(revoked_at, ?) WHERE agent_id=?");
    revoke->bind(1, now_iso);
    revoke->bind(2, agent_id);
    revoke->exec();
    store::Prepared revoked(db, "SELECT revoked_at FROM agents WHERE agent_id=?");
    revoked->bind(1, agent_id);
    revoked->executeStep();
    answer = {{"agent_id", agent_id},
              {"revoked_at", revoked->getColumn(0).getString()},
              {"released_tasks", release_claims_of(db, agent_id, "AGENT_TOKEN_REVOKED", now)}};
  });
  log::info("AGENT_TOKEN_REVOKED",
            {{"agent_id", agent_id}, {"released_tasks", answer["released_tasks"]}});
  return answer;
}

nlohmann::json TaskPlane::rotate_agent_token(const std::string& agent_id) {
  const auto now = clock_.now();
  const std::string token = fleet::new_agent_token();
  nlohmann::json answer;
  db_.write([&](SQLite::Database& db) {
    require_agent(db, agent_id);
    store::Prepared rotate(db,
                           "UPDATE agents SET token_sha256=?, revoked_at=NULL WHERE agent_id=?");
    rotate->bind(1, sha256_hex(token));
    rotate->bind(2, agent_id);
    rotate->exec();
    answer = {{"agent_id", agent_id},
              {"token", token},
              {"released_tasks", release_claims_of(db, agent_id, "AGENT_TOKEN_ROTATED", now)}};
  });
  log::info("AGENT_TOKEN_ROTATED",
            {{"agent_id", agent_id}, {"released_tasks", answer["released_tasks"]}});
  return answer;
}

std::size_t TaskPlane::sweep_expired_leases() {
  const auto now = clock_.now();
  const std::string now_iso = format_iso8601(now);
  std::vector<std::string> candidates;
  db_.read([&](SQLite::Database& db) {
    store::Prepared query(db,
                          "SELECT task_id, lease_expires_at FROM tasks "
                          "WHERE status='CLAIMED' ORDER BY lease_expires_at LIMIT 1000");
    while (query->executeStep()) {
      const auto expires = parse_iso8601(query->getColumn(1).getString());
      if (!expires || *expires <= now) candidates.push_back(query->getColumn(0).getString());
    }
  });
  std::size_t swept = 0;
  for (const auto& task_id : candidates) {
    // One transaction per task: re-read, since a heartbeat or result may have won meanwhile.
    db_.write([&](SQLite::Database& db) {
      auto row = store::load_task(db, task_id);
      if (!row || row->status != "CLAIMED") return;
      const auto expires = parse_iso8601(row->lease_expires_at);
      if (expires && *expires > now) return;
      fleet::note_worker_failure(db, row->claimed_by, to_epoch_seconds(now),
                                 options_.circuit_threshold, options_.circuit_cooldown);
      const std::string worker_id = return_to_queue(db, *row, "EXPIRED", now);
      store::append_event(
          db, task_id, "TASK_LEASE_EXPIRED", "lease-sweeper",
          {{"worker_id", worker_id}, {"attempt", row->attempt}, {"status", row->status}}, now_iso);
      ++swept;
    });
  }
  return swept;
}

}  // namespace aios
