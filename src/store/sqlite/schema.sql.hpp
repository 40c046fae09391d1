#pragma once
// Numbered migrations of the task-plane database. A migration is applied once, inside one
// transaction with its row in schema_migrations; never edit a shipped migration, add one.

#include <array>
#include <cstddef>
#include <string_view>

#include "aios/store.hpp"

namespace aios::store {

// The seed's receipts of applied rebinds. Migration 1 creates the table; the rebind service
// creates it too on the seed's own two-table database, which it must not migrate.
inline constexpr char kCreateRebindReceipts[] =
    R"sql(CREATE TABLE IF NOT EXISTS task_execution_rebinds(
  task_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  request_sha256 TEXT NOT NULL,
  authorization_id TEXT NOT NULL,
  previous_verification_sha256 TEXT NOT NULL,
  old_execution_digest TEXT NOT NULL,
  new_execution_digest TEXT NOT NULL,
  expected_revision INTEGER NOT NULL,
  applied_revision INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  reason TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(task_id,idempotency_key)
);
)sql";

// The text of `parts` one after another, at compile time, so one statement can be part of a
// migration and also stand alone.
template <std::size_t... N>
constexpr auto concat_sql(const char (&... parts)[N]) {
  std::array<char, (N + ...) - sizeof...(N) + 1> out{};
  std::size_t at = 0;
  for (const std::string_view part : {std::string_view(parts, N - 1)...}) {
    for (const char c : part) out[at++] = c;
  }
  return out;
}

struct Migration {
  int version;
  std::string_view sql;
};

