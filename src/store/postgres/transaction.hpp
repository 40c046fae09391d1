#pragma once
// The PostgreSQL backend's store::Transaction: the seam's operations on the connection a
// write or read of PostgresStore runs a body on, inside its BEGIN … COMMIT.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "aios/store.hpp"
#include "store/postgres/connection.hpp"

namespace aios::store {

namespace pg {

// The queue's groups (priority, scope, weight) with each scope's dispatches, in one statement:
// a loose index scan of tasks_by_status_scope, each step one seek past the group before.
inline constexpr const char* kQueuedGroups =
    "WITH RECURSIVE g(priority, scope_key, scope_weight) AS ("
    " (SELECT priority, scope_key, scope_weight FROM tasks WHERE status='QUEUED' "
    "  AND priority IS NOT NULL ORDER BY priority, scope_key, scope_weight LIMIT 1)"
    " UNION ALL"
    " SELECT n.priority, n.scope_key, n.scope_weight FROM g CROSS JOIN LATERAL"
    " (SELECT priority, scope_key, scope_weight FROM tasks WHERE status='QUEUED' AND "
    "  (priority, scope_key, scope_weight) > (g.priority, g.scope_key, g.scope_weight) "
    "  ORDER BY priority, scope_key, scope_weight LIMIT 1) n) "
    "SELECT g.priority, g.scope_key, g.scope_weight, COALESCE((SELECT c.dispatch_count FROM "
    "fleet_scope_counts c WHERE c.scope_key=g.scope_key), 0) FROM g";

}  // namespace pg

class PgTransaction final : public Transaction {
 public:
  // A read sees one snapshot, as a read of the SQLite backend does: a body that reads a receipt
  // and then the task it belongs to never sees the one without the other. Only a cursor page
  // whose snapshot had writers in flight moves the read on to a new one (settled_page).
  static constexpr const char* kBeginRead = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

  PgTransaction(pg::Connection& db, bool writing) : db_(db), writing_(writing) {}

  // The connection the transaction runs on, for the store's own statements (savepoints, DDL).
  pg::Connection& connection() { return db_; }
  // Row locks taken inside a step that was rolled back are gone.
  void forget_locks() {
    locked_tasks_.clear();
    locked_workers_.clear();
    envelopes_.clear();
    fetched_.reset();
    forget_ahead();
  }

  std::exception_ptr attempt(const std::function<void(Transaction&)>& step) override;

