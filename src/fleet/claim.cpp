#include <algorithm>
#include <cmath>
#include <iterator>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/log.hpp"
#include "fleet/internal.hpp"

namespace aios {
namespace {

using envelope::fail;

constexpr double kLivenessGranularity = 1.0;  // seconds

const fleet::WorkerState& own_worker(const std::optional<fleet::WorkerState>& worker,
                                     const Agent& agent) {
  if (!worker) fail(ErrorCode::WORKER_NOT_FOUND);
  if (worker->agent_id != agent.agent_id) fail(ErrorCode::WORKER_AGENT_MISMATCH);
  return *worker;
}

// Polls and claims are the worker's liveness signal. It is recorded at most once per
// kLivenessGranularity: liveness is judged over worker_online_window, and writing the workers
// row on every poll would cap the fleet's polls at the disk's commit rate (and add a page to
// every claim's commit).
bool liveness_due(const fleet::WorkerState& worker, double now) {
  return now - worker.last_seen >= kLivenessGranularity || now < worker.last_seen;
}

// The claim itself is a liveness signal, so "offline" never refuses the claimant.
fleet::WorkerState claimant(const fleet::WorkerState& worker, double now) {
  auto live = worker;
  live.last_seen = now;
  return live;
}

// How many candidates one claim_next tries at most: more than the few whose envelope may fail
// to resolve, few enough that a queue of unresolvable tasks is not read again and again.
constexpr std::size_t kClaimCandidates = 16;

// A task passed over because its envelope does not resolve says so in its events, once per
// revision and code, where the owner and the dashboard look.
void record_unresolved(store::Transaction& tx, const store::TaskRow& row, const Error& error,
                       const std::string& now_iso) {
  const nlohmann::json payload = {{"code", error.code()},
                                  {"revision", row.revision},
                                  {"execution_digest", row.execution_digest}};
  if (tx.event_recorded(row.task_id, "TASK_ENVELOPE_UNRESOLVED", payload)) return;
  tx.append_event(row.task_id, "TASK_ENVELOPE_UNRESOLVED", "task-scheduler", payload, now_iso);
}

}  // namespace

std::string TaskPlane::poll_text(const Agent& agent, const fleet::PollRequest& request) {
  const std::string& worker_id = request.worker_id;
  const auto limit = request.limit;
  const double now = to_epoch_seconds(store_.now());
  using View = std::shared_ptr<const std::string>;
  std::vector<View> tasks;
  std::vector<View> deferred;
  const auto offer = [&](store::Transaction& tx, const fleet::WorkerState& worker) {
    const auto failed_here = tx.tasks_failed_in_domain(worker.failure_domain);
    // The queue is read in fleet order only until `limit` tasks are found.
    tx.visit_queued_tasks_in_fleet_order([&](const store::TaskRow& row) {
      auto reasons = fleet::ineligibility_reasons(worker, row, fleet::facts_of(row),
                                                  /*quarantined_task=*/false, now, options_);
      // A full worker still sees what it could take next; the claim enforces the slot.
      std::erase(reasons, "no_free_slot");
      // The task quarantine is looked up only for a task that passes every other check: it is
      // one query, and it can only add a reason.
      if (reasons.empty() && !tx.task_quarantined(row.task_id, worker_id, now)) {
        // A retry goes to another failure domain first; this domain takes it only when it has
        // nothing else, so a single-domain fleet still retries at once.
        auto& list = failed_here.contains(row.task_id) ? deferred : tasks;
        if (list.size() < limit) list.push_back(views_->get(row));
      }
      return tasks.size() < limit;
    });
  };
  // Recording liveness is the only write a poll makes; between two records, one read
  // transaction checks the worker and offers the tasks.
  bool offered = false;
  store_.read([&](store::Transaction& tx) {
    const auto worker = own_worker(fleet::load_claimant(tx, worker_id, now), agent);
    if (liveness_due(worker, now)) return;
    offer(tx, worker);
    offered = true;
  });
  if (!offered) {
    store_.write([&](store::Transaction& tx) {
      own_worker(fleet::load_worker(tx, worker_id, now), agent);
      tx.touch_worker(worker_id, now);
    });
    store_.read([&](store::Transaction& tx) {
      offer(tx, own_worker(fleet::load_claimant(tx, worker_id, now), agent));
    });
  }
  for (auto& view : deferred) {
    if (tasks.size() >= limit) break;
    tasks.push_back(std::move(view));
  }
  // What nlohmann's dump() of {"tasks": [views...]} gives, from the views' cached text.
  std::size_t size = 12;
  for (const auto& view : tasks) size += view->size() + 1;
  std::string text;
  text.reserve(size);
  text += "{\"tasks\":[";
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (i > 0) text += ',';
    text += *tasks[i];
  }
  text += "]}";
  return text;
}

