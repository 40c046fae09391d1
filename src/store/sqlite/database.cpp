#include "store/sqlite/database.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include <algorithm>
#include <deque>
#include <exception>
#include <unordered_map>
#include <vector>

#include "aios/error.hpp"
#include "store/sqlite/schema.sql.hpp"

namespace aios {
namespace {

[[noreturn]] void rethrow_mapped(const SQLite::Exception& error) {
  const int code = error.getErrorCode() & 0xff;
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
    throw Error(ErrorCode::STORE_BUSY, error.what());
  }
  if (code == SQLITE_FULL) throw Error(ErrorCode::STORE_FULL, error.what());
  throw Error(ErrorCode::STORE_FAILURE, error.what());
}

std::unique_ptr<SQLite::Database> open_connection(const DatabaseOptions& options) {
  std::unique_ptr<SQLite::Database> db;
  try {
    // No per-connection mutex: the pool lends a connection, and the statements it keeps, to
    // one thread at a time, which is all SQLite's multi-thread mode asks. The mutex it drops
    // was taken around every step of every statement.
    db = std::make_unique<SQLite::Database>(
        options.path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_NOMUTEX,
        static_cast<int>(options.busy_timeout.count()));
  } catch (const SQLite::Exception& error) {
    throw Error(ErrorCode::STORE_UNAVAILABLE, error.what());
  }
  try {
    // A committed transition must survive power loss: refuse to run without WAL + FULL.
    const std::string mode = db->execAndGet("PRAGMA journal_mode=WAL").getString();
    db->exec("PRAGMA synchronous=FULL");
    const int synchronous = db->execAndGet("PRAGMA synchronous").getInt();
    if (mode != "wal" || synchronous != 2) {
      throw Error(ErrorCode::STORE_DURABILITY_UNAVAILABLE,
                  "journal_mode=" + mode + " synchronous=" + std::to_string(synchronous));
    }
    db->exec("PRAGMA foreign_keys=ON");
    // A group commit's savepoints need statement journals: in memory, not a temporary file
    // opened, unlinked and closed around every transition.
    db->exec("PRAGMA temp_store=MEMORY");
  } catch (const SQLite::Exception& error) {
    // SQLite opens lazily: a file that is not a database fails only at the first statement.
    const int code = error.getErrorCode() & 0xff;
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT || code == SQLITE_CANTOPEN) {
      throw Error(ErrorCode::STORE_UNAVAILABLE, error.what());
    }
    throw Error(ErrorCode::STORE_DURABILITY_UNAVAILABLE, error.what());
  }
  return db;
}

int current_version(SQLite::Database& db) {
  db.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations("
      "version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)");
  return db.execAndGet("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").getInt();
}

// The statements one connection keeps for store::Prepared, by SQL text. The same SQL may be
// in use twice at once (the poll's group cursors), so each text holds a few statements.
class StatementCache {
 public:
  struct Entry {
    explicit Entry(SQLite::Database& db, const std::string& sql) : statement(db, sql) {}
    SQLite::Statement statement;
    bool in_use = false;
  };

  // A free kept statement for `sql`, or nullptr when all are in use and the limit is reached.
  Entry* take(SQLite::Database& db, const std::string& sql) {
    auto it = entries_.find(sql);
    if (it != entries_.end()) {
      for (const auto& entry : it->second) {
        if (!entry->in_use) return use(*entry);
      }
    }
    // A bound on memory for SQL built with varying text; the task plane's is fixed.
    if (kept_ >= kMaxStatements) return nullptr;
    if (it == entries_.end())
      it = entries_.emplace(sql, std::vector<std::unique_ptr<Entry>>{}).first;
    it->second.push_back(std::make_unique<Entry>(db, sql));
    ++kept_;
    return use(*it->second.back());
  }

 private:
  static constexpr std::size_t kMaxStatements = 128;

  static Entry* use(Entry& entry) {
    entry.in_use = true;
    return &entry;
  }

  std::unordered_map<std::string, std::vector<std::unique_ptr<Entry>>> entries_;
  std::size_t kept_ = 0;
};

// Declared in this order so the statements are finalized before their connection closes.
struct Connection {
  std::unique_ptr<SQLite::Database> db;
  StatementCache statements;
};

// The connection of the innermost Database::write/read running on this thread: Prepared keeps
// statements only for it, so a kept statement is never used by two threads or transactions.
thread_local Connection* t_current = nullptr;

class CurrentConnection {
 public:
  explicit CurrentConnection(Connection& connection) : previous_(t_current) {
    t_current = &connection;
  }
  ~CurrentConnection() { t_current = previous_; }
  CurrentConnection(const CurrentConnection&) = delete;
  CurrentConnection& operator=(const CurrentConnection&) = delete;