  std::optional<TaskRow> load_task(const std::string& task_id) override;
  void insert_task(const TaskRow& row) override;
  bool update_task(const TaskRow& row, std::int64_t expected_revision,
                   std::int64_t expected_lease_generation) override;
  std::vector<TaskRow> tasks_matching(const TaskFilter& filter, std::int64_t after_seq,
                                      std::size_t limit) override;
  void visit_queued_tasks_in_fleet_order(const std::function<bool(const TaskRow&)>& visit) override;
  std::vector<LeaseRecord> claimed_leases(std::size_t limit) override;
  std::vector<std::string> tasks_claimed_by_agent(const std::string& agent_id) override;
  std::vector<std::pair<std::string, std::int64_t>> status_counts() override;
  std::vector<LiveTaskCount> live_task_counts() override;
  std::vector<TaskRow> newest_tasks(std::size_t limit) override;
  void append_event(const std::string& task_id, const std::string& event_type,
                    const std::string& agent_id, const nlohmann::json& payload,
                    const std::string& created_at) override;
  std::vector<EventRecord> events_after(std::int64_t after, std::size_t limit) override;
  std::int64_t last_event_id() override;
  std::vector<std::string> prune_terminal_tasks(const std::string& before,
                                                std::size_t limit) override;
  std::string integrity() override;
  std::vector<EventRecord> task_events(const std::string& task_id, std::int64_t after,
                                       std::size_t limit) override;
  bool resolution_recorded(const Resolution& resolution) override;
  void record_resolution(const Resolution& resolution, const nlohmann::json& payload,
                         const std::string& created_at) override;
  bool event_recorded(const std::string& task_id, const std::string& event_type,
                      const nlohmann::json& payload) override;
  bool agent_exists(const std::string& agent_id) override;
  void insert_agent(const AgentRecord& agent) override;
  std::optional<AgentRecord> live_agent_by_token(const std::string& token_sha256) override;
  std::vector<std::pair<AgentRecord, std::string>> agents() override;
  void set_agent_certificate(const std::string& agent_id, const std::string& uri,
                             const std::string& sha256) override;
  std::string revoke_agent(const std::string& agent_id, const std::string& now) override;
  void set_agent_token(const std::string& agent_id, const std::string& token_sha256) override;
  std::optional<WorkerRecord> load_worker(const std::string& worker_id, double now) override;
  std::optional<WorkerRecord> load_claimant(const std::string& worker_id, double now) override;
  std::vector<WorkerRecord> load_workers(double now) override;
  std::optional<std::string> worker_agent(const std::string& worker_id) override;
  std::vector<std::string> workers_of_agent(const std::string& agent_id) override;
  void register_worker(const WorkerRegistration& registration) override;
  void configure_worker(const WorkerCapacity& capacity) override;
  void touch_worker(const std::string& worker_id, double now) override;
  void mark_worker_stopped(const std::string& worker_id, double now) override;
  void note_worker_failure(const std::string& worker_id, double now, int threshold,
                           double open_until) override;
  void note_worker_success(const std::string& worker_id, double now) override;
  void insert_claim(const ClaimRecord& claim) override;
  void extend_claim(const std::string& task_id, const std::string& claim_id,
                    double expires_at) override;
  void end_claim(const std::string& claim_id, const std::string& status,
                 const std::string& now) override;
  void end_dispatch(const std::string& task_id, const std::string& state, double now) override;
  std::set<std::string> tasks_failed_in_domain(const std::string& domain) override;
  std::vector<std::pair<std::string, std::int64_t>> scope_dispatch_counts() override;
  bool task_quarantined(const std::string& task_id, const std::string& worker_id,
                        double now) override;
  void quarantine_task(const std::string& task_id, const std::string& worker_id,
                       const std::string& failure_class, double until) override;
  std::vector<TaskQuarantine> live_task_quarantines(double now) override;
  std::vector<ClaimWindow> claim_windows(double since) override;
  std::optional<ResultRecord> load_result(const std::string& task_id,
                                          const std::string& idempotency_key) override;
  void insert_result(const ResultRecord& result) override;
  std::optional<PlanRecord> load_plan(const std::string& task_id) override;
  void insert_plan(const PlanRecord& plan) override;
  std::vector<PlanRecord> plans_after(const std::string& after_task_id, std::size_t limit) override;
  std::vector<WriterLease> open_writer_leases(const std::string& branch) override;
  bool writer_lease_open(const std::string& writer_lease_id, const std::string& task_id,
                         const std::string& claim_id) override;
  void end_writer_lease(const std::string& writer_lease_id, const std::string& now) override;
  void insert_writer_lease(const WriterLease& lease) override;
  std::optional<CommitReceipt> load_commit_receipt(const std::string& key) override;
  void insert_commit_receipt(const CommitReceipt& receipt) override;
  void mark_commit_applied(const std::string& key, const std::string& now) override;
  void drop_commit_receipt(const std::string& key) override;
  std::optional<RebindTask> load_rebind_task(const std::string& task_id) override;
  std::optional<RebindReceipt> rebind_receipt(const std::string& task_id,
                                              const std::string& idempotency_key) override;
  bool apply_rebind(const RebindUpdate& update) override;
  void insert_rebind_receipt(const RebindReceipt& receipt) override;

