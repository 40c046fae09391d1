// The worker's peers, its checkpoint store and its heartbeat thread.
#include <SQLiteCpp/SQLiteCpp.h>

#include <csignal>

#include "aios/canonical.hpp"
#include "aios/http.hpp"
#include "aios/log.hpp"
#include "worker/internal.hpp"

namespace aios::worker {

std::pair<int, nlohmann::json> JsonService::call(std::string_view method, const std::string& path,
                                                 const nlohmann::json* body) const {
  const auto response = http::request(method, base_url_ + path, token_,
                                      body != nullptr ? body->dump() : std::string(), timeout_);
  auto value = parse_json(response.body);
  if (value.is_discarded() || !value.is_object()) {
    throw Error(ErrorCode::HTTP_UPSTREAM_RESPONSE_INVALID, path);
  }
  return {response.status, std::move(value)};
}

nlohmann::json JsonService::require(std::string_view method, const std::string& path,
                                    const nlohmann::json* body) const {
  auto [status, value] = call(method, path, body);
  if (status < 200 || status >= 300) {
    throw Error::remote(value.value("error", std::string("HTTP_UPSTREAM_RESPONSE_INVALID")),
                        status);
  }
  return value;
}

CheckpointStore::CheckpointStore(const std::filesystem::path& path, std::string kill_after_phase)
    : db_(DatabaseOptions{.path = path, .connections = 1, .migrate = false}),
      kill_after_phase_(std::move(kill_after_phase)) {
  db_.write([](SQLite::Database& db) {
    db.exec(
        "CREATE TABLE IF NOT EXISTS worker_checkpoints(task_id TEXT PRIMARY KEY, "
        "execution_digest TEXT NOT NULL, attempt INTEGER NOT NULL, lease_token TEXT NOT NULL, "
        "phase TEXT NOT NULL, state_json TEXT NOT NULL, updated_at TEXT NOT NULL)");
  });
}

namespace {

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

constexpr const char* kColumns =
    "SELECT task_id, execution_digest, attempt, lease_token, phase, state_json FROM "
    "worker_checkpoints";

}  // namespace

std::optional<Checkpoint> CheckpointStore::load(const std::string& task_id) {
  std::optional<Checkpoint> found;
  db_.read([&](SQLite::Database& db) {
    SQLite::Statement query(db, std::string(kColumns) + " WHERE task_id=?");
    query.bind(1, task_id);
    if (query.executeStep()) found = checkpoint_of(query);
  });
  return found;
}

std::vector<Checkpoint> CheckpointStore::all() {
  std::vector<Checkpoint> found;
  db_.read([&](SQLite::Database& db) {
    SQLite::Statement query(db, std::string(kColumns) + " ORDER BY task_id");
    while (query.executeStep()) found.push_back(checkpoint_of(query));
  });
  return found;
}

void CheckpointStore::save(const Checkpoint& checkpoint) {
  db_.write([&](SQLite::Database& db) {
    SQLite::Statement upsert(db,
                             "INSERT OR REPLACE INTO worker_checkpoints(task_id,execution_digest,"
                             "attempt,lease_token,phase,state_json,updated_at) "
                             "VALUES (?,?,?,?,?,?,?)");
    upsert.bind(1, checkpoint.task_id);
    upsert.bind(2, checkpoint.execution_digest);
    upsert.bind(3, checkpoint.attempt);
    upsert.bind(4, checkpoint.lease_token);
    upsert.bind(5, checkpoint.phase);
    upsert.bind(6, canonical_json(checkpoint.state));
    upsert.bind(7, format_iso8601(SystemClock().now()));
    upsert.exec();
  });
  log::info("TASK_CHECKPOINT", {{"task_id", checkpoint.task_id},
                                {"phase", checkpoint.phase},
                                {"attempt", checkpoint.attempt}});
  if (!kill_after_phase_.empty() && checkpoint.phase == kill_after_phase_) {
    log::warn("FAULT_INJECTED_KILL",
              {{"task_id", checkpoint.task_id}, {"phase", checkpoint.phase}});
    std::raise(SIGKILL);
  }
}

void CheckpointStore::remove(const std::string& task_id) {
  db_.write([&](SQLite::Database& db) {
    SQLite::Statement drop(db, "DELETE FROM worker_checkpoints WHERE task_id=?");
    drop.bind(1, task_id);
    drop.exec();
  });
}

Heartbeat::Heartbeat(const JsonService& api, std::string task_id, std::string lease_token,
                     std::chrono::milliseconds interval)
    : api_(api),
      task_id_(std::move(task_id)),
      lease_token_(std::move(lease_token)),
      interval_(interval),
      last_alive_(std::chrono::steady_clock::now()),
      ticker_(interval, [this] { beat(); }) {}

void Heartbeat::alive(const std::string& stage) {
  const std::lock_guard lock(mutex_);
  last_alive_ = std::chrono::steady_clock::now();
  stage_ = stage;
}

void Heartbeat::beat() {
  nlohmann::json body;
  {
    const std::lock_guard lock(mutex_);
    // A work loop silent for two intervals is stalled: let the lease run out.
    if (std::chrono::steady_clock::now() - last_alive_ > 2 * interval_) return;
    body = {{"lease_token", lease_token_}, {"stage", stage_}};
  }
  try {
    const auto [status, reply] = api_.call("POST", "/v1/tasks/" + task_id_ + "/heartbeat", &body);
    if (status == 409 || status == 404) {
      lost_ = true;
      log::warn("TASK_LEASE_LOST", {{"task_id", task_id_}, {"error", reply.value("error", "")}});
    }
  } catch (const Error& error) {
    log::warn("HEARTBEAT_FAILED", {{"task_id", task_id_}, {"error", error.code()}});
  }
}

}  // namespace aios::worker
