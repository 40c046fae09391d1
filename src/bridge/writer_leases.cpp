// Writer leases: one writer per target branch, held by the attempt that holds the task lease,
// and over when that task lease is over (checked live, so a heartbeat extends both).
#include <vector>

#include "aios/bridge.hpp"
#include "aios/envelope.hpp"
#include "bridge/internal.hpp"

namespace aios {
namespace bridge {

using envelope::fail;

void check_writer_lease(store::Transaction& tx, const store::TaskRow& row,
                        const std::string& writer_lease_id) {
  if (!tx.writer_lease_open(writer_lease_id, row.task_id, row.claim_id)) {
    fail(ErrorCode::WRITER_LEASE_INVALID);
  }
}

namespace {

// True while the claim that took the lease still holds a live task lease.
bool holder_live(store::Transaction& tx, const store::WriterLease& lease, TimePoint now) {
  const auto row = tx.load_task(lease.task_id);
  if (!row || row->status != "CLAIMED" || row->claim_id != lease.claim_id) return false;
  const auto expires = parse_iso8601(row->lease_expires_at);
  return expires && *expires > now;
}

}  // namespace
}  // namespace bridge

std::pair<int, nlohmann::json> Bridge::acquire_writer_lease(const Agent& agent,
                                                            const nlohmann::json& body) {
  envelope::require_exact_keys(body, {"task_id", "lease_token", "attempt", "execution_digest"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  const std::string task_id = bridge::task_id_of(body);
  const auto proof = task::lease_proof_of(body);
  const auto now = store_.now();
  const std::string now_iso = format_iso8601(now);
  int status = 201;
  nlohmann::json response;
  store_.write([&](store::Transaction& tx) {
    const auto [row, envelope] = task::fence_attempt(tx, task_id, agent.agent_id, proof, now);
    const std::string action = envelope.value("action", "");
    if ((action != "deterministic" && action != "engineering") ||
        !envelope["governance"].value("writer_lease", false)) {
      envelope::fail(ErrorCode::WRITER_LEASE_NOT_REQUIRED);
    }
    const std::string branch = envelope["target_branch"];
    response = {{"task_id", task_id},
                {"target_branch", branch},
                {"attempt", row.attempt},
                {"execution_digest", proof.execution_digest},
                {"expires_at", row.lease_expires_at},
                {"idempotent", false}};
    for (const auto& lease : tx.open_writer_leases(branch)) {
      if (lease.task_id == task_id && lease.claim_id == row.claim_id) {
        status = 200;
        response["writer_lease_id"] = lease.writer_lease_id;
        response["idempotent"] = true;
        return;
      }
      if (bridge::holder_live(tx, lease, now)) envelope::fail(ErrorCode::WRITER_LEASE_BRANCH_BUSY);
      tx.end_writer_lease(lease.writer_lease_id, now_iso);
      tx.append_event(lease.task_id, "BRIDGE_WRITER_LEASE_ENDED", "bridge",
                      {{"writer_lease_id", lease.writer_lease_id},
                       {"target_branch", branch},
                       {"reason", "task_lease_ended"}},
                      now_iso);
    }
    const std::string lease_id = "wl-" + environment_.random.hex(16);
    tx.insert_writer_lease({lease_id, branch, task_id, row.claim_id, row.attempt,
                            proof.execution_digest, agent.agent_id, now_iso});
    tx.append_event(task_id, "BRIDGE_WRITER_LEASE_GRANTED", agent.agent_id,
                    {{"writer_lease_id", lease_id},
                     {"target_branch", branch},
                     {"attempt", row.attempt},
                     {"execution_digest", proof.execution_digest}},
                    now_iso);
    response["writer_lease_id"] = lease_id;
  });
  return {status, response};
}

}  // namespace aios
