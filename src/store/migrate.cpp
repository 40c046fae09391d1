// aios-store migrate (store.hpp migrate_sqlite_to_postgres). Rows travel as typed values
// (integer, real, text, NULL): integers as decimal text and reals as their shortest round-trip
// text, so PostgreSQL holds the very same doubles, and both sides are digested alike: per table,
// in key order, each value's kind, length and text. Only the schemas' own catalogue names reach
// SQL text; row values are always bound parameters.
#include <SQLiteCpp/Backup.h>
#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <functional>
#include <map>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/error.hpp"
#include "aios/log.hpp"
#include "aios/store.hpp"
#include "aios/sys.hpp"
#include "store/location.hpp"
#include "store/postgres/connection.hpp"

namespace aios::store {
namespace {

// Rows sent to PostgreSQL per INSERT, and read back per FETCH.
constexpr std::size_t kBatchRows = 64;
constexpr int kFetchRows = 1000;

// SQLite's queue counter: PostgreSQL numbers its queue from a sequence instead, which the copy
// sets after the highest seq copied.
constexpr const char* kSqliteQueueCounter = "task_queue_sequence";

enum class Kind : char { kNull = 'n', kInteger = 'i', kReal = 'r', kText = 't' };

struct Value {
  Kind kind = Kind::kNull;
  std::string text;
};
using Row = std::vector<Value>;
using RowVisitor = std::function<void(const Row&)>;

struct Column {
  std::string name;
  Kind kind;
};

struct Table {
  std::string name;
  std::vector<Column> columns{};
  std::vector<std::string> key{};  // the primary key, else every column: the digest's order
};

struct Digest {
  std::int64_t rows = 0;
  std::string sha256;
  bool operator==(const Digest&) const = default;
};
using Digests = std::map<std::string, Digest>;

[[noreturn]] void mismatch(const std::string& why) {
  throw Error(ErrorCode::STORE_MIGRATION_SCHEMA_MISMATCH, why);
}

std::string quoted(const std::string& identifier) {
  std::string out = "\"";
  for (const char c : identifier) {
    out += c;
    if (c == '"') out += '"';
  }
  return out + "\"";
}

std::string column_list(const Table& table) {
  std::string out;
  for (const auto& column : table.columns) out += (out.empty() ? "" : ", ") + quoted(column.name);
  return out;
}

std::string real_text(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

// SQLite's affinity of a declared column type (sqlite.org/datatype3.html, 3.1); the task store
// declares INTEGER, REAL and TEXT only.
Kind affinity(const Table& table, std::string declared) {
  std::transform(declared.begin(), declared.end(), declared.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  const auto has = [&declared](const char* part) {
    return declared.find(part) != std::string::npos;
  };
  if (has("INT")) return Kind::kInteger;
  if (has("CHAR") || has("CLOB") || has("TEXT")) return Kind::kText;
  if (has("REAL") || has("FLOA") || has("DOUB")) return Kind::kReal;
  mismatch(table.name + " has a column of type '" + declared + "'");
}

Kind postgres_kind(const std::string& table, const std::string& data_type) {
  if (data_type == "bigint" || data_type == "integer" || data_type == "smallint") {
    return Kind::kInteger;
  }
  if (data_type == "double precision" || data_type == "real") return Kind::kReal;
  if (data_type == "text" || data_type == "character varying") return Kind::kText;
  mismatch("PostgreSQL's " + table + " has a column of type " + data_type);
}

// --- SQLite --------------------------------------------------------------------------------------

std::vector<Table> sqlite_tables(SQLite::Database& db) {
  std::vector<Table> tables;
  SQLite::Statement names(db,
                          "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE "
                          "'sqlite!_%' ESCAPE '!' AND name<>'schema_migrations' ORDER BY name");
  while (names.executeStep()) tables.push_back({.name = names.getColumn(0).getString()});
  for (auto& table : tables) {
    SQLite::Statement info(db, "SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid");
    info.bind(1, table.name);
    std::map<int, std::string> key;
    while (info.executeStep()) {
      const std::string name = info.getColumn(0).getString();
      table.columns.push_back({name, affinity(table, info.getColumn(1).getString())});
      if (const int position = info.getColumn(2).getInt(); position > 0) key[position] = name;
    }
    for (const auto& [position, name] : key) table.key.push_back(name);
    if (table.key.empty()) {
      for (const auto& column : table.columns) table.key.push_back(column.name);
    }
  }
  return tables;
}

Value sqlite_value(const SQLite::Column& value, const Table& table, const Column& column) {
  Value out;
  switch (value.getType()) {
    case SQLITE_NULL:
      return out;
    case SQLITE_INTEGER:
      out = {Kind::kInteger, std::to_string(value.getInt64())};
      break;
    case SQLITE_FLOAT:
      out = {Kind::kReal, real_text(value.getDouble())};
      break;
    case SQLITE_TEXT:
      out = {Kind::kText, value.getString()};
      break;
    default:
      mismatch(table.name + "." + column.name + " holds a BLOB");
  }
  // A value SQLite kept against its column's affinity (text in an INTEGER column) has no
  // faithful PostgreSQL form.
  if (out.kind != column.kind) mismatch(table.name + "." + column.name + " holds another kind");
  return out;
}

void each_sqlite_row(SQLite::Database& db, const Table& table, const RowVisitor& visit) {
  std::string order;
  for (const auto& name : table.key) order += (order.empty() ? "" : ", ") + quoted(name);
  SQLite::Statement select(
      db, "SELECT " + column_list(table) + " FROM " + quoted(table.name) + " ORDER BY " + order);
  Row row(table.columns.size());
  while (select.executeStep()) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      row[i] = sqlite_value(select.getColumn(static_cast<int>(i)), table, table.columns[i]);
    }
    visit(row);
  }
}

// --- PostgreSQL ----------------------------------------------------------------------------------

using PostgresColumns = std::map<std::string, std::map<std::string, Kind>>;

PostgresColumns postgres_columns(pg::Connection& db) {
  const auto rows = db.run(
      "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c JOIN "
      "information_schema.tables t ON t.table_schema=c.table_schema AND "
      "t.table_name=c.table_name WHERE c.table_schema=current_schema() AND "
      "t.table_type='BASE TABLE' AND c.table_name<>'schema_migrations'");
  PostgresColumns tables;
  for (int i = 0; i < rows.size(); ++i) {
    const auto table = rows.text(i, 0);
    tables[table][rows.text(i, 1)] = postgres_kind(table, rows.text(i, 2));
  }
  return tables;
}

// Every source table has its twin in PostgreSQL, column for column and kind for kind.
void check_same_schema(const std::vector<Table>& tables, const PostgresColumns& target) {
  for (const auto& table : tables) {
    const auto twin = target.find(table.name);
    if (twin == target.end()) mismatch("PostgreSQL has no table " + table.name);
    std::map<std::string, Kind> columns;
    for (const auto& column : table.columns) columns[column.name] = column.kind;
    if (columns != twin->second) mismatch("the columns of " + table.name + " differ");
  }
}

void each_postgres_row(pg::Connection& db, const Table& table, const RowVisitor& visit) {
  // NULLS FIRST and bytewise text: SQLite's order of the same key.
  std::string order;
  for (const auto& name : table.key) {
    const auto column = std::find_if(table.columns.begin(), table.columns.end(),
                                     [&name](const Column& c) { return c.name == name; });
    order += (order.empty() ? "" : ", ") + quoted(name) +
             (column->kind == Kind::kText ? " COLLATE \"C\"" : "") + " NULLS FIRST";
  }
  db.exec("DECLARE aios_migrate NO SCROLL CURSOR FOR SELECT " + column_list(table) + " FROM " +
          quoted(table.name) + " ORDER BY " + order);
  Row row(table.columns.size());
  for (;;) {
    const auto rows = db.exec("FETCH " + std::to_string(kFetchRows) + " FROM aios_migrate");
    for (int r = 0; r < rows.size(); ++r) {
      for (std::size_t c = 0; c < row.size(); ++c) {
        const int column = static_cast<int>(c);
        const Kind kind = table.columns[c].kind;
        if (rows.null(r, column)) {
          row[c] = {};
        } else if (kind == Kind::kReal) {
          row[c] = {kind, real_text(rows.real(r, column))};
        } else {
          row[c] = {kind, rows.text(r, column)};
        }
      }
      visit(row);
    }
    if (rows.size() < kFetchRows) break;
  }
  db.exec("CLOSE aios_migrate");
}

void insert_rows(pg::Connection& db, const Table& table, const std::vector<Row>& batch) {
  if (batch.empty()) return;
  std::string sql = "INSERT INTO " + quoted(table.name) + "(" + column_list(table) + ") VALUES ";
  pg::Params params;
  std::size_t n = 0;
  for (const auto& row : batch) {
    sql += n == 0 ? "(" : ", (";
    for (std::size_t i = 0; i < row.size(); ++i) {
      sql += (i == 0 ? "$" : ", $") + std::to_string(++n);
      if (row[i].kind == Kind::kNull) {
        params.null();
      } else {
        params.text(row[i].text);
      }
    }
    sql += ")";
  }
  db.run(sql, params);
}

// An identity column (task_events.event_id) and the queue's sequence go on after the highest
// value copied.
void advance_identities(pg::Connection& db) {
  db.exec(
      "SELECT setval('task_queue_seq', GREATEST(MAX(seq), 1), COALESCE(MAX(seq), 0) > 0) "
      "FROM tasks");
  const auto identities = db.run(
      "SELECT table_name, column_name FROM information_schema.columns WHERE "
      "table_schema=current_schema() AND is_identity='YES'");
  for (int i = 0; i < identities.size(); ++i) {
    const auto table = quoted(identities.text(i, 0));
    const auto column = quoted(identities.text(i, 1));
    db.run("SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT MAX(" + column +
               ") FROM " + table + "), 0) + 1, false)",
           pg::Params().text(table).text(identities.text(i, 1)));
  }
}

// --- Both ----------------------------------------------------------------------------------------

Digest digest_of(const std::function<void(const RowVisitor&)>& rows) {
  Sha256 hash;
  Digest digest;
  rows([&](const Row& row) {
    for (const auto& value : row) {
      hash.update(std::string(1, static_cast<char>(value.kind)));
      if (value.kind == Kind::kNull) continue;
      hash.update(std::to_string(value.text.size()) + ":");
      hash.update(value.text);
    }
    hash.update("\n");
    ++digest.rows;
  });
  digest.sha256 = hash.finish();
  return digest;
}

Digests sqlite_digests(SQLite::Database& db) {
  Digests digests;
  for (const auto& table : sqlite_tables(db)) {
    digests[table.name] =
        digest_of([&](const RowVisitor& visit) { each_sqlite_row(db, table, visit); });
  }
  return digests;
}

// The snapshot: a temporary directory of its own under `parent`, removed with its file.
class SnapshotFile {
 public:
  explicit SnapshotFile(const std::filesystem::path& parent) {
    std::string pattern = (parent / ".aios-store-snapshot-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw Error(ErrorCode::STORE_UNAVAILABLE, "cannot make the snapshot directory under " +
                                                    parent.string() + ": " +
                                                    std::system_category().message(errno));
    }
    dir_ = pattern;
  }
  ~SnapshotFile() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  SnapshotFile(const SnapshotFile&) = delete;
  SnapshotFile& operator=(const SnapshotFile&) = delete;

