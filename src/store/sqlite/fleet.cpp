// The task plane's statements beside the tasks table: agents, workers and their capacity,
// claims, fleet dispatches (the slots), scope counts, task quarantines and results.
#include <SQLiteCpp/SQLiteCpp.h>

#include "aios/error.hpp"
#include "store/columns.hpp"
#include "store/queries.hpp"
#include "store/sqlite/database.hpp"
#include "store/sqlite/transaction.hpp"

namespace aios::store {
namespace {

std::string worker_text(const SQLite::Column& column) {
  return column.isNull() ? std::string() : column.getString();
}

WorkerRecord read_worker(SQLite::Statement& query) {
  WorkerRecord worker;
  worker.worker_id = query.getColumn(0).getString();
  worker.agent_id = query.getColumn(1).getString();
  worker.capabilities = names_of(worker_text(query.getColumn(2)));
  worker.allowed_adapters = names_of(worker_text(query.getColumn(3)));
  worker.labels = labels_of(worker_text(query.getColumn(4)));
  worker.tenants = names_of(worker_text(query.getColumn(5)));
  worker.last_seen = query.getColumn(6).getDouble();
  worker.max_slots = query.getColumn(7).getInt64();
  worker.failure_domain = query.getColumn(8).getString();
  worker.circuit_state = query.getColumn(9).getString();
  worker.circuit_open_until = query.getColumn(10).getDouble();
  worker.consecutive_failures = query.getColumn(11).getInt64();
  worker.quarantined = query.getColumn(12).getInt() != 0;
  worker.used_slots = query.getColumn(13).getInt64();
  worker.probes = query.getColumn(14).getInt64();
  worker.stopped_at = query.getColumn(15).getDouble();
  return worker;
}

}  // namespace

bool SqliteTransaction::agent_exists(const std::string& agent_id) {
  Prepared exists(db_, "SELECT 1 FROM agents WHERE agent_id=?");
  exists->bind(1, agent_id);
  return exists->executeStep();
}

void SqliteTransaction::insert_agent(const AgentRecord& agent) {
  Prepared insert(db_,
                  "INSERT INTO agents(agent_id,token_sha256,granted_capabilities_json,"
                  "granted_tenants_json,created_at,certificate_uri,certificate_sha256) "
                  "VALUES (?,?,?,?,?,?,?)");
  insert->bind(1, agent.agent_id);
  insert->bind(2, agent.token_sha256);
  insert->bind(3, names_text(agent.granted_capabilities));
  insert->bind(4, names_text(agent.granted_tenants));
  insert->bind(5, agent.created_at);
  insert->bind(6, agent.certificate_uri);
  insert->bind(7, agent.certificate_sha256);
  insert->exec();
}

std::optional<AgentRecord> SqliteTransaction::live_agent_by_token(const std::string& token_sha256) {
  Prepared query(db_,
                 "SELECT agent_id, token_sha256, granted_capabilities_json, "
                 "granted_tenants_json, created_at, certificate_uri, certificate_sha256 "
                 "FROM agents WHERE token_sha256=? AND revoked_at IS NULL");
  query->bind(1, token_sha256);
  if (!query->executeStep()) return std::nullopt;
  return AgentRecord{query->getColumn(0).getString(),
                     worker_text(query->getColumn(1)),
                     names_of(worker_text(query->getColumn(2))),
                     names_of(worker_text(query->getColumn(3))),
                     worker_text(query->getColumn(4)),
                     worker_text(query->getColumn(5)),
                     worker_text(query->getColumn(6))};
}

std::vector<std::pair<AgentRecord, std::string>> SqliteTransaction::agents() {
  Prepared query(db_,
                 "SELECT agent_id, granted_capabilities_json, granted_tenants_json, created_at, "
                 "certificate_uri, certificate_sha256, revoked_at FROM agents ORDER BY agent_id");
  std::vector<std::pair<AgentRecord, std::string>> out;
  while (query->executeStep()) {
    out.push_back(
        {AgentRecord{query->getColumn(0).getString(), "",
                     names_of(worker_text(query->getColumn(1))),
                     names_of(worker_text(query->getColumn(2))), worker_text(query->getColumn(3)),
                     worker_text(query->getColumn(4)), worker_text(query->getColumn(5))},
         worker_text(query->getColumn(6))});
  }
  return out;
}

void SqliteTransaction::set_agent_certificate(const std::string& agent_id, const std::string& uri,
                                              const std::string& sha256) {
  Prepared bind(db_, "UPDATE agents SET certificate_uri=?, certificate_sha256=? WHERE agent_id=?");
  bind->bind(1, uri);
  bind->bind(2, sha256);
  bind->bind(3, agent_id);
  bind->exec();
}

std::string SqliteTransaction::revoke_agent(const std::string& agent_id, const std::string& now) {
  Prepared revoke(db_, "UPDATE agents SET revoked_at=COALESCE(revoked_at, ?) WHERE agent_id=?");
  revoke->bind(1, now);
  revoke->bind(2, agent_id);
  revoke->exec();
  Prepared revoked(db_, "SELECT revoked_at FROM agents WHERE agent_id=?");
  revoked->bind(1, agent_id);
  return revoked->executeStep() ? worker_text(revoked->getColumn(0)) : std::string();
}

void SqliteTransaction::set_agent_token(const std::string& agent_id,
                                        const std::string& token_sha256) {
  Prepared rotate(db_, "UPDATE agents SET token_sha256=?, revoked_at=NULL WHERE agent_id=?");
  rotate->bind(1, token_sha256);
  rotate->bind(2, agent_id);
  rotate->exec();
}

std::optional<WorkerRecord> SqliteTransaction::load_worker(const std::string& worker_id,
                                                           double now) {
  Prepared query(db_, std::string(kWorkerSelect) + " WHERE w.worker_id=$2");
  query->bind(1, now);
  query->bind(2, worker_id);
  if (!query->executeStep()) return std::nullopt;
  return read_worker(*query);
}

std::vector<WorkerRecord> SqliteTransaction::load_workers(double now) {
  Prepared query(db_, std::string(kWorkerSelect) + " ORDER BY w.worker_id");
  query->bind(1, now);
  std::vector<WorkerRecord> workers;
  while (query->executeStep()) workers.push_back(read_worker(*query));
  return workers;
}

std::optional<std::string> SqliteTransaction::worker_agent(const std::string& worker_id) {
  Prepared owner(db_, "SELECT agent_id FROM workers WHERE worker_id=?");
  owner->bind(1, worker_id);
  if (!owner->executeStep()) return std::nullopt;
  return owner->getColumn(0).getString();
}

std::vector<std::string> SqliteTransaction::workers_of_agent(const std::string& agent_id) {
  Prepared mine(db_, "SELECT worker_id FROM workers WHERE agent_id=? ORDER BY worker_id");
  mine->bind(1, agent_id);
  std::vector<std::string> workers;
  while (mine->executeStep()) workers.push_back(mine->getColumn(0).getString());
  return workers;
}

void SqliteTransaction::register_worker(const WorkerRegistration& registration) {
  Prepared upsert(
      db_,
      "INSERT INTO workers(worker_id,agent_id,capabilities_json,allowed_adapters_json,"
      "labels_json,tenants_json,registered_at,last_seen_at) VALUES (?,?,?,?,?,?,?,?) "
      "ON CONFLICT(worker_id) DO UPDATE SET capabilities_json=excluded.capabilities_json, "
      "allowed_adapters_json=excluded.allowed_adapters_json, labels_json=excluded.labels_json,"
      " tenants_json=excluded.tenants_json, last_seen_at=excluded.last_seen_at, stopped_at=0");
  upsert->bind(1, registration.worker_id);
  upsert->bind(2, registration.agent_id);
  const auto labels = labels_text(registration.labels);
  upsert->bind(3, names_text(registration.capabilities));
  upsert->bind(4, names_text(registration.allowed_adapters));
  upsert->bind(5, labels);
  upsert->bind(6, names_text(registration.tenants));
  upsert->bind(7, registration.registered_at);
  upsert->bind(8, registration.seen_at);
  upsert->exec();
  Prepared capacity(
      db_,
      "INSERT INTO fleet_worker_capacity(worker_id,max_slots,failure_domain,labels_json,"
      "updated_at) VALUES (?,?,?,?,?) ON CONFLICT(worker_id) DO UPDATE SET "
      "max_slots=excluded.max_slots, failure_domain=excluded.failure_domain, "
      "labels_json=excluded.labels_json, updated_at=excluded.updated_at");
  capacity->bind(1, registration.worker_id);
  capacity->bind(2, registration.max_slots);
  capacity->bind(3, registration.failure_domain);
  capacity->bind(4, labels);
  capacity->bind(5, registration.seen_at);
  capacity->exec();
}

void SqliteTransaction::configure_worker(const WorkerCapacity& capacity) {
  Prepared update(db_,
                  "UPDATE fleet_worker_capacity SET max_slots=?, failure_domain=?, "
                  "labels_json=?, quarantined=?, updated_at=? WHERE worker_id=?");
  update->bind(1, capacity.max_slots);
  update->bind(2, capacity.failure_domain);
  update->bind(3, labels_text(capacity.labels));
  update->bind(4, capacity.quarantined ? 1 : 0);
  update->bind(5, capacity.updated_at);
  update->bind(6, capacity.worker_id);
  update->exec();
}

void SqliteTransaction::touch_worker(const std::string& worker_id, double now) {
  Prepared update(db_, "UPDATE workers SET last_seen_at=? WHERE worker_id=?");
  update->bind(1, now);
  update->bind(2, worker_id);
  update->exec();
}

void SqliteTransaction::mark_worker_stopped(const std::string& worker_id, double now) {
  Prepared update(db_, "UPDATE workers SET stopped_at=? WHERE worker_id=?");
  update->bind(1, now);
  update->bind(2, worker_id);
  update->exec();
}

void SqliteTransaction::note_worker_failure(const std::string& worker_id, double now, int threshold,
                                            double open_until) {
  Prepared update(
      db_,
      "UPDATE fleet_worker_capacity SET consecutive_failures=consecutive_failures+1, "
      "circuit_state=CASE WHEN consecutive_failures+1>=?1 THEN 'OPEN' ELSE circuit_state END, "
      "circuit_open_until=CASE WHEN consecutive_failures+1>=?1 THEN ?2 ELSE circuit_open_until "
      "END, updated_at=?3 WHERE worker_id=?4");
  update->bind(1, threshold);
  update->bind(2, open_until);
  update->bind(3, now);
  update->bind(4, worker_id);
  update->exec();
}

void SqliteTransaction::note_worker_success(const std::string& worker_id, double now) {
  Prepared update(db_,
                  "UPDATE fleet_worker_capacity SET consecutive_failures=0, "
                  "circuit_state='CLOSED', circuit_open_until=0, updated_at=? "
                  "WHERE worker_id=? AND (consecutive_failures<>0 OR circuit_state<>'CLOSED' "
                  "OR circuit_open_until<>0)");
  update->bind(1, now);
  update->bind(2, worker_id);
  update->exec();
}

void SqliteTransaction::insert_claim(const ClaimRecord& claim) {
  // The slot first: the primary key (worker, slot) is the constraint, and the upsert takes a
  // slot over only when its claim is no longer an active lease that runs past now.
  Prepared slot(db_,
                "INSERT INTO fleet_worker_slots(worker_id,slot,claim_id) VALUES (?1,?2,?3) "
                "ON CONFLICT(worker_id,slot) DO UPDATE SET claim_id=excluded.claim_id "
                "WHERE NOT EXISTS (SELECT 1 FROM claims k WHERE "
                "k.claim_id=fleet_worker_slots.claim_id AND k.status='ACTIVE' "
                "AND k.lease_expires_at>?4)");
  bool taken = false;
  for (std::int64_t number = 0; number < claim.max_slots && !taken; ++number) {
    slot->bind(1, claim.worker_id);
    slot->bind(2, number);
    slot->bind(3, claim.claim_id);
    slot->bind(4, claim.now);
    taken = slot->exec() == 1;
    slot->reset();
  }
  if (!taken) throw Error(ErrorCode::FLEET_WORKER_CAPACITY_EXHAUSTED);
  Prepared claim_row(db_,
                     "INSERT INTO claims(claim_id,task_id,worker_id,agent_id,attempt,"
                     "status,lease_expires_at,created_at) VALUES (?,?,?,?,?,'ACTIVE',?,?)");
  claim_row->bind(1, claim.claim_id);
  claim_row->bind(2, claim.task_id);
  claim_row->bind(3, claim.worker_id);
  claim_row->bind(4, claim.agent_id);
  claim_row->bind(5, claim.attempt);
  claim_row->bind(6, claim.lease_expires_at);
  claim_row->bind(7, claim.created_at);
  claim_row->exec();
  Prepared dispatch(
      db_,
      "INSERT INTO fleet_dispatches(reservation_id,task_id,worker_id,task_revision,scope_key,"
      "failure_domain,reserved_until,state,score,claim_id,created_at,updated_at) "
      "VALUES (?,?,?,?,?,?,?,'CLAIMED',?,?,?,?)");
  dispatch->bind(1, claim.reservation_id);
  dispatch->bind(2, claim.task_id);
  dispatch->bind(3, claim.worker_id);
  dispatch->bind(4, claim.task_revision);
  dispatch->bind(5, claim.scope_key);
  dispatch->bind(6, claim.failure_domain);
  dispatch->bind(7, claim.lease_expires_at);
  dispatch->bind(8, claim.score);
  dispatch->bind(9, claim.claim_id);
  dispatch->bind(10, claim.now);
  dispatch->bind(11, claim.now);
  dispatch->exec();
  Prepared scope(db_,
                 "INSERT INTO fleet_scope_state(scope_key,dispatch_count,"
                 "last_dispatch_at) VALUES (?,1,?) ON CONFLICT(scope_key) DO UPDATE "
                 "SET dispatch_count=dispatch_count+1, last_dispatch_at=excluded."
                 "last_dispatch_at");
  scope->bind(1, claim.scope_key);
  scope->bind(2, claim.now);
  scope->exec();
}

void SqliteTransaction::extend_claim(const std::string& task_id, const std::string& claim_id,
                                     double expires_at) {
  Prepared claim(db_, "UPDATE claims SET lease_expires_at=? WHERE claim_id=?");
  claim->bind(1, expires_at);
  claim->bind(2, claim_id);
  claim->exec();
  // Through fleet_dispatches_by_task: an index on claim_id would be one more page every claim
  // writes, for the heartbeat alone.
  Prepared dispatch(db_,
                    "UPDATE fleet_dispatches SET reserved_until=? WHERE task_id=? AND "
                    "state='CLAIMED' AND claim_id=?");
  dispatch->bind(1, expires_at);
  dispatch->bind(2, task_id);
  dispatch->bind(3, claim_id);
  dispatch->exec();
}

void SqliteTransaction::end_claim(const std::string& claim_id, const std::string& status,
                                  const std::string& now) {
  Prepared update(db_,
                  "UPDATE claims SET status=?, ended_at=? WHERE claim_id=? AND status='ACTIVE'");
  update->bind(1, status);
  update->bind(2, now);
  update->bind(3, claim_id);
  update->exec();
}

void SqliteTransaction::end_dispatch(const std::string& task_id, const std::string& state,
                                     double now) {
  Prepared update(db_,
                  "UPDATE fleet_dispatches SET state=?, updated_at=? WHERE task_id=? "
                  "AND state IN ('RESERVED','CLAIMED')");
  update->bind(1, state);
  update->bind(2, now);
  update->bind(3, task_id);
  update->exec();
}

std::set<std::string> SqliteTransaction::tasks_failed_in_domain(const std::string& domain) {
  // Neither DISTINCT nor IN (...): the set drops repeats, and for either SQLite builds a
  // temporary b-tree (its own pager and page cache) on every call, which was 15% and then 5%
  // of a poll with 10,000 queued tasks. One index seek per state needs none.
  Prepared query(db_, "SELECT task_id FROM fleet_dispatches WHERE failure_domain=? AND state=?");
  std::set<std::string> tasks;
  for (const char* state : {"RELEASED", "EXPIRED"}) {
    query->bind(1, domain);
    query->bind(2, state);
    while (query->executeStep()) tasks.insert(query->getColumn(0).getString());
    query->reset();
  }
  return tasks;
}

std::vector<std::pair<std::string, std::int64_t>> SqliteTransaction::scope_dispatch_counts() {
  Prepared scopes(db_,
                  "SELECT scope_key, dispatch_count FROM fleet_scope_state ORDER BY scope_key");
  std::vector<std::pair<std::string, std::int64_t>> counts;
  while (scopes->executeStep()) {
    counts.emplace_back(scopes->getColumn(0).getString(), scopes->getColumn(1).getInt64());
  }
  return counts;
}

bool SqliteTransaction::task_quarantined(const std::string& task_id, const std::string& worker_id,
                                         double now) {
  Prepared query(db_,
                 "SELECT 1 FROM fleet_task_quarantine WHERE task_id=? AND worker_id=? "
                 "AND quarantined_until>?");
  query->bind(1, task_id);
  query->bind(2, worker_id);
  query->bind(3, now);
  return query->executeStep();
}

void SqliteTransaction::quarantine_task(const std::string& task_id, const std::string& worker_id,
                                        const std::string& failure_class, double until) {
  Prepared upsert(
      db_,
      "INSERT INTO fleet_task_quarantine(task_id,worker_id,failure_class,failures,"
      "quarantined_until) VALUES (?,?,?,1,?) ON CONFLICT(task_id,worker_id) DO UPDATE SET "
      "failure_class=excluded.failure_class, failures=failures+1, "
      "quarantined_until=excluded.quarantined_until");
  upsert->bind(1, task_id);
  upsert->bind(2, worker_id);
  upsert->bind(3, failure_class);
  upsert->bind(4, until);
  upsert->exec();
}

std::vector<TaskQuarantine> SqliteTransaction::live_task_quarantines(double now) {
  Prepared query(db_,
                 "SELECT task_id, worker_id, failure_class, failures FROM fleet_task_quarantine "
                 "WHERE quarantined_until>? ORDER BY task_id, worker_id");
  query->bind(1, now);
  std::vector<TaskQuarantine> quarantines;
  while (query->executeStep()) {
    quarantines.push_back({query->getColumn(0).getString(), query->getColumn(1).getString(),
                           query->getColumn(2).getString(), query->getColumn(3).getInt64()});
  }
  return quarantines;
}

std::vector<ClaimWindow> SqliteTransaction::claim_windows(double since) {
  Prepared query(db_, kClaimWindows);
  query->bind(1, since);
  std::vector<ClaimWindow> windows;
  while (query->executeStep()) {
    windows.push_back({query->getColumn(0).getString(), query->getColumn(1).getDouble()});
  }
  return windows;
}

std::optional<ResultRecord> SqliteTransaction::load_result(const std::string& task_id,
                                                           const std::string& idempotency_key) {
  Prepared replay(db_,
                  "SELECT attempt, agent_id, request_sha256, response_json, created_at FROM "
                  "results WHERE task_id=? AND idempotency_key=?");
  replay->bind(1, task_id);
  replay->bind(2, idempotency_key);
  if (!replay->executeStep()) return std::nullopt;
  return ResultRecord{task_id,
                      idempotency_key,
                      replay->getColumn(0).getInt64(),
                      worker_text(replay->getColumn(1)),
                      worker_text(replay->getColumn(2)),
                      worker_text(replay->getColumn(3)),
                      worker_text(replay->getColumn(4))};
}

void SqliteTransaction::insert_result(const ResultRecord& result) {
  Prepared insert(db_,
                  "INSERT INTO results(task_id,idempotency_key,attempt,agent_id,"
                  "request_sha256,response_json,created_at) VALUES (?,?,?,?,?,?,?)");
  insert->bind(1, result.task_id);
  insert->bind(2, result.idempotency_key);
  insert->bind(3, result.attempt);
  insert->bind(4, result.agent_id);
  insert->bind(5, result.request_sha256);
  insert->bind(6, result.response_json);
  insert->bind(7, result.created_at);
  insert->exec();
}

}  // namespace aios::store
