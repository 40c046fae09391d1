#pragma once
// The SQLite backend's store::Transaction: the seam's operations on the connection that
// Database::write or Database::read runs a body on.

#include <string>

#include "aios/store.hpp"

namespace aios::store {

class SqliteTransaction final : public Transaction {
 public:
  explicit SqliteTransaction(SQLite::Database& db) : db_(db) {}

  std::optional<TaskRow> load_task(const std::string& task_id) override;
  void insert_task(const TaskRow& row) override;
  bool update_task(const TaskRow& row, std::int64_t expected_revision) override;

  void append_event(const std::string& task_id, const std::string& event_type,
                    const std::string& agent_id, const nlohmann::json& payload,
                    const std::string& created_at) override;

  std::optional<RebindTask> load_rebind_task(const std::string& task_id) override;
  std::optional<RebindReceipt> rebind_receipt(const std::string& task_id,
                                              const std::string& idempotency_key) override;
  bool apply_rebind(const RebindUpdate& update) override;
  void insert_rebind_receipt(const RebindReceipt& receipt) override;

 private:
  SQLite::Database& db_;
};

}  // namespace aios::store
