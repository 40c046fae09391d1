#pragma once
// The statements both backends run word for word (SQLite and PostgreSQL both take $N
// parameters and CAST), so the two cannot drift apart.

namespace aios::store {

// A worker with its capacity row and the slots and probes it holds at $1 (now).
inline constexpr const char* kWorkerSelect =
    "SELECT w.worker_id, w.agent_id, w.capabilities_json, w.allowed_adapters_json, "
    "COALESCE(c.labels_json, w.labels_json), w.tenants_json, w.last_seen_at, "
    "COALESCE(c.max_slots, 1), "
    "COALESCE(c.failure_domain, ''), COALESCE(c.circuit_state, 'CLOSED'), "
    "COALESCE(c.circuit_open_until, 0), COALESCE(c.consecutive_failures, 0), "
    "COALESCE(c.quarantined, 0), "
    "(SELECT COUNT(*) FROM claims k WHERE k.worker_id=w.worker_id AND k.status='ACTIVE' "
    "   AND k.lease_expires_at>$1) + "
    "(SELECT COUNT(*) FROM fleet_dispatches d WHERE d.worker_id=w.worker_id "
    "   AND d.state='RESERVED' AND d.reserved_until>$1), "
    "(SELECT COUNT(*) FROM fleet_dispatches d WHERE d.worker_id=w.worker_id "
    "   AND d.state='CLAIMED' AND d.created_at>=COALESCE(c.circuit_open_until, 0)), "
    "w.stopped_at "
    "FROM workers w LEFT JOIN fleet_worker_capacity c ON c.worker_id=w.worker_id";

// The tasks of $1 (status; any when '') and $2 (tenant: its own scope and its projects'; any
// when '') whose id starts with $5 (any when ''), after seq $3, at most $4, in queue order. The
// task columns are put before FROM.
inline constexpr const char* kTasksWhere =
    " FROM tasks WHERE ($1='' OR status=$1) AND "
    "(CAST($2 AS TEXT)='' OR scope_key='tenant:'||CAST($2 AS TEXT) OR "
    "substr(scope_key, 1, length(CAST($2 AS TEXT))+9)='project:'||CAST($2 AS TEXT)||'/') "
    "AND (CAST($5 AS TEXT)='' OR substr(task_id, 1, length(CAST($5 AS TEXT)))=CAST($5 AS TEXT)) "
    "AND seq>$3 ORDER BY seq LIMIT $4";

// Every circuit cooldown and task quarantine ending after $1, by worker and end.
inline constexpr const char* kClaimWindows =
    "SELECT worker_id, ends FROM ("
    "SELECT worker_id, circuit_open_until AS ends FROM fleet_worker_capacity "
    "WHERE circuit_state='OPEN' AND circuit_open_until>$1 UNION ALL "
    "SELECT worker_id, quarantined_until FROM fleet_task_quarantine "
    "WHERE quarantined_until>$1) AS windows ORDER BY worker_id, ends";

// The live tasks by status, scope and priority (store::LiveTaskCount).
inline constexpr const char* kLiveTaskCounts =
    "SELECT status, scope_key, priority, COUNT(*) FROM tasks "
    "WHERE status IN ('QUEUED','CLAIMED','VERIFYING') "
    "GROUP BY status, scope_key, priority ORDER BY status, scope_key, priority";

// The newest $1 tasks; the task columns are put before FROM.
inline constexpr const char* kNewestTasks = " FROM tasks ORDER BY seq DESC LIMIT $1";

// Every task's events after event id $1, at most $2: the fleet-wide feed.
inline constexpr const char* kEventsAfter =
    "SELECT event_id, event_type, agent_id, payload_json, created_at, task_id FROM task_events "
    "WHERE event_id>$1 ORDER BY event_id LIMIT $2";

inline constexpr const char* kLastEventId = "SELECT COALESCE(MAX(event_id), 0) FROM task_events";

// Retention: terminal tasks last updated before $1 that still have events, at most $2; then
// what of each is deleted ($1: its id).
inline constexpr const char* kPrunableTasks =
    "SELECT t.task_id FROM tasks t WHERE t.status IN ('SUCCEEDED','FAILED','CANCELLED') "
    "AND t.updated_at<$1 AND EXISTS (SELECT 1 FROM task_events e WHERE e.task_id=t.task_id) "
    "ORDER BY t.seq LIMIT $2";
inline constexpr const char* kPruneEvents = "DELETE FROM task_events WHERE task_id=$1";
inline constexpr const char* kPruneResults = "DELETE FROM results WHERE task_id=$1";

}  // namespace aios::store
