#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <vector>

#include "aios/envelope.hpp"
#include "aios/log.hpp"
#include "aios/taskapi.hpp"
#include "aios/ui.hpp"
#include "taskapi/query.hpp"

namespace aios {
namespace {

using envelope::fail;

std::vector<std::string_view> segments_of(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    if (path.front() == '/') {
      path.remove_prefix(1);
      continue;
    }
    const auto slash = path.find('/');
    parts.push_back(path.substr(0, slash));
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
  }
  return parts;
}

http::Response ok(const nlohmann::json& body) {
  return http::json_response(200, body);
}

}  // namespace

namespace taskapi {

std::string task_id_of(std::string_view text) {
  if (!envelope::is_task_id(text)) fail(ErrorCode::TASK_NOT_FOUND);
  return std::string(text);
}

std::int64_t query_int(const http::Request& request, const char* name, std::int64_t fallback,
                       std::int64_t min, std::int64_t max) {
  const auto it = request.query.find(name);
  if (it == request.query.end()) return fallback;
  std::int64_t value = 0;
  const auto& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    fail(ErrorCode::LIMIT_INVALID);
  }
  return value;
}

}  // namespace taskapi

using taskapi::query_int;
using taskapi::task_id_of;

TaskApi::TaskApi(TaskPlane& plane, http::OwnerToken owner, TaskApiMetrics& metrics,
                 fleet::ClaimResolver* resolver, std::chrono::milliseconds claim_recheck)
    : plane_(plane),
      owner_(std::move(owner)),
      metrics_(metrics),
      resolver_(resolver),
      waiters_(plane, resolver, claim_recheck, [this] { metrics_.count_empty_wakeup(); }) {
  plane_.on_queue_change([this](const TaskPlane::QueueChange& change) {
    if (change.worker_id.empty()) {
      waiters_.notify(change.claims);
    } else {
      waiters_.notify_worker(change.worker_id);
    }
  });
}

TaskApi::~TaskApi() {
  plane_.on_queue_change(nullptr);
}

void TaskApi::wake_waiters() {
  waiters_.notify();
}

void TaskApi::stop_waiting() {
  waiters_.stop();
}

bool TaskApi::admits(const http::Request& request) {
  if (owner_.admits(request)) return true;
  try {
    return plane_.authenticate_agent(request).has_value();
  } catch (const Error&) {
    return false;  // a certificate refusal: the body is not read either
  }
}

http::Response TaskApi::handle(const http::Request& request) {
  const auto started = std::chrono::steady_clock::now();
  std::string route_name = "unknown";
  http::Response response;
  try {
    response = route(request, route_name);
  } catch (const Error& error) {
    response = http::error_response(error);
  }
  // A long poll is observed when it is answered (claim_next).
  if (!response.later) {
    metrics_.observe(route_name, response.status, std::chrono::steady_clock::now() - started);
  }
  return response;
}

http::Response TaskApi::result(const Agent& agent, const std::string& task_id,
                               nlohmann::json body) {
  // "claim_next": {worker_id} also claims the worker's next task once the result is durable,
  // so a busy worker needs one request between two jobs. Checked before the result is.
  std::string next_worker;
  if (const auto next = body.find("claim_next"); next != body.end()) {
    if (!next->is_object()) fail(ErrorCode::REQUEST_FIELDS_INVALID);
    envelope::require_exact_keys(*next, {"worker_id"}, ErrorCode::REQUEST_FIELDS_INVALID);
    next_worker = fleet::worker_id_of(*next);
    body.erase(next);
  }
  if (next_worker.empty()) {
    auto [status, response] = plane_.submit_result(agent, task_id, body);
    if (status == 201) metrics_.count_result();
    return http::json_response(status, response);
  }
  auto out = plane_.submit_result_then_claim(agent, task_id, body, next_worker, resolver_);
  if (out.status == 201) metrics_.count_result();
  // The result stands whatever the claim met; the worker hears of a refusal at its next
  // claim-next.
  if (out.claim_error) {
    try {
      std::rethrow_exception(out.claim_error);
    } catch (const Error& error) {
      log::warn("RESULT_CLAIM_NEXT_REFUSED", {{"worker_id", next_worker}, {"error", error.code()}});
    }
  }
  if (out.claim) metrics_.count_claim();
  out.response["claim"] = out.claim ? std::move(*out.claim) : nlohmann::json(nullptr);
  return http::json_response(out.status, out.response);
}