  std::filesystem::path path() const { return dir_ / "snapshot.sqlite3"; }

 private:
  std::filesystem::path dir_;
};

template <typename Options>
Options resolved_as(const StoreLocation& location, const char* role, const char* backend) {
  auto options = resolve_location(location);
  if (!std::holds_alternative<Options>(options)) {
    throw Error(ErrorCode::STORE_URL_INVALID,
                std::string("the migration's ") + role + " must be a " + backend + " store");
  }
  return std::get<Options>(std::move(options));
}

// The rows of the live source, in one read transaction, after the copy committed.
Digests live_digests(const std::filesystem::path& source) {
  SQLite::Database live(source.string(), SQLite::OPEN_READONLY);
  SQLite::Transaction read(live, SQLite::TransactionBehavior::DEFERRED);
  return sqlite_digests(live);
}

std::vector<MigratedTable> copy(SQLite::Database& snapshot, pg::Connection& db) {
  auto tables = sqlite_tables(snapshot);
  std::erase_if(tables, [](const Table& table) { return table.name == kSqliteQueueCounter; });
  const auto target = postgres_columns(db);
  check_same_schema(tables, target);
  std::string every_table;
  std::string occupied;
  for (const auto& [name, columns] : target) {
    every_table += (every_table.empty() ? "" : ", ") + quoted(name);
    if (db.run("SELECT EXISTS (SELECT 1 FROM " + quoted(name) + ")").text(0, 0) == "t") {
      occupied += (occupied.empty() ? "" : ", ") + name;
    }
  }
  if (!occupied.empty()) {
    throw Error(ErrorCode::STORE_MIGRATION_TARGET_NOT_EMPTY, "rows in " + occupied);
  }
  // Writers wait for the copy (readers do not), so nothing lands beside it.
  db.exec("LOCK TABLE " + every_table + " IN EXCLUSIVE MODE");
  std::vector<MigratedTable> copied;
  for (const auto& table : tables) {
    std::vector<Row> batch;
    const auto sent = digest_of([&](const RowVisitor& visit) {
      each_sqlite_row(snapshot, table, [&](const Row& row) {
        visit(row);
        batch.push_back(row);
        if (batch.size() == kBatchRows) {
          insert_rows(db, table, batch);
          batch.clear();
        }
      });
    });
    insert_rows(db, table, batch);
    const auto stored =
        digest_of([&](const RowVisitor& visit) { each_postgres_row(db, table, visit); });
    if (!(stored == sent)) {
      throw Error(ErrorCode::STORE_MIGRATION_MISMATCH,
                  table.name + ": " + std::to_string(sent.rows) + " rows sent, " +
                      std::to_string(stored.rows) + " read back");
    }
    log::info("STORE_MIGRATION_TABLE_COPIED",
              {{"table", table.name}, {"rows", sent.rows}, {"sha256", sent.sha256}});
    copied.push_back({.table = table.name, .rows = sent.rows, .sha256 = sent.sha256});
  }
  advance_identities(db);
  return copied;
}

MigrationReport migrate(const SqliteOptions& from, const PostgresOptions& to,
                        const std::filesystem::path& snapshot_dir) {
  const SystemClock clock;
  // Creates or completes the target's schema, and refuses a server without fsync.
  open_postgres_store(to, clock);

  const SnapshotFile snapshot(snapshot_dir);
  Digests at_snapshot;
  try {
    {
      SQLite::Database live(from.path.string(), SQLite::OPEN_READONLY);
      SQLite::Database copy_db(snapshot.path().string(),
                               SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
      // One step: every page under one read lock, so the copy is one committed state.
      SQLite::Backup(copy_db, live).executeStep();
      if (!copy_db.tableExists("schema_migrations")) {
        mismatch(from.path.string() + " is not an AIOS task store");
      }
      at_snapshot = sqlite_digests(copy_db);
    }
    log::info("STORE_MIGRATION_SNAPSHOT_TAKEN", {{"source", from.path.string()}});
    // The snapshot brought to the schema this build writes (a no-op when it is there already).
    open_sqlite_store({.path = snapshot.path(), .connections = 1, .migrate = true}, clock);
  } catch (const SQLite::Exception& error) {
    throw Error(ErrorCode::STORE_UNAVAILABLE,
                "cannot snapshot " + from.path.string() + ": " + error.what());
  }

  MigrationReport report;
  {
    SQLite::Database copy_db(snapshot.path().string(), SQLite::OPEN_READONLY);
    pg::Connection db(pg::connection_keywords(to));
    db.exec("BEGIN ISOLATION LEVEL SERIALIZABLE");
    report.tables = copy(copy_db, db);
    if (db.exec("COMMIT").command() != "COMMIT") {
      throw Error(ErrorCode::STORE_FAILURE, "the copy's COMMIT answered ROLLBACK");
    }
  }
  const auto now = live_digests(from.path);
  for (auto& table : report.tables) {
    const auto before = at_snapshot.find(table.table);
    const auto after = now.find(table.table);
    const bool in_before = before != at_snapshot.end();
    const bool in_after = after != now.end();
    table.changed_after_snapshot =
        in_before != in_after || (in_before && !(before->second == after->second));
  }
  return report;
}

}  // namespace

bool MigrationReport::changed_after_snapshot() const {
  return std::any_of(tables.begin(), tables.end(),
                     [](const MigratedTable& table) { return table.changed_after_snapshot; });
}

MigrationReport migrate_sqlite_to_postgres(const StoreLocation& source, const StoreLocation& target,
                                           std::filesystem::path snapshot_dir) {
  const auto from = resolved_as<SqliteOptions>(source, "source", "SQLite");
  auto to = resolved_as<PostgresOptions>(target, "target", "PostgreSQL");
  to.connections = 1;
  if (snapshot_dir.empty()) {
    snapshot_dir = from.path.has_parent_path() ? from.path.parent_path() : ".";
  }
  try {
    return migrate(from, to, snapshot_dir);
  } catch (const SQLite::Exception& error) {
    // Reading the snapshot or the live source after the snapshot was taken.
    throw Error(ErrorCode::STORE_FAILURE, std::string("SQLite: ") + error.what());
  }
}

}  // namespace aios::store
