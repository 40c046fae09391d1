// Writer leases: one writer per target branch, held by the attempt that holds the task lease,
// and over when that task lease is over (checked live, so a heartbeat extends both).
#include <SQLiteCpp/SQLiteCpp.h>

#include <vector>

#include "aios/bridge.hpp"
#include "aios/envelope.hpp"
#include "bridge/internal.hpp"
#include "fleet/internal.hpp"

namespace aios {
namespace bridge {

using envelope::fail;

void check_writer_lease(SQLite::Database& db, const store::TaskRow& row,
                        const std::string& writer_lease_id) {
  SQLite::Statement query(db,
                          "SELECT 1 FROM bridge_writer_leases WHERE writer_lease_id=? AND "
                          "task_id=? AND claim_id=? AND ended_at IS NULL");
  query.bind(1, writer_lease_id);
  query.bind(2, row.task_id);
  query.bind(3, row.claim_id);
  if (!query.executeStep()) fail(ErrorCode::WRITER_LEASE_INVALID);
}

namespace {

struct OpenLease {
  std::string writer_lease_id;
  std::string task_id;
  std::string claim_id;
};

std::vector<OpenLease> open_leases(SQLite::Database& db, const std::string& branch) {
  SQLite::Statement query(db,
                          "SELECT writer_lease_id, task_id, claim_id FROM bridge_writer_leases "
                          "WHERE target_branch=? AND ended_at IS NULL");
  query.bind(1, branch);
  std::vector<OpenLease> leases;
  while (query.executeStep()) {
    leases.push_back({query.getColumn(0).getString(), query.getColumn(1).getString(),
                      query.getColumn(2).getString()});
  }
  return leases;
}

// True while the claim that took the lease still holds a live task lease.
bool holder_live(SQLite::Database& db, const OpenLease& lease, TimePoint now) {
  const auto row = store::load_task(db, lease.task_id);
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
  const auto proof = fleet::lease_proof_of(body);
  const auto now = clock_.now();
  const std::string now_iso = format_iso8601(now);
  int status = 201;
  nlohmann::json response;
  db_.write([&](SQLite::Database& db) {
    const auto row = fleet::load_existing_task(db, task_id);
    const auto envelope = fleet::execution_of(row);
    fleet::check_attempt(db, row, agent, proof, now, envelope.value("execution_digest", ""));
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
    for (const auto& lease : bridge::open_leases(db, branch)) {
      if (lease.task_id == task_id && lease.claim_id == row.claim_id) {
        status = 200;
        response["writer_lease_id"] = lease.writer_lease_id;
        response["idempotent"] = true;
        return;
      }
      if (bridge::holder_live(db, lease, now)) envelope::fail(ErrorCode::WRITER_LEASE_BRANCH_BUSY);
      SQLite::Statement end(db,
                            "UPDATE bridge_writer_leases SET ended_at=? WHERE writer_lease_id=?");
      end.bind(1, now_iso);
      end.bind(2, lease.writer_lease_id);
      end.exec();
      store::append_event(db, lease.task_id, "BRIDGE_WRITER_LEASE_ENDED", "bridge",
                          {{"writer_lease_id", lease.writer_lease_id},
                           {"target_branch", branch},
                           {"reason", "task_lease_ended"}},
                          now_iso);
    }
    const std::string lease_id = "wl-" + random_hex(16);
    SQLite::Statement insert(db,
                             "INSERT INTO bridge_writer_leases(writer_lease_id,target_branch,"
                             "task_id,claim_id,attempt,execution_digest,agent_id,created_at) "
                             "VALUES (?,?,?,?,?,?,?,?)");
    insert.bind(1, lease_id);
    insert.bind(2, branch);
    insert.bind(3, task_id);
    insert.bind(4, row.claim_id);
    insert.bind(5, row.attempt);
    insert.bind(6, proof.execution_digest);
    insert.bind(7, agent.agent_id);
    insert.bind(8, now_iso);
    insert.exec();
    store::append_event(db, task_id, "BRIDGE_WRITER_LEASE_GRANTED", agent.agent_id,
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