 private:
  Connection* previous_;
};

}  // namespace

class Database::Pool {
 public:
  explicit Pool(const DatabaseOptions& options) {
    for (std::size_t i = 0; i < std::max<std::size_t>(1, options.connections); ++i) {
      idle_.push_back(std::make_unique<Connection>(Connection{open_connection(options), {}}));
    }
  }

  // Borrowed connection, returned to the pool on destruction.
  class Handle {
   public:
    Handle(Pool& pool, std::unique_ptr<Connection> connection)
        : pool_(pool), connection_(std::move(connection)) {}
    ~Handle() { pool_.give_back(std::move(connection_)); }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    Connection& operator*() { return *connection_; }

   private:
    Pool& pool_;
    std::unique_ptr<Connection> connection_;
  };

  Handle take() {
    std::unique_lock lock(mutex_);
    available_.wait(lock, [this] { return !idle_.empty(); });
    auto connection = std::move(idle_.front());
    idle_.pop_front();
    return Handle(*this, std::move(connection));
  }

 private:
  void give_back(std::unique_ptr<Connection> connection) {
    {
      std::lock_guard lock(mutex_);
      // Most recently used first: its page cache is the one no other connection's commit has
      // invalidated since, where the least recently used would read its pages again.
      idle_.push_front(std::move(connection));
    }
    available_.notify_one();
  }

  std::mutex mutex_;
  std::condition_variable available_;
  std::deque<std::unique_ptr<Connection>> idle_;
};

Database::Database(DatabaseOptions options)
    : options_(std::move(options)),
      pool_(std::make_unique<Pool>(options_)),
      writer_(std::make_unique<Writer>(*pool_)) {
  if (!options_.migrate) return;
  for (const auto& migration : store::kMigrations) {
    write([&migration](SQLite::Database& db) {
      // Re-read under the write lock: another process may have migrated meanwhile.
      if (current_version(db) >= migration.version) return;
      db.exec(std::string(migration.sql));
      SQLite::Statement insert(db, "INSERT INTO schema_migrations(version) VALUES (?)");
      insert.bind(1, migration.version);
      insert.exec();
    });
  }
}

Database::~Database() = default;

namespace {

// BEGIN, then `body`, then COMMIT; any failure rolls back. SQLite's errors get store codes.
// Writes have their own path (Database::Writer).
void read_transaction(SQLite::Database& db, const std::function<void(SQLite::Database&)>& body) {
  try {
    db.exec("BEGIN");
  } catch (const SQLite::Exception& error) {
    rethrow_mapped(error);
  }
  try {
    body(db);
    db.exec("COMMIT");
  } catch (const SQLite::Exception& error) {
    db.tryExec("ROLLBACK");
    rethrow_mapped(error);
  } catch (...) {
    db.tryExec("ROLLBACK");
    throw;
  }
}

// The exception in flight, with SQLite's errors given store codes as read_transaction gives them.
std::exception_ptr mapped_current_exception() {
  try {
    throw;
  } catch (const SQLite::Exception& error) {
    try {
      rethrow_mapped(error);
    } catch (...) {
      return std::current_exception();
    }
  } catch (...) {
    return std::current_exception();
  }
}

}  // namespace

// Group commit. SQLite has one writer at a time and every commit waits for its fsync, so
// writers of this process queue here rather than in SQLite's busy handler (which sleeps and
// retries): the first becomes the leader and commits every write queued meanwhile in one
// transaction, one fsync for all of them. Each write runs in its own SAVEPOINT, so a write
// that fails rolls back alone and the others still commit. No write is acknowledged before the
// COMMIT that holds it returned: durability is that of one transaction per write.
class Database::Writer {
 public:
  explicit Writer(Pool& pool) : pool_(pool) {}

