// The PostgreSQL backend of store::Store. Several processes (scheduler replicas, the rebind
// service) write one database at once. Write transactions run at READ COMMITTED and serialise
// on the rows they change instead of aborting: a write body locks a task's row before it reads
// anything of the task and a worker's row before it reads the worker's slots (transaction.hpp),
// and every update carries its fences in its WHERE. So concurrent claims skip each other's rows
// and transitions of one task queue behind each other, each seeing the one before; only a
// deadlock or an insert that lost a race to the same key rolls back and runs again (the seam
// allows a body to be re-run). docs/architecture.md has the rules.
#include <libpq-fe.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <stop_token>
#include <thread>

#include "aios/error.hpp"
#include "aios/log.hpp"
#include "store/postgres/connection.hpp"
#include "store/postgres/replicas.hpp"
#include "store/postgres/schema.hpp"
#include "store/postgres/transaction.hpp"

namespace aios::store {
namespace {

// A transaction that loses this many conflicts in a row is reported busy.
constexpr int kMaxAttempts = 64;
// An insert that meets the same key this many times is not a race but the body's own error.
constexpr int kMaxInsertRaces = 3;
// BEGIN goes to the server with the body's first statement; the transaction takes its id before
// it draws one from a sequence (PgTransaction::take_transaction_id).
constexpr const char* kBeginWrite = "BEGIN ISOLATION LEVEL READ COMMITTED";
// The database clock is read again when its last reading is older than this.
constexpr auto kClockReadEvery = std::chrono::seconds(5);
// Between two NOTIFYs: another process's waiter hears of a change at most this late, and a
// process under load sends a few hundred a second instead of one a commit.
constexpr auto kAnnounceGap = std::chrono::milliseconds(3);
// Held by the migrating process, so replicas starting together migrate once.
constexpr const char* kMigrationLock = "SELECT pg_advisory_xact_lock(7426001)";

thread_local bool t_in_transaction = false;

}  // namespace

std::exception_ptr PgTransaction::attempt(const std::function<void(Transaction&)>& step) {
  db_.send("SAVEPOINT aios_step");
  for (int tries = 1;; ++tries) {
    try {
      step(*this);
      db_.exec("RELEASE SAVEPOINT aios_step");
      return nullptr;
    } catch (...) {
      db_.discard_sent();
      // A deadlock fails the whole transaction: write() runs it again.
      if (db_.conflicted()) throw;
      auto error = std::current_exception();
      db_.exec("ROLLBACK TO SAVEPOINT aios_step");
      // The step's row locks went with it.
      forget_locks();
      // An insert that lost a race: the step run again finds the row the winner committed.
      if (tries < kMaxInsertRaces && pg::Failure::lost_insert_race(error)) continue;
      return error;
    }
  }
}

class PostgresStore final : public Store {
 public:
  PostgresStore(PostgresOptions options, const Clock& clock)
      : options_(std::move(options)), clock_(clock), keywords_(pg::connection_keywords(options_)) {
    if (options_.connections == 0) options_.connections = 1;
    idle_.push_back(std::make_unique<pg::Connection>(keywords_));
    opened_ = 1;
    if (options_.migrate) migrate(*idle_.back());
    if (options_.database_clock) read_clock(*idle_.back());
  }

  // Runs `body` in BEGIN … COMMIT until it commits or fails for a reason other than a lost
  // conflict. A COMMIT whose outcome is unknown (the connection lost) is never re-run.
  void write(const std::function<void(Transaction&)>& body) override {
    // Seeded once per thread: random_device is a system call, and this runs on every write.
    thread_local std::minstd_rand jitter(std::random_device{}());
    int insert_races = 0;
    std::size_t lost_connections = 0;
    for (int tries = 1;; ++tries) {
      Lease lease(*this);
      auto& db = lease.connection();
      db.clear_conflict();
      bool committing = false;
      try {
        db.send(kBeginWrite);
        if (options_.database_clock && clock_stale()) read_clock(db);
        PgTransaction tx(db, true);
        body(tx);
        // A body that swallowed a failed statement leaves an aborted transaction, whose COMMIT
        // answers ROLLBACK without an error.
        if (db.conflicted()) throw Error(ErrorCode::STORE_BUSY, "lost a conflict");
        committing = true;
        const auto committed = db.exec("COMMIT").command();
        if (db.conflicted()) throw Error(ErrorCode::STORE_BUSY, "lost a conflict");
        // A body that caught a failed statement and went on: nothing of it was written.
        if (committed != "COMMIT") {
          throw Error(ErrorCode::STORE_FAILURE, "a statement of the transaction failed");
        }
        return;
      } catch (...) {
        rollback(db);
        // Nothing of it was written when COMMIT was never run.
        if ((!committing || db.last_skipped()) &&
            replaceable(db, lost_connections, std::current_exception())) {
          continue;
        }
        const bool raced = pg::Failure::lost_insert_race(std::current_exception());
        if (!db.conflicted() && (!raced || ++insert_races > kMaxInsertRaces)) throw;
        ++conflicts_;
        if (tries >= kMaxAttempts) {
          throw Error(ErrorCode::STORE_BUSY,
                      "lost a conflict " + std::to_string(tries) + " times in a row");
        }
      }
      // Writers that collided start again apart.
      const int ceiling = std::min(1 << std::min(tries, 6), 50);
      std::this_thread::sleep_for(
          std::chrono::microseconds(std::uniform_int_distribution<int>(0, ceiling * 1000)(jitter)));
    }
  }

