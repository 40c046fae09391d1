// The worker's checkpoint store in its own SQLite file.
#include <SQLiteCpp/SQLiteCpp.h>

#include "aios/canonical.hpp"
#include "aios/error.hpp"
#include "store/sqlite/database.hpp"

namespace aios::store {
namespace {

constexpr const char* kCheckpointColumns =
    "SELECT task_id, execution_digest, attempt, lease_token, phase, state_json FROM "
    "worker_checkpoints";

// A row whose state is not a JSON object (a damaged file) is a store failure with a code, not
// a parser exception that would take the worker down without one (found by fuzzing).
Checkpoint checkpoint_of(SQLite::Statement& query) {
  auto state = parse_json(query.getColumn(5).getString());
  // Claimed rows of earlier builds stored an empty state as null.
  if (state.is_null()) state = nlohmann::json::object();
  if (!state.is_object()) {
    throw Error(ErrorCode::STORE_FAILURE, "a worker checkpoint's state_json is not a JSON object");
  }
  return {query.getColumn(0).getString(), query.getColumn(1).getString(),
          query.getColumn(2).getInt64(),  query.getColumn(3).getString(),
          query.getColumn(4).getString(), std::move(state)};
}

class SqliteCheckpoints final : public CheckpointStore {
 public:
  SqliteCheckpoints(const std::filesystem::path& path, const Clock& clock)
      : db_(SqliteOptions{.path = path, .connections = 1, .migrate = false}), clock_(clock) {
    db_.write([](SQLite::Database& db) {
      db.exec(
          "CREATE TABLE IF NOT EXISTS worker_checkpoints(task_id TEXT PRIMARY KEY, "
          "execution_digest TEXT NOT NULL, attempt INTEGER NOT NULL, lease_token TEXT NOT NULL, "
          "phase TEXT NOT NULL, state_json TEXT NOT NULL, updated_at TEXT NOT NULL)");
    });
  }

  std::optional<Checkpoint> load(const std::string& task_id) override {
    std::optional<Checkpoint> found;
    db_.read([&](SQLite::Database& db) {
      Prepared query(db, std::string(kCheckpointColumns) + " WHERE task_id=?");
      query->bind(1, task_id);
      if (query->executeStep()) found = checkpoint_of(*query);
    });
    return found;
  }

  std::vector<Checkpoint> all() override {
    std::vector<Checkpoint> found;
    db_.read([&](SQLite::Database& db) {
      Prepared query(db, std::string(kCheckpointColumns) + " ORDER BY task_id");
      while (query->executeStep()) found.push_back(checkpoint_of(*query));
    });
    return found;
  }

  void save(const Checkpoint& checkpoint) override {
    db_.write([&](SQLite::Database& db) {
      Prepared upsert(db,
                      "INSERT OR REPLACE INTO worker_checkpoints(task_id,execution_digest,"
                      "attempt,lease_token,phase,state_json,updated_at) "
                      "VALUES (?,?,?,?,?,?,?)");
      upsert->bind(1, checkpoint.task_id);
      upsert->bind(2, checkpoint.execution_digest);
      upsert->bind(3, checkpoint.attempt);
      upsert->bind(4, checkpoint.lease_token);
      upsert->bind(5, checkpoint.phase);
      upsert->bind(6, canonical_json(checkpoint.state));
      upsert->bind(7, format_iso8601(clock_.now()));
      upsert->exec();
    });
  }

  void remove(const std::string& task_id) override {
    db_.write([&](SQLite::Database& db) {
      Prepared drop(db, "DELETE FROM worker_checkpoints WHERE task_id=?");
      drop->bind(1, task_id);
      drop->exec();
    });
  }

 private:
  Database db_;
  const Clock& clock_;
};

}  // namespace

std::unique_ptr<CheckpointStore> open_sqlite_checkpoints(const std::filesystem::path& path,
                                                         const Clock& clock) {
  return std::make_unique<SqliteCheckpoints>(path, clock);
}

}  // namespace aios::store