  void write(const std::function<void(SQLite::Database&)>& body) {
    // A body runs on the leader's thread: a write from inside a body would wait for itself.
    if (t_writing) throw Error(ErrorCode::STORE_FAILURE, "a write inside a write");
    Pending mine{&body, nullptr, false};
    std::unique_lock lock(mutex_);
    queue_.push_back(&mine);
    while (!mine.done) {
      if (leading_) {
        led_.wait(lock);
        continue;
      }
      leading_ = true;
      const auto count = std::min(queue_.size(), kMaxBatch);
      std::vector<Pending*> batch(queue_.begin(), queue_.begin() + static_cast<long>(count));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<long>(count));
      lock.unlock();
      commit(batch);
      lock.lock();
      for (auto* pending : batch) pending->done = true;
      leading_ = false;
      led_.notify_all();
    }
    if (mine.error) std::rethrow_exception(mine.error);
  }

 private:
  struct Pending {
    const std::function<void(SQLite::Database&)>* body;
    std::exception_ptr error;
    bool done = false;
  };

  // A bound on one transaction's size, so a long queue still commits in steps.
  static constexpr std::size_t kMaxBatch = 64;

  // Runs `batch` in as few transactions as it can; sets each write's error, never throws.
  void commit(const std::vector<Pending*>& batch) {
    auto handle = pool_.take();
    const CurrentConnection current(*handle);
    t_writing = true;
    auto& db = *(*handle).db;
    std::size_t next = 0;
    while (next < batch.size()) next = commit_from(db, batch, next);
    t_writing = false;
  }

  // One transaction over batch[first…]. Returns where the next transaction starts: the end,
  // or just after a write whose failure ended the whole transaction (SQLite rolls it back on
  // some errors, a full disk among them), which fails every write it held.
  static std::size_t commit_from(SQLite::Database& db, const std::vector<Pending*>& batch,
                                 std::size_t first) {
    std::vector<Pending*> held;
    const auto fail_all = [&held](const std::exception_ptr& error) {
      for (auto* pending : held) pending->error = error;
    };
    try {
      db.exec("BEGIN IMMEDIATE");
    } catch (const SQLite::Exception&) {
      held.assign(batch.begin() + static_cast<long>(first), batch.end());
      fail_all(mapped_current_exception());
      return batch.size();
    }
    for (std::size_t i = first; i < batch.size(); ++i) {
      auto* pending = batch[i];
      try {
        db.exec("SAVEPOINT aios_write");
        (*pending->body)(db);
        db.exec("RELEASE aios_write");
        held.push_back(pending);
        continue;
      } catch (...) {
        pending->error = mapped_current_exception();
      }
      if (sqlite3_get_autocommit(db.getHandle()) != 0 ||
          db.tryExec("ROLLBACK TO aios_write") != SQLITE_OK ||
          db.tryExec("RELEASE aios_write") != SQLITE_OK) {
        db.tryExec("ROLLBACK");
        fail_all(pending->error);
        return i + 1;
      }
    }
    try {
      db.exec("COMMIT");
    } catch (const SQLite::Exception&) {
      db.tryExec("ROLLBACK");
      fail_all(mapped_current_exception());
    }
    return batch.size();
  }

  static thread_local bool t_writing;

  Pool& pool_;
  std::mutex mutex_;
  std::condition_variable led_;
  std::vector<Pending*> queue_;
  bool leading_ = false;
};

thread_local bool Database::Writer::t_writing = false;

void Database::write(const std::function<void(SQLite::Database&)>& body) {
  writer_->write(body);
}

std::exception_ptr store::attempt_in_savepoint(SQLite::Database& db,
                                               const std::function<void()>& step) {
  db.exec("SAVEPOINT aios_step");
  try {
    step();
    db.exec("RELEASE aios_step");
    return nullptr;
  } catch (...) {
    auto error = mapped_current_exception();
    // SQLite ends the whole transaction on some errors (a full disk among them): nothing of it
    // can commit, so the write fails as a whole.
    if (sqlite3_get_autocommit(db.getHandle()) != 0 ||
        db.tryExec("ROLLBACK TO aios_step") != SQLITE_OK ||
        db.tryExec("RELEASE aios_step") != SQLITE_OK) {
      std::rethrow_exception(error);
    }
    return error;
  }
}

void Database::read(const std::function<void(SQLite::Database&)>& body) {
  auto handle = pool_->take();
  const CurrentConnection current(*handle);
  read_transaction(*(*handle).db, body);
}

int Database::schema_version() {
  int version = 0;
  read([&version](SQLite::Database& db) {
    version = db.execAndGet("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").getInt();
  });
  return version;
}

namespace store {

Prepared::Prepared(SQLite::Database& db, const std::string& sql) {
  if (t_current != nullptr && t_current->db.get() == &db) {
    if (auto* entry = t_current->statements.take(db, sql)) {
      statement_ = &entry->statement;
      in_use_ = &entry->in_use;
      return;
    }
  }
  owned_ = std::make_unique<SQLite::Statement>(db, sql);
  statement_ = owned_.get();
}

Prepared::~Prepared() {
  if (in_use_ == nullptr) return;
  // The next use must see a fresh statement: no pending row, no read lock, no old bindings.
  statement_->tryReset();
  try {
    statement_->clearBindings();  // sqlite3_clear_bindings cannot fail; SQLiteCpp may throw
  } catch (const SQLite::Exception&) {
  }
  *in_use_ = false;
}

}  // namespace store
}  // namespace aios