nlohmann::json TaskPlane::poll(const Agent& agent, const fleet::PollRequest& request) {
  // The text is our own, of stored values each bounded on entry, a few levels down.
  return parse_json(poll_text(agent, request), kMaxJsonDepth + 8);
}

nlohmann::json TaskPlane::claim(const Agent& agent, const std::string& task_id,
                                const fleet::ClaimRequest& request) {
  const std::string& worker_id = request.worker_id;
  auto grants = new_grants(1);
  const ClaimGrant& grant = grants.at(0);
  nlohmann::json response;
  store_.write([&](store::Transaction& tx) {
    const auto worker = own_worker(fleet::load_worker(tx, worker_id, grant.now), agent);
    auto row = task::load(tx, task_id);
    if (row.status != "QUEUED") fail(ErrorCode::TASK_NOT_CLAIMABLE);
    if (row.revision != request.expected_revision) fail(ErrorCode::TASK_REVISION_CONFLICT);
    const auto facts = fleet::facts_of(row);
    if (facts.execution_digest != request.execution_digest)
      fail(ErrorCode::TASK_EXECUTION_DIGEST_MISMATCH);
    if (row.attempt >= row.max_attempts) fail(ErrorCode::TASK_ATTEMPTS_EXHAUSTED);
    const auto reasons = fleet::ineligibility_reasons(
        claimant(worker, grant.now), row, facts, tx.task_quarantined(task_id, worker_id, grant.now),
        grant.now, options_);
    if (!reasons.empty()) fail(fleet::reason_code(reasons.front()));
    response = commit_claim(tx, worker, row, agent, grant);
  });
  environment_.faults.point("scheduler_claim_committed");
  return response;
}

std::optional<nlohmann::json> TaskPlane::claim_next(const Agent& agent,
                                                    const std::string& worker_id, bool liveness) {
  auto claims = claim_next_many(agent, worker_id, 1, liveness);
  if (claims.empty()) return std::nullopt;
  return std::move(claims.front());
}

std::vector<nlohmann::json> TaskPlane::claim_next_many(const Agent& agent,
                                                       const std::string& worker_id,
                                                       std::size_t max_tasks, bool liveness) {
  if (worker_id.empty()) fail(ErrorCode::WORKER_ID_INVALID);
  auto grants = new_grants(max_tasks);
  std::vector<nlohmann::json> claims;
  store_.write([&](store::Transaction& tx) {
    claims = claim_next_in(tx, agent, worker_id, grants, liveness);
  });
  claims_committed(claims);
  return claims;
}

void TaskPlane::claims_committed(const std::vector<nlohmann::json>& claims) {
  if (!claims.empty()) environment_.faults.point("scheduler_claim_committed");
}

std::vector<nlohmann::json> TaskPlane::claim_next_in(store::Transaction& tx, const Agent& agent,
                                                     const std::string& worker_id,
                                                     ClaimGrants& grants, bool liveness) {
  // One after another in the transaction: each sees the slots and tasks the ones before took.
  std::vector<nlohmann::json> claims;
  for (std::size_t i = 0; i < grants.max(); ++i) {
    auto claim = claim_one_in(tx, agent, worker_id, grants.at(i), liveness);
    if (!claim) break;
    claims.push_back(std::move(*claim));
  }
  return claims;
}

