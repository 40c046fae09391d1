#include "store/postgres/connection.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>

namespace aios::store::pg {
namespace {

// The Error a failed statement becomes, by its SQLSTATE class.
ErrorCode code_for(std::string_view state) {
  if (state == "40001" || state == "40P01" || state == "55P03" || state == "57014") {
    return ErrorCode::STORE_BUSY;
  }
  if (state == "53100") return ErrorCode::STORE_FULL;
  if (state.starts_with("08") || state.starts_with("57P") || state == "53300") {
    return ErrorCode::STORE_UNAVAILABLE;
  }
  return ErrorCode::STORE_FAILURE;
}

// Run once a session so that its server process keeps its heap. PostgreSQL 15 gives each index
// scan's state (about 27 KiB) a malloc block of its own, so a statement with several scans (the
// claim's queue read is one) takes the heap past glibc's trim threshold (128 KiB) and its end
// gives the memory back: a brk and a page fault a page, statement after statement, which with
// 32 workers nearly doubled PostgreSQL's CPU a job (docs/performance.md). glibc raises its mmap and
// trim thresholds for good once a mapped block (above 128 KiB) is freed (mallopt(3),
// M_MMAP_THRESHOLD): this 4 MiB value is that block, allocated and freed by the server.
constexpr const char* kKeepHeap = "SELECT length(repeat('x', 4194304))";

std::string field(const PGresult* result, int code) {
  const char* value = result ? PQresultErrorField(result, code) : nullptr;
  return value ? value : "";
}

// The password kept in `file`, its last line break dropped.
std::string read_password(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorCode::STORE_UNAVAILABLE, "the PostgreSQL password file cannot be read");
  std::string password((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!password.empty() && (password.back() == '\n' || password.back() == '\r')) {
    password.pop_back();
  }
  return password;
}

}  // namespace

Params& Params::text(std::string value) {
  values_.emplace_back(std::move(value));
  return *this;
}

Params& Params::text_or_null(const std::string& value) {
  return value.empty() ? null() : text(value);
}

Params& Params::optional(const std::optional<std::string>& value) {
  return value ? text(*value) : null();
}

Params& Params::integer(std::int64_t value) {
  return text(std::to_string(value));
}

Params& Params::real(double value) {
  // The shortest text that reads back as the same double.
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  return text(std::string(buffer, end));
}

Params& Params::null() {
  values_.emplace_back(std::nullopt);
  return *this;
}

std::vector<const char*> Params::pointers() const {
  std::vector<const char*> out;
  out.reserve(values_.size());
  for (const auto& value : values_) out.push_back(value ? value->c_str() : nullptr);
  return out;
}

Rows::Rows(PGresult* result) : result_(result) {}

Rows::~Rows() {
  if (result_ != nullptr) PQclear(result_);
}

Rows::Rows(Rows&& other) noexcept : result_(other.result_) {
  other.result_ = nullptr;
}

Rows& Rows::operator=(Rows&& other) noexcept {
  if (this != &other) {
    if (result_ != nullptr) PQclear(result_);
    result_ = other.result_;
    other.result_ = nullptr;
  }
  return *this;
}

int Rows::size() const {
  return PQntuples(result_);
}

int Rows::columns() const {
  return PQnfields(result_);
}

bool Failure::lost_insert_race(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const Failure& failure) {
    return failure.unique_violation();
  } catch (...) {
    return false;
  }
}

std::int64_t Rows::affected() const {
  const char* count = PQcmdTuples(result_);
  return (count == nullptr || *count == '\0') ? 0 : std::strtoll(count, nullptr, 10);
}

std::string Rows::command() const {
  const char* tag = PQcmdStatus(result_);
  return tag == nullptr ? std::string() : std::string(tag);
}

bool Rows::null(int row, int column) const {
  return PQgetisnull(result_, row, column) != 0;
}

std::string Rows::text(int row, int column) const {
  if (null(row, column)) return {};
  return std::string(PQgetvalue(result_, row, column),
                     static_cast<std::size_t>(PQgetlength(result_, row, column)));
}

std::optional<std::string> Rows::optional(int row, int column) const {
  if (null(row, column)) return std::nullopt;
  return text(row, column);
}

std::int64_t Rows::integer(int row, int column) const {
  if (null(row, column)) return 0;
  const char* value = PQgetvalue(result_, row, column);
  std::int64_t out = 0;
  const auto [end, error] = std::from_chars(value, value + PQgetlength(result_, row, column), out);
  if (error != std::errc()) throw Error(ErrorCode::STORE_FAILURE, "a column is not an integer");
  return out;
}

