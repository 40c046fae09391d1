#pragma once
// The task store: the seam every module reaches durable state through. store::Store runs
// transactions; store::Transaction holds one transaction's domain operations (tasks and their
// events, agents, workers and their slots, claims and dispatches, results, plans, writer
// leases, commit receipts, rebinds); store::CheckpointStore is the worker's local one. The SQLite
// backend (src/store/sqlite/) and the PostgreSQL one (src/store/postgres/) are the only code that
// knows SQL, SQLiteCpp or libpq; each passes tests/store/conformance_test.cpp.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aios/sys.hpp"

namespace aios::store {

// The schema version both backends migrate to (each asserts its last migration is this one).
inline constexpr int kSchemaVersion = 17;

// Every status a task can be in, as rows and the API spell them.
inline constexpr std::array<std::string_view, 6> kTaskStatuses = {
    "QUEUED", "CLAIMED", "VERIFYING", "SUCCEEDED", "FAILED", "CANCELLED"};
inline bool is_task_status(std::string_view status) {
  return std::find(kTaskStatuses.begin(), kTaskStatuses.end(), status) != kTaskStatuses.end();
}

// A task in one of these has ended: no claim, result or verification changes it again.
inline bool is_terminal_status(std::string_view status) {
  return status == "SUCCEEDED" || status == "FAILED" || status == "CANCELLED";
}

// A list of names as a fleet column holds it (capabilities, adapters, tenants), and a worker's
// labels (name -> text). The backends keep them as canonical JSON text, written and read only
// by the store (src/store/columns.cpp): the fleet works on these values, never on the text.
using Names = std::vector<std::string>;
using Labels = std::map<std::string, std::string>;

// One row of `tasks`, typed. Optional text columns are empty strings when NULL.
struct TaskRow {
  std::string task_id;
  std::string status;
  std::int64_t attempt = 0;
  std::int64_t max_attempts = 0;
  std::int64_t revision = 0;
  std::string claimed_by;
  std::string lease_token_hash;
  std::string lease_expires_at;
  std::string claim_id;
  std::string verification_json;
  std::string result_json;
  std::string metadata_json;
  std::string required_capabilities_json;
  std::string job_id;
  std::string action;
  std::string adapter;
  std::int64_t priority = 0;
  std::string scope_key;
  double scope_weight = 1.0;
  std::string task_json;
  std::string request_sha256;
  std::string created_at;
  std::string updated_at;
  std::string execution_digest;
  // The execution's capability scope; nullopt when the column is NULL or not a list of names
  // (a damaged row), which nothing is ever claimed under.
  std::optional<Names> capability_scope;
  std::int64_t seq = 0;
  // Advanced by every heartbeat: the fence a lease sweep checks besides the revision, which a
  // heartbeat leaves alone.
  std::int64_t lease_generation = 0;
  // How many times the owner requeued the task (its generation): at most one agent run each.
  std::int64_t requeues = 0;