std::optional<nlohmann::json> TaskPlane::claim_one_in(store::Transaction& tx, const Agent& agent,
                                                      const std::string& worker_id,
                                                      const ClaimGrant& grant, bool liveness) {
  const auto worker = own_worker(fleet::load_claimant(tx, worker_id, grant.now), agent);
  const auto live = claimant(worker, grant.now);
  // A worker that can take nothing now is answered before the queue is read.
  if (!fleet::open_for_claims(live, grant.now)) {
    if (liveness && liveness_due(worker, grant.now)) tx.touch_worker(worker_id, grant.now);
    return std::nullopt;
  }
  // Candidates in the poll's order: a retry goes to another failure domain first. A claim takes
  // one task, so the queue is read only up to the first candidate, and read again past the
  // ones tried when a candidate's envelope does not resolve (rare: a plan awaiting a rebind).
  const auto failed_here = tx.tasks_failed_in_domain(worker.failure_domain);
  std::set<std::string> tried;
  while (tried.size() < kClaimCandidates) {
    std::vector<store::TaskRow> candidates;
    std::vector<store::TaskRow> deferred;
    tx.visit_queued_tasks_in_fleet_order([&](const store::TaskRow& row) {
      if (tried.contains(row.task_id) || row.attempt >= row.max_attempts ||
          !fleet::ineligibility_reasons(live, row, fleet::facts_of(row), false, grant.now, options_)
               .empty() ||
          tx.task_quarantined(row.task_id, worker_id, grant.now)) {
        return true;
      }
      if (!failed_here.contains(row.task_id)) {
        candidates.push_back(row);
        return false;
      }
      if (deferred.size() < kClaimCandidates) deferred.push_back(row);
      return true;
    });
    // None outside this domain's failures: the whole queue was read, so the deferred are all.
    const bool whole_queue = candidates.empty();
    if (whole_queue) candidates = std::move(deferred);
    for (const auto& row : candidates) {
      if (tried.size() >= kClaimCandidates) break;
      tried.insert(row.task_id);
      if (auto claimed = try_claim(tx, worker, row, agent, grant)) return claimed;
    }
    if (whole_queue) break;
  }
  if (liveness && liveness_due(worker, grant.now)) tx.touch_worker(worker_id, grant.now);
  return std::nullopt;
}

std::optional<nlohmann::json> TaskPlane::try_claim(store::Transaction& tx,
                                                   const fleet::WorkerState& worker,
                                                   const store::TaskRow& row, const Agent& agent,
                                                   const ClaimGrant& grant) {
  std::optional<resolution::Resolved> resolved;
  nlohmann::json execution;
  if (resolver_ != nullptr) {
    // A damaged stored envelope (STORE_FAILURE) is passed over like one that does not resolve:
    // one task whoever can write the database broke does not stop the queue.
    try {
      execution = task::execution_of(row);
      resolved = resolver_->for_claim(tx, row, execution, &agent.granted_capabilities);
    } catch (const Error& error) {
      record_unresolved(tx, row, error, grant.now_iso);
      note_unresolved(row, worker.worker_id, error);
      return std::nullopt;
    }
  }
  auto claimed = commit_claim(tx, worker, row, agent, grant);
  if (resolved) {
    resolution::Resolver::record(tx,
                                 {row.task_id, agent.agent_id, row.attempt + 1, worker.worker_id,
                                  resolved->envelope["execution_digest"]},
                                 *resolved, grant.now_iso);
    claimed["envelope"] = std::move(resolved->envelope);
    // The binding the worker checks the envelope against, as the task persisted it.
    claimed["execution"] = std::move(execution);
  }
  return claimed;
}