  void read(const std::function<void(Transaction&)>& body) override {
    std::size_t lost_connections = 0;
    for (;;) {
      Lease lease(*this);
      auto& db = lease.connection();
      try {
        db.send(PgTransaction::kBeginRead);
        PgTransaction tx(db, false);
        body(tx);
        // A read-only transaction has nothing to commit; ending it so also tells it apart, on
        // the wire, from a write's COMMIT (tests/store/wire_faults_test.cpp faults those).
        db.exec("ROLLBACK");
        return;
      } catch (...) {
        rollback(db);
        if (replaceable(db, lost_connections, std::current_exception())) continue;
        throw;
      }
    }
  }

  TimePoint now() const override {
    const auto local = clock_.now();
    if (!options_.database_clock) return local;
    return local + std::chrono::microseconds(offset_micros_.load());
  }

  void prepare_rebinds() override {
    write([](Transaction& tx) { tx_connection(tx).exec(std::string(pg::kCreateRebindReceipts)); });
  }

  int schema_version() override {
    int version = 0;
    read([&](Transaction& tx) { version = current_version(tx_connection(tx)); });
    return version;
  }

  std::string_view backend() const override { return "postgresql"; }

  PoolUse pool_use() override {
    const std::lock_guard lock(mutex_);
    return {.busy = opened_ - idle_.size(),
            .idle = idle_.size(),
            .limit = options_.connections,
            .conflicts = conflicts_.load()};
  }

  std::unique_ptr<Leadership> leadership() override { return pg::leadership(keywords_); }

  // Handed to a thread of its own, which coalesces the announcements made while it sends one:
  // each NOTIFY is a transaction with a commit record to flush, and under load the commits
  // asked for it several times a millisecond; a waiter needs one wake-up after the last.
  void announce_queue_change() override {
    if (t_in_transaction) return;  // a body's own call; the commit's caller announces
    {
      const std::lock_guard lock(announce_mutex_);
      announce_wanted_ = true;
      if (!announcer_thread_.joinable()) {
        announcer_thread_ = std::jthread([this](const std::stop_token& stop) { announce(stop); });
      }
    }
    announce_asked_.notify_one();
  }

  std::unique_ptr<Subscription> listen_queue_changes(std::function<void()> heard) override {
    return pg::listen_queue(keywords_, announcer_, std::move(heard));
  }

 private:
  // A connection taken from the pool for one transaction, returned (or dropped, when the server
  // went away) after it.
  class Lease {
   public:
    explicit Lease(PostgresStore& store) : store_(store) {
      if (t_in_transaction)
        throw Error(ErrorCode::STORE_FAILURE, "a transaction inside a transaction");
      connection_ = store_.acquire();
      t_in_transaction = true;
    }
    ~Lease() {
      t_in_transaction = false;
      store_.release(std::move(connection_));
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    pg::Connection& connection() { return *connection_; }

   private:
    PostgresStore& store_;
    std::unique_ptr<pg::Connection> connection_;
  };

  void announce(const std::stop_token& stop) {
    std::unique_lock lock(announce_mutex_);
    while (announce_asked_.wait(lock, stop, [&] { return announce_wanted_; })) {
      announce_wanted_ = false;
      lock.unlock();
      try {
        Lease lease(*this);
        lease.connection().run("SELECT pg_notify($1, $2)",
                               pg::Params().text(pg::kQueueChannel).text(announcer_));
      } catch (const Error& error) {
        log::warn("STORE_ANNOUNCE_FAILED", {{"error", error.code()}});
      }
      // What is asked meanwhile goes out in one NOTIFY after the gap.
      std::this_thread::sleep_for(kAnnounceGap);
      lock.lock();
    }
  }

  static pg::Connection& tx_connection(Transaction& tx) {
    return static_cast<PgTransaction&>(tx).connection();
  }