  bool operator==(const TaskRow&) const = default;
};

// An agent as stored: the SHA-256 of its token, never the token.
struct AgentRecord {
  std::string agent_id;
  std::string token_sha256;
  Names granted_capabilities;
  Names granted_tenants;  // empty: every tenant
  std::string created_at;
  // The client certificate the agent must present (mutual TLS): a subjectAltName URI and/or the
  // SHA-256 of the certificate's DER; both empty when none is recorded.
  std::string certificate_uri{};
  std::string certificate_sha256{};
};

// A worker and its fleet state, as judged at one instant `now` (the slots in use count only
// live claims and reservations).
struct WorkerRecord {
  std::string worker_id;
  std::string agent_id;
  Names capabilities;
  Names allowed_adapters;
  Labels labels;
  Names tenants;  // empty: any tenant
  double last_seen = 0;
  std::int64_t max_slots = 1;
  std::string failure_domain;
  std::string circuit_state = "CLOSED";
  double circuit_open_until = 0;
  std::int64_t consecutive_failures = 0;
  bool quarantined = false;
  std::int64_t used_slots = 0;  // active claims + live reservations
  std::int64_t probes = 0;      // claims taken since a circuit half-opened
  double stopped_at = 0;        // when the worker said it stopped; 0 while it runs
};

// What an agent registers (or registers again) for one of its workers.
struct WorkerRegistration {
  std::string worker_id;
  std::string agent_id;
  Names capabilities;
  Names allowed_adapters;
  Labels labels;
  Names tenants;
  std::string registered_at;
  double seen_at = 0;
  std::int64_t max_slots = 1;
  std::string failure_domain;
};

// What the owner sets on a worker's capacity row.
struct WorkerCapacity {
  std::string worker_id;
  std::int64_t max_slots = 1;
  std::string failure_domain;
  Labels labels;
  bool quarantined = false;
  double updated_at = 0;
};

// A claim as it is taken: its claims row, its fleet dispatch (the slot) and its scope's count.
struct ClaimRecord {
  std::string claim_id;
  std::string reservation_id;
  std::string task_id;
  std::string worker_id;
  std::string agent_id;
  std::int64_t attempt = 0;
  std::int64_t task_revision = 0;  // the revision the claim CAS was taken against
  std::string scope_key;
  std::string failure_domain;
  std::int64_t max_slots = 1;
  double score = 0;
  double lease_expires_at = 0;
  double now = 0;
  std::string created_at;
};

struct TaskQuarantine {
  std::string task_id;
  std::string worker_id;
  std::string failure_class;
  std::int64_t failures = 0;
};

// When a worker's claims may widen by the clock alone: its circuit's cooldown or one of its task
// quarantines ends at `at` (the soonest of them).
struct ClaimWindow {
  std::string worker_id;
  double at = 0;
};

// An idempotent result: what a replay of the same key answers.
struct ResultRecord {
  std::string task_id;
  std::string idempotency_key;
  std::int64_t attempt = 0;
  std::string agent_id;
  std::string request_sha256;
  std::string response_json;
  std::string created_at;
};

struct EventRecord {
  std::int64_t event_id = 0;
  std::string event_type;
  std::string agent_id;
  std::string payload_json;
  std::string created_at;
  std::string task_id{};  // filled by events_after, which reads every task's
};

// What an owner's task listing keeps; every field left empty matches any task.
struct TaskFilter {
  std::string status;
  std::string tenant;     // the tenant's own tasks and its projects'
  std::string id_prefix;  // task ids that start with it, byte for byte
};

// How many live (QUEUED, CLAIMED, VERIFYING) tasks share a status, scope and priority.
struct LiveTaskCount {
  std::string status;
  std::string scope_key;
  std::int64_t priority = 0;
  std::int64_t count = 0;

  bool operator==(const LiveTaskCount&) const = default;
};

// A claimed task's lease, for the sweeper.
struct LeaseRecord {
  std::string task_id;
  std::string lease_expires_at;
};

// The owner's registered plan for a task.
struct PlanRecord {
  std::string task_id;
  std::string plan_sha256;
  std::string plan_json;
  std::string execution_digest;
  std::string created_at;
};

// A writer lease on a target branch, held by one claim of one task.
struct WriterLease {
  std::string writer_lease_id;
  std::string target_branch;
  std::string task_id;
  std::string claim_id;
  std::int64_t attempt = 0;
  std::string execution_digest;
  std::string agent_id;
  std::string created_at;
};

// A governed commit's receipt: PENDING before the ref moves, APPLIED after.
struct CommitReceipt {
  std::string commit_idempotency_key;
  std::string task_id;
  std::string execution_digest;
  std::string target_branch;
  std::optional<std::string> old_oid;
  std::string commit_oid;
  std::string state;
  std::int64_t attempt = 0;
  std::string created_at;
};

// One BRIDGE_ENVELOPE_RESOLVED event's identity: who saw which digest for which attempt.
struct Resolution {
  std::string task_id;
  std::string actor;
  std::int64_t attempt = 0;
  std::optional<std::string> worker_id;
  std::string execution_digest;
};

// A receipt of one applied execution rebind: what a replay of the same idempotency key answers.
struct RebindReceipt {
  std::string task_id;
  std::string idempotency_key;
  std::string request_sha256;
  std::string authorization_id;
  std::string previous_verification_sha256;
  std::string old_execution_digest;
  std::string new_execution_digest;
  std::int64_t expected_revision = 0;
  std::int64_t applied_revision = 0;
  std::int64_t attempt = 0;
  std::string reason;
  std::string created_at;