inline constexpr auto kMigration1 = concat_sql(R"sql(
CREATE TABLE IF NOT EXISTS tasks(
  task_id TEXT PRIMARY KEY,
  status TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  revision INTEGER NOT NULL,
  claimed_by TEXT,
  lease_token_hash TEXT,
  lease_expires_at TEXT,
  verification_json TEXT,
  result_json TEXT,
  metadata_json TEXT,
  required_capabilities_json TEXT
);
ALTER TABLE tasks ADD COLUMN seq INTEGER;
UPDATE tasks SET seq=rowid WHERE seq IS NULL;
ALTER TABLE tasks ADD COLUMN job_id TEXT;
ALTER TABLE tasks ADD COLUMN action TEXT;
ALTER TABLE tasks ADD COLUMN adapter TEXT;
ALTER TABLE tasks ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN scope_key TEXT NOT NULL DEFAULT 'global';
ALTER TABLE tasks ADD COLUMN scope_weight REAL NOT NULL DEFAULT 1.0;
ALTER TABLE tasks ADD COLUMN claim_id TEXT;
ALTER TABLE tasks ADD COLUMN execution_digest TEXT;
ALTER TABLE tasks ADD COLUMN capability_scope_json TEXT;
ALTER TABLE tasks ADD COLUMN task_json TEXT;
ALTER TABLE tasks ADD COLUMN request_sha256 TEXT;
ALTER TABLE tasks ADD COLUMN created_at TEXT;
ALTER TABLE tasks ADD COLUMN updated_at TEXT;
CREATE INDEX IF NOT EXISTS tasks_by_status_seq ON tasks(status, seq);
CREATE INDEX IF NOT EXISTS tasks_by_lease ON tasks(status, lease_expires_at);
CREATE TABLE IF NOT EXISTS task_events(
  event_id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id TEXT,
  event_type TEXT,
  agent_id TEXT,
  payload_json TEXT,
  created_at TEXT
);
CREATE INDEX IF NOT EXISTS task_events_by_task ON task_events(task_id, event_id);
CREATE TABLE IF NOT EXISTS claims(
  claim_id TEXT PRIMARY KEY,
  task_id TEXT NOT NULL,
  worker_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  status TEXT NOT NULL,
  lease_expires_at REAL NOT NULL,
  created_at TEXT NOT NULL,
  ended_at TEXT
);
CREATE INDEX IF NOT EXISTS claims_by_worker ON claims(worker_id, status);
CREATE TABLE IF NOT EXISTS agents(
  agent_id TEXT PRIMARY KEY,
  token_sha256 TEXT NOT NULL UNIQUE,
  granted_capabilities_json TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS workers(
  worker_id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  capabilities_json TEXT NOT NULL,
  allowed_adapters_json TEXT NOT NULL,
  labels_json TEXT NOT NULL,
  tenants_json TEXT NOT NULL,
  registered_at TEXT NOT NULL,
  last_seen_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS results(
  task_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  agent_id TEXT NOT NULL,
  request_sha256 TEXT NOT NULL,
  response_json TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(task_id, idempotency_key)
);
CREATE TABLE IF NOT EXISTS fleet_dispatches(
  reservation_id TEXT PRIMARY KEY,
  task_id TEXT NOT NULL,
  worker_id TEXT NOT NULL,
  task_revision INTEGER NOT NULL,
  scope_key TEXT NOT NULL,
  failure_domain TEXT NOT NULL,
  reserved_until REAL NOT NULL,
  state TEXT NOT NULL,
  score REAL NOT NULL,
  claim_id TEXT,
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS fleet_dispatches_by_worker ON fleet_dispatches(worker_id, state);
CREATE INDEX IF NOT EXISTS fleet_dispatches_by_task ON fleet_dispatches(task_id, state);
CREATE TABLE IF NOT EXISTS fleet_worker_capacity(
  worker_id TEXT PRIMARY KEY,
  max_slots INTEGER NOT NULL,
  failure_domain TEXT NOT NULL,
  labels_json TEXT NOT NULL,
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  circuit_state TEXT NOT NULL DEFAULT 'CLOSED',
  circuit_open_until REAL NOT NULL DEFAULT 0,
  quarantined INTEGER NOT NULL DEFAULT 0,
  updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS fleet_scope_state(
  scope_key TEXT PRIMARY KEY,
  dispatch_count INTEGER NOT NULL DEFAULT 0,
  last_dispatch_at REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS fleet_task_quarantine(
  task_id TEXT NOT NULL,
  worker_id TEXT NOT NULL,
  failure_class TEXT NOT NULL,
  failures INTEGER NOT NULL,
  quarantined_until REAL NOT NULL,
  PRIMARY KEY(task_id, worker_id)
);
)sql",
                                               kCreateRebindReceipts);

// The seed's tables keep their names and columns (tasks, task_events, claims, fleet_*,
// task_execution_rebinds) so its fixtures and an existing deployment's database still work.
inline constexpr std::array<Migration, kSchemaVersion> kMigrations = {{
    {1, std::string_view(kMigration1.data(), kMigration1.size() - 1)},
    // A heartbeat finds its dispatch by claim id (until migration 6), and a poll the tasks that
    // failed in its worker's domain, without scanning the dispatch history. The governed Bridge:
    // deterministic plans, writer leases (live while the task lease that took them is), and
    // governed commits (PENDING before the ref moves, so a crash between the ref update and the
    // receipt is recovered from the ref, never re-decided).
    {2, R"sql(
CREATE INDEX IF NOT EXISTS fleet_dispatches_by_claim ON fleet_dispatches(claim_id);
CREATE INDEX IF NOT EXISTS fleet_dispatches_by_domain ON fleet_dispatches(failure_domain, state);
CREATE TABLE bridge_plans(
  task_id TEXT PRIMARY KEY,
  plan_sha256 TEXT NOT NULL,
  plan_json TEXT NOT NULL,
  execution_digest TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE bridge_writer_leases(
  writer_lease_id TEXT PRIMARY KEY,
  target_branch TEXT NOT NULL,
  task_id TEXT NOT NULL,
  claim_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  execution_digest TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  ended_at TEXT
);
CREATE INDEX bridge_writer_leases_open ON bridge_writer_leases(target_branch)
  WHERE ended_at IS NULL;
CREATE TABLE bridge_commits(
  commit_idempotency_key TEXT PRIMARY KEY,
  task_id TEXT NOT NULL,
  execution_digest TEXT NOT NULL,
  target_branch TEXT NOT NULL,
  old_oid TEXT,
  commit_oid TEXT NOT NULL,
  state TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  applied_at TEXT
);
)sql"},
    // A poll reads the queue in fleet order group by group, each group in seq order, and stops
    // after `limit` eligible tasks (store::visit_queued_tasks_in_fleet_order). Not a partial
    // index on status='QUEUED': with status in it, finding the next group never reads a row.
    {3, R"sql(
CREATE INDEX tasks_by_status_scope ON tasks(status, priority, scope_key, scope_weight, seq);
)sql"},
    // The owner grants an agent tenants (none: every tenant) and can revoke or rotate its token.
    {4, R"sql(
ALTER TABLE agents ADD COLUMN granted_tenants_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE agents ADD COLUMN revoked_at TEXT;
)sql"},
    // What a single writer used to guarantee, held by the schema so a backend with concurrent
    // writers keeps it: a heartbeat advances the task's lease generation, which the sweeper's
    // CAS checks (a heartbeat makes no new revision); a worker's slots are rows keyed by
    // (worker, slot number), taken over only from a claim that is no longer an active,
    // unexpired lease (so a heartbeat or the end of a claim writes no slot); a branch has at
    // most one open writer lease; the queue sequence is a counter, not MAX(seq)+1.
    {5, R"sql(
ALTER TABLE tasks ADD COLUMN lease_generation INTEGER NOT NULL DEFAULT 0;
CREATE TABLE fleet_worker_slots(
  worker_id TEXT NOT NULL,
  slot INTEGER NOT NULL,
  claim_id TEXT NOT NULL,
  PRIMARY KEY(worker_id, slot)
);
INSERT INTO fleet_worker_slots(worker_id, slot, claim_id)
  SELECT worker_id, ROW_NUMBER() OVER (PARTITION BY worker_id ORDER BY claim_id) - 1, claim_id
  FROM claims WHERE status='ACTIVE';
DROP INDEX bridge_writer_leases_open;
CREATE UNIQUE INDEX bridge_writer_leases_open ON bridge_writer_leases(target_branch)
  WHERE ended_at IS NULL;
CREATE TABLE task_queue_sequence(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  last_seq INTEGER NOT NULL
);
INSERT INTO task_queue_sequence(id, last_seq) SELECT 1, COALESCE(MAX(seq), 0) FROM tasks;
)sql"},
    // Every claim writes each index of fleet_dispatches; the heartbeat, the only reader of
    // this one, finds its dispatch through fleet_dispatches_by_task.
    {6, R"sql(
DROP INDEX IF EXISTS fleet_dispatches_by_claim;
)sql"},
    // An agent may be bound to the client certificate its workers present over mutual TLS.
    {7, R"sql(
ALTER TABLE agents ADD COLUMN certificate_uri TEXT NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN certificate_sha256 TEXT NOT NULL DEFAULT '';
)sql"},
    // The dashboard and an unfiltered task list read the newest tasks by queue order.
    {8, R"sql(
CREATE INDEX tasks_by_seq ON tasks(seq);
)sql"},
    // A long poll sleeps until the soonest quarantine ends (claim_windows) instead of retrying.
    {9, R"sql(
CREATE INDEX fleet_task_quarantine_by_until ON fleet_task_quarantine(quarantined_until);
)sql"},
    // The fleet decides on a task's narrow columns (execution_digest, action, adapter,
    // capability_scope_json) instead of parsing its envelope: they are kept equal to
    // metadata_json's execution, which stays authoritative. Our writers set both; the trigger
    // covers a writer that rewrites the metadata alone, as the seed's rebind service does on this
    // database. The rows written before are brought in line once. Only a metadata that changed
    // and holds an envelope (a digest) is read: every transition rewrites the same metadata.
    {10, R"sql(
UPDATE tasks SET
  execution_digest=json_extract(metadata_json, '$.execution.execution_digest'),
  action=json_extract(metadata_json, '$.execution.action'),
  adapter=json_extract(metadata_json, '$.execution.adapter'),
  capability_scope_json=json_extract(metadata_json, '$.execution.capability_scope')
WHERE json_valid(metadata_json) AND
  json_type(metadata_json, '$.execution.execution_digest')='text';
CREATE TRIGGER tasks_execution_columns AFTER UPDATE OF metadata_json ON tasks
WHEN NEW.metadata_json IS NOT OLD.metadata_json AND json_valid(NEW.metadata_json) AND
  json_type(NEW.metadata_json, '$.execution.execution_digest')='text'
BEGIN
  UPDATE tasks SET
    execution_digest=json_extract(NEW.metadata_json, '$.execution.execution_digest'),
    action=json_extract(NEW.metadata_json, '$.execution.action'),
    adapter=json_extract(NEW.metadata_json, '$.execution.adapter'),
    capability_scope_json=json_extract(NEW.metadata_json, '$.execution.capability_scope')
  WHERE task_id=NEW.task_id AND (
    execution_digest IS NOT json_extract(NEW.metadata_json, '$.execution.execution_digest') OR
    action IS NOT json_extract(NEW.metadata_json, '$.execution.action') OR
    adapter IS NOT json_extract(NEW.metadata_json, '$.execution.adapter') OR
    capability_scope_json IS NOT json_extract(NEW.metadata_json, '$.execution.capability_scope'));
END;
)sql"},
    // PostgreSQL numbers its queue from a sequence from here on; SQLite's one writer keeps its
    // counter row, so nothing changes here but the version both backends share.
    {11, "SELECT 1;"},
    // PostgreSQL counts a scope's dispatches in shards from here on; SQLite's one writer keeps
    // one row a scope.
    {12, "SELECT 1;"},
    // PostgreSQL's queue and lease indexes hold only the queued and the claimed tasks from here
    // on; SQLite's are unchanged.
    {13, "SELECT 1;"},
    // PostgreSQL keeps a task's envelope and body out of line from here on.
    {14, "SELECT 1;"},
    // A requeued task's generation (POST /v1/tasks/{id}/requeue): an agent's exchange request
    // id carries it, so the run of a new generation is a new run.
    {15, "ALTER TABLE tasks ADD COLUMN requeues INTEGER NOT NULL DEFAULT 0;"},
    // When a worker said it stopped (POST /v1/workers/{id}/stopped); 0 while it runs.
    {16, "ALTER TABLE workers ADD COLUMN stopped_at REAL NOT NULL DEFAULT 0;"},
    // PostgreSQL's fleet indexes hold only the claims and dispatches their readers seek from
    // here on; SQLite's are unchanged.
    {17, "SELECT 1;"},
}};

static_assert(kMigrations.back().version == kSchemaVersion);

}  // namespace aios::store
