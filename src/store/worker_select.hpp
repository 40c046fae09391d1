#pragma once
// The worker read both backends share: a worker with its capacity row and the slots and probes
// it holds at $1 (now). Both SQLite and PostgreSQL take $N parameters.

namespace aios::store {

inline constexpr const char* kWorkerSelect =
    "SELECT w.worker_id, w.agent_id, w.capabilities_json, w.allowed_adapters_json, "
    "w.labels_json, w.tenants_json, w.last_seen_at, COALESCE(c.max_slots, 1), "
    "COALESCE(c.failure_domain, ''), COALESCE(c.circuit_state, 'CLOSED'), "
    "COALESCE(c.circuit_open_until, 0), COALESCE(c.consecutive_failures, 0), "
    "COALESCE(c.quarantined, 0), "
    "(SELECT COUNT(*) FROM claims k WHERE k.worker_id=w.worker_id AND k.status='ACTIVE' "
    "   AND k.lease_expires_at>$1) + "
    "(SELECT COUNT(*) FROM fleet_dispatches d WHERE d.worker_id=w.worker_id "
    "   AND d.state='RESERVED' AND d.reserved_until>$1), "
    "(SELECT COUNT(*) FROM fleet_dispatches d WHERE d.worker_id=w.worker_id "
    "   AND d.state='CLAIMED' AND d.created_at>=COALESCE(c.circuit_open_until, 0)) "
    "FROM workers w LEFT JOIN fleet_worker_capacity c ON c.worker_id=w.worker_id";

}  // namespace aios::store
