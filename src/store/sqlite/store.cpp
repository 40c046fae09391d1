// The SQLite backend of store::Store. SQLite serialises writers (BEGIN IMMEDIATE), so a write
// body never loses a serialisation conflict and runs exactly once.
#include <SQLiteCpp/SQLiteCpp.h>

#include <atomic>
#include <memory>

#include "aios/canonical.hpp"
#include "store/queries.hpp"
#include "store/sqlite/announce.hpp"
#include "store/sqlite/database.hpp"
#include "store/sqlite/schema.sql.hpp"
#include "store/sqlite/transaction.hpp"

namespace aios::store {

namespace {

// The rows of a SELECT of event_id, event_type, agent_id, payload_json, created_at, task_id.
std::vector<EventRecord> event_rows(SQLite::Statement& query) {
  const auto text = [](const SQLite::Column& column) {
    return column.isNull() ? std::string() : column.getString();
  };
  std::vector<EventRecord> events;
  while (query.executeStep()) {
    events.push_back({query.getColumn(0).getInt64(), text(query.getColumn(1)),
                      text(query.getColumn(2)), text(query.getColumn(3)), text(query.getColumn(4)),
                      text(query.getColumn(5))});
  }
  return events;
}

}  // namespace

SqliteStore::SqliteStore(Database& db, const Clock& clock) : db_(db), clock_(clock) {}

namespace {

// `body` on a connection of the Database, through the Transaction over it.
std::function<void(SQLite::Database&)> on_connection(
    const std::function<void(Transaction&)>& body) {
  return [&body](SQLite::Database& connection) {
    SqliteTransaction transaction(connection);
    body(transaction);
  };
}

}  // namespace

void SqliteStore::write(const std::function<void(Transaction&)>& body) {
  db_.write(on_connection(body));
}

void SqliteStore::read(const std::function<void(Transaction&)>& body) {
  db_.read(on_connection(body));
}

TimePoint SqliteStore::now() const {
  return clock_.now();
}

int SqliteStore::schema_version() {
  return db_.schema_version();
}

namespace {

class AlwaysLeads final : public Leadership {
 public:
  bool refresh() override { return true; }
};

}  // namespace

std::unique_ptr<Leadership> SqliteStore::leadership() {
  return std::make_unique<AlwaysLeads>();
}

namespace {

// What open_sqlite_store hands out: the store with the Database it runs on.
class OwningSqliteStore final : public Store {
 public:
  OwningSqliteStore(SqliteOptions options, const Clock& clock)
      : db_(std::move(options)), store_(db_, clock) {}

  void write(const std::function<void(Transaction&)>& body) override { store_.write(body); }
  void read(const std::function<void(Transaction&)>& body) override { store_.read(body); }
  TimePoint now() const override { return store_.now(); }
  void prepare_rebinds() override { store_.prepare_rebinds(); }
  int schema_version() override { return store_.schema_version(); }
  std::string_view backend() const override { return store_.backend(); }
  std::unique_ptr<Leadership> leadership() override { return store_.leadership(); }

  void announce_queue_change() override {
    // A listening process wakes its own waiters; it is the only process that listens.
    if (*listeners_ == 0) sqlite::touch_announcement(sqlite::announcement_file(db_.path()));
  }
  std::unique_ptr<Subscription> listen_queue_changes(std::function<void()> heard) override {
    auto watch = sqlite::watch_announcements(db_.path(), std::move(heard));
    if (!watch) return nullptr;
    return std::make_unique<Listening>(std::move(watch), listeners_);
  }

 private:
  // Counts this store's live subscriptions while it holds one.
  class Listening final : public Subscription {
   public:
    Listening(std::unique_ptr<Subscription> watch, std::shared_ptr<std::atomic<int>> listeners)
        : watch_(std::move(watch)), listeners_(std::move(listeners)) {
      ++*listeners_;
    }
    ~Listening() override { --*listeners_; }
    Listening(const Listening&) = delete;
    Listening& operator=(const Listening&) = delete;