http::Response TaskApi::claim_next(const Agent& agent, const nlohmann::json& body) {
  envelope::require_known_keys(body, {"worker_id", "wait_ms"}, ErrorCode::REQUEST_FIELDS_INVALID);
  const std::string id = fleet::worker_id_of(body);
  static const nlohmann::json kNoWait = 0;
  const auto wait_ms = envelope::require_int(envelope::get_or(body, "wait_ms", kNoWait), 0,
                                             kMaxClaimWaitMs, ErrorCode::CLAIM_WAIT_INVALID);
  const auto answer = [this](std::optional<nlohmann::json> claim) {
    if (claim) metrics_.count_claim();
    return http::json_response(200,
                               {{"claim", claim ? std::move(*claim) : nlohmann::json(nullptr)}});
  };
  const auto seen = waiters_.version();
  auto claim = plane_.claim_next(agent, id, resolver_);
  if (claim || wait_ms == 0) return answer(std::move(claim));
  const auto started = std::chrono::steady_clock::now();
  auto later = std::make_shared<http::Later>();
  waiters_.wait(
      agent, id, started + std::chrono::milliseconds(wait_ms), seen,
      [later] { return later->abandoned(); },
      [this, later, answer, started](std::optional<nlohmann::json> found, const Error* error) {
        auto response = error != nullptr ? http::error_response(*error) : answer(std::move(found));
        metrics_.observe("tasks_claim_next", response.status,
                         std::chrono::steady_clock::now() - started, true);
        later->complete(std::move(response));
      });
  http::Response response;
  response.later = std::move(later);
  return response;
}

