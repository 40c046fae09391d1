// The task plane's statements beside the tasks table on PostgreSQL: agents, workers and their
// capacity, claims, fleet dispatches (the slots), scope counts, task quarantines and results.
#include "aios/error.hpp"
#include "store/columns.hpp"
#include "store/postgres/transaction.hpp"
#include "store/queries.hpp"

namespace aios::store {
namespace pg {
namespace {

WorkerRecord worker_row(const Rows& rows, int at) {
  WorkerRecord worker;
  worker.worker_id = rows.text(at, 0);
  worker.agent_id = rows.text(at, 1);
  worker.capabilities = names_of(rows.text(at, 2));
  worker.allowed_adapters = names_of(rows.text(at, 3));
  worker.labels = labels_of(rows.text(at, 4));
  worker.tenants = names_of(rows.text(at, 5));
  worker.last_seen = rows.real(at, 6);
  worker.max_slots = rows.integer(at, 7);
  worker.failure_domain = rows.text(at, 8);
  worker.circuit_state = rows.text(at, 9);
  worker.circuit_open_until = rows.real(at, 10);
  worker.consecutive_failures = rows.integer(at, 11);
  worker.quarantined = rows.integer(at, 12) != 0;
  worker.used_slots = rows.integer(at, 13);
  worker.probes = rows.integer(at, 14);
  worker.stopped_at = rows.real(at, 15);
  return worker;
}

std::vector<std::string> first_column(const Rows& rows) {
  std::vector<std::string> out;
  for (int at = 0; at < rows.size(); ++at) out.push_back(rows.text(at, 0));
  return out;
}

// The failed dispatches of the domain `domain` (an SQL expression): one seek of the index by
// domain, which holds only failed dispatches (migration 17; its predicate is this state list).
std::string failed_in_domain(const std::string& domain) {
  return "SELECT task_id FROM fleet_dispatches WHERE failure_domain=" + domain +
         " AND state IN ('RELEASED','EXPIRED')";
}

}  // namespace
}  // namespace pg

bool PgTransaction::agent_exists(const std::string& agent_id) {
  return !db_.run("SELECT 1 FROM agents WHERE agent_id=$1", pg::Params().text(agent_id)).empty();
}

void PgTransaction::insert_agent(const AgentRecord& agent) {
  db_.run(
      "INSERT INTO agents(agent_id,token_sha256,granted_capabilities_json,granted_tenants_json,"
      "created_at,certificate_uri,certificate_sha256) VALUES ($1,$2,$3,$4,$5,$6,$7)",
      pg::Params()
          .text(agent.agent_id)
          .text(agent.token_sha256)
          .text(names_text(agent.granted_capabilities))
          .text(names_text(agent.granted_tenants))
          .text(agent.created_at)
          .text(agent.certificate_uri)
          .text(agent.certificate_sha256));
}

std::optional<AgentRecord> PgTransaction::live_agent_by_token(const std::string& token_sha256) {
  const auto rows = db_.run(
      "SELECT agent_id, token_sha256, granted_capabilities_json, granted_tenants_json, "
      "created_at, certificate_uri, certificate_sha256 FROM agents "
      "WHERE token_sha256=$1 AND revoked_at IS NULL",
      pg::Params().text(token_sha256));
  if (rows.empty()) return std::nullopt;
  return AgentRecord{rows.text(0, 0),
                     rows.text(0, 1),
                     names_of(rows.text(0, 2)),
                     names_of(rows.text(0, 3)),
                     rows.text(0, 4),
                     rows.text(0, 5),
                     rows.text(0, 6)};
}

std::vector<std::pair<AgentRecord, std::string>> PgTransaction::agents() {
  const auto rows = db_.run(
      "SELECT agent_id, granted_capabilities_json, granted_tenants_json, created_at, "
      "certificate_uri, certificate_sha256, COALESCE(revoked_at, '') FROM agents "
      "ORDER BY agent_id",
      pg::Params());
  std::vector<std::pair<AgentRecord, std::string>> out;
  for (int at = 0; at < rows.size(); ++at) {
    out.push_back(
        {AgentRecord{rows.text(at, 0), "", names_of(rows.text(at, 1)), names_of(rows.text(at, 2)),
                     rows.text(at, 3), rows.text(at, 4), rows.text(at, 5)},
         rows.text(at, 6)});
  }
  return out;
}

void PgTransaction::set_agent_certificate(const std::string& agent_id, const std::string& uri,
                                          const std::string& sha256) {
  db_.run("UPDATE agents SET certificate_uri=$1, certificate_sha256=$2 WHERE agent_id=$3",
          pg::Params().text(uri).text(sha256).text(agent_id));
}

std::string PgTransaction::revoke_agent(const std::string& agent_id, const std::string& now) {
  const auto rows = db_.run(
      "UPDATE agents SET revoked_at=COALESCE(revoked_at, $1) WHERE agent_id=$2 "
      "RETURNING revoked_at",
      pg::Params().text(now).text(agent_id));
  return rows.empty() ? std::string() : rows.text(0, 0);
}

void PgTransaction::set_agent_token(const std::string& agent_id, const std::string& token_sha256) {
  db_.run("UPDATE agents SET token_sha256=$1, revoked_at=NULL WHERE agent_id=$2",
          pg::Params().text(token_sha256).text(agent_id));
}

// A worker's claims are counted and its slots taken under a lock of the worker (an advisory lock:
// a claim's slot may be taken before its worker row exists, as the conformance suite does), so
// claims of one worker queue behind each other, each counting the slots the one before took.
void PgTransaction::lock_worker(const std::string& worker_id) {
  if (!writing_ || locked_workers_.contains(worker_id)) return;
  db_.send("SELECT pg_advisory_xact_lock(7426003, hashtext($1))", pg::Params().text(worker_id));
  locked_workers_.insert(worker_id);
}

std::optional<WorkerRecord> PgTransaction::load_worker(const std::string& worker_id, double now) {
  return load_worker_row(worker_id, now, false);
}

std::optional<WorkerRecord> PgTransaction::load_claimant(const std::string& worker_id, double now) {
  return load_worker_row(worker_id, now, true);
}

std::optional<WorkerRecord> PgTransaction::load_worker_row(const std::string& worker_id, double now,
                                                           bool claimant) {
  lock_worker(worker_id);
  // The queue rows read next say whether this worker has them quarantined.
  if (ahead_worker_ != worker_id || ahead_now_ != now) quarantined_ahead_.clear();
  ahead_worker_ = worker_id;
  ahead_now_ = now;
  if (claimant) {
    // The failed tasks of the worker's domain (its failure_domain as kWorkerSelect reads it),
    // then the queue's groups.
    static const std::string failed = pg::failed_in_domain(
        "COALESCE((SELECT failure_domain FROM fleet_worker_capacity WHERE worker_id=$1), '')");
    db_.send_kept(failed, pg::Params().text(worker_id));
    db_.send_kept(pg::kQueuedGroups);
  }
  const auto rows = db_.run(std::string(kWorkerSelect) + " WHERE w.worker_id=$2",
                            pg::Params().real(now).text(worker_id));
  auto kept = claimant ? db_.take_kept() : std::vector<pg::Rows>{};
  if (rows.empty()) return std::nullopt;
  auto worker = pg::worker_row(rows, 0);
  if (kept.size() == 2) {
    const auto failed = pg::first_column(kept[0]);
    failed_ahead_.emplace(worker.failure_domain,
                          std::set<std::string>(failed.begin(), failed.end()));
    groups_ahead_ = std::move(kept[1]);
  }
  return worker;
}

std::vector<WorkerRecord> PgTransaction::load_workers(double now) {
  const auto rows =
      db_.run(std::string(kWorkerSelect) + " ORDER BY w.worker_id", pg::Params().real(now));
  std::vector<WorkerRecord> workers;
  for (int at = 0; at < rows.size(); ++at) workers.push_back(pg::worker_row(rows, at));
  return workers;
}

std::optional<std::string> PgTransaction::worker_agent(const std::string& worker_id) {
  if (fetched_ && !worker_id.empty() && fetched_->claimant == worker_id) {
    return fetched_->claimant_agent;
  }
  const auto rows =
      db_.run("SELECT agent_id FROM workers WHERE worker_id=$1", pg::Params().text(worker_id));
  if (rows.empty()) return std::nullopt;
  return rows.text(0, 0);
}

std::vector<std::string> PgTransaction::workers_of_agent(const std::string& agent_id) {
  return pg::first_column(
      db_.run("SELECT worker_id FROM workers WHERE agent_id=$1 ORDER BY worker_id",
              pg::Params().text(agent_id)));
}

void PgTransaction::register_worker(const WorkerRegistration& registration) {
  fetched_.reset();
  db_.run(
      "INSERT INTO workers(worker_id,agent_id,capabilities_json,allowed_adapters_json,"
      "labels_json,tenants_json,registered_at,last_seen_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8) "
      "ON CONFLICT(worker_id) DO UPDATE SET capabilities_json=excluded.capabilities_json, "
      "allowed_adapters_json=excluded.allowed_adapters_json, labels_json=excluded.labels_json, "
      "tenants_json=excluded.tenants_json, last_seen_at=excluded.last_seen_at, stopped_at=0",
      pg::Params()
          .text(registration.worker_id)
          .text(registration.agent_id)
          .text(names_text(registration.capabilities))
          .text(names_text(registration.allowed_adapters))
          .text(labels_text(registration.labels))
          .text(names_text(registration.tenants))
          .text(registration.registered_at)
          .real(registration.seen_at));
  db_.run(
      "INSERT INTO fleet_worker_capacity(worker_id,max_slots,failure_domain,labels_json,"
      "updated_at) VALUES ($1,$2,$3,$4,$5) ON CONFLICT(worker_id) DO UPDATE SET "
      "max_slots=excluded.max_slots, failure_domain=excluded.failure_domain, "
      "labels_json=excluded.labels_json, updated_at=excluded.updated_at",
      pg::Params()
          .text(registration.worker_id)
          .integer(registration.max_slots)
          .text(registration.failure_domain)
          .text(labels_text(registration.labels))
          .real(registration.seen_at));
}

void PgTransaction::configure_worker(const WorkerCapacity& capacity) {
  db_.run(
      "UPDATE fleet_worker_capacity SET max_slots=$1, failure_domain=$2, labels_json=$3, "
      "quarantined=$4, updated_at=$5 WHERE worker_id=$6",
      pg::Params()
          .integer(capacity.max_slots)
          .text(capacity.failure_domain)
          .text(labels_text(capacity.labels))
          .integer(capacity.quarantined ? 1 : 0)
          .real(capacity.updated_at)
          .text(capacity.worker_id));
}

void PgTransaction::touch_worker(const std::string& worker_id, double now) {
  db_.send("UPDATE workers SET last_seen_at=$1 WHERE worker_id=$2",
           pg::Params().real(now).text(worker_id));
}

void PgTransaction::mark_worker_stopped(const std::string& worker_id, double now) {
  db_.run("UPDATE workers SET stopped_at=$1 WHERE worker_id=$2",
          pg::Params().real(now).text(worker_id));
}

void PgTransaction::note_worker_failure(const std::string& worker_id, double now, int threshold,
                                        double open_until) {
  db_.send(
      "UPDATE fleet_worker_capacity SET consecutive_failures=consecutive_failures+1, "
      "circuit_state=CASE WHEN consecutive_failures+1>=$1 THEN 'OPEN' ELSE circuit_state END, "
      "circuit_open_until=CASE WHEN consecutive_failures+1>=$1 THEN $2::double precision "
      "ELSE circuit_open_until END, updated_at=$3 WHERE worker_id=$4",
      pg::Params().integer(threshold).real(open_until).real(now).text(worker_id));
}

void PgTransaction::note_worker_success(const std::string& worker_id, double now) {
  db_.send(
      "UPDATE fleet_worker_capacity SET consecutive_failures=0, circuit_state='CLOSED', "
      "circuit_open_until=0, updated_at=$1 WHERE worker_id=$2 AND (consecutive_failures<>0 OR "
      "circuit_state<>'CLOSED' OR circuit_open_until<>0)",
      pg::Params().real(now).text(worker_id));
}

void PgTransaction::insert_claim(const ClaimRecord& claim) {
  groups_ahead_.reset();  // the scope's count moves
  // The slot first: the primary key (worker, slot) is the constraint, and a slot is taken over
  // only when its claim is no longer an active lease that runs past now. Its check reads the
  // claims as of its statement, so the worker is locked in a statement before it: a claim of the
  // same worker in flight has committed by then. An update takes a slot that exists, and only a
  // slot never used is inserted: `ON CONFLICT DO UPDATE` would lock the row it conflicts with
  // before updating it, one more WAL record every claim.
  lock_worker(claim.worker_id);
  bool taken = false;
  for (std::int64_t number = 0; number < claim.max_slots && !taken; ++number) {
    taken = db_.run(
                   "WITH taken AS (UPDATE fleet_worker_slots SET claim_id=$3 WHERE worker_id=$1 "
                   "AND slot=$2 AND NOT EXISTS (SELECT 1 FROM claims k WHERE "
                   "k.claim_id=fleet_worker_slots.claim_id AND k.status='ACTIVE' "
                   "AND k.lease_expires_at>$4) RETURNING 1), "
                   "added AS (INSERT INTO fleet_worker_slots(worker_id,slot,claim_id) "
                   "SELECT $1,$2,$3 WHERE NOT EXISTS (SELECT 1 FROM fleet_worker_slots "
                   "WHERE worker_id=$1 AND slot=$2) ON CONFLICT DO NOTHING RETURNING 1) "
                   "SELECT (SELECT COUNT(*) FROM taken) + (SELECT COUNT(*) FROM added)",
                   pg::Params()
                       .text(claim.worker_id)
                       .integer(number)
                       .text(claim.claim_id)
                       .real(claim.now))
                .integer(0, 0) == 1;
  }
  if (!taken) throw Error(ErrorCode::FLEET_WORKER_CAPACITY_EXHAUSTED);
  db_.send(
      "INSERT INTO claims(claim_id,task_id,worker_id,agent_id,attempt,status,lease_expires_at,"
      "created_at) VALUES ($1,$2,$3,$4,$5,'ACTIVE',$6,$7)",
      pg::Params()
          .text(claim.claim_id)
          .text(claim.task_id)
          .text(claim.worker_id)
          .text(claim.agent_id)
          .integer(claim.attempt)
          .real(claim.lease_expires_at)
          .text(claim.created_at));
  db_.send(
      "INSERT INTO fleet_dispatches(reservation_id,task_id,worker_id,task_revision,scope_key,"
      "failure_domain,reserved_until,state,score,claim_id,created_at,updated_at) "
      "VALUES ($1,$2,$3,$4,$5,$6,$7,'CLAIMED',$8,$9,$10,$10)",
      pg::Params()
          .text(claim.reservation_id)
          .text(claim.task_id)
          .text(claim.worker_id)
          .integer(claim.task_revision)
          .text(claim.scope_key)
          .text(claim.failure_domain)
          .real(claim.lease_expires_at)
          .real(claim.score)
          .text(claim.claim_id)
          .real(claim.now));
  // Into this session's shard of the scope's count (migration 12): claims of one scope do not
  // wait for each other. Updated when it exists (as the slot, without a lock record first);
  // two sessions of one shard inserting it at once meet in the conflict clause.
  db_.send(
      "WITH bumped AS (UPDATE fleet_scope_dispatches SET "
      "dispatch_count=dispatch_count+1, last_dispatch_at=$2 "
      "WHERE scope_key=$1 AND shard=pg_backend_pid()%64 RETURNING 1) "
      "INSERT INTO fleet_scope_dispatches(scope_key,shard,dispatch_count,last_dispatch_at) "
      "SELECT $1,pg_backend_pid()%64,1,$2 WHERE NOT EXISTS (SELECT 1 FROM bumped) "
      "ON CONFLICT(scope_key,shard) DO UPDATE SET "
      "dispatch_count=fleet_scope_dispatches.dispatch_count+1, "
      "last_dispatch_at=excluded.last_dispatch_at",
      pg::Params().text(claim.scope_key).real(claim.now));
}

void PgTransaction::extend_claim(const std::string& task_id, const std::string& claim_id,
                                 double expires_at) {
  db_.send("UPDATE claims SET lease_expires_at=$1 WHERE claim_id=$2",
           pg::Params().real(expires_at).text(claim_id));
  db_.send(
      "UPDATE fleet_dispatches SET reserved_until=$1 WHERE task_id=$2 AND state='CLAIMED' AND "
      "claim_id=$3",
      pg::Params().real(expires_at).text(task_id).text(claim_id));
}

void PgTransaction::end_claim(const std::string& claim_id, const std::string& status,
                              const std::string& now) {
  db_.send("UPDATE claims SET status=$1, ended_at=$2 WHERE claim_id=$3 AND status='ACTIVE'",
           pg::Params().text(status).text(now).text(claim_id));
}

void PgTransaction::end_dispatch(const std::string& task_id, const std::string& state, double now) {
  failed_ahead_.reset();  // a released or expired dispatch is a failure of its domain
  db_.send(
      "UPDATE fleet_dispatches SET state=$1, updated_at=$2 WHERE task_id=$3 "
      "AND state IN ('RESERVED','CLAIMED')",
      pg::Params().text(state).real(now).text(task_id));
}

std::set<std::string> PgTransaction::tasks_failed_in_domain(const std::string& domain) {
  if (failed_ahead_ && failed_ahead_->first == domain) {
    auto tasks = std::move(failed_ahead_->second);
    failed_ahead_.reset();
    return tasks;
  }
  static const std::string failed = pg::failed_in_domain("$1");
  // A claim or a poll reads the queue's groups next: they come in this round trip.
  if (!groups_ahead_) db_.send_kept(pg::kQueuedGroups);
  const auto tasks = pg::first_column(db_.run(failed, pg::Params().text(domain)));
  if (auto kept = db_.take_kept(); kept.size() == 1) groups_ahead_ = std::move(kept.front());
  return {tasks.begin(), tasks.end()};
}

std::vector<std::pair<std::string, std::int64_t>> PgTransaction::scope_dispatch_counts() {
  const auto rows =
      db_.run("SELECT scope_key, dispatch_count FROM fleet_scope_counts ORDER BY scope_key");
  std::vector<std::pair<std::string, std::int64_t>> counts;
  for (int at = 0; at < rows.size(); ++at)
    counts.emplace_back(rows.text(at, 0), rows.integer(at, 1));
  return counts;
}

bool PgTransaction::task_quarantined(const std::string& task_id, const std::string& worker_id,
                                     double now) {
  if (worker_id == ahead_worker_ && now == ahead_now_) {
    if (const auto found = quarantined_ahead_.find(task_id); found != quarantined_ahead_.end()) {
      return found->second;
    }
  }
  return !db_.run(
                 "SELECT 1 FROM fleet_task_quarantine WHERE task_id=$1 AND worker_id=$2 "
                 "AND quarantined_until>$3",
                 pg::Params().text(task_id).text(worker_id).real(now))
              .empty();
}

void PgTransaction::quarantine_task(const std::string& task_id, const std::string& worker_id,
                                    const std::string& failure_class, double until) {
  quarantined_ahead_.erase(task_id);
  db_.run(
      "INSERT INTO fleet_task_quarantine(task_id,worker_id,failure_class,failures,"
      "quarantined_until) VALUES ($1,$2,$3,1,$4) ON CONFLICT(task_id,worker_id) DO UPDATE SET "
      "failure_class=excluded.failure_class, failures=fleet_task_quarantine.failures+1, "
      "quarantined_until=excluded.quarantined_until",
      pg::Params().text(task_id).text(worker_id).text(failure_class).real(until));
}

std::vector<TaskQuarantine> PgTransaction::live_task_quarantines(double now) {
  const auto rows = db_.run(
      "SELECT task_id, worker_id, failure_class, failures FROM fleet_task_quarantine "
      "WHERE quarantined_until>$1 ORDER BY task_id, worker_id",
      pg::Params().real(now));
  std::vector<TaskQuarantine> quarantines;
  for (int at = 0; at < rows.size(); ++at) {
    quarantines.push_back(
        {rows.text(at, 0), rows.text(at, 1), rows.text(at, 2), rows.integer(at, 3)});
  }
  return quarantines;
}

std::vector<ClaimWindow> PgTransaction::claim_windows(double since) {
  const auto rows = db_.run(kClaimWindows, pg::Params().real(since));
  std::vector<ClaimWindow> windows;
  for (int at = 0; at < rows.size(); ++at) windows.push_back({rows.text(at, 0), rows.real(at, 1)});
  return windows;
}

std::optional<ResultRecord> PgTransaction::load_result(const std::string& task_id,
                                                       const std::string& idempotency_key) {
  // A result that is not a replay goes on to read the task and its claimant's agent: they come
  // in this round trip.
  const bool ahead = fetch_ahead(task_id);
  const auto rows = db_.run(
      "SELECT attempt, agent_id, request_sha256, response_json, created_at FROM results "
      "WHERE task_id=$1 AND idempotency_key=$2",
      pg::Params().text(task_id).text(idempotency_key));
  if (ahead) keep_fetched(task_id);
  if (rows.empty()) return std::nullopt;
  return ResultRecord{task_id,         idempotency_key, rows.integer(0, 0), rows.text(0, 1),
                      rows.text(0, 2), rows.text(0, 3), rows.text(0, 4)};
}

void PgTransaction::insert_result(const ResultRecord& result) {
  db_.send(
      "INSERT INTO results(task_id,idempotency_key,attempt,agent_id,request_sha256,"
      "response_json,created_at) VALUES ($1,$2,$3,$4,$5,$6,$7)",
      pg::Params()
          .text(result.task_id)
          .text(result.idempotency_key)
          .integer(result.attempt)
          .text(result.agent_id)
          .text(result.request_sha256)
          .text(result.response_json)
          .text(result.created_at));
}

}  // namespace aios::store
