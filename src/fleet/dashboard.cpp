// The dashboard's view of the task plane (GET /v1/dashboard): counts, the live queue, the newest
// tasks as summaries and the event feed, read in one transaction so the figures agree.
#include <algorithm>

#include "fleet/internal.hpp"

namespace aios {
namespace {

// The events a first look at the feed shows, and the most one later look returns.
constexpr std::int64_t kFirstEvents = 50;
constexpr std::size_t kMaxEvents = 200;
// The events of the task's timeline one answer carries.
constexpr std::size_t kTaskEvents = 500;

// What a row of the recent tasks shows; the whole view (goal, envelope, result) is the task's
// own page, so a second's poll does not carry every task's envelope.
nlohmann::json summary_of(const store::TaskRow& row) {
  return {{"task_id", row.task_id},       {"status", row.status},
          {"attempt", row.attempt},       {"max_attempts", row.max_attempts},
          {"revision", row.revision},     {"priority", row.priority},
          {"scope_key", row.scope_key},   {"tenant", fleet::tenant_of(row.scope_key)},
          {"action", row.action},         {"adapter", row.adapter},
          {"claimed_by", row.claimed_by}, {"execution_digest", row.execution_digest},
          {"created_at", row.created_at}, {"updated_at", row.updated_at}};
}

}  // namespace

nlohmann::json TaskPlane::dashboard(const DashboardQuery& query) {
  nlohmann::json view = {{"tasks", nlohmann::json::object()},
                         {"queue", nlohmann::json::array()},
                         {"recent", nlohmann::json::array()},
                         {"events", nlohmann::json::array()}};
  std::int64_t last = 0;
  store_.read([&](store::Transaction& tx) {
    for (const auto& [status, count] : tx.status_counts()) view["tasks"][status] = count;
    for (const auto& live : tx.live_task_counts()) {
      view["queue"].push_back({{"status", live.status},
                               {"scope_key", live.scope_key},
                               {"tenant", fleet::tenant_of(live.scope_key)},
                               {"priority", live.priority},
                               {"count", live.count}});
    }
    for (const auto& row : tx.newest_tasks(query.recent)) view["recent"].push_back(summary_of(row));
    last = query.events_after ? *query.events_after
                              : std::max<std::int64_t>(0, tx.last_event_id() - kFirstEvents);
    last = fleet::append_events(tx.events_after(last, kMaxEvents), true, view["events"], last);
  });
  view["next_after"] = last;
  view["backend"] = store_.backend();
  view["fleet"] = fleet_view();
  if (!query.task_id.empty()) {
    nlohmann::json task;
    store_.read([&](store::Transaction& tx) {
      const auto row = task::load(tx, query.task_id);
      task["view"] = fleet::view_of(row);
      // Heartbeats leave no event (they make no revision); each advances the lease generation.
      task["heartbeats"] = row.lease_generation;
      task["events"] = nlohmann::json::array();
      task["next_after"] =
          fleet::append_events(tx.task_events(query.task_id, query.task_events_after, kTaskEvents),
                               false, task["events"], query.task_events_after);
    });
    task["eligibility"] = eligibility(query.task_id);
    view["task"] = std::move(task);
  }
  return view;
}

}  // namespace aios