  bool operator==(const RebindReceipt&) const = default;
};

// A task as the rebind service checks it, each column as stored (nullopt for NULL). The store
// may hold the seed's own minimal schema, which has no required_capabilities_json.
struct RebindTask {
  std::string status;
  std::int64_t revision = 0;
  std::int64_t attempt = 0;
  std::optional<std::string> claimed_by;  // NULL and "" differ in the CAS predicate
  std::optional<std::string> lease_token_hash;
  std::optional<std::string> lease_expires_at;
  std::optional<std::string> verification_json;
  std::optional<std::string> metadata_json;
  std::optional<std::string> required_capabilities_json;
};

// The compare-and-swap of a rebind: where the task still is exactly as checked (status,
// revision, attempt, claimed_by, and no lease), its metadata and revision are replaced, any
// stale claimant cleared, and the columns derived from the envelope follow the new one.
struct RebindUpdate {
  std::string task_id;
  std::string expected_status;
  std::int64_t expected_revision = 0;
  std::int64_t expected_attempt = 0;
  std::optional<std::string> expected_claimed_by;
  std::string metadata_json;
  std::int64_t applied_revision = 0;
  std::string execution_digest;
  std::string action;
  std::string adapter;
  Names capability_scope;
  std::string updated_at;
};

// One transaction's operations. Valid only inside the Store::write or Store::read body it was
// handed to; a read body must call only the reading ones. Times are the store's clock
// (Store::now): ISO-8601 text where a column is text, epoch seconds where it is a number.
class Transaction {
 public:
  virtual ~Transaction() = default;

  // Runs `step` under a savepoint of this write transaction: when it throws, its writes alone
  // roll back and its error is returned (nullptr when it went through), unless the transaction
  // itself cannot go on (a deadlock, a transaction the database rolled back),
  // which propagates and fails the whole write. One item of a batch is one step.
  virtual std::exception_ptr attempt(const std::function<void(Transaction&)>& step) = 0;

  // --- tasks and their events
  virtual std::optional<TaskRow> load_task(const std::string& task_id) = 0;
  // A new task, given the next queue sequence number (from the store's counter; `row.seq` is
  // ignored). STORE_FAILURE for a task id that exists.
  virtual void insert_task(const TaskRow& row) = 0;
  // Every mutable column of `row` (its lease generation too) where the stored revision and
  // lease generation are the expected ones; false when another transition or a heartbeat got
  // there first.
  virtual bool update_task(const TaskRow& row, std::int64_t expected_revision,
                           std::int64_t expected_lease_generation) = 0;
  // The tasks `filter` keeps, in queue order (seq), at most `limit`, after `after_seq`.
  virtual std::vector<TaskRow> tasks_matching(const TaskFilter& filter, std::int64_t after_seq,
                                              std::size_t limit) = 0;
  // Calls `visit` on the QUEUED tasks with attempts left, in fleet order (legacy priority
  // first, then the scope served least: dispatch_count / scope_weight, then queue order),
  // until it returns false. Reads only the rows it visits.
  virtual void visit_queued_tasks_in_fleet_order(
      const std::function<bool(const TaskRow&)>& visit) = 0;
  // The CLAIMED tasks' leases, soonest to expire first, at most `limit`.
  virtual std::vector<LeaseRecord> claimed_leases(std::size_t limit) = 0;
  // The CLAIMED tasks whose claimant is a worker of `agent_id`, by task id.
  virtual std::vector<std::string> tasks_claimed_by_agent(const std::string& agent_id) = 0;
  virtual std::vector<std::pair<std::string, std::int64_t>> status_counts() = 0;
  // The live tasks counted by status, scope and priority, in that order.
  virtual std::vector<LiveTaskCount> live_task_counts() = 0;
  // The newest tasks (highest seq first), at most `limit`.
  virtual std::vector<TaskRow> newest_tasks(std::size_t limit) = 0;