void TaskPlane::note_unresolved(const store::TaskRow& row, const std::string& worker_id,
                                const Error& error) {
  // Once per task revision: a long poll retries the same candidate every second.
  {
    const std::lock_guard lock(unresolved_mutex_);
    if (unresolved_logged_.size() >= kMaxUnresolvedLogged) unresolved_logged_.clear();
    if (!unresolved_logged_.emplace(row.task_id, row.revision).second) return;
  }
  envelopes_unresolved_.fetch_add(1);
  log::warn("TASK_ENVELOPE_UNRESOLVED",
            {{"task_id", row.task_id}, {"worker_id", worker_id}, {"error", error.code()}});
}

void TaskPlane::on_queue_change(std::function<void(const QueueChange&)> listener) {
  queue_changed_ = std::move(listener);
}

TimePoint TaskPlane::now() const {
  return store_.now();
}

std::vector<store::ClaimWindow> TaskPlane::claim_windows(TimePoint since) {
  std::vector<store::ClaimWindow> windows;
  store_.read([&](store::Transaction& tx) { windows = tx.claim_windows(to_epoch_seconds(since)); });
  return windows;
}

void TaskPlane::queue_changed(QueueChange change) const {
  store_.announce_queue_change();  // the waiters of other processes on the same store
  if (queue_changed_) queue_changed_(change);
}

TaskPlane::ClaimGrants::ClaimGrants(Random& random, TimePoint now, std::chrono::seconds lease,
                                    std::size_t max)
    : random_(random),
      time_{.now = to_epoch_seconds(now),
            .now_iso = format_iso8601(now),
            .expires = now + lease,
            .lease_token = {},
            .claim_id = {}},
      max_(max) {
  drawn_.reserve(max);  // at() hands out references that must outlive later draws
}

const TaskPlane::ClaimGrant& TaskPlane::ClaimGrants::at(std::size_t i) {
  while (drawn_.size() <= i) {
    auto grant = time_;
    grant.lease_token = random_.hex(32);
    grant.claim_id = "claim-" + random_.hex(16);
    drawn_.push_back(std::move(grant));
  }
  return drawn_[i];
}

TaskPlane::ClaimGrants TaskPlane::new_grants(std::size_t max) {
  return ClaimGrants(environment_.random, store_.now(), options_.lease, max);
}

nlohmann::json TaskPlane::commit_claim(store::Transaction& tx, const fleet::WorkerState& worker,
                                       store::TaskRow row, const Agent& agent,
                                       const ClaimGrant& grant) {
  const auto previous_revision = row.revision;
  const std::string digest = row.execution_digest;
  row.status = "CLAIMED";
  row.attempt += 1;
  row.revision += 1;
  row.claimed_by = worker.worker_id;
  row.claim_id = grant.claim_id;
  row.lease_token_hash = sha256_hex(grant.lease_token);
  row.lease_expires_at = format_iso8601(grant.expires);
  row.updated_at = grant.now_iso;
  if (!tx.update_task(row, previous_revision, row.lease_generation)) {
    fail(ErrorCode::TASK_REVISION_CONFLICT);
  }
  // The fleet reservation is bound to the claim in the same transaction as the CAS, so a
  // failed claim leaves no reservation behind and a slot is never double-booked.
  tx.insert_claim({.claim_id = grant.claim_id,
                   .reservation_id = "reservation-" + grant.claim_id.substr(6),
                   .task_id = row.task_id,
                   .worker_id = worker.worker_id,
                   .agent_id = agent.agent_id,
                   .attempt = row.attempt,
                   .task_revision = previous_revision,
                   .scope_key = row.scope_key,
                   .failure_domain = worker.failure_domain,
                   .max_slots = worker.max_slots,
                   .score = static_cast<double>(row.seq),
                   .lease_expires_at = to_epoch_seconds(grant.expires),
                   .now = grant.now,
                   .created_at = grant.now_iso});
  if (liveness_due(worker, grant.now)) tx.touch_worker(worker.worker_id, grant.now);
  tx.append_event(row.task_id, "TASK_CLAIMED", agent.agent_id,
                  {{"claim_id", grant.claim_id},
                   {"worker_id", worker.worker_id},
                   {"attempt", row.attempt},
                   {"revision", row.revision},
                   {"execution_digest", digest},
                   {"lease_expires_at", row.lease_expires_at}},
                  grant.now_iso);
  nlohmann::json claim = {
      {"task_id", row.task_id},           {"claim_id", grant.claim_id},
      {"lease_token", grant.lease_token}, {"lease_expires_at", row.lease_expires_at},
      {"attempt", row.attempt},           {"revision", row.revision},
      {"execution_digest", digest}};
  // The requeue generation an agent's run is one of (left out before the first requeue).
  if (row.requeues > 0) claim["requeues"] = row.requeues;
  return claim;
}