double Rows::real(int row, int column) const {
  if (null(row, column)) return 0;
  const char* value = PQgetvalue(result_, row, column);
  double out = 0;
  const auto [end, error] = std::from_chars(value, value + PQgetlength(result_, row, column), out);
  if (error != std::errc()) throw Error(ErrorCode::STORE_FAILURE, "a column is not a number");
  return out;
}

Connection::Connection(const std::vector<std::pair<std::string, std::string>>& keywords) {
  std::vector<const char*> names;
  std::vector<const char*> values;
  for (const auto& [name, value] : keywords) {
    names.push_back(name.c_str());
    values.push_back(value.c_str());
  }
  names.push_back(nullptr);
  values.push_back(nullptr);
  conn_ = PQconnectdbParams(names.data(), values.data(), 1);
  if (conn_ == nullptr) throw Error(ErrorCode::STORE_UNAVAILABLE, "libpq could not allocate");
  if (PQstatus(conn_) != CONNECTION_OK) {
    // libpq's message names the host and the reason, never the password.
    std::string why = PQerrorMessage(conn_);
    PQfinish(conn_);
    conn_ = nullptr;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    throw Error(ErrorCode::STORE_UNAVAILABLE, why);
  }
  // The server's notices ("relation … already exists, skipping") would otherwise go to stderr as
  // lines that are not the daemon's JSON log; they carry nothing an operator acts on.
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
  try {
    exec("SET synchronous_commit TO on; SET TIME ZONE 'UTC'; SET client_encoding TO 'UTF8'");
    exec(kKeepHeap);
    if (exec("SHOW fsync").text(0, 0) != "on") {
      throw Error(ErrorCode::STORE_DURABILITY_UNAVAILABLE,
                  "the PostgreSQL server runs with fsync off");
    }
  } catch (...) {
    // The destructor does not run for a constructor that throws.
    PQfinish(conn_);
    conn_ = nullptr;
    throw;
  }
}

Connection::~Connection() {
  if (conn_ != nullptr) PQfinish(conn_);
}

void Connection::close() noexcept {
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = nullptr;
  sent_.clear();
  kept_.clear();
}

bool Connection::healthy() const {
  return conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK;
}

Rows Connection::checked(PGresult* result, std::string_view what) {
  Rows rows(result);
  const auto status = result ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return rows;
  const std::string state = field(result, PG_DIAG_SQLSTATE);
  if (state.empty() || !healthy()) {
    throw Failure(ErrorCode::STORE_UNAVAILABLE,
                  std::string(what) + ": the connection to PostgreSQL was lost", state, "");
  }
  if (state == "40001" || state == "40P01") conflicted_ = true;
  // The primary message only: the detail field quotes the row's values (a token digest, say).
  // The SQLSTATE says which of the causes a code covers it was (STORE_BUSY: a lost conflict, a
  // deadlock, a lock or statement timeout).
  throw Failure(
      code_for(state),
      std::string(what) + " (SQLSTATE " + state + "): " + field(result, PG_DIAG_MESSAGE_PRIMARY),
      state, field(result, PG_DIAG_CONSTRAINT_NAME));
}

const std::string& Connection::prepared(const std::string& sql, bool pipelined) {
  auto found = prepared_.find(sql);
  if (found != prepared_.end()) return found->second;
  const std::string name = "aios_" + std::to_string(++statements_);
  if (pipelined) {
    if (PQsendPrepare(conn_, name.c_str(), sql.c_str(), 0, nullptr) != 1) {
      throw Failure(ErrorCode::STORE_UNAVAILABLE, "prepare: could not send", "", "");
    }
    sent_.push_back({.prepare = sql});
  } else {
    checked(PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr), "prepare");
  }
  return prepared_.emplace(sql, name).first->second;
}

void Connection::send(const std::string& sql, const Params& params) {
  if (sent_.empty() && PQpipelineStatus(conn_) == PQ_PIPELINE_OFF &&
      PQenterPipelineMode(conn_) != 1) {
    throw Failure(ErrorCode::STORE_UNAVAILABLE, "could not enter pipeline mode", "", "");
  }
  const auto& name = prepared(sql, true);
  const auto values = params.pointers();
  if (PQsendQueryPrepared(conn_, name.c_str(), static_cast<int>(values.size()), values.data(),
                          nullptr, nullptr, 0) != 1) {
    throw Failure(ErrorCode::STORE_UNAVAILABLE, "statement: could not send", "", "");
  }
  sent_.emplace_back();
}

void Connection::send_kept(const std::string& sql, const Params& params) {
  send(sql, params);
  sent_.back().keep = true;
}

Rows Connection::run(const std::string& sql, const Params& params) {
  if (!sent_.empty()) {
    send(sql, params);
    return answers("statement");
  }
  const auto& name = prepared(sql, false);
  const auto values = params.pointers();
  return checked(PQexecPrepared(conn_, name.c_str(), static_cast<int>(values.size()), values.data(),
                                nullptr, nullptr, 0),
                 "statement");
}

