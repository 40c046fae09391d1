// The tasks table and its events on PostgreSQL: the same rows and the same fleet order as the
// SQLite backend's (src/store/sqlite/tasks.cpp).
#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <thread>

#include "aios/canonical.hpp"
#include "aios/error.hpp"
#include "store/columns.hpp"
#include "store/postgres/transaction.hpp"
#include "store/queries.hpp"

namespace aios::store {
namespace pg {
namespace {

constexpr const char* kTaskColumns =
    "task_id,status,attempt,max_attempts,revision,claimed_by,lease_token_hash,lease_expires_at,"
    "claim_id,verification_json,result_json,metadata_json,required_capabilities_json,job_id,"
    "action,adapter,priority,scope_key,scope_weight,task_json,request_sha256,created_at,"
    "updated_at,execution_digest,capability_scope_json,seq,lease_generation,requeues";

// How many columns kTaskColumns names, and the same names of the table aliased t (a join's).
constexpr int kTaskColumnCount = 28;
const std::string& qualified_task_columns() {
  static const std::string qualified = [] {
    std::string out = "t.";
    for (const char* at = kTaskColumns; *at != '\0'; ++at) {
      out += *at;
      if (*at == ',') out += "t.";
    }
    return out;
  }();
  return qualified;
}

TaskRow task_row(const Rows& rows, int at) {
  TaskRow row;
  row.task_id = rows.text(at, 0);
  row.status = rows.text(at, 1);
  row.attempt = rows.integer(at, 2);
  row.max_attempts = rows.integer(at, 3);
  row.revision = rows.integer(at, 4);
  row.claimed_by = rows.text(at, 5);
  row.lease_token_hash = rows.text(at, 6);
  row.lease_expires_at = rows.text(at, 7);
  row.claim_id = rows.text(at, 8);
  row.verification_json = rows.text(at, 9);
  row.result_json = rows.text(at, 10);
  row.metadata_json = rows.text(at, 11);
  row.required_capabilities_json = rows.text(at, 12);
  row.job_id = rows.text(at, 13);
  row.action = rows.text(at, 14);
  row.adapter = rows.text(at, 15);
  row.priority = rows.integer(at, 16);
  row.scope_key = rows.text(at, 17);
  row.scope_weight = rows.real(at, 18);
  row.task_json = rows.text(at, 19);
  row.request_sha256 = rows.text(at, 20);
  row.created_at = rows.text(at, 21);
  row.updated_at = rows.text(at, 22);
  row.execution_digest = rows.text(at, 23);
  row.capability_scope = scope_of(rows.text(at, 24));
  row.seq = rows.integer(at, 25);
  row.lease_generation = rows.integer(at, 26);
  row.requeues = rows.integer(at, 27);
  return row;
}

std::vector<TaskRow> task_rows(const Rows& rows) {
  std::vector<TaskRow> out;
  out.reserve(static_cast<std::size_t>(rows.size()));
  for (int at = 0; at < rows.size(); ++at) out.push_back(task_row(rows, at));
  return out;
}

// Rows a queue group is read in: a poll stops after a few, so the group's rows are fetched a
// page at a time rather than all at once. A claim locks the rows it reads and takes the first it
// may, so it reads fewer, the head alone at first: a row it locks and does not take is one
// concurrent claims skip, and each lock is a WAL record.
constexpr std::int64_t kGroupPage = 16;
constexpr std::int64_t kClaimGroupPage = 4;
constexpr std::int64_t kClaimHeadPage = 1;

// The column of seq in kTaskColumns.
constexpr int kSeqColumn = 25;
// How long a cursor read waits for the writers in flight under its page's snapshot.
constexpr auto kSettleWait = std::chrono::seconds(2);

// The rows of a SELECT of event_id, event_type, agent_id, payload_json, created_at, task_id.
std::vector<EventRecord> event_rows(const Rows& rows) {
  std::vector<EventRecord> events;
  for (int at = 0; at < rows.size(); ++at) {
    events.push_back({rows.integer(at, 0), rows.text(at, 1), rows.text(at, 2), rows.text(at, 3),
                      rows.text(at, 4), rows.text(at, 5)});
  }
  return events;
}

}  // namespace

}  // namespace pg

std::optional<TaskRow> PgTransaction::load_task(const std::string& task_id) {
  if (fetched_ && fetched_->task_id == task_id) return fetched_->row;
  // A write reads the row locked: the fences it checks hold until it commits.
  const auto rows = db_.run(std::string("SELECT ") + pg::kTaskColumns +
                                " FROM tasks WHERE task_id=$1" + (writing_ ? " FOR UPDATE" : ""),
                            pg::Params().text(task_id));
  if (rows.empty()) return std::nullopt;
  auto row = pg::task_row(rows, 0);
  if (writing_) hold(row);
  return row;
}

void PgTransaction::lock_task(const std::string& task_id) {
  if (!writing_ || locked_tasks_.contains(task_id)) return;
  db_.send("SELECT 1 FROM tasks WHERE task_id=$1 FOR UPDATE", pg::Params().text(task_id));
  locked_tasks_.emplace(task_id, std::nullopt);
}

void PgTransaction::take_transaction_id() {
  if (has_transaction_id_) return;
  db_.send("SELECT pg_current_xact_id()");
  has_transaction_id_ = true;
}

bool PgTransaction::fetch_ahead(const std::string& task_id) {
  if (!writing_ || locked_tasks_.contains(task_id)) {
    lock_task(task_id);
    return false;
  }
  // The row is locked by the statement that reads it, as lock_task would lock it.
  db_.send_kept(
      std::string("SELECT ") + pg::kTaskColumns + " FROM tasks WHERE task_id=$1 FOR UPDATE",
      pg::Params().text(task_id));
  db_.send_kept(
      "SELECT t.claimed_by, w.agent_id FROM tasks t LEFT JOIN workers w ON "
      "w.worker_id=t.claimed_by WHERE t.task_id=$1",
      pg::Params().text(task_id));
  locked_tasks_.emplace(task_id, std::nullopt);
  return true;
}

void PgTransaction::keep_fetched(const std::string& task_id) {
  auto kept = db_.take_kept();
  if (kept.size() != 2) return;
  Fetched fetched{.task_id = task_id, .row = std::nullopt, .claimant = "", .claimant_agent = {}};
  if (!kept[0].empty()) {
    fetched.row = pg::task_row(kept[0], 0);
    hold(*fetched.row);
  }
  if (!kept[1].empty()) {
    fetched.claimant = kept[1].text(0, 0);
    fetched.claimant_agent = kept[1].optional(0, 1);
  }
  fetched_ = std::move(fetched);
}

void PgTransaction::insert_task(const TaskRow& row) {
  fetched_.reset();
  groups_ahead_.reset();
  take_transaction_id();
  pg::Params params;
  params.text(row.task_id)
      .text(row.status)
      .integer(row.attempt)
      .integer(row.max_attempts)
      .integer(row.revision)
      .text_or_null(row.claimed_by)
      .text_or_null(row.lease_token_hash)
      .text_or_null(row.lease_expires_at)
      .text_or_null(row.claim_id)
      .text_or_null(row.verification_json)
      .text_or_null(row.result_json)
      .text_or_null(row.metadata_json)
      .text_or_null(row.required_capabilities_json)
      .text_or_null(row.job_id)
      .text_or_null(row.action)
      .text_or_null(row.adapter)
      .integer(row.priority)
      .text(row.scope_key)
      .real(row.scope_weight)
      .text_or_null(row.task_json)
      .text_or_null(row.request_sha256)
      .text_or_null(row.created_at)
      .text_or_null(row.updated_at)
      .text_or_null(row.execution_digest)
      .text_or_null(scope_text(row.capability_scope))
      .integer(row.lease_generation)
      .integer(row.requeues);
  // The queue's order is a sequence's: concurrent creates draw numbers without waiting on each
  // other (a counter row every create updates made them conflict).
  db_.send(std::string("INSERT INTO tasks(") + pg::kTaskColumns +
               ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,"
               "$21,$22,$23,$24,$25,nextval('task_queue_seq'),$26,$27)",
           params);
}

bool PgTransaction::update_task(const TaskRow& row, std::int64_t expected_revision,
                                std::int64_t expected_lease_generation) {
  fetched_.reset();
  groups_ahead_.reset();
  pg::Params params;
  params.text(row.status)
      .integer(row.attempt)
      .integer(row.revision)
      .text_or_null(row.claimed_by)
      .text_or_null(row.lease_token_hash)
      .text_or_null(row.lease_expires_at)
      .text_or_null(row.claim_id)
      .text_or_null(row.verification_json)
      .text_or_null(row.result_json)
      .text_or_null(row.updated_at)
      .integer(row.lease_generation)
      .integer(row.max_attempts)
      .integer(row.requeues)
      .text(row.task_id)
      .integer(expected_revision)
      .integer(expected_lease_generation);
  std::string sql =
      "UPDATE tasks SET status=$1, attempt=$2, revision=$3, claimed_by=$4, "
      "lease_token_hash=$5, lease_expires_at=$6, claim_id=$7, verification_json=$8, "
      "result_json=$9, updated_at=$10, lease_generation=$11, max_attempts=$12, requeues=$13";
  const auto envelope = envelopes_.find(row.task_id);
  if (envelope == envelopes_.end() || envelope->second != envelope_of(row)) {
    params.text_or_null(row.metadata_json)
        .text_or_null(row.execution_digest)
        .text_or_null(row.action)
        .text_or_null(row.adapter)
        .text_or_null(scope_text(row.capability_scope));
    sql +=
        ", metadata_json=$17, execution_digest=$18, action=$19, adapter=$20, "
        "capability_scope_json=$21";
  }
  sql += " WHERE task_id=$14 AND revision=$15 AND lease_generation=$16";
  const auto held = locked_tasks_.find(row.task_id);
  if (held != locked_tasks_.end() &&
      held->second == Fences{expected_revision, expected_lease_generation}) {
    db_.send(sql, params);
    hold(row);
    return true;
  }
  const bool updated = db_.run(sql, params).affected() == 1;
  if (updated && writing_) hold(row);
  return updated;
}

void PgTransaction::append_event(const std::string& task_id, const std::string& event_type,
                                 const std::string& agent_id, const nlohmann::json& payload,
                                 const std::string& created_at) {
  take_transaction_id();
  db_.send(
      "INSERT INTO task_events(task_id,event_type,agent_id,payload_json,created_at) "
      "VALUES ($1,$2,$3,$4,$5)",
      pg::Params()
          .text(task_id)
          .text(event_type)
          .text(agent_id)
          .text(canonical_json(payload))
          .text(created_at));
}

std::vector<TaskRow> PgTransaction::tasks_matching(const TaskFilter& filter, std::int64_t after_seq,
                                                   std::size_t limit) {
  return pg::task_rows(settled_page(std::string("SELECT ") + pg::kTaskColumns + kTasksWhere, "seq",
                                    pg::kSeqColumn,
                                    pg::Params()
                                        .text(filter.status)
                                        .text(filter.tenant)
                                        .integer(after_seq)
                                        .integer(static_cast<std::int64_t>(limit))
                                        .text(filter.id_prefix)));
}

std::vector<EventRecord> PgTransaction::events_after(std::int64_t after, std::size_t limit) {
  return pg::event_rows(
      settled_page(kEventsAfter, "event_id", 0,
                   pg::Params().integer(after).integer(static_cast<std::int64_t>(limit))));
}

// At READ COMMITTED, ids (event_id, seq) are drawn in one order and committed in another: a
// transaction in flight when a page is read may yet commit a row with an id below the page's
// last, which a reader whose cursor moved past it would never see. So when the page's snapshot
// shows transactions in flight, the page is read again, once they have ended, up to its last
// id. Every writer draws its ids after it took its transaction id (kBeginWrite), so a row that
// can still appear under that id belongs to one of them.
pg::Rows PgTransaction::settled_page(const std::string& page_sql, std::string_view id_column,
                                     int id_index, const pg::Params& params) {
  const std::string column = "page." + std::string(id_column);
  const std::string sql = "SELECT page.*, pg_current_snapshot()::text FROM (" + page_sql +
                          ") page WHERE " + column + "<=$" +
                          std::to_string(params.values().size() + 1) + " ORDER BY " + column;
  const auto page_upto = [&](std::int64_t upto) {
    auto bounded = params;
    return db_.run(sql, bounded.integer(upto));
  };
  auto rows = page_upto(std::numeric_limits<std::int64_t>::max());
  if (rows.empty()) return rows;
  if (!wait_out(rows.text(0, rows.columns() - 1))) return rows;
  return page_upto(rows.integer(rows.size() - 1, id_index));
}

bool PgTransaction::wait_out(const std::string& snapshot) {
  if (snapshot.ends_with(':')) return false;  // "xmin:xmax:": nothing was in flight
  const auto deadline = std::chrono::steady_clock::now() + pg::kSettleWait;
  auto pause = std::chrono::microseconds(100);
  // Only transactions of this database's sessions can write its rows: a long one in another
  // database of a shared server holds nothing back. A transaction holds a lock on its own id
  // while it runs (pg_locks, read live; its session's database does not change, but
  // pg_stat_activity is read once a transaction unless its copy is cleared).
  const auto in_flight = [&] {
    db_.send("SELECT pg_stat_clear_snapshot()");
    return db_.run(
                  "SELECT count(*) FROM pg_snapshot_xip($1::pg_snapshot) x WHERE "
                  "x IS DISTINCT FROM pg_current_xact_id_if_assigned() AND "
                  "pg_xact_status(x)='in progress' AND EXISTS (SELECT 1 FROM pg_locks l "
                  "JOIN pg_stat_activity a ON a.pid=l.pid WHERE l.locktype='transactionid' AND "
                  "a.datname=current_database() AND "
                  "l.transactionid::text=(x::text::numeric % 4294967296)::text)",
                  pg::Params().text(snapshot))
               .integer(0, 0) > 0;
  };
  while (in_flight()) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw Error(ErrorCode::STORE_BUSY,
                  "a transaction open since the cursor's page was read holds the page back");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
  if (!writing_) {
    db_.send("ROLLBACK");
    db_.send(kBeginRead);
  }
  return true;
}

std::vector<std::string> PgTransaction::prune_terminal_tasks(const std::string& before,
                                                             std::size_t limit) {
  const auto rows =
      db_.run(kPrunableTasks, pg::Params().text(before).integer(static_cast<std::int64_t>(limit)));
  std::vector<std::string> pruned;
  for (int at = 0; at < rows.size(); ++at) pruned.push_back(rows.text(at, 0));
  for (const auto& task_id : pruned) {
    for (const char* sql : {kPruneEvents, kPruneResults}) db_.run(sql, pg::Params().text(task_id));
  }
  return pruned;
}

std::int64_t PgTransaction::last_event_id() {
  // A reader starts after this id, so no row may still appear under it.
  const auto rows =
      db_.run(std::string("SELECT (") + kLastEventId + "), pg_current_snapshot()::text");
  wait_out(rows.text(0, 1));
  return rows.integer(0, 0);
}

std::string PgTransaction::integrity() {
  // PostgreSQL checks its own pages (data checksums, its logs); a catalogue read that answers
  // is what a client can see of it.
  db_.exec("SELECT count(*) FROM pg_catalog.pg_class");
  return "ok";
}

// The fleet order merged from its groups, as on SQLite: the groups are found by a loose index
// scan of tasks_by_status_scope and each is read in seq order, a page at a time. In a write
// transaction (a claim) the rows read are locked, and rows another claim holds are passed over
// (SKIP LOCKED): two workers claiming at once take different tasks instead of colliding on the
// queue's head.
void PgTransaction::visit_queued_tasks_in_fleet_order(
    const std::function<bool(const TaskRow&)>& visit) {
  struct Group {
    std::int64_t priority = 0;
    std::string scope_key;
    double weight = 0;
    double served = 0;  // dispatch_count / scope_weight
    std::vector<TaskRow> page;
    std::size_t at = 0;
    bool last_page = false;
  };
  // Each row with whether the worker this transaction loaded has it quarantined, which a claim
  // and a poll ask of a row they may take next, and for a claim the row's plan (its resolution).
  const auto page_sql = [](bool claiming) {
    return std::string("SELECT ") + pg::qualified_task_columns() +
           ", EXISTS (SELECT 1 FROM fleet_task_quarantine q WHERE q.task_id=t.task_id AND "
           "q.worker_id=$6 AND q.quarantined_until>$7)" +
           (claiming ? ", p.plan_sha256, p.plan_json, p.execution_digest, p.created_at FROM "
                       "tasks t LEFT JOIN bridge_plans p ON p.task_id=t.task_id"
                     : " FROM tasks t") +
           " WHERE t.status='QUEUED' AND t.priority=$1 AND t.scope_key=$2 AND "
           "t.scope_weight=$3 AND t.attempt<t.max_attempts AND t.seq>$4 ORDER BY t.seq LIMIT $5" +
           (claiming ? " FOR UPDATE OF t SKIP LOCKED" : "");
  };
  static const std::string poll_sql = page_sql(false);
  static const std::string claim_sql = page_sql(true);
  const auto& sql = writing_ ? claim_sql : poll_sql;
  const auto params = [this](const Group& group, std::int64_t after_seq, std::int64_t limit) {
    return pg::Params()
        .integer(group.priority)
        .text(group.scope_key)
        .real(group.weight)
        .integer(after_seq)
        .integer(limit)
        .text(ahead_worker_)
        .real(ahead_now_);
  };
  const auto take = [&](Group& group, const pg::Rows& rows, std::int64_t limit) {
    group.page = pg::task_rows(rows);
    for (int at = 0; at < rows.size(); ++at) {
      const auto& row = group.page[static_cast<std::size_t>(at)];
      if (!ahead_worker_.empty()) {
        quarantined_ahead_[row.task_id] = rows.text(at, pg::kTaskColumnCount) == "t";
      }
      if (!writing_) continue;
      hold(row);
      constexpr int plan = pg::kTaskColumnCount + 1;
      plans_ahead_[row.task_id] =
          rows.null(at, plan) ? std::nullopt
                              : std::optional<PlanRecord>(PlanRecord{
                                    row.task_id, rows.text(at, plan), rows.text(at, plan + 1),
                                    rows.text(at, plan + 2), rows.text(at, plan + 3)});
    }
    group.at = 0;
    group.last_page = static_cast<std::int64_t>(group.page.size()) < limit;
  };
  const auto page = writing_ ? pg::kClaimGroupPage : pg::kGroupPage;
  const auto fetch = [&](Group& group, std::int64_t after_seq) {
    take(group, db_.run(sql, params(group, after_seq, page)), page);
  };
  std::vector<Group> groups;
  auto found = groups_ahead_ ? std::move(*groups_ahead_) : db_.run(pg::kQueuedGroups);
  groups_ahead_.reset();
  for (int at = 0; at < found.size(); ++at) {
    Group group;
    group.priority = found.integer(at, 0);
    group.scope_key = found.text(at, 1);
    group.weight = found.real(at, 2);
    group.served = static_cast<double>(found.integer(at, 3)) / group.weight;
    groups.push_back(std::move(group));
  }
  // Every group's first page in one round trip. A claim takes one task, so it reads (and locks)
  // only each group's head at first, and a page more of a group once it has passed its head over.
  const auto first = writing_ ? pg::kClaimHeadPage : page;
  for (std::size_t at = 0; at + 1 < groups.size(); ++at) {
    db_.send_kept(sql, params(groups[at], -1, first));
  }
  if (!groups.empty()) {
    auto last = db_.run(sql, params(groups.back(), -1, first));
    auto kept = db_.take_kept();
    kept.push_back(std::move(last));
    if (kept.size() != groups.size()) {
      throw Error(ErrorCode::STORE_FAILURE, "a queue group's page went unanswered");
    }
    for (std::size_t at = 0; at < groups.size(); ++at) take(groups[at], kept[at], first);
  }
  std::erase_if(groups, [](const Group& group) { return group.page.empty(); });
  // Legacy priority first, then the scope served least, then queue order.
  const auto before = [](const Group& a, const Group& b) {
    const auto& x = a.page[a.at];
    const auto& y = b.page[b.at];
    if (x.priority != y.priority) return x.priority > y.priority;
    if (a.served != b.served) return a.served < b.served;
    return x.seq < y.seq;
  };
  while (true) {
    Group* next = nullptr;
    for (auto& group : groups) {
      if (group.at < group.page.size() && (next == nullptr || before(group, *next))) {
        next = &group;
      }
    }
    if (next == nullptr || !visit(next->page[next->at])) return;
    if (++next->at == next->page.size() && !next->last_page) fetch(*next, next->page.back().seq);
  }
}

std::vector<LeaseRecord> PgTransaction::claimed_leases(std::size_t limit) {
  const auto rows = db_.run(
      "SELECT task_id, lease_expires_at FROM tasks WHERE status='CLAIMED' "
      "ORDER BY lease_expires_at LIMIT $1",
      pg::Params().integer(static_cast<std::int64_t>(limit)));
  std::vector<LeaseRecord> leases;
  for (int at = 0; at < rows.size(); ++at) leases.push_back({rows.text(at, 0), rows.text(at, 1)});
  return leases;
}

std::vector<std::string> PgTransaction::tasks_claimed_by_agent(const std::string& agent_id) {
  const auto rows = db_.run(
      "SELECT t.task_id FROM tasks t JOIN workers w ON w.worker_id=t.claimed_by "
      "WHERE t.status='CLAIMED' AND w.agent_id=$1 ORDER BY t.task_id",
      pg::Params().text(agent_id));
  std::vector<std::string> held;
  for (int at = 0; at < rows.size(); ++at) held.push_back(rows.text(at, 0));
  return held;
}

std::vector<std::pair<std::string, std::int64_t>> PgTransaction::status_counts() {
  const auto rows = db_.run("SELECT status, COUNT(*) FROM tasks GROUP BY status");
  std::vector<std::pair<std::string, std::int64_t>> counts;
  for (int at = 0; at < rows.size(); ++at)
    counts.emplace_back(rows.text(at, 0), rows.integer(at, 1));
  return counts;
}

std::vector<LiveTaskCount> PgTransaction::live_task_counts() {
  const auto rows = db_.run(kLiveTaskCounts);
  std::vector<LiveTaskCount> counts;
  for (int at = 0; at < rows.size(); ++at)
    counts.push_back(
        {rows.text(at, 0), rows.text(at, 1), rows.integer(at, 2), rows.integer(at, 3)});
  return counts;
}

std::vector<TaskRow> PgTransaction::newest_tasks(std::size_t limit) {
  return pg::task_rows(db_.run(std::string("SELECT ") + pg::kTaskColumns + kNewestTasks,
                               pg::Params().integer(static_cast<std::int64_t>(limit))));
}

std::vector<EventRecord> PgTransaction::task_events(const std::string& task_id, std::int64_t after,
                                                    std::size_t limit) {
  return pg::event_rows(settled_page(
      "SELECT event_id, event_type, agent_id, payload_json, created_at, task_id FROM task_events "
      "WHERE task_id=$1 AND event_id>$2 ORDER BY event_id LIMIT $3",
      "event_id", 0,
      pg::Params().text(task_id).integer(after).integer(static_cast<std::int64_t>(limit))));
}

namespace pg {
namespace {

// A resolution's event, its identity bound to $1..$5 as resolution_params binds it. The payload
// is canonical JSON written by append_event; ->> reads a member as SQLite's json_extract does
// (NULL for JSON null and for a missing member alike).
constexpr const char* kResolutionEvent =
    "SELECT 1 FROM task_events WHERE task_id=$1 AND "
    "event_type='BRIDGE_ENVELOPE_RESOLVED' AND agent_id=$2 AND "
    "(payload_json::jsonb->>'attempt') IS NOT DISTINCT FROM $3 AND "
    "(payload_json::jsonb->>'worker_id') IS NOT DISTINCT FROM $4 AND "
    "(payload_json::jsonb->>'execution_digest')=$5";

Params resolution_params(const Resolution& resolution) {
  Params params;
  params.text(resolution.task_id)
      .text(resolution.actor)
      .integer(resolution.attempt)
      .optional(resolution.worker_id)
      .text(resolution.execution_digest);
  return params;
}

}  // namespace
}  // namespace pg

bool PgTransaction::resolution_recorded(const Resolution& resolution) {
  return !db_.run(std::string(pg::kResolutionEvent) + " LIMIT 1", pg::resolution_params(resolution))
              .empty();
}

void PgTransaction::record_resolution(const Resolution& resolution, const nlohmann::json& payload,
                                      const std::string& created_at) {
  auto params = pg::resolution_params(resolution);
  take_transaction_id();
  db_.send(std::string("INSERT INTO task_events(task_id,event_type,agent_id,payload_json,"
                       "created_at) SELECT $1,'BRIDGE_ENVELOPE_RESOLVED',$2,$6,$7 "
                       "WHERE NOT EXISTS (") +
               pg::kResolutionEvent + ")",
           params.text(canonical_json(payload)).text(created_at));
}

bool PgTransaction::event_recorded(const std::string& task_id, const std::string& event_type,
                                   const nlohmann::json& payload) {
  return !db_.run(
                 "SELECT 1 FROM task_events WHERE task_id=$1 AND event_type=$2 AND "
                 "payload_json=$3 LIMIT 1",
                 pg::Params().text(task_id).text(event_type).text(canonical_json(payload)))
              .empty();
}

}  // namespace aios::store