  std::unique_ptr<pg::Connection> acquire() {
    std::unique_lock lock(mutex_);
    available_.wait(lock, [&] { return !idle_.empty() || opened_ < options_.connections; });
    if (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      if (connection->healthy()) return connection;
      --opened_;
    }
    ++opened_;
    lock.unlock();
    try {
      return std::make_unique<pg::Connection>(keywords_);
    } catch (...) {
      const std::lock_guard relock(mutex_);
      --opened_;
      available_.notify_one();
      throw;
    }
  }

  void release(std::unique_ptr<pg::Connection> connection) {
    const std::lock_guard lock(mutex_);
    if (connection && connection->healthy()) {
      idle_.push_back(std::move(connection));
    } else {
      --opened_;
    }
    available_.notify_one();
  }

  // A pooled connection whose server went away (a restart, a failover to a standby) fails at
  // the body's first round trip; the transaction never reached COMMIT, so nothing of it was
  // written, and it runs again on another, at most once per connection the pool may hold and
  // once more on a new one.
  // The server says so (57P01, terminated by an administrator) before libpq sees the socket
  // close, so its code counts as much as the connection's state.
  bool replaceable(pg::Connection& db, std::size_t& lost, const std::exception_ptr& failure) const {
    bool unavailable = !db.healthy();
    try {
      std::rethrow_exception(failure);
    } catch (const Error& error) {
      unavailable = unavailable || error.is(ErrorCode::STORE_UNAVAILABLE);
    } catch (...) {
    }
    if (!unavailable || lost++ > options_.connections) return false;
    db.close();
    log::warn("STORE_CONNECTION_REPLACED", {{"error", "STORE_UNAVAILABLE"}});
    return true;
  }

  static void rollback(pg::Connection& db) noexcept {
    db.discard_sent();
    try {
      if (db.healthy()) db.exec("ROLLBACK");
    } catch (...) {
      // The connection is dropped when it is unhealthy; a failed ROLLBACK leaves nothing open.
    }
  }

  bool clock_stale() const {
    return std::chrono::steady_clock::now().time_since_epoch().count() - clock_read_at_.load() >
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(kClockReadEvery).count();
  }

  // The server's clock against ours, taken halfway through one round trip.
  void read_clock(pg::Connection& db) {
    const auto before = clock_.now();
    const auto rows = db.exec("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint");
    const auto after = clock_.now();
    const auto local = before + (after - before) / 2;
    const auto local_micros =
        std::chrono::duration_cast<std::chrono::microseconds>(local.time_since_epoch()).count();
    offset_micros_ = rows.integer(0, 0) - local_micros;
    clock_read_at_ = std::chrono::steady_clock::now().time_since_epoch().count();
  }

  static int current_version(pg::Connection& db) {
    const auto found = db.exec(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations WHERE "
        "to_regclass('schema_migrations') IS NOT NULL");
    return found.empty() ? 0 : static_cast<int>(found.integer(0, 0));
  }

  void migrate(pg::Connection& db) {
    db.exec("BEGIN");
    try {
      db.exec(kMigrationLock);
      db.exec(
          "CREATE TABLE IF NOT EXISTS schema_migrations(version INTEGER PRIMARY KEY, "
          "applied_at TEXT NOT NULL DEFAULT to_char(now() AT TIME ZONE 'UTC', "
          "'YYYY-MM-DD HH24:MI:SS'))");
      const int current = current_version(db);
      for (const auto& migration : pg::kMigrations) {
        if (migration.version <= current) continue;
        for (const auto sql : migration.sql) {
          if (!sql.empty()) db.exec(std::string(sql));
        }
        db.run("INSERT INTO schema_migrations(version) VALUES ($1)",
               pg::Params().integer(migration.version));
        log::info("STORE_MIGRATED", {{"backend", "postgresql"}, {"version", migration.version}});
      }
      db.exec("COMMIT");
    } catch (...) {
      rollback(db);
      throw;
    }
  }

  PostgresOptions options_;
  const Clock& clock_;
  std::vector<std::pair<std::string, std::string>> keywords_;
  // This process's announcements, told apart from other processes' when they come back.
  const std::string announcer_ =
      std::to_string(std::random_device{}()) + "-" + std::to_string(std::random_device{}());
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<pg::Connection>> idle_;
  std::size_t opened_ = 0;
  std::atomic<std::uint64_t> conflicts_{0};
  std::atomic<std::int64_t> offset_micros_{0};
  std::atomic<std::int64_t> clock_read_at_{0};
  std::mutex announce_mutex_;
  std::condition_variable_any announce_asked_;
  bool announce_wanted_ = false;
  // Last: stopped and joined first, while the pool it borrows from is still there.
  std::jthread announcer_thread_;
};

std::unique_ptr<Store> open_postgres_store(PostgresOptions options, const Clock& clock) {
  return std::make_unique<PostgresStore>(std::move(options), clock);
}

}  // namespace aios::store