Rows Connection::answers(std::string_view what) {
  const auto sent = std::exchange(sent_, {});
  last_skipped_ = false;
  kept_.clear();
  if (PQpipelineSync(conn_) != 1) {
    return checked(nullptr, what);  // the connection is gone: STORE_UNAVAILABLE
  }
  PGresult* failed = nullptr;
  PGresult* last = nullptr;
  for (std::size_t at = 0; at < sent.size(); ++at) {
    PGresult* result = PQgetResult(conn_);
    if (result == nullptr) break;  // the connection went away mid-pipeline: it is dropped
    // Each answer ends with a null result.
    while (PGresult* more = PQgetResult(conn_)) PQclear(more);
    // A prepare that failed or was skipped with the rest of the pipeline is made again on use.
    if (!sent[at].prepare.empty() && PQresultStatus(result) != PGRES_COMMAND_OK) {
      prepared_.erase(sent[at].prepare);
    }
    if (failed == nullptr && PQresultStatus(result) == PGRES_FATAL_ERROR) {
      failed = result;
      // Only the server's own error says it skipped the rest: a connection lost on the way
      // (libpq's error, no SQLSTATE) may have run all of it, COMMIT too.
      last_skipped_ = at + 1 < sent.size() && !field(result, PG_DIAG_SQLSTATE).empty();
    } else if (at + 1 == sent.size() && failed == nullptr) {
      last = result;
    } else if (sent[at].keep && failed == nullptr && PQresultStatus(result) == PGRES_TUPLES_OK) {
      kept_.emplace_back(result);
    } else {
      PQclear(result);
    }
  }
  // The sync's own answer, then out of pipeline mode.
  while (PGresult* result = PQgetResult(conn_)) {
    const bool synced = PQresultStatus(result) == PGRES_PIPELINE_SYNC;
    PQclear(result);
    if (synced) break;
  }
  PQexitPipelineMode(conn_);
  if (failed != nullptr) {
    kept_.clear();
    if (last != nullptr) PQclear(last);
    return checked(failed, what);
  }
  return checked(last, what);
}

void Connection::discard_sent() noexcept {
  if (sent_.empty()) return;
  try {
    (void)answers("statement");
  } catch (...) {
    // The transaction is rolled back next; a deadlock was noted (conflicted_) all the same.
  }
}

int Connection::wait_notifications(std::chrono::milliseconds timeout, std::string_view skip) {
  pollfd socket{.fd = PQsocket(conn_), .events = POLLIN, .revents = 0};
  if (socket.fd < 0) throw Error(ErrorCode::STORE_UNAVAILABLE, "the listening session is closed");
  if (::poll(&socket, 1, static_cast<int>(timeout.count())) < 0 && errno != EINTR) {
    throw Error(ErrorCode::STORE_UNAVAILABLE, "poll on the listening session failed");
  }
  if (PQconsumeInput(conn_) != 1) {
    throw Error(ErrorCode::STORE_UNAVAILABLE, "the listening session was lost");
  }
  int heard = 0;
  while (PGnotify* notification = PQnotifies(conn_)) {
    if (std::string_view(notification->extra) != skip) ++heard;
    PQfreemem(notification);
  }
  return heard;
}

Rows Connection::exec(const std::string& sql) {
  if (sent_.empty()) return checked(PQexec(conn_, sql.c_str()), "statement");
  if (PQsendQueryParams(conn_, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) != 1) {
    throw Failure(ErrorCode::STORE_UNAVAILABLE, "statement: could not send", "", "");
  }
  sent_.emplace_back();
  return answers("statement");
}

std::vector<std::pair<std::string, std::string>> connection_keywords(
    const PostgresOptions& options) {
  char* error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(options.url.c_str(), &error);
  if (parsed == nullptr) {
    std::string why = error ? error : "unparsable";
    PQfreemem(error);
    throw Error(ErrorCode::STORE_URL_INVALID, "the PostgreSQL URL does not parse: " + why);
  }
  bool has_password = false;
  for (auto* option = parsed; option->keyword != nullptr; ++option) {
    if (std::string_view(option->keyword) == "password" && option->val && *option->val) {
      has_password = true;
    }
  }
  PQconninfoFree(parsed);
  if (has_password) throw Error(ErrorCode::STORE_URL_PASSWORD_REFUSED);
  std::vector<std::pair<std::string, std::string>> keywords = {
      {"connect_timeout", "10"},
      {"application_name", "aios"},
      {"dbname", options.url},
  };
  if (!options.password_file.empty()) {
    keywords.emplace_back("password", read_password(options.password_file));
  }
  return keywords;
}

}  // namespace aios::store::pg