http::Response TaskApi::route(const http::Request& request, std::string& route_name) {
  const auto parts = segments_of(request.path);
  const std::string& method = request.method;
  const auto n = parts.size();
  if (n == 1 && parts[0] == "health" && method == "GET") {
    route_name = "health";
    return ok({{"status", "ok"},
               {"service", "aios-task-scheduler"},
               {"store", metrics_.store_backend()},
               {"leader", metrics_.leader()}});
  }
  if (n == 1 && parts[0] == "metrics" && method == "GET") {
    route_name = "metrics";
    // Fleet figures are for the host's own scrapers, or the owner.
    if (!http::is_loopback_address(request.remote_address) && !owner_.matches(request)) {
      fail(ErrorCode::FORBIDDEN);
    }
    http::Response response;
    response.content_type = "text/plain; version=0.0.4";
    response.body = metrics_.render(plane_.status_counts());
    return response;
  }
  if (n >= 1 && parts[0] == "ui" && method == "GET") {
    // The page and its files are the same for everyone; what it shows needs the owner token.
    route_name = "ui";
    if (auto page = ui::file(request.path)) return std::move(*page);
  }
  if (n < 2 || parts[0] != "v1") fail(ErrorCode::NOT_FOUND);

  // Roles: the control token is the owner; any other token must be an issued agent token.
  const bool owner = owner_.matches(request);
  std::optional<Agent> agent;
  if (!owner) {
    agent = plane_.authenticate_agent(request);
    if (!agent) fail(ErrorCode::UNAUTHORIZED);
  }
  const auto need_owner = [&] {
    if (!owner) fail(ErrorCode::FORBIDDEN);
  };
  const auto need_agent = [&]() -> const Agent& {
    if (!agent) fail(ErrorCode::FORBIDDEN);
    return *agent;
  };
  const Agent* reader = owner ? nullptr : &*agent;

  if (parts[1] == "agents" && n == 2 && method == "POST") {
    route_name = "agents";
    need_owner();
    return http::json_response(201, plane_.create_agent(http::json_object_body(request)));
  }
  if (parts[1] == "agents" && n == 4 && method == "POST" && parts[3] == "client-certificate") {
    route_name = "agent_certificate";
    need_owner();
    return ok(
        plane_.bind_agent_certificate(std::string(parts[2]), http::json_object_body(request)));
  }
  if (parts[1] == "agents" && n == 4 && method == "POST" &&
      (parts[3] == "revoke" || parts[3] == "rotate")) {
    route_name = parts[3] == "revoke" ? "agent_revoke" : "agent_rotate";
    need_owner();
    const std::string agent_id(parts[2]);
    return ok(parts[3] == "revoke" ? plane_.revoke_agent_token(agent_id)
                                   : plane_.rotate_agent_token(agent_id));
  }
  if (parts[1] == "workers" && n == 3 && parts[2] == "register" && method == "POST") {
    route_name = "workers_register";
    const Agent& caller = need_agent();
    return ok(plane_.register_worker(caller, http::json_object_body(request)));
  }
  if (parts[1] == "fleet") {
    if (n == 2 && method == "GET") {
      route_name = "fleet";
      need_owner();
      return ok(plane_.fleet_view());
    }
    if (n == 4 && parts[2] == "workers" && method == "PUT") {
      route_name = "fleet_worker";
      need_owner();
      return ok(plane_.configure_worker(std::string(parts[3]), http::json_object_body(request)));
    }
    fail(ErrorCode::NOT_FOUND);
  }
  if (n == 2 && parts[1] == "events" && method == "GET") {
    route_name = "events";
    need_owner();
    return ok(
        plane_.events_feed(static_cast<std::size_t>(query_int(request, "limit", 100, 1, 1000)),
                           query_int(request, "after", 0, 0, INT64_MAX)));
  }
  if (n == 2 && parts[1] == "status" && method == "GET") {
    route_name = "status";
    need_owner();
    auto status = plane_.store_status();
    identify(status);
    return ok(status);
  }
  if (n == 2 && parts[1] == "dashboard" && method == "GET") {
    route_name = "dashboard";
    need_owner();
    return dashboard(request);
  }
  if (n == 2 && parts[1] == "prune" && method == "POST") {
    route_name = "prune";
    need_owner();
    return ok(plane_.prune(http::json_object_body(request)));
  }
  if (parts[1] != "tasks") fail(ErrorCode::NOT_FOUND);
  if (n == 2 && method == "POST") {
    route_name = "tasks_create";
    need_owner();
    auto [status, view] = plane_.create_task(http::json_object_body(request), resolver_);
    return http::json_response(status, view);
  }
  if (n == 2 && method == "GET") {
    route_name = "tasks_list";
    need_owner();
    const auto text = [&](const char* name) {
      const auto found = request.query.find(name);
      return found == request.query.end() ? std::string() : found->second;
    };
    return ok(plane_.list_tasks(text("status"), text("tenant"),
                                static_cast<std::size_t>(query_int(request, "limit", 100, 1, 1000)),
                                query_int(request, "after", 0, 0, INT64_MAX)));
  }
  if (n == 3 && parts[2] == "poll" && method == "POST") {
    route_name = "tasks_poll";
    const Agent& caller = need_agent();
    http::Response response;
    response.body = plane_.poll_text(caller, http::json_object_body(request));
    return response;
  }
  if (n == 3 && parts[2] == "claim-next" && method == "POST") {
    route_name = "tasks_claim_next";
    return claim_next(need_agent(), http::json_object_body(request));
  }
  if (n == 3 && method == "GET") {
    route_name = "task";
    return ok(plane_.task_view(task_id_of(parts[2]), reader));
  }
  if (n != 4) fail(ErrorCode::NOT_FOUND);
  const auto action = parts[3];
  // A route label comes only from this list: a path segment as a label would let any caller
  // grow /metrics without bound and write into its text.
  static constexpr std::array<std::string_view, 8> kActions = {
      "claim", "heartbeat", "result", "release", "verification", "cancel", "events", "eligibility"};
  if (std::find(kActions.begin(), kActions.end(), action) == kActions.end())
    fail(ErrorCode::NOT_FOUND);
  route_name = "task_" + std::string(action);
  // The role is decided before anything of the request is read, so a caller with the wrong
  // role learns nothing about the body or the task.
  const bool post = method == "POST";
  const bool owner_action = (post && (action == "verification" || action == "cancel")) ||
                            (method == "GET" && action == "eligibility");
  const bool agent_action = post && (action == "claim" || action == "heartbeat" ||
                                     action == "result" || action == "release");
  if (owner_action) need_owner();
  if (agent_action) need_agent();
  const std::string task_id = task_id_of(parts[2]);
  if (method == "GET" && action == "events") {
    return ok(plane_.task_events(
        task_id, reader, static_cast<std::size_t>(query_int(request, "limit", 100, 1, 1000)),
        query_int(request, "after", 0, 0, INT64_MAX)));
  }
  if (method == "GET" && action == "eligibility") return ok(plane_.eligibility(task_id));
  if (method != "POST") fail(ErrorCode::NOT_FOUND);
  if (action == "claim") {
    auto response = plane_.claim(*agent, task_id, http::json_object_body(request));
    metrics_.count_claim();
    return ok(response);
  }
  if (action == "heartbeat")
    return ok(plane_.heartbeat(*agent, task_id, http::json_object_body(request)));
  if (action == "result") return result(*agent, task_id, http::json_object_body(request));
  if (action == "release")
    return ok(plane_.release(*agent, task_id, http::json_object_body(request)));
  if (action == "verification") return ok(plane_.verify(task_id, http::json_object_body(request)));
  if (action == "cancel") return ok(plane_.cancel(task_id, http::json_object_body(request)));
  route_name = "unknown";
  fail(ErrorCode::NOT_FOUND);
}

}  // namespace aios
