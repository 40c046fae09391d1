#include <functional>
#include <tuple>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/log.hpp"
#include "fleet/internal.hpp"

namespace aios {
namespace {

using envelope::fail;

// Back to the queue, or FAILED when no attempt is left; the lease and claimant are cleared.
void requeue_or_fail(store::TaskRow& row) {
  row.status = row.attempt >= row.max_attempts ? "FAILED" : "QUEUED";
  row.claimed_by.clear();
  row.claim_id.clear();
  row.lease_token_hash.clear();
  row.lease_expires_at.clear();
}

void commit_row(store::Transaction& tx, store::TaskRow& row, const std::string& now_iso) {
  const auto previous = row.revision;
  row.revision += 1;
  row.updated_at = now_iso;
  if (!tx.update_task(row, previous, row.lease_generation)) fail(ErrorCode::TASK_REVISION_CONFLICT);
}

// A claimed task's claim and dispatch end in `state` (RELEASED, EXPIRED) and the task goes back
// to the queue, or to FAILED with no attempt left, in the caller's transaction. Returns the
// worker that held it.
std::string return_to_queue(store::Transaction& tx, store::TaskRow& row, const char* state,
                            TimePoint now) {
  const std::string worker_id = row.claimed_by;
  const std::string now_iso = format_iso8601(now);
  tx.end_claim(row.claim_id, state, now_iso);
  tx.end_dispatch(row.task_id, state, to_epoch_seconds(now));
  requeue_or_fail(row);
  commit_row(tx, row, now_iso);
  return worker_id;
}

void quarantine_task_for_worker(store::Transaction& tx, const store::TaskRow& row,
                                const std::string& failure_class, double now,
                                std::chrono::seconds period) {
  tx.quarantine_task(row.task_id, row.claimed_by, failure_class,
                     now + static_cast<double>(period.count()));
}

}  // namespace

nlohmann::json TaskPlane::heartbeat(const Agent& agent, const std::string& task_id,
                                    const fleet::Heartbeat& heartbeat) {
  const auto now = store_.now();
  const auto expires = now + options_.lease;
  nlohmann::json response;
  store_.write([&](store::Transaction& tx) {
    auto row = task::load(tx, task_id);
    task::check_lease(tx, row, agent.agent_id, heartbeat.lease_token, now);
    // A heartbeat extends the lease; it is not a lifecycle transition, so the revision stays.
    // The lease generation moves instead: a sweep that judged the old lease expired cannot
    // commit over this one.
    row.lease_expires_at = format_iso8601(expires);
    const auto generation = row.lease_generation++;
    if (!tx.update_task(row, row.revision, generation)) fail(ErrorCode::TASK_REVISION_CONFLICT);
    tx.extend_claim(task_id, row.claim_id, to_epoch_seconds(expires));
    response = {{"task_id", task_id},
                {"lease_expires_at", row.lease_expires_at},
                {"stage", heartbeat.stage},
                {"revision", row.revision}};
  });
  return response;
}

fleet::ResultApplied fleet::apply_result(store::Transaction& tx, const Agent& agent,
                                         const std::string& task_id,
                                         const ResultSubmission& submission, TimePoint now) {
  const auto& key = submission.idempotency_key;
  if (const auto replay = tx.load_result(task_id, key)) {
    // Only the agent that submitted may replay: another learns nothing of the task.
    if (replay->agent_id != agent.agent_id) fail(ErrorCode::LEASE_INVALID);
    if (replay->request_sha256 != submission.request_sha256) {
      fail(ErrorCode::RESULT_IDEMPOTENCY_CONFLICT);
    }
    ResultApplied replayed{
        .status = 200,
        .answer = task::parse_column(replay->response_json, nlohmann::json::object())};
    replayed.answer["idempotent"] = true;
    return replayed;
  }
  const auto& proof = submission.proof;
  const std::string now_iso = format_iso8601(now);
  auto row = task::load(tx, task_id);
  task::check_attempt(tx, row, agent.agent_id, proof, now);
  const std::string worker_id = row.claimed_by;
  const std::string claim_id = row.claim_id;
  row.status = "VERIFYING";
  row.result_json = submission.result_json;
  row.lease_token_hash.clear();
  row.lease_expires_at.clear();
  commit_row(tx, row, now_iso);
  const double now_s = to_epoch_seconds(now);
  tx.end_claim(claim_id, "SUBMITTED", now_iso);
  tx.end_dispatch(task_id, "COMPLETED", now_s);
  tx.note_worker_success(worker_id, now_s);
  const std::string result_sha = sha256_hex(submission.result_json);
  nlohmann::json event = {{"attempt", proof.attempt},
                          {"idempotency_key", key},
                          {"execution_digest", proof.execution_digest},
                          {"result_sha256", result_sha},
                          {"worker_id", worker_id}};
  if (submission.model_usage) {
    event["model_usage"] = submission.model_usage->to_json();
    event["runtime"] = submission.runtime;
  }
  tx.append_event(task_id, "TASK_RESULT_SUBMITTED", agent.agent_id, event, now_iso);
  ResultApplied applied{.status = 201,
                        .answer = {{"task_id", task_id},
                                   {"status", row.status},
                                   {"revision", row.revision},
                                   {"attempt", proof.attempt},
                                   {"result_sha256", result_sha},
                                   {"idempotent", false}},
                        .freed_worker = worker_id};
  tx.insert_result({task_id, key, proof.attempt, agent.agent_id, submission.request_sha256,
                    canonical_json(applied.answer), now_iso});
  return applied;
}

std::pair<int, nlohmann::json> TaskPlane::submit_result(const Agent& agent,
                                                        const std::string& task_id,
                                                        const fleet::ResultSubmission& submission) {
  const auto now = store_.now();
  fleet::ResultApplied applied;
  store_.write([&](store::Transaction& tx) {
    applied = fleet::apply_result(tx, agent, task_id, submission, now);
  });
  results_committed({applied.freed_worker});
  return {applied.status, std::move(applied.answer)};
}

TaskPlane::ResultThenClaim TaskPlane::submit_result_then_claim(
    const Agent& agent, const std::string& task_id, const fleet::ResultSubmission& submission,
    const std::string& worker_id, std::size_t max_tasks) {
  if (worker_id.empty()) fail(ErrorCode::WORKER_ID_INVALID);
  const auto now = store_.now();
  auto grants = new_grants(max_tasks);
  ResultThenClaim out;
  fleet::ResultApplied applied;
  out.claim_error = store_.write_then(
      [&](store::Transaction& tx) {
        applied = fleet::apply_result(tx, agent, task_id, submission, now);
      },
      [&](store::Transaction& tx) {
        out.claims = claim_next_in(tx, agent, worker_id, grants, /*liveness=*/true);
      });
  results_committed({applied.freed_worker});
  if (out.claim_error) out.claims.clear();
  claims_committed(out.claims);
  out.status = applied.status;
  out.response = std::move(applied.answer);
  return out;
}

void TaskPlane::results_committed(const std::vector<std::string>& freed_workers) {
  std::set<std::string> freed;
  for (const auto& worker : freed_workers) {
    if (!worker.empty()) freed.insert(worker);
  }
  if (freed.empty()) return;
  environment_.faults.point("scheduler_result_committed");
  // The claims' slots are free: what those workers may claim changed, nobody else's.
  for (const auto& worker : freed) queue_changed({.claims = 0, .worker_id = worker});
}

nlohmann::json TaskPlane::release(const Agent& agent, const std::string& task_id,
                                  const fleet::Release& release) {
  const auto now = store_.now();
  const std::string now_iso = format_iso8601(now);
  nlohmann::json view;
  store_.write([&](store::Transaction& tx) {
    auto row = task::load(tx, task_id);
    task::check_lease(tx, row, agent.agent_id, release.lease_token, now);
    const auto& failure_class = release.failure_class;
    const double now_s = to_epoch_seconds(now);
    // A worker that refuses what it was handed did not fail at running it: its circuit is
    // left alone, and the quarantine below still keeps it from taking the task straight back.
    if (failure_class != fleet::kRefusedReleaseClass) {
      fleet::note_worker_failure(tx, row.claimed_by, now_s, options_.circuit_threshold,
                                 options_.circuit_cooldown);
    }
    quarantine_task_for_worker(tx, row, failure_class, now_s, options_.task_quarantine);
    const std::string worker_id = return_to_queue(tx, row, "RELEASED", now);
    tx.append_event(task_id, "TASK_RELEASED", agent.agent_id,
                    {{"worker_id", worker_id},
                     {"failure_class", failure_class},
                     {"reason", release.reason},
                     {"attempt", row.attempt},
                     {"status", row.status}},
                    now_iso);
    view = fleet::view_of(row);
  });
  queue_changed();
  return view;
}

fleet::VerificationApplied fleet::apply_verification(store::Transaction& tx,
                                                     const std::string& task_id,
                                                     const Verification& verification,
                                                     const std::string& now_iso) {
  const auto& decision = verification.decision;
  const nlohmann::json recorded = {{"decision", decision}, {"reason", verification.reason}};
  auto row = task::load(tx, task_id);
  if (row.status != "VERIFYING") fail(ErrorCode::TASK_NOT_VERIFYING);
  if (row.revision != verification.expected_revision) fail(ErrorCode::TASK_REVISION_CONFLICT);
  row.verification_json = canonical_json(recorded);
  VerificationApplied applied;
  if (decision == "PASS") {
    row.status = "SUCCEEDED";
  } else if (decision == "FAIL") {
    row.status = "FAILED";
  } else {
    requeue_or_fail(row);
    applied.requeued = row.status == "QUEUED";
  }
  row.claimed_by.clear();
  row.claim_id.clear();
  commit_row(tx, row, now_iso);
  tx.append_event(task_id, "TASK_VERIFIED", "owner-control",
                  {{"decision", decision},
                   {"reason", verification.reason},
                   {"status", row.status},
                   {"verification_sha256", digest(recorded)}},
                  now_iso);
  applied.view = view_of(row);
  return applied;
}

nlohmann::json TaskPlane::verify(const std::string& task_id,
                                 const fleet::Verification& verification) {
  const std::string now_iso = format_iso8601(store_.now());
  fleet::VerificationApplied applied;
  store_.write([&](store::Transaction& tx) {
    applied = fleet::apply_verification(tx, task_id, verification, now_iso);
  });
  // A verification frees no slot (the result did): only a task sent back is claimable again.
  if (applied.requeued) queue_changed();
  return applied.view;
}

nlohmann::json TaskPlane::cancel(const std::string& task_id,
                                 const fleet::Cancellation& cancellation) {
  const auto now = store_.now();
  const std::string now_iso = format_iso8601(now);
  nlohmann::json view;
  std::string freed_worker;
  store_.write([&](store::Transaction& tx) {
    auto row = task::load(tx, task_id);
    if (store::is_terminal_status(row.status)) fail(ErrorCode::TASK_TERMINAL);
    if (cancellation.expected_revision && *cancellation.expected_revision != row.revision) {
      fail(ErrorCode::TASK_REVISION_CONFLICT);
    }
    freed_worker.clear();
    if (!row.claim_id.empty()) {
      tx.end_claim(row.claim_id, "CANCELLED", now_iso);
      tx.end_dispatch(task_id, "RELEASED", to_epoch_seconds(now));
      freed_worker = row.claimed_by;
    }
    row.status = "CANCELLED";
    row.claimed_by.clear();
    row.claim_id.clear();
    row.lease_token_hash.clear();
    row.lease_expires_at.clear();
    commit_row(tx, row, now_iso);
    tx.append_event(task_id, "TASK_CANCELLED", "owner-control", {{"reason", cancellation.reason}},
                    now_iso);
    view = fleet::view_of(row);
  });
  // A claimed task's slot is free; a cancelled task itself is claimable by nobody.
  if (!freed_worker.empty()) queue_changed({.claims = 0, .worker_id = freed_worker});
  return view;
}

nlohmann::json TaskPlane::requeue(const std::string& task_id, const fleet::Requeue& requeue) {
  const std::string now_iso = format_iso8601(store_.now());
  nlohmann::json view;
  bool requeued = false;
  store_.write([&](store::Transaction& tx) {
    auto row = task::load(tx, task_id);
    bool commit_applied = false;
    for (std::int64_t after = 0;;) {
      const auto events = tx.task_events(task_id, after, 500);
      for (const auto& event : events) {
        const auto payload = task::parse_column(event.payload_json, nlohmann::json::object());
        if (event.event_type == "TASK_REQUEUED" &&
            payload.value("idempotency_key", "") == requeue.idempotency_key) {
          view = fleet::view_of(row);  // a replay: the task as it is now
          return;
        }
        commit_applied = commit_applied || event.event_type == "BRIDGE_COMMIT_APPLIED";
        after = event.event_id;
      }
      if (events.size() < 500) break;
    }
    if (row.status != "FAILED" && row.status != "CANCELLED") fail(ErrorCode::TASK_NOT_REQUEUEABLE);
    if (requeue.expected_revision != row.revision) fail(ErrorCode::TASK_REVISION_CONFLICT);
    // A new branch exists once: its commit cannot be made again by a later run.
    if (commit_applied && task::execution_of(row).value("branch_mode", "") == "CREATE_NEW") {
      fail(ErrorCode::TASK_COMMIT_ALREADY_APPLIED);
    }
    row.status = "QUEUED";
    row.max_attempts = row.attempt + requeue.additional_attempts;
    row.requeues += 1;
    commit_row(tx, row, now_iso);
    tx.append_event(task_id, "TASK_REQUEUED", "owner-control",
                    {{"reason", requeue.reason},
                     {"idempotency_key", requeue.idempotency_key},
                     {"attempt", row.attempt},
                     {"max_attempts", row.max_attempts},
                     {"requeues", row.requeues}},
                    now_iso);
    view = fleet::view_of(row);
    requeued = true;
  });
  if (requeued) queue_changed();
  return view;
}

namespace {

// In the caller's transaction: every claim a worker of `agent_id` holds goes back to the queue
// (or to FAILED), the way an expired lease does, with its TASK_RELEASED event.
nlohmann::json release_claims_of(store::Transaction& tx, const std::string& agent_id,
                                 const std::string& reason, TimePoint now) {
  const auto held = tx.tasks_claimed_by_agent(agent_id);
  nlohmann::json released = nlohmann::json::array();
  for (const auto& task_id : held) {
    auto row = task::load(tx, task_id);
    const std::string worker_id = return_to_queue(tx, row, "RELEASED", now);
    tx.append_event(task_id, "TASK_RELEASED", "owner-control",
                    {{"worker_id", worker_id},
                     {"attempt", row.attempt},
                     {"status", row.status},
                     {"reason", reason}},
                    format_iso8601(now));
    released.push_back(task_id);
  }
  return released;
}

void require_agent(store::Transaction& tx, const std::string& agent_id) {
  if (!tx.agent_exists(agent_id)) fail(ErrorCode::AGENT_NOT_FOUND);
}

}  // namespace

nlohmann::json TaskPlane::revoke_agent_token(const std::string& agent_id) {
  const auto now = store_.now();
  const std::string now_iso = format_iso8601(now);
  nlohmann::json answer;
  store_.write([&](store::Transaction& tx) {
    require_agent(tx, agent_id);
    const auto revoked_at = tx.revoke_agent(agent_id, now_iso);
    answer = {{"agent_id", agent_id},
              {"revoked_at", revoked_at},
              {"released_tasks", release_claims_of(tx, agent_id, "AGENT_TOKEN_REVOKED", now)}};
  });
  agents_->clear();  // the token is refused from this request on, not after a cache entry lapses
  log::info("AGENT_TOKEN_REVOKED",
            {{"agent_id", agent_id}, {"released_tasks", answer["released_tasks"]}});
  queue_changed({.claims = kAnyClaim, .worker_id = {}});
  return answer;
}

nlohmann::json TaskPlane::rotate_agent_token(const std::string& agent_id) {
  const auto now = store_.now();
  const std::string token = fleet::new_agent_token(environment_.random);
  nlohmann::json answer;
  store_.write([&](store::Transaction& tx) {
    require_agent(tx, agent_id);
    tx.set_agent_token(agent_id, sha256_hex(token));
    answer = {{"agent_id", agent_id},
              {"token", token},
              {"released_tasks", release_claims_of(tx, agent_id, "AGENT_TOKEN_ROTATED", now)}};
  });
  agents_->clear();  // the token is refused from this request on, not after a cache entry lapses
  log::info("AGENT_TOKEN_ROTATED",
            {{"agent_id", agent_id}, {"released_tasks", answer["released_tasks"]}});
  queue_changed({.claims = kAnyClaim, .worker_id = {}});
  return answer;
}

std::size_t TaskPlane::sweep_expired_leases() {
  const auto now = store_.now();
  const std::string now_iso = format_iso8601(now);
  std::vector<std::string> candidates;
  store_.read([&](store::Transaction& tx) {
    for (const auto& lease : tx.claimed_leases(1000)) {
      const auto expires = parse_iso8601(lease.lease_expires_at);
      if (!expires || *expires <= now) candidates.push_back(lease.task_id);
    }
  });
  std::size_t swept = 0;
  for (const auto& task_id : candidates) {
    // One transaction per task: re-read, since a heartbeat or result may have won meanwhile.
    // A heartbeat bumps lease_generation, so on a backend without a single writer the
    // compare-and-swap refuses a stale sweep; that task simply is not swept this round. The
    // body may be re-run, so it only says whether it swept; the count is taken once durable.
    try {
      bool expired = false;
      store_.write([&](store::Transaction& tx) {
        expired = false;
        auto row = tx.load_task(task_id);
        if (!row || row->status != "CLAIMED") return;
        const auto expires = parse_iso8601(row->lease_expires_at);
        if (expires && *expires > now) return;
        fleet::note_worker_failure(tx, row->claimed_by, to_epoch_seconds(now),
                                   options_.circuit_threshold, options_.circuit_cooldown);
        const std::string worker_id = return_to_queue(tx, *row, "EXPIRED", now);
        tx.append_event(
            task_id, "TASK_LEASE_EXPIRED", "lease-sweeper",
            {{"worker_id", worker_id}, {"attempt", row->attempt}, {"status", row->status}},
            now_iso);
        expired = true;
      });
      if (expired) ++swept;
    } catch (const Error& error) {
      if (!error.is(ErrorCode::TASK_REVISION_CONFLICT)) throw;
    }
  }
  if (swept > 0) queue_changed({.claims = swept, .worker_id = {}});
  return swept;
}

}  // namespace aios
