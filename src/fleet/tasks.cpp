#include <algorithm>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/log.hpp"
#include "fleet/internal.hpp"

namespace aios {
namespace {

using envelope::fail;

std::string scope_key_of(const nlohmann::json& task) {
  const auto& type = task["scope_type"];
  if (type == "tenant") return "tenant:" + task["tenant_id"].get<std::string>();
  if (type == "project") {
    return "project:" + task["tenant_id"].get<std::string>() + "/" +
           task["project_id"].get<std::string>();
  }
  return "global";
}

// The seed's fleet_scope_weight: a number, clamped to [0.05, 100], default 1.
double scope_weight_of(const nlohmann::json& metadata) {
  const auto it = metadata.find("fleet_scope_weight");
  if (it == metadata.end()) return 1.0;
  // An integer past 64 bits is past either bound: only its sign matters.
  if (const auto exact = exact_integer_text(*it)) return exact->front() == '-' ? 0.05 : 100.0;
  if (!it->is_number()) return 1.0;
  return std::clamp(it->get<double>(), 0.05, 100.0);
}

bool readable_by(store::Transaction& tx, const store::TaskRow& row, const Agent* reader) {
  if (reader == nullptr) return true;
  if (row.claimed_by.empty()) return false;
  return task::worker_belongs_to(tx, row.claimed_by, reader->agent_id);
}

}  // namespace

fleet::TaskSubmission fleet::task_submission_of(const nlohmann::json& body) {
  if (!body.is_object()) fail(ErrorCode::REQUEST_INVALID);
  const auto binding_it = body.find("binding");
  if (binding_it == body.end()) fail(ErrorCode::BINDING_INVALID);
  const auto binding = GovernedBinding::from_mapping(*binding_it);
  nlohmann::json task_request = body;
  task_request.erase("binding");
  nlohmann::json execution_request = nlohmann::json::object();
  if (const auto it = task_request.find("execution"); it != task_request.end()) {
    execution_request = *it;
    task_request.erase(it);
  }
  // The id is part of the request so a replay is recognized before projection work is stored.
  if (!task_request.contains("task_id")) fail(ErrorCode::TASK_BINDING_MISMATCH);
  const auto projected = project_online_task(binding, task_request, execution_request);
  TaskSubmission task{.row = {}, .execution = projected["metadata"]["execution"]};
  const auto& execution = task.execution;
  auto& row = task.row;
  row.task_id = binding.task_id;
  row.status = "QUEUED";
  row.attempt = 0;
  row.max_attempts = projected["max_attempts"];
  row.revision = 1;
  row.metadata_json = canonical_json(projected["metadata"]);
  row.required_capabilities_json = canonical_json(projected["required_capabilities"]);
  row.capability_scope = execution["capability_scope"].get<store::Names>();
  row.job_id = binding.job_id;
  row.action = execution["action"];
  row.adapter = execution["adapter"];
  row.execution_digest = execution["execution_digest"];
  row.priority = projected["priority"];
  row.scope_key = scope_key_of(projected);
  row.scope_weight = scope_weight_of(projected["metadata"]);
  nlohmann::json document = projected;
  document.erase("metadata");
  row.task_json = canonical_json(document);
  row.request_sha256 = digest(body);
  return task;
}

fleet::NewTask fleet::new_task(const TaskSubmission& task, const resolution::Resolver* resolver,
                               TimePoint now) {
  NewTask out{.row = task.row, .unresolvable = std::nullopt};
  out.row.created_at = out.row.updated_at = format_iso8601(now);
  // Resolved as a claim would, outside the write: a task that could never run is refused
  // before anything is stored, unless it is the identical replay of one stored earlier.
  if (resolver != nullptr) {
    try {
      resolver->check_resolvable(out.row, task.execution);
    } catch (const Error& error) {
      out.unresolvable = error;
    }
  }
  return out;
}

std::pair<int, nlohmann::json> fleet::store_new_task(store::Transaction& tx, const NewTask& task) {
  const auto& row = task.row;
  if (const auto existing = tx.load_task(row.task_id)) {
    if (existing->request_sha256 != row.request_sha256) fail(ErrorCode::TASK_ALREADY_EXISTS);
    return {200, view_of(*existing)};
  }
  if (task.unresolvable) throw *task.unresolvable;
  tx.insert_task(row);
  tx.append_event(row.task_id, "TASK_CREATED", "owner-control",
                  {{"execution_digest", row.execution_digest},
                   {"action", row.action},
                   {"adapter", row.adapter},
                   {"revision", row.revision}},
                  row.created_at);
  return {201, view_of(*tx.load_task(row.task_id))};
}

std::pair<int, nlohmann::json> TaskPlane::create_task(const fleet::TaskSubmission& submission) {
  const auto task = fleet::new_task(submission, resolver_, store_.now());
  std::pair<int, nlohmann::json> answer;
  store_.write([&](store::Transaction& tx) { answer = fleet::store_new_task(tx, task); });
  if (answer.first == 201) queue_changed();
  return answer;
}

nlohmann::json TaskPlane::task_view(const std::string& task_id, const Agent* reader) {
  nlohmann::json view;
  store_.read([&](store::Transaction& tx) {
    const auto row = tx.load_task(task_id);
    if (!row || !readable_by(tx, *row, reader)) fail(ErrorCode::TASK_NOT_FOUND);
    view = fleet::view_of(*row);
  });
  return view;
}

nlohmann::json TaskPlane::list_tasks(const store::TaskFilter& filter, std::size_t limit,
                                     std::int64_t after) {
  // A filter no task could match would only ever list nothing: say so instead.
  if (!filter.status.empty() && !store::is_task_status(filter.status)) {
    fail(ErrorCode::TASK_STATUS_INVALID);
  }
  if (!filter.tenant.empty() && !envelope::is_identifier(filter.tenant, "._:-", 0, 127)) {
    fail(ErrorCode::TASK_TENANT_INVALID);
  }
  if (!filter.id_prefix.empty() && !envelope::is_identifier(filter.id_prefix, "._:-", 0, 179)) {
    fail(ErrorCode::TASK_ID_PREFIX_INVALID);
  }
  nlohmann::json tasks = nlohmann::json::array();
  std::int64_t last = after;
  store_.read([&](store::Transaction& tx) {
    for (const auto& row : tx.tasks_matching(filter, after, limit)) {
      tasks.push_back(fleet::view_of(row));
      last = row.seq;
    }
  });
  return {{"tasks", tasks}, {"next_after", last}};
}

nlohmann::json TaskPlane::task_events(const std::string& task_id, const Agent* reader,
                                      std::size_t limit, std::int64_t after) {
  nlohmann::json events = nlohmann::json::array();
  std::int64_t last = after;
  store_.read([&](store::Transaction& tx) {
    const auto row = tx.load_task(task_id);
    if (!row || !readable_by(tx, *row, reader)) fail(ErrorCode::TASK_NOT_FOUND);
    last = fleet::append_events(tx.task_events(task_id, after, limit), false, events, after);
  });
  return {{"task_id", task_id}, {"events", events}, {"next_after", last}};
}

nlohmann::json TaskPlane::events_feed(std::size_t limit, std::int64_t after) {
  nlohmann::json events = nlohmann::json::array();
  std::int64_t last = after;
  store_.read([&](store::Transaction& tx) {
    last = fleet::append_events(tx.events_after(after, limit), true, events, after);
  });
  return {{"events", events}, {"next_after", last}};
}

nlohmann::json TaskPlane::prune(const fleet::PruneRequest& request) {
  // Terminal tasks pruned per transaction: a large backlog goes in bounded steps, each durable.
  static constexpr std::size_t kBatch = 500;
  const std::string before = format_iso8601(store_.now() - request.older_than);
  std::size_t pruned = 0;
  for (;;) {
    std::size_t batch = 0;
    store_.write(
        [&](store::Transaction& tx) { batch = tx.prune_terminal_tasks(before, kBatch).size(); });
    pruned += batch;
    if (batch < kBatch) break;
  }
  log::info("TASKS_PRUNED", {{"pruned_tasks", pruned}, {"before", before}});
  return {{"pruned_tasks", pruned}, {"before", before}};
}

nlohmann::json TaskPlane::store_status() {
  nlohmann::json tasks = nlohmann::json::object();
  std::string integrity;
  std::size_t workers = 0;
  std::int64_t last_event = 0;
  const double now = to_epoch_seconds(store_.now());
  store_.read([&](store::Transaction& tx) {
    for (const auto& [status, count] : tx.status_counts()) tasks[status] = count;
    integrity = tx.integrity();
    workers = tx.load_workers(now).size();
    last_event = tx.last_event_id();
  });
  return {{"backend", store_.backend()}, {"schema_version", store_.schema_version()},
          {"integrity", integrity},      {"tasks", tasks},
          {"workers", workers},          {"last_event_id", last_event}};
}

std::vector<std::pair<std::string, std::int64_t>> TaskPlane::status_counts() {
  std::vector<std::pair<std::string, std::int64_t>> counts;
  store_.read([&](store::Transaction& tx) { counts = tx.status_counts(); });
  return counts;
}

}  // namespace aios