 private:
  // In a write transaction, a task's row is locked before anything of the task is read (its
  // result receipts, its rebind receipts): a transition of the same task running at once waits
  // for this one and then sees what it wrote, as a serial order would have it.
  void lock_task(const std::string& task_id);
  // Before a statement draws an id from a sequence (a task's seq, an event's id): the
  // transaction's own id first, so a cursor reader whose snapshot shows it in flight knows to
  // wait for it (settled_page). A transaction that locked a row has one already.
  void take_transaction_id();
  // lock_task for a result's receipt lookup: in a write that has not locked the task yet, the
  // task's row (locked) and its claimant's agent are sent to be read in the lookup's round trip
  // (true; keep_fetched then keeps them for load_task and worker_agent).
  bool fetch_ahead(const std::string& task_id);
  void keep_fetched(const std::string& task_id);
  // In a write transaction, a worker is locked before its slots are counted or taken.
  void lock_worker(const std::string& worker_id);
  // load_worker and load_claimant: the worker's row, and for a claimant what it reads next.
  std::optional<WorkerRecord> load_worker_row(const std::string& worker_id, double now,
                                              bool claimant);
  // The rows of a cursor read (`page_sql`, ordered by its `id_column`, the `id_index`-th column)
  // that no transaction in flight can still commit a row under; see tasks.cpp.
  pg::Rows settled_page(const std::string& page_sql, std::string_view id_column, int id_index,
                        const pg::Params& params);
  // Waits until the transactions of this database in flight under `snapshot`
  // (pg_current_snapshot()) have ended; false when the snapshot had none in flight at all. A
  // read then goes on in a new snapshot, which sees what they committed.
  bool wait_out(const std::string& snapshot);

  pg::Connection& db_;
  bool writing_;  // a write transaction: the claim path locks the rows it visits
  // The tasks this transaction holds locked, with the fences (revision, lease generation) their
  // rows hold now when it read or wrote them: an update fenced on exactly those cannot miss, so
  // it is sent without waiting for its count. Empty fences: locked, not read.
  struct Fences {
    std::int64_t revision;
    std::int64_t lease_generation;
    bool operator==(const Fences&) const = default;
  };
  std::map<std::string, std::optional<Fences>> locked_tasks_;
  // The envelope (metadata_json and the execution columns kept from it) of each task row held,
  // as read or written: an update that leaves it as it is does not write it again, so the
  // server keeps the out-of-line value it has (migration 14) instead of writing a new copy.
  struct Envelope {
    std::string metadata_json;
    std::string execution_digest;
    std::string action;
    std::string adapter;
    std::optional<Names> capability_scope;
    bool operator==(const Envelope&) const = default;
  };
  static Envelope envelope_of(const TaskRow& row) {
    return {row.metadata_json, row.execution_digest, row.action, row.adapter, row.capability_scope};
  }
  std::map<std::string, Envelope> envelopes_;
  void hold(const TaskRow& row) {
    locked_tasks_[row.task_id] = Fences{row.revision, row.lease_generation};
    envelopes_[row.task_id] = envelope_of(row);
    has_transaction_id_ = true;  // the row's lock took it
  }
  bool has_transaction_id_ = false;
  std::set<std::string> locked_workers_;
  // What a result's receipt lookup fetched in its round trip for the step that follows it (the
  // task's row, locked; its claimant and the claimant's agent): load_task and worker_agent take
  // it instead of a round trip each. Any write of a task row drops it.
  struct Fetched {
    std::string task_id;
    std::optional<TaskRow> row;
    std::string claimant;
    std::optional<std::string> claimant_agent;
  };
  std::optional<Fetched> fetched_;
  // What a claim or a poll reads next, fetched with what it read first: the queue's groups with
  // the domain's failed tasks, and with each queued row its plan and whether the worker this
  // transaction loaded (ahead_worker_, at ahead_now_) has it quarantined. Each write of
  // what they show drops them.
  std::optional<pg::Rows> groups_ahead_;
  std::optional<std::pair<std::string, std::set<std::string>>> failed_ahead_;  // domain, tasks
  std::map<std::string, std::optional<PlanRecord>> plans_ahead_;
  std::map<std::string, bool> quarantined_ahead_;
  std::string ahead_worker_;
  double ahead_now_ = 0;
  void forget_ahead() {
    groups_ahead_.reset();
    failed_ahead_.reset();
    plans_ahead_.clear();
    quarantined_ahead_.clear();
  }
};

}  // namespace aios::store
