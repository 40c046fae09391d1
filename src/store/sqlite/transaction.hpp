#pragma once
// The SQLite backend's store::Transaction: the seam's operations on the connection that
// Database::write or Database::read runs a body on.

#include <string>

#include "aios/store.hpp"

namespace SQLite {
class Database;
}

namespace aios::store {

class SqliteTransaction final : public Transaction {
 public:
  explicit SqliteTransaction(SQLite::Database& db) : db_(db) {}

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
  SQLite::Database& db_;
};

}  // namespace aios::store
