// The Bridge's statements: plans, writer leases and governed-commit receipts.
#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include "aios/error.hpp"
#include "store/sqlite/database.hpp"
#include "store/sqlite/transaction.hpp"

namespace aios::store {

std::optional<PlanRecord> SqliteTransaction::load_plan(const std::string& task_id) {
  Prepared query(db_,
                 "SELECT plan_sha256, plan_json, execution_digest, created_at FROM bridge_plans "
                 "WHERE task_id=?");
  query->bind(1, task_id);
  if (!query->executeStep()) return std::nullopt;
  return PlanRecord{task_id, query->getColumn(0).getString(), query->getColumn(1).getString(),
                    query->getColumn(2).getString(), query->getColumn(3).getString()};
}

std::vector<PlanRecord> SqliteTransaction::plans_after(const std::string& after_task_id,
                                                       std::size_t limit) {
  Prepared query(db_,
                 "SELECT task_id, plan_sha256, plan_json, execution_digest, created_at "
                 "FROM bridge_plans WHERE task_id>? ORDER BY task_id LIMIT ?");
  query->bind(1, after_task_id);
  query->bind(2, static_cast<std::int64_t>(limit));
  std::vector<PlanRecord> plans;
  while (query->executeStep()) {
    plans.push_back({query->getColumn(0).getString(), query->getColumn(1).getString(),
                     query->getColumn(2).getString(), query->getColumn(3).getString(),
                     query->getColumn(4).getString()});
  }
  return plans;
}

void SqliteTransaction::insert_plan(const PlanRecord& plan) {
  Prepared insert(db_,
                  "INSERT INTO bridge_plans(task_id,plan_sha256,plan_json,"
                  "execution_digest,created_at) VALUES (?,?,?,?,?)");
  insert->bind(1, plan.task_id);
  insert->bind(2, plan.plan_sha256);
  insert->bind(3, plan.plan_json);
  insert->bind(4, plan.execution_digest);
  insert->bind(5, plan.created_at);
  insert->exec();
}

std::vector<WriterLease> SqliteTransaction::open_writer_leases(const std::string& branch) {
  Prepared query(db_,
                 "SELECT writer_lease_id, target_branch, task_id, claim_id, attempt, "
                 "execution_digest, agent_id, created_at FROM bridge_writer_leases "
                 "WHERE target_branch=? AND ended_at IS NULL");
  query->bind(1, branch);
  std::vector<WriterLease> leases;
  while (query->executeStep()) {
    leases.push_back({query->getColumn(0).getString(), query->getColumn(1).getString(),
                      query->getColumn(2).getString(), query->getColumn(3).getString(),
                      query->getColumn(4).getInt64(), query->getColumn(5).getString(),
                      query->getColumn(6).getString(), query->getColumn(7).getString()});
  }
  return leases;
}

bool SqliteTransaction::writer_lease_open(const std::string& writer_lease_id,
                                          const std::string& task_id, const std::string& claim_id) {
  Prepared query(db_,
                 "SELECT 1 FROM bridge_writer_leases WHERE writer_lease_id=? AND "
                 "task_id=? AND claim_id=? AND ended_at IS NULL");
  query->bind(1, writer_lease_id);
  query->bind(2, task_id);
  query->bind(3, claim_id);
  return query->executeStep();
}

void SqliteTransaction::end_writer_lease(const std::string& writer_lease_id,
                                         const std::string& now) {
  Prepared end(db_, "UPDATE bridge_writer_leases SET ended_at=? WHERE writer_lease_id=?");
  end->bind(1, now);
  end->bind(2, writer_lease_id);
  end->exec();
}

void SqliteTransaction::insert_writer_lease(const WriterLease& lease) {
  Prepared insert(db_,
                  "INSERT INTO bridge_writer_leases(writer_lease_id,target_branch,"
                  "task_id,claim_id,attempt,execution_digest,agent_id,created_at) "
                  "VALUES (?,?,?,?,?,?,?,?)");
  insert->bind(1, lease.writer_lease_id);
  insert->bind(2, lease.target_branch);
  insert->bind(3, lease.task_id);
  insert->bind(4, lease.claim_id);
  insert->bind(5, lease.attempt);
  insert->bind(6, lease.execution_digest);
  insert->bind(7, lease.agent_id);
  insert->bind(8, lease.created_at);
  try {
    insert->exec();
  } catch (const SQLite::Exception& error) {
    // The unique index on a branch's open lease: another writer holds it.
    if (error.getExtendedErrorCode() == SQLITE_CONSTRAINT_UNIQUE) {
      throw Error(ErrorCode::WRITER_LEASE_BRANCH_BUSY);
    }
    throw;
  }
}

std::optional<CommitReceipt> SqliteTransaction::load_commit_receipt(const std::string& key) {
  Prepared query(db_,
                 "SELECT task_id, execution_digest, target_branch, old_oid, commit_oid, state, "
                 "attempt, created_at FROM bridge_commits WHERE commit_idempotency_key=?");
  query->bind(1, key);
  if (!query->executeStep()) return std::nullopt;
  CommitReceipt receipt{key,
                        query->getColumn(0).getString(),
                        query->getColumn(1).getString(),
                        query->getColumn(2).getString(),
                        std::nullopt,
                        query->getColumn(4).getString(),
                        query->getColumn(5).getString(),
                        query->getColumn(6).getInt64(),
                        query->getColumn(7).getString()};
  if (!query->getColumn(3).isNull()) receipt.old_oid = query->getColumn(3).getString();
  return receipt;
}

void SqliteTransaction::insert_commit_receipt(const CommitReceipt& receipt) {
  Prepared insert(db_,
                  "INSERT INTO bridge_commits(commit_idempotency_key,task_id,"
                  "execution_digest,target_branch,old_oid,commit_oid,state,attempt,"
                  "created_at) VALUES (?,?,?,?,?,?,?,?,?)");
  insert->bind(1, receipt.commit_idempotency_key);
  insert->bind(2, receipt.task_id);
  insert->bind(3, receipt.execution_digest);
  insert->bind(4, receipt.target_branch);
  if (receipt.old_oid) insert->bind(5, *receipt.old_oid);
  insert->bind(6, receipt.commit_oid);
  insert->bind(7, receipt.state);
  insert->bind(8, receipt.attempt);
  insert->bind(9, receipt.created_at);
  insert->exec();
}

void SqliteTransaction::mark_commit_applied(const std::string& key, const std::string& now) {
  Prepared applied(db_,
                   "UPDATE bridge_commits SET state='APPLIED', applied_at=? WHERE "
                   "commit_idempotency_key=?");
  applied->bind(1, now);
  applied->bind(2, key);
  applied->exec();
}

void SqliteTransaction::drop_commit_receipt(const std::string& key) {
  Prepared drop(db_, "DELETE FROM bridge_commits WHERE commit_idempotency_key=?");
  drop->bind(1, key);
  drop->exec();
}

}  // namespace aios::store
