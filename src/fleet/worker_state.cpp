#include <algorithm>

#include "aios/canonical.hpp"
#include "aios/capability.hpp"
#include "fleet/internal.hpp"

namespace aios::fleet {
namespace {

// Open: no claim until the cooldown ends; then half-open: one probe claim at a time.
bool circuit_blocks(const WorkerState& worker, double now) {
  return worker.circuit_state == "OPEN" && (now < worker.circuit_open_until || worker.probes > 0);
}

WorkerState state_of(const store::WorkerRecord& record) {
  WorkerState state;
  static_cast<store::WorkerRecord&>(state) = record;
  state.effective = normalize_worker_capabilities(nlohmann::json(record.capabilities));
  return state;
}

}  // namespace

std::string tenant_of(const std::string& scope_key) {
  // scope keys: "global", "tenant:<t>", "project:<t>/<p>"
  const auto colon = scope_key.find(':');
  if (colon == std::string::npos) return {};
  const auto rest = scope_key.substr(colon + 1);
  return rest.substr(0, rest.find('/'));
}

std::optional<WorkerState> load_worker(store::Transaction& tx, const std::string& worker_id,
                                       double now) {
  const auto record = tx.load_worker(worker_id, now);
  if (!record) return std::nullopt;
  return state_of(*record);
}

std::optional<WorkerState> load_claimant(store::Transaction& tx, const std::string& worker_id,
                                         double now) {
  const auto record = tx.load_claimant(worker_id, now);
  if (!record) return std::nullopt;
  return state_of(*record);
}

std::vector<WorkerState> load_workers(store::Transaction& tx, double now) {
  std::vector<WorkerState> workers;
  for (const auto& record : tx.load_workers(now)) workers.push_back(state_of(record));
  return workers;
}

TaskFacts facts_of(const store::TaskRow& row) {
  TaskFacts facts{.adapter = row.adapter, .execution_digest = row.execution_digest, .required = {}};
  if (!row.capability_scope) return facts;
  try {
    facts.required = normalize_required_capabilities(nlohmann::json(*row.capability_scope));
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
  if (!contains(worker.allowed_adapters, facts.adapter)) {
    reasons.emplace_back("adapter_not_allowed");
  }
  if (!worker.tenants.empty() && !contains(worker.tenants, tenant_of(task.scope_key))) {
    reasons.emplace_back("scope");
  }
  if (worker.stopped_at != 0) {
    reasons.emplace_back("stopped");
  } else if (now - worker.last_seen > static_cast<double>(options.worker_online_window.count())) {
    reasons.emplace_back("offline");
  }
  if (worker.quarantined) reasons.emplace_back("worker_quarantined");
  if (quarantined_task) reasons.emplace_back("task_quarantined");
  if (circuit_blocks(worker, now)) reasons.emplace_back("circuit_open");
  if (worker.used_slots >= worker.max_slots) reasons.emplace_back("no_free_slot");
  return reasons;
}

bool open_for_claims(const WorkerState& worker, double now) {
  return !worker.quarantined && !circuit_blocks(worker, now) &&
         worker.used_slots < worker.max_slots;
}

ErrorCode reason_code(const std::string& reason) {
  if (reason == "capability_missing") return ErrorCode::WORKER_CAPABILITY_MISSING;
  if (reason == "adapter_not_allowed") return ErrorCode::WORKER_ADAPTER_NOT_ALLOWED;
  if (reason == "scope") return ErrorCode::WORKER_SCOPE_DENY;
  if (reason == "offline" || reason == "stopped") return ErrorCode::WORKER_OFFLINE;
  if (reason == "worker_quarantined") return ErrorCode::FLEET_WORKER_QUARANTINED;
  if (reason == "task_quarantined") return ErrorCode::FLEET_TASK_QUARANTINED;
  if (reason == "circuit_open") return ErrorCode::FLEET_WORKER_CIRCUIT_OPEN;
  return ErrorCode::FLEET_WORKER_CAPACITY_EXHAUSTED;
}

void note_worker_failure(store::Transaction& tx, const std::string& worker_id, double now,
                         int threshold, std::chrono::seconds cooldown) {
  tx.note_worker_failure(worker_id, now, threshold, now + static_cast<double>(cooldown.count()));
}

std::int64_t append_events(const std::vector<store::EventRecord>& events, bool with_task,
                           nlohmann::json& out, std::int64_t last) {
  for (const auto& event : events) {
    nlohmann::json view = {{"event_id", event.event_id}};
    if (with_task) view["task_id"] = event.task_id;
    view["event_type"] = event.event_type;
    view["agent_id"] = event.agent_id;
    view["payload"] = task::parse_column(event.payload_json, nlohmann::json::object());
    view["created_at"] = event.created_at;
    out.push_back(std::move(view));
    last = event.event_id;
  }
  return last;
}

nlohmann::json view_of(const store::TaskRow& row) {
  nlohmann::json view = task::parse_column(row.task_json, nlohmann::json::object());
  view["metadata"] = task::parse_column(row.metadata_json, nlohmann::json::object());
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
      task::parse_column(row.required_capabilities_json, nlohmann::json::array());
  // Looked up, not copied out with value(): the envelope is most of the view.
  nlohmann::json digest;
  const auto& metadata = view["metadata"];
  if (const auto execution = metadata.find("execution"); execution != metadata.end()) {
    digest = execution->value("execution_digest", nlohmann::json());
  }
  view["execution_digest"] = digest;
  view["result"] = task::parse_column(row.result_json, nlohmann::json());
  view["verification"] = task::parse_column(row.verification_json, nlohmann::json());
  view["created_at"] = null_if_empty(row.created_at);
  view["updated_at"] = null_if_empty(row.updated_at);
  // Ours: left out until the owner first requeues the task, so the seed's view stays as it was.
  if (row.requeues > 0) view["requeues"] = row.requeues;
  return view;
}

}  // namespace aios::fleet
