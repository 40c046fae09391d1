// The SQLite backend of store::Store. SQLite serialises writers (BEGIN IMMEDIATE), so a write
// body never loses a serialisation conflict and runs exactly once.
#include "aios/store.hpp"

#include <SQLiteCpp/SQLiteCpp.h>

#include "store/sqlite/schema.sql.hpp"
#include "store/sqlite/transaction.hpp"

namespace aios::store {

SqliteStore::SqliteStore(Database& db, const Clock& clock) : db_(db), clock_(clock) {}

void SqliteStore::write(const std::function<void(Transaction&)>& body) {
  db_.write([&](SQLite::Database& connection) {
    SqliteTransaction transaction(connection);
    body(transaction);
  });
}

void SqliteStore::read(const std::function<void(Transaction&)>& body) {
  db_.read([&](SQLite::Database& connection) {
    SqliteTransaction transaction(connection);
    body(transaction);
  });
}

TimePoint SqliteStore::now() const {
  return clock_.now();
}

void SqliteStore::prepare_rebinds() {
  db_.write(
      [](SQLite::Database& connection) { connection.exec(std::string(kCreateRebindReceipts)); });
}

std::optional<TaskRow> SqliteTransaction::load_task(const std::string& task_id) {
  return store::load_task(db_, task_id);
}

void SqliteTransaction::insert_task(const TaskRow& row) {
  store::insert_task(db_, row);
}

bool SqliteTransaction::update_task(const TaskRow& row, std::int64_t expected_revision) {
  return store::update_task(db_, row, expected_revision);
}

void SqliteTransaction::append_event(const std::string& task_id, const std::string& event_type,
                                     const std::string& agent_id, const nlohmann::json& payload,
                                     const std::string& created_at) {
  store::append_event(db_, task_id, event_type, agent_id, payload, created_at);
}

}  // namespace aios::store