  // The event row a transition commits with.
  virtual void append_event(const std::string& task_id, const std::string& event_type,
                            const std::string& agent_id, const nlohmann::json& payload,
                            const std::string& created_at) = 0;
  // The task's events after event id `after`, oldest first, at most `limit`.
  virtual std::vector<EventRecord> task_events(const std::string& task_id, std::int64_t after,
                                               std::size_t limit) = 0;
  // Every task's events after event id `after`, oldest first, at most `limit` (the fleet-wide
  // feed), each with its task id.
  virtual std::vector<EventRecord> events_after(std::int64_t after, std::size_t limit) = 0;
  // The newest event's id (0: none yet).
  virtual std::int64_t last_event_id() = 0;
  // Retention: the events and stored result submissions of at most `limit` terminal tasks
  // (SUCCEEDED, FAILED, CANCELLED) last updated before `before` (ISO 8601, as the rows store
  // it) that still have events, deleted; their ids. The task rows stay (their final state,
  // result and verification, and the idempotency of their creation).
  virtual std::vector<std::string> prune_terminal_tasks(const std::string& before,
                                                        std::size_t limit) = 0;
  // "ok", or what the backend's own consistency check found (SQLite's quick_check).
  virtual std::string integrity() = 0;
  // True when a BRIDGE_ENVELOPE_RESOLVED event with exactly this identity exists.
  virtual bool resolution_recorded(const Resolution& resolution) = 0;
  // Appends the BRIDGE_ENVELOPE_RESOLVED event of `resolution` (`payload`, which carries its
  // identity) unless resolution_recorded: one statement, whose answer nobody waits for.
  virtual void record_resolution(const Resolution& resolution, const nlohmann::json& payload,
                                 const std::string& created_at) = 0;
  // True when the task has an event of `event_type` whose payload is exactly `payload` (as
  // append_event stores it, canonical): an event a transition writes once.
  virtual bool event_recorded(const std::string& task_id, const std::string& event_type,
                              const nlohmann::json& payload) = 0;

  // --- agents
  virtual bool agent_exists(const std::string& agent_id) = 0;
  virtual void insert_agent(const AgentRecord& agent) = 0;
  // The unrevoked agent whose token has this SHA-256.
  virtual std::optional<AgentRecord> live_agent_by_token(const std::string& token_sha256) = 0;
  // Every agent (revoked ones too) in id order, each with its revocation time ("" while live);
  // their token_sha256 left empty: a listing never carries it.
  virtual std::vector<std::pair<AgentRecord, std::string>> agents() = 0;
  // Revokes the agent's token (a second revocation keeps the first time); the revocation time.
  virtual std::string revoke_agent(const std::string& agent_id, const std::string& now) = 0;
  // A new token, and the agent no longer revoked.
  virtual void set_agent_token(const std::string& agent_id, const std::string& token_sha256) = 0;
  // The client certificate the agent must present from now on (empty strings: none).
  virtual void set_agent_certificate(const std::string& agent_id, const std::string& uri,
                                     const std::string& sha256) = 0;

  // --- workers, their circuits and slots
  virtual std::optional<WorkerRecord> load_worker(const std::string& worker_id, double now) = 0;
  // load_worker for a claim or a poll, which read the failed tasks of the worker's domain and
  // the queue next: a backend may fetch those in the same round trip.
  virtual std::optional<WorkerRecord> load_claimant(const std::string& worker_id, double now) {
    return load_worker(worker_id, now);
  }
  virtual std::vector<WorkerRecord> load_workers(double now) = 0;
  // The agent a worker is registered to.
  virtual std::optional<std::string> worker_agent(const std::string& worker_id) = 0;
  virtual std::vector<std::string> workers_of_agent(const std::string& agent_id) = 0;
  // Inserts the worker, or replaces its declaration (not its agent, circuit or quarantine).
  virtual void register_worker(const WorkerRegistration& registration) = 0;
  virtual void configure_worker(const WorkerCapacity& capacity) = 0;
  virtual void touch_worker(const std::string& worker_id, double now) = 0;
  // The worker said it stopped (a clean shutdown): it reads stopped, not online, until it
  // registers again.
  virtual void mark_worker_stopped(const std::string& worker_id, double now) = 0;
  // One more consecutive failure; the circuit opens until `open_until` at `threshold`.
  virtual void note_worker_failure(const std::string& worker_id, double now, int threshold,
                                   double open_until) = 0;
  // The circuit closed and the failure count reset; a row already so is left unwritten (its
  // updated_at says when the circuit last changed), so a success costs no page of its own.
  virtual void note_worker_success(const std::string& worker_id, double now) = 0;