   private:
    std::unique_ptr<Subscription> watch_;
    std::shared_ptr<std::atomic<int>> listeners_;
  };

  Database db_;
  SqliteStore store_;
  std::shared_ptr<std::atomic<int>> listeners_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace

std::unique_ptr<Store> open_sqlite_store(SqliteOptions options, const Clock& clock) {
  return std::make_unique<OwningSqliteStore>(std::move(options), clock);
}

void SqliteStore::prepare_rebinds() {
  db_.write(
      [](SQLite::Database& connection) { connection.exec(std::string(kCreateRebindReceipts)); });
}

std::exception_ptr SqliteTransaction::attempt(const std::function<void(Transaction&)>& step) {
  return attempt_in_savepoint(db_, [&] { step(*this); });
}

std::optional<TaskRow> SqliteTransaction::load_task(const std::string& task_id) {
  return store::load_task(db_, task_id);
}

void SqliteTransaction::insert_task(const TaskRow& row) {
  store::insert_task(db_, row);
}

bool SqliteTransaction::update_task(const TaskRow& row, std::int64_t expected_revision,
                                    std::int64_t expected_lease_generation) {
  return store::update_task(db_, row, expected_revision, expected_lease_generation);
}

void SqliteTransaction::append_event(const std::string& task_id, const std::string& event_type,
                                     const std::string& agent_id, const nlohmann::json& payload,
                                     const std::string& created_at) {
  store::append_event(db_, task_id, event_type, agent_id, payload, created_at);
}

std::vector<TaskRow> SqliteTransaction::tasks_matching(const TaskFilter& filter,
                                                       std::int64_t after_seq, std::size_t limit) {
  return store::tasks_matching(db_, filter, after_seq, limit);
}

std::vector<EventRecord> SqliteTransaction::events_after(std::int64_t after, std::size_t limit) {
  Prepared query(db_, kEventsAfter);
  query->bind(1, after);
  query->bind(2, static_cast<std::int64_t>(limit));
  return event_rows(*query);
}

std::vector<std::string> SqliteTransaction::prune_terminal_tasks(const std::string& before,
                                                                 std::size_t limit) {
  std::vector<std::string> pruned;
  {
    Prepared query(db_, kPrunableTasks);
    query->bind(1, before);
    query->bind(2, static_cast<std::int64_t>(limit));
    while (query->executeStep()) pruned.push_back(query->getColumn(0).getString());
  }
  for (const auto& task_id : pruned) {
    for (const char* sql : {kPruneEvents, kPruneResults}) {
      Prepared remove(db_, sql);
      remove->bind(1, task_id);
      remove->exec();
    }
  }
  return pruned;
}

std::int64_t SqliteTransaction::last_event_id() {
  Prepared query(db_, kLastEventId);
  return query->executeStep() ? query->getColumn(0).getInt64() : 0;
}

std::string SqliteTransaction::integrity() {
  Prepared check(db_, "PRAGMA quick_check");
  return check->executeStep() ? check->getColumn(0).getString() : "no answer";
}

void SqliteTransaction::visit_queued_tasks_in_fleet_order(
    const std::function<bool(const TaskRow&)>& visit) {
  store::visit_queued_tasks_in_fleet_order(db_, visit);
}

std::vector<LeaseRecord> SqliteTransaction::claimed_leases(std::size_t limit) {
  Prepared query(db_,
                 "SELECT task_id, lease_expires_at FROM tasks "
                 "WHERE status='CLAIMED' ORDER BY lease_expires_at LIMIT ?");
  query->bind(1, static_cast<std::int64_t>(limit));
  std::vector<LeaseRecord> leases;
  while (query->executeStep()) {
    const auto& expires = query->getColumn(1);
    leases.push_back(
        {query->getColumn(0).getString(), expires.isNull() ? std::string() : expires.getString()});
  }
  return leases;
}

std::vector<std::string> SqliteTransaction::tasks_claimed_by_agent(const std::string& agent_id) {
  Prepared query(db_,
                 "SELECT t.task_id FROM tasks t JOIN workers w ON w.worker_id=t.claimed_by "
                 "WHERE t.status='CLAIMED' AND w.agent_id=? ORDER BY t.task_id");
  query->bind(1, agent_id);
  std::vector<std::string> held;
  while (query->executeStep()) held.push_back(query->getColumn(0).getString());
  return held;
}

std::vector<std::pair<std::string, std::int64_t>> SqliteTransaction::status_counts() {
  Prepared query(db_, "SELECT status, COUNT(*) FROM tasks GROUP BY status");
  std::vector<std::pair<std::string, std::int64_t>> counts;
  while (query->executeStep()) {
    counts.emplace_back(query->getColumn(0).getString(), query->getColumn(1).getInt64());
  }
  return counts;
}

std::vector<LiveTaskCount> SqliteTransaction::live_task_counts() {
  Prepared query(db_, kLiveTaskCounts);
  std::vector<LiveTaskCount> counts;
  while (query->executeStep()) {
    counts.push_back({query->getColumn(0).getString(), query->getColumn(1).getString(),
                      query->getColumn(2).getInt64(), query->getColumn(3).getInt64()});
  }
  return counts;
}

std::vector<TaskRow> SqliteTransaction::newest_tasks(std::size_t limit) {
  return store::newest_tasks(db_, limit);
}

std::vector<EventRecord> SqliteTransaction::task_events(const std::string& task_id,
                                                        std::int64_t after, std::size_t limit) {
  Prepared query(db_,
                 "SELECT event_id, event_type, agent_id, payload_json, created_at, task_id "
                 "FROM task_events WHERE task_id=? AND event_id>? ORDER BY event_id LIMIT ?");
  query->bind(1, task_id);
  query->bind(2, after);
  query->bind(3, static_cast<std::int64_t>(limit));
  return event_rows(*query);
}

namespace {

// A resolution's event, its identity bound to ?1..?5 by bind_resolution.
constexpr const char* kResolutionEvent =
    "SELECT 1 FROM task_events WHERE task_id=?1 AND "
    "event_type='BRIDGE_ENVELOPE_RESOLVED' AND agent_id=?2 AND "
    "json_extract(payload_json,'$.attempt') IS ?3 AND "
    "json_extract(payload_json,'$.worker_id') IS ?4 AND "
    "json_extract(payload_json,'$.execution_digest')=?5";

void bind_resolution(SQLite::Statement& query, const Resolution& resolution) {
  query.bind(1, resolution.task_id);
  query.bind(2, resolution.actor);
  query.bind(3, resolution.attempt);
  if (resolution.worker_id) {
    query.bind(4, *resolution.worker_id);
  } else {
    query.bind(4);
  }
  query.bind(5, resolution.execution_digest);
}

}  // namespace

bool SqliteTransaction::resolution_recorded(const Resolution& resolution) {
  Prepared query(db_, kResolutionEvent);
  bind_resolution(*query, resolution);
  return query->executeStep();
}

void SqliteTransaction::record_resolution(const Resolution& resolution,
                                          const nlohmann::json& payload,
                                          const std::string& created_at) {
  Prepared insert(db_, std::string("INSERT INTO task_events(task_id,event_type,agent_id,"
                                   "payload_json,created_at) SELECT ?1,"
                                   "'BRIDGE_ENVELOPE_RESOLVED',?2,?6,?7 WHERE NOT EXISTS (") +
                           kResolutionEvent + ")");
  bind_resolution(*insert, resolution);
  insert->bind(6, canonical_json(payload));
  insert->bind(7, created_at);
  insert->exec();
}

bool SqliteTransaction::event_recorded(const std::string& task_id, const std::string& event_type,
                                       const nlohmann::json& payload) {
  Prepared query(db_,
                 "SELECT 1 FROM task_events WHERE task_id=? AND event_type=? AND payload_json=?");
  query->bind(1, task_id);
  query->bind(2, event_type);
  query->bind(3, canonical_json(payload));
  return query->executeStep();
}

}  // namespace aios::store
