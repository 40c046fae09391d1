#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>

#include "aios/canonical.hpp"
#include "aios/capability.hpp"
#include "fleet/internal.hpp"

namespace aios::fleet {
namespace {

constexpr const char* kWorkerSelect =
    "SELECT w.worker_id, w.agent_id, w.capabilities_json, w.allowed_adapters_json, "
    "w.labels_json, w.tenants_json, w.last_seen_at, COALESCE(c.max_slots, 1), "
    "COALESCE(c.failure_domain, ''), COALESCE(c.circuit_state, 'CLOSED'), "
    "COALESCE(c.circuit_open_until, 0), COALESCE(c.consecutive_failures, 0), "
    "COALESCE(c.quarantined, 0), "
    "(SELECT COUNT(*) FROM claims k WHERE k.worker_id=w.worker_id AND k.status='ACTIVE' "
    "   AND k.lease_expires_at>?1) + "
    "(SELECT COUNT(*) FROM fleet_dispatches d WHERE d.worker_id=w.worker_id "
    "   AND d.state='RESERVED' AND d.reserved_until>?1), "
    "(SELECT COUNT(*) FROM fleet_dispatches d WHERE d.worker_id=w.worker_id "
    "   AND d.state='CLAIMED' AND d.created_at>=COALESCE(c.circuit_open_until, 0)) "
    "FROM workers w LEFT JOIN fleet_worker_capacity c ON c.worker_id=w.worker_id";

WorkerState read_worker(SQLite::Statement& query) {
  WorkerState state;
  state.worker_id = query.getColumn(0).getString();
  state.agent_id = query.getColumn(1).getString();
  const auto empty = nlohmann::json::array();
  state.capabilities = parse_column(query.getColumn(2).getString(), empty);
  state.effective = normalize_worker_capabilities(state.capabilities);
  for (const auto& adapter : parse_column(query.getColumn(3).getString(), empty)) {
    state.allowed_adapters.insert(adapter.get<std::string>());
  }
  state.labels = parse_column(query.getColumn(4).getString(), nlohmann::json::object());
  for (const auto& tenant : parse_column(query.getColumn(5).getString(), empty)) {
    state.tenants.insert(tenant.get<std::string>());
  }
  state.last_seen = query.getColumn(6).getDouble();
  state.max_slots = query.getColumn(7).getInt64();
  state.failure_domain = query.getColumn(8).getString();
  state.circuit_state = query.getColumn(9).getString();
  state.circuit_open_until = query.getColumn(10).getDouble();
  state.consecutive_failures = query.getColumn(11).getInt64();
  state.quarantined = query.getColumn(12).getInt() != 0;
  state.used_slots = query.getColumn(13).getInt64();
  state.probes = query.getColumn(14).getInt64();
  return state;
}

std::string tenant_of(const std::string& scope_key) {
  // scope keys: "global", "tenant:<t>", "project:<t>/<p>"
  const auto colon = scope_key.find(':');
  if (colon == std::string::npos) return {};
  const auto rest = scope_key.substr(colon + 1);
  return rest.substr(0, rest.find('/'));
}

}  // namespace

std::optional<WorkerState> load_worker(SQLite::Database& db, const std::string& worker_id,
                                       double now) {
  store::Prepared query(db, std::string(kWorkerSelect) + " WHERE w.worker_id=?2");
  query->bind(1, now);
  query->bind(2, worker_id);
  if (!query->executeStep()) return std::nullopt;
  return read_worker(*query);
}

std::vector<WorkerState> load_workers(SQLite::Database& db, double now) {
  store::Prepared query(db, std::string(kWorkerSelect) + " ORDER BY w.worker_id");
  query->bind(1, now);
  std::vector<WorkerState> workers;
  while (query->executeStep()) workers.push_back(read_worker(*query));
  return workers;
}

bool task_quarantined(SQLite::Database& db, const std::string& task_id,
                      const std::string& worker_id, double now) {
  store::Prepared query(db,
                        "SELECT 1 FROM fleet_task_quarantine WHERE task_id=? AND worker_id=? "
                        "AND quarantined_until>?");
  query->bind(1, task_id);
  query->bind(2, worker_id);
  query->bind(3, now);
  return query->executeStep();
}

TaskFacts TaskFactsCache::get(const store::TaskRow& row) {
  const auto key = std::make_pair(row.task_id, row.revision);
  {
    std::lock_guard lock(mutex_);
    if (const auto it = facts_.find(key); it != facts_.end()) return it->second;
  }
  TaskFacts facts;
  const auto execution = execution_of(row);
  facts.adapter = execution.value("adapter", "");
  facts.execution_digest = execution.value("execution_digest", "");
  try {
    facts.required = normalize_required_capabilities(
        execution.value("capability_scope", nlohmann::json::array()));
  } catch (const Error&) {
    facts.required.clear();
  }
  // An unknown requirement can never be held: keep the scope unusable rather than partial.
  for (const auto& name : facts.required) {
    if (name.starts_with(kUnknownCapabilityPrefix)) {
      facts.required.clear();
      break;
    }
  }
  std::lock_guard lock(mutex_);
  if (facts_.size() > 200000) facts_.clear();  // a bound, not an eviction policy
  facts_.emplace(key, facts);
  return facts;
}

std::shared_ptr<const std::string> TaskViewCache::get(const store::TaskRow& row) {
  {
    std::lock_guard lock(mutex_);
    if (const auto it = views_.find(row.task_id); it != views_.end() && it->second.row == row) {
      return it->second.text;
    }
  }
  auto text = std::make_shared<const std::string>(canonical_json(view_of(row)));
  std::lock_guard lock(mutex_);
  // A bound, not an eviction policy: a poll reads the head of the queue, which stays put
  // between transitions, so any entry may go and is rebuilt when it is read again.
  if (views_.size() >= kMaxEntries && !views_.contains(row.task_id)) views_.erase(views_.begin());
  views_.insert_or_assign(row.task_id, Entry{row, text});
  return text;
}

std::size_t TaskViewCache::size() {
  std::lock_guard lock(mutex_);
  return views_.size();
}

std::vector<std::string> ineligibility_reasons(const WorkerState& worker,
                                               const store::TaskRow& task, const TaskFacts& facts,
                                               bool quarantined_task, double now,
                                               const TaskPlaneOptions& options) {
  std::vector<std::string> reasons;
  // An empty scope grants nothing to check against, so it fails closed.
  if (facts.required.empty() || !std::includes(worker.effective.begin(), worker.effective.end(),
                                               facts.required.begin(), facts.required.end())) {
    reasons.emplace_back("capability_missing");
  }
  if (!worker.allowed_adapters.contains(facts.adapter)) reasons.emplace_back("adapter_not_allowed");
  if (!worker.tenants.empty() && !worker.tenants.contains(tenant_of(task.scope_key))) {
    reasons.emplace_back("scope");
  }
  if (now - worker.last_seen > static_cast<double>(options.worker_online_window.count())) {
    reasons.emplace_back("offline");
  }
  if (worker.quarantined) reasons.emplace_back("worker_quarantined");
  if (quarantined_task) reasons.emplace_back("task_quarantined");
  // Open: no claim until the cooldown ends; then half-open: one probe claim at a time.
  if (worker.circuit_state == "OPEN" && (now < worker.circuit_open_until || worker.probes > 0)) {
    reasons.emplace_back("circuit_open");
  }
  if (worker.used_slots >= worker.max_slots) reasons.emplace_back("no_free_slot");
  return reasons;
}

ErrorCode reason_code(const std::string& reason) {
  if (reason == "capability_missing") return ErrorCode::WORKER_CAPABILITY_MISSING;
  if (reason == "adapter_not_allowed") return ErrorCode::WORKER_ADAPTER_NOT_ALLOWED;
  if (reason == "scope") return ErrorCode::WORKER_SCOPE_DENY;
  if (reason == "offline") return ErrorCode::WORKER_OFFLINE;
  if (reason == "worker_quarantined") return ErrorCode::FLEET_WORKER_QUARANTINED;
  if (reason == "task_quarantined") return ErrorCode::FLEET_TASK_QUARANTINED;
  if (reason == "circuit_open") return ErrorCode::FLEET_WORKER_CIRCUIT_OPEN;
  return ErrorCode::FLEET_WORKER_CAPACITY_EXHAUSTED;
}

void note_worker_failure(SQLite::Database& db, const std::string& worker_id, double now,
                         int threshold, std::chrono::seconds cooldown) {
  store::Prepared update(
      db,
      "UPDATE fleet_worker_capacity SET consecutive_failures=consecutive_failures+1, "
      "circuit_state=CASE WHEN consecutive_failures+1>=?1 THEN 'OPEN' ELSE circuit_state END, "
      "circuit_open_until=CASE WHEN consecutive_failures+1>=?1 THEN ?2 ELSE circuit_open_until "
      "END, updated_at=?3 WHERE worker_id=?4");
  update->bind(1, threshold);
  update->bind(2, now + static_cast<double>(cooldown.count()));
  update->bind(3, now);
  update->bind(4, worker_id);
  update->exec();
}

void note_worker_success(SQLite::Database& db, const std::string& worker_id, double now) {
  store::Prepared update(db,
                         "UPDATE fleet_worker_capacity SET consecutive_failures=0, "
                         "circuit_state='CLOSED', circuit_open_until=0, updated_at=? "
                         "WHERE worker_id=?");
  update->bind(1, now);
  update->bind(2, worker_id);
  update->exec();
}

std::set<std::string> tasks_failed_in_domain(SQLite::Database& db, const std::string& domain) {
  // Neither DISTINCT nor IN (...): the set drops repeats, and for either SQLite builds a
  // temporary b-tree (its own pager and page cache) on every call, which was 15% and then 5%
  // of a poll with 10,000 queued tasks. One index seek per state needs none.
  store::Prepared query(db,
                        "SELECT task_id FROM fleet_dispatches WHERE failure_domain=? AND state=?");
  std::set<std::string> tasks;
  for (const char* state : {"RELEASED", "EXPIRED"}) {
    query->bind(1, domain);
    query->bind(2, state);
    while (query->executeStep()) tasks.insert(query->getColumn(0).getString());
    query->reset();
  }
  return tasks;
}

void end_dispatch(SQLite::Database& db, const std::string& task_id, const std::string& state,
                  double now) {
  store::Prepared update(db,
                         "UPDATE fleet_dispatches SET state=?, updated_at=? WHERE task_id=? "
                         "AND state IN ('RESERVED','CLAIMED')");
  update->bind(1, state);
  update->bind(2, now);
  update->bind(3, task_id);
  update->exec();
}

void end_claim(SQLite::Database& db, const std::string& claim_id, const std::string& status,
               const std::string& now_iso) {
  store::Prepared update(
      db, "UPDATE claims SET status=?, ended_at=? WHERE claim_id=? AND status='ACTIVE'");
  update->bind(1, status);
  update->bind(2, now_iso);
  update->bind(3, claim_id);
  update->exec();
}

store::TaskRow load_existing_task(SQLite::Database& db, const std::string& task_id) {
  auto row = store::load_task(db, task_id);
  if (!row) throw Error(ErrorCode::TASK_NOT_FOUND);
  return std::move(*row);
}

bool worker_belongs_to(SQLite::Database& db, const std::string& worker_id,
                       const std::string& agent_id) {
  store::Prepared owner(db, "SELECT 1 FROM workers WHERE worker_id=? AND agent_id=?");
  owner->bind(1, worker_id);
  owner->bind(2, agent_id);
  return owner->executeStep();
}

nlohmann::json parse_column(const std::string& text, const nlohmann::json& fallback) {
  if (text.empty()) return fallback;
  // Rows come from bounded input, but whoever can write the database is not trusted with the
  // daemon's stack: the nesting bound holds here too.
  nlohmann::json value;
  try {
    value = parse_json(text);
  } catch (const Error&) {
    value = nlohmann::json(nlohmann::json::value_t::discarded);
  }
  if (value.is_discarded()) throw Error(ErrorCode::STORE_FAILURE, "a stored JSON column");
  return value;
}

nlohmann::json execution_of(const store::TaskRow& row) {
  const auto metadata = parse_column(row.metadata_json, nlohmann::json::object());
  const auto it = metadata.find("execution");
  return it == metadata.end() ? nlohmann::json::object() : *it;
}

nlohmann::json view_of(const store::TaskRow& row) {
  nlohmann::json view = parse_column(row.task_json, nlohmann::json::object());
  view["metadata"] = parse_column(row.metadata_json, nlohmann::json::object());
  const auto null_if_empty = [](const std::string& text) {
    return text.empty() ? nlohmann::json() : nlohmann::json(text);
  };
  view["task_id"] = row.task_id;
  view["status"] = row.status;
  view["attempt"] = row.attempt;
  view["max_attempts"] = row.max_attempts;
  view["revision"] = row.revision;
  view["claimed_by"] = null_if_empty(row.claimed_by);
  view["lease_expires_at"] = null_if_empty(row.lease_expires_at);
  view["priority"] = row.priority;
  view["required_capabilities"] =
      parse_column(row.required_capabilities_json, nlohmann::json::array());
  // Looked up, not copied out with value(): the envelope is most of the view.
  nlohmann::json digest;
  const auto& metadata = view["metadata"];
  if (const auto execution = metadata.find("execution"); execution != metadata.end()) {
    digest = execution->value("execution_digest", nlohmann::json());
  }
  view["execution_digest"] = digest;
  view["result"] = parse_column(row.result_json, nlohmann::json());
  view["verification"] = parse_column(row.verification_json, nlohmann::json());
  view["created_at"] = null_if_empty(row.created_at);
  view["updated_at"] = null_if_empty(row.updated_at);
  return view;
}

}  // namespace aios::fleet