  // --- claims, dispatches, quarantines, results
  // The claims row, the dispatch, the scope's count, and one of the worker's `max_slots` slots:
  // a slot is taken only while free or held by a claim that has ended or whose lease has run
  // out, so two live claims never share one. FLEET_WORKER_CAPACITY_EXHAUSTED when every slot
  // is held.
  virtual void insert_claim(const ClaimRecord& claim) = 0;
  // The claim's lease (and so its slot) and its dispatch's reservation run until `expires_at`.
  virtual void extend_claim(const std::string& task_id, const std::string& claim_id,
                            double expires_at) = 0;
  // The ACTIVE claim ends with `status`, which frees its slot.
  virtual void end_claim(const std::string& claim_id, const std::string& status,
                         const std::string& now) = 0;
  // The task's open (RESERVED or CLAIMED) dispatch ends in `state` (end_claim frees the slot).
  virtual void end_dispatch(const std::string& task_id, const std::string& state, double now) = 0;
  // Tasks with a dispatch that failed (RELEASED or EXPIRED) in `domain`.
  virtual std::set<std::string> tasks_failed_in_domain(const std::string& domain) = 0;
  virtual std::vector<std::pair<std::string, std::int64_t>> scope_dispatch_counts() = 0;
  // True when a live task quarantine keeps `worker_id` away from `task_id`.
  virtual bool task_quarantined(const std::string& task_id, const std::string& worker_id,
                                double now) = 0;
  // Keeps `worker_id` from `task_id` until `until`, counting the failures.
  virtual void quarantine_task(const std::string& task_id, const std::string& worker_id,
                               const std::string& failure_class, double until) = 0;
  virtual std::vector<TaskQuarantine> live_task_quarantines(double now) = 0;
  // Every circuit cooldown and task quarantine that ends after `since` (a worker may have
  // several), by worker and end.
  virtual std::vector<ClaimWindow> claim_windows(double since) = 0;
  virtual std::optional<ResultRecord> load_result(const std::string& task_id,
                                                  const std::string& idempotency_key) = 0;
  virtual void insert_result(const ResultRecord& result) = 0;

  // --- the Bridge: plans, writer leases, commit receipts
  virtual std::optional<PlanRecord> load_plan(const std::string& task_id) = 0;
  virtual void insert_plan(const PlanRecord& plan) = 0;
  // At most `limit` plans of tasks whose ids sort after `after_task_id` ("" for the first), in
  // task id order.
  virtual std::vector<PlanRecord> plans_after(const std::string& after_task_id,
                                              std::size_t limit) = 0;
  // The open writer leases of `branch`.
  virtual std::vector<WriterLease> open_writer_leases(const std::string& branch) = 0;
  // True when `writer_lease_id` is open and was taken by `claim_id` of `task_id`.
  virtual bool writer_lease_open(const std::string& writer_lease_id, const std::string& task_id,
                                 const std::string& claim_id) = 0;
  virtual void end_writer_lease(const std::string& writer_lease_id, const std::string& now) = 0;
  // A new open writer lease. WRITER_LEASE_BRANCH_BUSY when the branch has an open one.
  virtual void insert_writer_lease(const WriterLease& lease) = 0;
  virtual std::optional<CommitReceipt> load_commit_receipt(const std::string& key) = 0;
  virtual void insert_commit_receipt(const CommitReceipt& receipt) = 0;
  virtual void mark_commit_applied(const std::string& key, const std::string& now) = 0;
  virtual void drop_commit_receipt(const std::string& key) = 0;

