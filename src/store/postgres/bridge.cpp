// The Bridge's statements on PostgreSQL: plans, writer leases and governed-commit receipts.
#include "aios/error.hpp"
#include "store/postgres/transaction.hpp"

namespace aios::store {

std::optional<PlanRecord> PgTransaction::load_plan(const std::string& task_id) {
  if (const auto found = plans_ahead_.find(task_id); found != plans_ahead_.end()) {
    return found->second;
  }
  const auto rows = db_.run(
      "SELECT plan_sha256, plan_json, execution_digest, created_at FROM bridge_plans "
      "WHERE task_id=$1",
      pg::Params().text(task_id));
  if (rows.empty()) return std::nullopt;
  return PlanRecord{task_id, rows.text(0, 0), rows.text(0, 1), rows.text(0, 2), rows.text(0, 3)};
}

std::vector<PlanRecord> PgTransaction::plans_after(const std::string& after_task_id,
                                                   std::size_t limit) {
  const auto rows = db_.run(
      "SELECT task_id, plan_sha256, plan_json, execution_digest, created_at FROM bridge_plans "
      "WHERE task_id>$1 ORDER BY task_id LIMIT $2",
      pg::Params().text(after_task_id).integer(static_cast<std::int64_t>(limit)));
  std::vector<PlanRecord> plans;
  for (int at = 0; at < rows.size(); ++at) {
    plans.push_back(
        {rows.text(at, 0), rows.text(at, 1), rows.text(at, 2), rows.text(at, 3), rows.text(at, 4)});
  }
  return plans;
}

void PgTransaction::insert_plan(const PlanRecord& plan) {
  plans_ahead_.erase(plan.task_id);
  db_.run(
      "INSERT INTO bridge_plans(task_id,plan_sha256,plan_json,execution_digest,created_at) "
      "VALUES ($1,$2,$3,$4,$5)",
      pg::Params()
          .text(plan.task_id)
          .text(plan.plan_sha256)
          .text(plan.plan_json)
          .text(plan.execution_digest)
          .text(plan.created_at));
}

std::vector<WriterLease> PgTransaction::open_writer_leases(const std::string& branch) {
  const auto rows = db_.run(
      "SELECT writer_lease_id, target_branch, task_id, claim_id, attempt, execution_digest, "
      "agent_id, created_at FROM bridge_writer_leases WHERE target_branch=$1 AND ended_at IS NULL",
      pg::Params().text(branch));
  std::vector<WriterLease> leases;
  for (int at = 0; at < rows.size(); ++at) {
    leases.push_back({rows.text(at, 0), rows.text(at, 1), rows.text(at, 2), rows.text(at, 3),
                      rows.integer(at, 4), rows.text(at, 5), rows.text(at, 6), rows.text(at, 7)});
  }
  return leases;
}

bool PgTransaction::writer_lease_open(const std::string& writer_lease_id,
                                      const std::string& task_id, const std::string& claim_id) {
  return !db_.run(
                 "SELECT 1 FROM bridge_writer_leases WHERE writer_lease_id=$1 AND task_id=$2 "
                 "AND claim_id=$3 AND ended_at IS NULL",
                 pg::Params().text(writer_lease_id).text(task_id).text(claim_id))
              .empty();
}

void PgTransaction::end_writer_lease(const std::string& writer_lease_id, const std::string& now) {
  db_.run("UPDATE bridge_writer_leases SET ended_at=$1 WHERE writer_lease_id=$2",
          pg::Params().text(now).text(writer_lease_id));
}

void PgTransaction::insert_writer_lease(const WriterLease& lease) {
  try {
    db_.run(
        "INSERT INTO bridge_writer_leases(writer_lease_id,target_branch,task_id,claim_id,attempt,"
        "execution_digest,agent_id,created_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)",
        pg::Params()
            .text(lease.writer_lease_id)
            .text(lease.target_branch)
            .text(lease.task_id)
            .text(lease.claim_id)
            .integer(lease.attempt)
            .text(lease.execution_digest)
            .text(lease.agent_id)
            .text(lease.created_at));
  } catch (const pg::Failure& failure) {
    // The unique index on a branch's open lease: another writer holds it.
    if (failure.unique_violation() && failure.constraint() == "bridge_writer_leases_open") {
      throw Error(ErrorCode::WRITER_LEASE_BRANCH_BUSY);
    }
    throw;
  }
}

std::optional<CommitReceipt> PgTransaction::load_commit_receipt(const std::string& key) {
  const auto rows = db_.run(
      "SELECT task_id, execution_digest, target_branch, old_oid, commit_oid, state, attempt, "
      "created_at FROM bridge_commits WHERE commit_idempotency_key=$1",
      pg::Params().text(key));
  if (rows.empty()) return std::nullopt;
  return CommitReceipt{key,
                       rows.text(0, 0),
                       rows.text(0, 1),
                       rows.text(0, 2),
                       rows.optional(0, 3),
                       rows.text(0, 4),
                       rows.text(0, 5),
                       rows.integer(0, 6),
                       rows.text(0, 7)};
}

void PgTransaction::insert_commit_receipt(const CommitReceipt& receipt) {
  db_.run(
      "INSERT INTO bridge_commits(commit_idempotency_key,task_id,execution_digest,target_branch,"
      "old_oid,commit_oid,state,attempt,created_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
      pg::Params()
          .text(receipt.commit_idempotency_key)
          .text(receipt.task_id)
          .text(receipt.execution_digest)
          .text(receipt.target_branch)
          .optional(receipt.old_oid)
          .text(receipt.commit_oid)
          .text(receipt.state)
          .integer(receipt.attempt)
          .text(receipt.created_at));
}

void PgTransaction::mark_commit_applied(const std::string& key, const std::string& now) {
  db_.run(
      "UPDATE bridge_commits SET state='APPLIED', applied_at=$1 WHERE commit_idempotency_key=$2",
      pg::Params().text(now).text(key));
}

void PgTransaction::drop_commit_receipt(const std::string& key) {
  db_.run("DELETE FROM bridge_commits WHERE commit_idempotency_key=$1", pg::Params().text(key));
}

}  // namespace aios::store
