#pragma once
// A libpq connection behind RAII, private to src/store/postgres/: statements run as named
// prepared statements (prepared once per connection, by SQL text), parameters and columns travel
// as text, and every failure becomes an aios::Error with the SQLSTATE kept beside it.

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "aios/error.hpp"
#include "aios/store.hpp"

struct pg_conn;
struct pg_result;

namespace aios::store::pg {

// A statement's failure: the Error a caller sees (STORE_BUSY, STORE_FULL, STORE_UNAVAILABLE or
// STORE_FAILURE) with the server's SQLSTATE and, for a constraint, its name.
class Failure : public Error {
 public:
  Failure(ErrorCode code, std::string detail, std::string sqlstate, std::string constraint)
      : Error(code, std::move(detail)),
        sqlstate_(std::move(sqlstate)),
        constraint_(std::move(constraint)) {}
  const std::string& sqlstate() const noexcept { return sqlstate_; }
  const std::string& constraint() const noexcept { return constraint_; }
  bool unique_violation() const noexcept { return sqlstate_ == "23505"; }
  // A concurrent transaction inserted the same key first (at READ COMMITTED, where a body that
  // read "absent" is not stopped before its INSERT): run again, the body finds the row.
  static bool lost_insert_race(const std::exception_ptr& error) noexcept;

 private:
  std::string sqlstate_;
  std::string constraint_;
};

// Text parameters of one statement; nullopt is SQL NULL.
class Params {
 public:
  Params& text(std::string value);
  // NULL for the empty string: the seed's CAS predicates test `IS NULL`.
  Params& text_or_null(const std::string& value);
  Params& optional(const std::optional<std::string>& value);
  Params& integer(std::int64_t value);
  Params& real(double value);
  Params& null();

  const std::vector<std::optional<std::string>>& values() const { return values_; }
  // The values as libpq takes them (nullptr for NULL), valid while this object is.
  std::vector<const char*> pointers() const;

 private:
  std::vector<std::optional<std::string>> values_;
};

// One statement's rows. Columns are read as stored: text (empty for NULL) or parsed numbers.
class Rows {
 public:
  explicit Rows(pg_result* result);
  ~Rows();
  Rows(Rows&& other) noexcept;
  Rows& operator=(Rows&& other) noexcept;
  Rows(const Rows&) = delete;
  Rows& operator=(const Rows&) = delete;

  int size() const;
  int columns() const;
  bool empty() const { return size() == 0; }
  // Rows the statement changed (UPDATE, INSERT, DELETE).
  std::int64_t affected() const;
  // The command tag: COMMIT answers ROLLBACK when the transaction had failed.
  std::string command() const;
  bool null(int row, int column) const;
  std::string text(int row, int column) const;
  std::optional<std::string> optional(int row, int column) const;
  std::int64_t integer(int row, int column) const;
  double real(int row, int column) const;

 private:
  pg_result* result_;
};

// The libpq keywords that open a session of `options`: defaults first, the URL's own values over
// them, the password from its file last. A URL that holds a password is refused
// (STORE_URL_PASSWORD_REFUSED); an unparsable one is STORE_URL_INVALID.
std::vector<std::pair<std::string, std::string>> connection_keywords(
    const PostgresOptions& options);

class Connection {
 public:
  // Connects with libpq keywords and values (their order kept), then sets the session up for
  // durable, UTC, UTF-8 work. STORE_UNAVAILABLE when the server cannot be reached or refuses the
  // role; STORE_DURABILITY_UNAVAILABLE when the server runs with fsync off.
  explicit Connection(const std::vector<std::pair<std::string, std::string>>& keywords);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // `sql` with $1.. bound to `params`, as a prepared statement kept for the next use.
  Rows run(const std::string& sql, const Params& params = {});
  // One or more statements without parameters (transaction control, migrations); one only
  // while statements are sent and unanswered.
  Rows exec(const std::string& sql);
  // `sql` sent without waiting for its answer (libpq's pipeline mode), for a statement inside a
  // transaction whose rows and count nobody reads (an event, an audit row): its answer is read
  // in the round trip of the next run() or exec(), which throws its failure (and skips its own
  // statement, as the server does after a failed one).
  void send(const std::string& sql, const Params& params = {});
  // send(), with the statement's rows kept from the round trip that reads its answer: a read a
  // body will ask for next, fetched in the round trip of the one it asks for first.
  void send_kept(const std::string& sql, const Params& params = {});
  // The rows of the statements sent with send_kept(), in order, from the last round trip (none
  // when it failed).
  std::vector<Rows> take_kept() { return std::exchange(kept_, {}); }
  // Reads the answers of what was sent and forgets them, failures too: a rollback follows.
  void discard_sent() noexcept;
  // True when the last statement waited for was never run: the server failed one sent before
  // it (and skips the rest of a pipeline), so a COMMIT sent behind a failed BEGIN committed
  // nothing. False when the connection was lost on the way: then nobody knows.
  bool last_skipped() const { return last_skipped_; }

  // True once a statement lost a serialisation conflict or a deadlock in this transaction; the
  // transaction runner then runs the body again, whatever the body made of the error.
  bool conflicted() const { return conflicted_; }
  void clear_conflict() { conflicted_ = false; }
  // False once the server went away; the pool replaces the connection.
  bool healthy() const;
  // Ends the session: one the server is ending is not given back to the pool.
  void close() noexcept;
  // After LISTEN: waits up to `timeout` for notifications and returns how many arrived whose
  // payload is not `skip` (a process's own). STORE_UNAVAILABLE when the session is lost.
  int wait_notifications(std::chrono::milliseconds timeout, std::string_view skip);

 private:
  Rows checked(pg_result* result, std::string_view what);
  // The name `sql` is prepared under on this connection, prepared first when it is new (sent
  // ahead of it in pipeline mode).
  const std::string& prepared(const std::string& sql, bool pipelined);
  // Ends the pipeline: reads every answer sent, then returns the last one's rows or throws the
  // first failure.
  Rows answers(std::string_view what);

  pg_conn* conn_ = nullptr;
  std::unordered_map<std::string, std::string> prepared_;  // SQL text -> statement name
  std::uint64_t statements_ = 0;                           // names given, never one twice
  // What was sent and is unanswered, in order: the SQL a prepare was sent for (so a failed one
  // is prepared again), empty for a statement, and whether a statement's rows are kept.
  struct Sent {
    std::string prepare;
    bool keep = false;
  };
  std::vector<Sent> sent_;
  std::vector<Rows> kept_;
  bool last_skipped_ = false;
  bool conflicted_ = false;
};

}  // namespace aios::store::pg