  // --- rebinds
  // The task's rebind view; nullopt when there is no such task. Throws
  // TASK_SCHEMA_EXECUTION_REBIND_UNSUPPORTED when the store's tasks lack a column every task
  // plane has, then TASK_METADATA_SCHEMA_UNSUPPORTED when they lack metadata_json, whether or
  // not the task exists.
  virtual std::optional<RebindTask> load_rebind_task(const std::string& task_id) = 0;
  virtual std::optional<RebindReceipt> rebind_receipt(const std::string& task_id,
                                                      const std::string& idempotency_key) = 0;
  // False when the task is no longer as `update` expects. Throws TASK_EVENT_TABLE_UNSUPPORTED
  // or TASK_EVENT_PAYLOAD_UNSUPPORTED, with nothing written, when the store could not take the
  // rebind's event row.
  virtual bool apply_rebind(const RebindUpdate& update) = 0;
  virtual void insert_rebind_receipt(const RebindReceipt& receipt) = 0;
};

// A task store backend. Thread-safe.
// The lead in work that must have one owner among the processes sharing a store (the Bridge's
// governed commits). Not a fence: every write stays fenced by its own lease and CAS, so two
// processes that both believe they lead for a moment stay correct; the lead only keeps the work
// in one place.
class Leadership {
 public:
  virtual ~Leadership() = default;
  // Takes the lead when it is free, or checks that it is still held: true while this process
  // leads. Called periodically; never throws (a lost store is a lost lead).
  virtual bool refresh() = 0;
};

// Held while another process's announcements are listened to; destroying it stops listening.
class Subscription {
 public:
  virtual ~Subscription() = default;
};

// The connections of a store's pool, for /metrics.
struct PoolUse {
  std::size_t busy = 0;         // lent to a transaction
  std::size_t idle = 0;         // open and waiting
  std::size_t limit = 0;        // at most this many open; 0: the backend keeps no pool of its own
  std::uint64_t conflicts = 0;  // write transactions run again (a deadlock, a lost insert race)
};

class Store {
 public:
  virtual ~Store() = default;

  // "sqlite" or "postgresql", for /health and /metrics.
  virtual std::string_view backend() const = 0;
  // See Leadership. SQLite, whose one scheduler is alone on its host, always leads.
  virtual std::unique_ptr<Leadership> leadership() = 0;
  // Wake-ups across processes: announce_queue_change() after a commit that can make a task
  // claimable (best effort: it never throws); `heard` runs, on a thread of the subscription's
  // own, when another process announced one and when the subscription (re)connects (what was
  // announced while nobody listened). PostgreSQL: NOTIFY / LISTEN. SQLite: a file beside the
  // database touched and watched with inotify; a store that listens does not announce to
  // itself (its one scheduler wakes its own waiters). The base: neither.
  virtual PoolUse pool_use() { return {}; }
  virtual void announce_queue_change() {}
  virtual std::unique_ptr<Subscription> listen_queue_changes(std::function<void()> heard) {
    (void)heard;
    return nullptr;
  }

  // Runs `body` in one write transaction and returns once it is durable. A backend may run
  // `body` again when its transaction lost a race to another writer (a deadlock), so a
  // body does store calls and pure computation only (no I/O, nothing it cannot repeat). An
  // exception from `body` rolls back all of its writes and propagates. STORE_BUSY,
  // STORE_FULL or STORE_FAILURE when the backend fails.
  virtual void write(const std::function<void(Transaction&)>& body) = 0;
  // `body`, then `then` in the same write transaction, durable together: two steps where the
  // second may fail alone. When `then` throws, its writes alone roll back, `body`'s commit and
  // its error is returned (nullptr when both committed); when `body` throws, `then` does not
  // run, nothing commits and the error propagates. Both may be re-run as write's body may.
  std::exception_ptr write_then(const std::function<void(Transaction&)>& body,
                                const std::function<void(Transaction&)>& then);
  // Runs `body` against one consistent snapshot. A cursor read (events_after,
  // tasks_with_status, task_events, last_event_id) on a backend whose ids commit out of order
  // may first wait for the writers in flight and move the body on to a later snapshot, so a
  // page never skips a row that commits late.
  virtual void read(const std::function<void(Transaction&)>& body) = 0;

  // The store's clock: every time a transition records and every lease is judged by it, so
  // processes sharing a store agree (the injected clock for SQLite, whose processes share a
  // host; the database server's for a networked backend).
  virtual TimePoint now() const = 0;

  // Makes the store ready to keep rebind receipts (the seed's own database has no table for
  // them). Idempotent.
  virtual void prepare_rebinds() = 0;

