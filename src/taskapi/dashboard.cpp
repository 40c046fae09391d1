// GET /v1/dashboard: everything one look of the operator's page (/ui/) shows, in one request,
// so an open page costs the scheduler one request a second.
#include "aios/sys.hpp"
#include "aios/taskapi.hpp"
#include "aios/version.hpp"
#include "taskapi/query.hpp"

namespace aios {

http::Response TaskApi::dashboard(const http::Request& request) {
  TaskPlane::DashboardQuery query;
  query.recent = static_cast<std::size_t>(taskapi::query_int(request, "recent", 30, 1, 200));
  if (request.query.contains("after")) {
    query.events_after = taskapi::query_int(request, "after", 0, 0, INT64_MAX);
  }
  if (const auto task = request.query.find("task"); task != request.query.end()) {
    query.task_id = taskapi::task_id_of(task->second);
    query.task_events_after = taskapi::query_int(request, "task_after", 0, 0, INT64_MAX);
  }
  auto view = plane_.dashboard(query);
  identify(view);
  view["now"] = format_iso8601(std::chrono::system_clock::now());
  view["metrics"] = metrics_.snapshot();
  return http::json_response(200, view);
}

void TaskApi::identify(nlohmann::json& view) const {
  view["service"] = "aios-task-scheduler";
  view["version"] = kVersion;
  view["leader"] = metrics_.leader();
}

}  // namespace aios
