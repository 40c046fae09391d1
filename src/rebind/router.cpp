#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/log.hpp"
#include "aios/rebind.hpp"

namespace aios {
namespace {

using envelope::fail;

constexpr std::string_view kTasksPrefix = "/v1/tasks/";
constexpr std::string_view kRebindSuffix = "/execution-rebind";

// The {task_id} of /v1/tasks/{task_id}/execution-rebind, matched against the raw target as the
// seed matches self.path (so a query string is no match); empty when it is not this route.
std::string_view rebind_task_id(std::string_view target) {
  if (target.size() <= kTasksPrefix.size() + kRebindSuffix.size() ||
      !target.starts_with(kTasksPrefix) || !target.ends_with(kRebindSuffix)) {
    return {};
  }
  const auto id = target.substr(kTasksPrefix.size(),
                                target.size() - kTasksPrefix.size() - kRebindSuffix.size());
  return id.find('/') == std::string_view::npos ? id : std::string_view();
}

}  // namespace

ExecutionRebindApi::ExecutionRebindApi(ExecutionRebindStore& store, http::OwnerToken owner)
    : store_(store), owner_(std::move(owner)) {}

bool ExecutionRebindApi::admits(const http::Request& request) const {
  return owner_.admits(request);
}

http::Response ExecutionRebindApi::handle(const http::Request& request) {
  try {
    return route(request);
  } catch (const Error& error) {
    return http::error_response(error);
  }
}

http::Response ExecutionRebindApi::route(const http::Request& request) {
  if (request.method == "GET" && request.target == "/health") {
    return http::json_response(200,
                               {{"service", "aios-agent-task-execution-rebind"}, {"status", "ok"}});
  }
  const auto task_id = request.method == "POST" ? rebind_task_id(request.target) : "";
  if (task_id.empty()) fail(ErrorCode::NOT_FOUND);
  if (!owner_.matches(request)) fail(ErrorCode::UNAUTHORIZED);
  if (request.body.empty() || request.body.size() > kExecutionRebindMaxBodyBytes) {
    fail(ErrorCode::REQUEST_SIZE_INVALID);
  }
  return rebind(request, task_id);
}

http::Response ExecutionRebindApi::rebind(const http::Request& request, std::string_view task_id) {
  const auto body = parse_json(request.body);
  if (!body.is_object()) fail(ErrorCode::REQUEST_INVALID);
  try {
    const auto result = store_.rebind(task_id, ExecutionRebindRequest::from_mapping(body));
    const bool idempotent = result.at("idempotent");
    log::info(idempotent ? "TASK_EXECUTION_REBIND_REPLAYED" : "TASK_EXECUTION_REBIND_APPLIED",
              {{"task_id", result.at("task_id")},
               {"revision", result.at("revision")},
               {"old_execution_digest", result.at("old_execution_digest")},
               {"new_execution_digest", result.at("new_execution_digest")},
               {"authorization_id", result.at("authorization_id")}});
    return http::json_response(idempotent ? 200 : 201, result);
  } catch (const Error& error) {
    // The path segment is logged only once it is a valid task id: nothing else from the
    // request reaches the log.
    log::warn("TASK_EXECUTION_REBIND_REFUSED",
              {{"task_id", envelope::is_task_id(task_id) ? std::string(task_id) : std::string()},
               {"error", error.code()},
               {"detail", error.detail()}});
    throw;
  }
}

}  // namespace aios