  // The schema version after migrations.
  virtual int schema_version() = 0;
};

struct SqliteOptions {
  std::filesystem::path path;
  std::chrono::milliseconds busy_timeout{30000};
  std::size_t connections = 4;
  bool migrate = true;  // false for a process that must not change the schema
};

// The SQLite task store at `options.path` on `clock` (which must outlive it). STORE_UNAVAILABLE
// when the file cannot be opened, STORE_DURABILITY_UNAVAILABLE without WAL and
// synchronous=FULL.
std::unique_ptr<Store> open_sqlite_store(SqliteOptions options, const Clock& clock);

struct PostgresOptions {
  // A libpq connection URI (postgresql://host:port/db?sslmode=…) or keyword string; it must not
  // hold a password (STORE_URL_PASSWORD_REFUSED): that comes from `password_file` or libpq's
  // own passfile.
  std::string url;
  std::filesystem::path
      password_file{};  // optional: a file (a systemd credential) with the password
  std::size_t connections = 4;
  bool migrate = true;  // false for a process that must not change the schema
  // Lease time is the database server's clock, read off it when a transaction begins and at most
  // every few seconds, so every replica judges leases alike. False: the injected clock (tests).
  bool database_clock = true;
};

// The PostgreSQL task store. Writes run at READ COMMITTED under row locks, re-run after a
// deadlock or a lost insert race (STORE_BUSY when they keep losing); reads at REPEATABLE READ.
// STORE_UNAVAILABLE when the server cannot be reached, STORE_DURABILITY_UNAVAILABLE when it runs
// with fsync off.
std::unique_ptr<Store> open_postgres_store(PostgresOptions options, const Clock& clock);

// Where a daemon's --db points: a path or sqlite:///path for SQLite, postgresql://… or
// postgres://… for PostgreSQL.
struct StoreLocation {
  std::string url;
  std::size_t connections = 4;
  bool migrate = true;
  // The PostgreSQL password's file; empty: $CREDENTIALS_DIRECTORY/aios-task-db-password when
  // systemd passed that credential, else libpq's own passfile.
  std::filesystem::path password_file{};
};

// The store `location` names. STORE_URL_INVALID for a scheme neither backend takes.
std::unique_ptr<Store> open_store(const StoreLocation& location, const Clock& clock);

// One table of a migration: its rows and the SHA-256 of their values in key order (the same
// figure read from the snapshot and from the copy), and whether the live source's rows differed
// from the snapshot's when the copy had committed (what changed meanwhile was not copied).
struct MigratedTable {
  std::string table;
  std::int64_t rows = 0;
  std::string sha256;
  bool changed_after_snapshot = false;
};

struct MigrationReport {
  std::vector<MigratedTable> tables;
  bool changed_after_snapshot() const;
};

// aios-store migrate: copies the SQLite store at `source` into the empty PostgreSQL store at
// `target` from a consistent snapshot (SQLite's online backup, taken into a temporary file under
// `snapshot_dir`, by default the source's directory, and removed after; the scheduler may keep
// running), in one transaction that
// commits only when every table's row count and digest read back from PostgreSQL equal the
// snapshot's. Refused, with nothing written: a target that already holds rows
// (STORE_MIGRATION_TARGET_NOT_EMPTY), tables or columns that differ between the two schemas or a
// value of a kind the other backend does not hold (STORE_MIGRATION_SCHEMA_MISMATCH), a copy that
// does not read back equal (STORE_MIGRATION_MISMATCH).
MigrationReport migrate_sqlite_to_postgres(const StoreLocation& source, const StoreLocation& target,
                                           std::filesystem::path snapshot_dir = {});

// The durable record of where a worker's execution of a task is. One row per task; every
// phase change is one fsync'd commit. The lease token is kept so a restart can heartbeat the
// same attempt.
struct Checkpoint {
  std::string task_id;
  std::string execution_digest;
  std::int64_t attempt = 0;
  std::string lease_token;
  std::string phase;
  nlohmann::json state = nlohmann::json::object();
};

// The worker's local checkpoint store. STORE_FAILURE for a damaged row.
class CheckpointStore {
 public:
  virtual ~CheckpointStore() = default;
  virtual std::optional<Checkpoint> load(const std::string& task_id) = 0;
  virtual std::vector<Checkpoint> all() = 0;
  virtual void save(const Checkpoint& checkpoint) = 0;
  virtual void remove(const std::string& task_id) = 0;
};

// The checkpoints in the SQLite file at `path`, stamped by `clock` (which must outlive it).
std::unique_ptr<CheckpointStore> open_sqlite_checkpoints(const std::filesystem::path& path,
                                                         const Clock& clock);

}  // namespace aios::store