std::optional<TaskPlane::AgentHold> TaskPlane::agent_hold(const Agent& agent,
                                                          const std::string& task_id) {
  const double now = to_epoch_seconds(store_.now());
  std::optional<AgentHold> hold;
  store_.read([&](store::Transaction& tx) {
    const auto row = task::load(tx, task_id);
    // Only the agent's own workers are read: this runs on every resolve of a polling worker.
    if (row.status == "CLAIMED") {
      const auto holder = fleet::load_worker(tx, row.claimed_by, now);
      if (holder && holder->agent_id == agent.agent_id) {
        hold = AgentHold{holder->worker_id, row.attempt};
      }
      return;
    }
    if (row.status != "QUEUED") return;
    const auto facts = fleet::facts_of(row);
    for (const auto& worker_id : tx.workers_of_agent(agent.agent_id)) {
      const auto worker = fleet::load_worker(tx, worker_id, now);
      if (worker && fleet::ineligibility_reasons(
                        *worker, row, facts, tx.task_quarantined(task_id, worker->worker_id, now),
                        now, options_)
                        .empty()) {
        hold = AgentHold{worker->worker_id, row.attempt};
        return;
      }
    }
  });
  return hold;
}

nlohmann::json TaskPlane::eligibility(const std::string& task_id) {
  const double now = to_epoch_seconds(store_.now());
  nlohmann::json workers = nlohmann::json::array();
  nlohmann::json task_status;
  std::optional<nlohmann::json> envelope;
  store_.read([&](store::Transaction& tx) {
    const auto row = task::load(tx, task_id);
    task_status = row.status;
    if (resolver_ != nullptr && row.status == "QUEUED") {
      try {
        resolver_->for_claim(tx, row, task::execution_of(row), nullptr);
        envelope = nlohmann::json{{"resolves", true}};
      } catch (const Error& error) {
        envelope = nlohmann::json{{"resolves", false}, {"code", error.code()}};
      }
    }
    const auto facts = fleet::facts_of(row);
    const bool unresolved = envelope && envelope->contains("code");
    for (const auto& worker : fleet::load_workers(tx, now)) {
      auto reasons = fleet::ineligibility_reasons(
          worker, row, facts, tx.task_quarantined(task_id, worker.worker_id, now), now, options_);
      if (row.status != "QUEUED") reasons.insert(reasons.begin(), "task_not_queued");
      if (unresolved) reasons.emplace_back("envelope_unresolved");
      nlohmann::json view = {
          {"worker_id", worker.worker_id},
          {"eligible", reasons.empty()},
          {"reasons", reasons},
          {"failure_domain", worker.failure_domain},
          {"retry_deferred", tx.tasks_failed_in_domain(worker.failure_domain).contains(task_id)}};
      // What is missing, by name: an operator grants the capability or allows the adapter.
      if (fleet::contains(reasons, "capability_missing")) {
        std::vector<std::string> missing;
        std::set_difference(facts.required.begin(), facts.required.end(), worker.effective.begin(),
                            worker.effective.end(), std::back_inserter(missing));
        view["missing_capabilities"] = missing;
      }
      if (fleet::contains(reasons, "adapter_not_allowed")) view["adapter"] = facts.adapter;
      workers.push_back(std::move(view));
    }
  });
  nlohmann::json answer = {{"task_id", task_id}, {"status", task_status}, {"workers", workers}};
  if (envelope) answer["envelope"] = std::move(*envelope);
  return answer;
}

}  // namespace aios
