#include <algorithm>
#include <array>
#include <charconv>
#include <iterator>
#include <optional>
#include <type_traits>
#include <vector>

#include "aios/envelope.hpp"
#include "aios/log.hpp"
#include "aios/store.hpp"
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
                 std::chrono::milliseconds claim_recheck)
    : plane_(plane),
      owner_(std::move(owner)),
      metrics_(metrics),
      waiters_(plane, claim_recheck, [this] { metrics_.count_empty_wakeup(); }) {
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

namespace {

// A refusal's answer, a failure of ours logged with its cause (a PostgreSQL SQLSTATE, say).
http::Response failure_response(const Error& error, std::string_view route_name) {
  log::request_failure("TASK_API_REQUEST_FAILED", error, {{"route", route_name}});
  return http::error_response(error);
}

}  // namespace

http::Response TaskApi::handle(const http::Request& request) {
  const auto started = std::chrono::steady_clock::now();
  std::string route_name = "unknown";
  http::Response response;
  try {
    response = route(request, route_name);
  } catch (const Error& error) {
    response = failure_response(error, route_name);
  }
  // A long poll is observed when it is answered (claim_next).
  if (!response.later) {
    metrics_.observe(route_name, response.status, std::chrono::steady_clock::now() - started);
  }
  return response;
}

namespace {

// A claim request's max_tasks: nullopt when absent (one claim, answered as "claim"), else
// 1..64 (CLAIM_MAX_TASKS_INVALID), answered as "claims".
std::optional<std::size_t> max_tasks_of(const nlohmann::json& body) {
  const auto found = body.find("max_tasks");
  if (found == body.end()) return std::nullopt;
  return static_cast<std::size_t>(envelope::require_int(*found, 1, TaskApi::kMaxClaimTasks,
                                                        ErrorCode::CLAIM_MAX_TASKS_INVALID));
}

// The "claim_next" of a result request, taken out of `body`: {worker_id, max_tasks?}. No
// worker id: none was asked for.
struct NextClaims {
  std::string worker_id;
  std::optional<std::size_t> max_tasks;
};
NextClaims take_claim_next(nlohmann::json& body) {
  NextClaims next;
  const auto found = body.find("claim_next");
  if (found == body.end()) return next;
  if (!found->is_object()) fail(ErrorCode::REQUEST_FIELDS_INVALID);
  envelope::require_known_keys(*found, {"worker_id", "max_tasks"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  next.worker_id = fleet::worker_id_of(*found);
  next.max_tasks = max_tasks_of(*found);
  body.erase(found);
  return next;
}

// The claims as a claim request without max_tasks answers them ("claim": the one, or null) or
// with it ("claims": every one), into `out`.
void put_claims(nlohmann::json& out, std::vector<nlohmann::json> claims,
                const std::optional<std::size_t>& max_tasks) {
  if (max_tasks) {
    out["claims"] = std::move(claims);
  } else {
    out["claim"] = claims.empty() ? nlohmann::json(nullptr) : std::move(claims.front());
  }
}

// The items under a batch body's one field `field`: 1..kMaxBatchItems of them (BATCH_INVALID),
// for the caller to move out of.
nlohmann::json& batch_items(nlohmann::json& body, const char* field) {
  envelope::require_known_keys(body, {field}, ErrorCode::REQUEST_FIELDS_INVALID);
  const auto found = body.find(field);
  if (found == body.end() || !found->is_array() || found->empty() ||
      found->size() > TaskApi::kMaxBatchItems) {
    fail(ErrorCode::BATCH_INVALID);
  }
  return *found;
}

// Each item of a per-task batch as its task id and its call, parsed by `parse` from the item
// (without its task_id unless `id_in_body`: a new task's id is part of its body), or the
// refusal the parse met: an item that is not an object, names no task id or does not parse is
// refused on its own, with the id it named, if any.
template <class Parse>
auto task_items(nlohmann::json& items, const Parse& parse, bool id_in_body = false) {
  using Item = TaskPlane::BatchItem<std::invoke_result_t<const Parse&, const nlohmann::json&>>;
  std::vector<Item> out;
  out.reserve(items.size());
  for (auto& body : items) {
    std::string task_id;
    if (body.is_object()) {
      if (const auto id = body.find("task_id"); id != body.end()) {
        if (id->is_string()) task_id = id->get<std::string>();
        if (!id_in_body) body.erase(id);
      }
    }
    out.push_back(Item::of(std::move(task_id), body, parse));
  }
  return out;
}

}  // namespace

std::size_t TaskApi::body_limit_for(std::string_view target) {
  const auto path = target.substr(0, target.find('?'));
  if (path == "/v1/tasks/batch" || path == "/v1/tasks/results" ||
      path == "/v1/tasks/verifications") {
    return kMaxBatchBodyBytes;
  }
  return 0;
}

http::Response TaskApi::result(const Agent& agent, const std::string& task_id,
                               nlohmann::json body) {
  // "claim_next": {worker_id, max_tasks?} also claims the worker's next tasks once the result
  // is durable, so a busy worker needs one request between two jobs. Checked before the result.
  const auto next = take_claim_next(body);
  const auto submission = fleet::result_submission_of(body, plane_.options().max_result_bytes);
  const auto stored = [&] {
    metrics_.count_result();
    if (submission.model_usage) {
      metrics_.count_model_usage(submission.runtime, *submission.model_usage);
    }
  };
  if (next.worker_id.empty()) {
    auto [status, response] = plane_.submit_result(agent, task_id, submission);
    if (status == 201) stored();
    return http::json_response(status, response);
  }
  auto out = plane_.submit_result_then_claim(agent, task_id, submission, next.worker_id,
                                             next.max_tasks.value_or(1));
  if (out.status == 201) stored();
  note_claim_error(next.worker_id, out.claim_error);
  metrics_.count_claim(out.claims.size());
  put_claims(out.response, std::move(out.claims), next.max_tasks);
  return http::json_response(out.status, out.response);
}

void TaskApi::note_claim_error(const std::string& worker_id, const std::exception_ptr& error) {
  // The results stand whatever the claim met; the worker hears of a refusal at its next
  // claim-next.
  if (!error) return;
  try {
    std::rethrow_exception(error);
  } catch (const Error& refusal) {
    log::warn("RESULT_CLAIM_NEXT_REFUSED", {{"worker_id", worker_id}, {"error", refusal.code()}});
  }
}

http::Response TaskApi::results(const Agent& agent, nlohmann::json body) {
  const auto next = take_claim_next(body);
  const auto max_result_bytes = plane_.options().max_result_bytes;
  const auto items =
      task_items(batch_items(body, "results"), [max_result_bytes](const nlohmann::json& item) {
        return fleet::result_submission_of(item, max_result_bytes);
      });
  auto out = plane_.submit_results(agent, items, next.worker_id, next.max_tasks.value_or(1));
  metrics_.count_result(out.stored);
  for (const auto index : out.stored_items) {
    const auto& submission = *items[index].call;
    if (submission.model_usage) {
      metrics_.count_model_usage(submission.runtime, *submission.model_usage);
    }
  }
  note_claim_error(next.worker_id, out.claim_error);
  metrics_.count_claim(out.claims.size());
  return ok({{"results", std::move(out.results)}, {"claims", std::move(out.claims)}});
}

http::Response TaskApi::claim_next(const Agent& agent, const nlohmann::json& body) {
  envelope::require_known_keys(body, {"worker_id", "wait_ms", "max_tasks"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  const std::string id = fleet::worker_id_of(body);
  static const nlohmann::json kNoWait = 0;
  const auto wait_ms = envelope::require_int(envelope::get_or(body, "wait_ms", kNoWait), 0,
                                             kMaxClaimWaitMs, ErrorCode::CLAIM_WAIT_INVALID);
  const auto max_tasks = max_tasks_of(body);
  const auto answer = [this, max_tasks](std::vector<nlohmann::json> claims) {
    metrics_.count_claim(claims.size());
    nlohmann::json out = nlohmann::json::object();
    put_claims(out, std::move(claims), max_tasks);
    return http::json_response(200, out);
  };
  const auto before = waiters_.before_attempt();
  auto claims = plane_.claim_next_many(agent, id, max_tasks.value_or(1));
  if (!claims.empty() || wait_ms == 0) return answer(std::move(claims));
  const auto started = std::chrono::steady_clock::now();
  auto later = std::make_shared<http::Later>();
  waiters_.wait(
      agent, id, max_tasks.value_or(1), started + std::chrono::milliseconds(wait_ms), before,
      [later] { return later->abandoned(); },
      [this, later, answer, started](std::vector<nlohmann::json> found, const Error* error) {
        auto response = error != nullptr ? failure_response(*error, "tasks_claim_next")
                                         : answer(std::move(found));
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
    response.body =
        metrics_.render(plane_.status_counts(), waiters_.waiting(), plane_.envelopes_unresolved());
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

  if (parts[1] == "agents" && n == 2 && method == "GET") {
    route_name = "agents_list";
    need_owner();
    return ok(plane_.agents());
  }
  if (parts[1] == "agents" && n == 2 && method == "POST") {
    route_name = "agents";
    need_owner();
    return http::json_response(
        201, plane_.create_agent(fleet::agent_grant_of(http::json_object_body(request))));
  }
  if (parts[1] == "agents" && n == 4 && method == "POST" && parts[3] == "client-certificate") {
    route_name = "agent_certificate";
    need_owner();
    return ok(plane_.bind_agent_certificate(
        std::string(parts[2]), fleet::certificate_binding_of(http::json_object_body(request))));
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
    return ok(plane_.register_worker(
        caller, fleet::worker_registration_of(http::json_object_body(request))));
  }
  if (parts[1] == "workers" && n == 4 && parts[3] == "stopped" && method == "POST") {
    route_name = "workers_stopped";
    const Agent& caller = need_agent();
    return ok(plane_.worker_stopped(caller, std::string(parts[2])));
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
      return ok(plane_.configure_worker(
          std::string(parts[3]), fleet::worker_configuration_of(http::json_object_body(request))));
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
    return ok(plane_.prune(fleet::prune_request_of(http::json_object_body(request))));
  }
  if (parts[1] != "tasks") fail(ErrorCode::NOT_FOUND);
  if (n == 2 && method == "POST") {
    route_name = "tasks_create";
    need_owner();
    auto [status, view] =
        plane_.create_task(fleet::task_submission_of(http::json_object_body(request)));
    return http::json_response(status, view);
  }
  if (n == 2 && method == "GET") {
    route_name = "tasks_list";
    need_owner();
    const auto text = [&](const char* name) {
      const auto found = request.query.find(name);
      return found == request.query.end() ? std::string() : found->second;
    };
    return ok(plane_.list_tasks({text("status"), text("tenant"), text("id_prefix")},
                                static_cast<std::size_t>(query_int(request, "limit", 100, 1, 1000)),
                                query_int(request, "after", 0, 0, INT64_MAX)));
  }
  if (n == 3 && parts[2] == "batch" && method == "POST") {
    route_name = "tasks_batch";
    need_owner();
    auto body = http::json_object_body(request);
    return ok(plane_.create_tasks(
        task_items(batch_items(body, "tasks"), fleet::task_submission_of, /*id_in_body=*/true)));
  }
  if (n == 3 && parts[2] == "results" && method == "POST") {
    route_name = "tasks_results";
    return results(need_agent(), http::json_object_body(request));
  }
  if (n == 3 && parts[2] == "verifications" && method == "POST") {
    route_name = "tasks_verifications";
    need_owner();
    auto body = http::json_object_body(request);
    return ok(
        plane_.verify_many(task_items(batch_items(body, "verifications"), fleet::verification_of)));
  }
  if (n == 3 && parts[2] == "poll" && method == "POST") {
    route_name = "tasks_poll";
    const Agent& caller = need_agent();
    http::Response response;
    response.body =
        plane_.poll_text(caller, fleet::poll_request_of(http::json_object_body(request)));
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
  static constexpr std::array<std::string_view, 9> kActions = {"claim",   "heartbeat",    "result",
                                                               "release", "verification", "cancel",
                                                               "requeue", "eligibility",  "events"};
  if (std::find(kActions.begin(), kActions.end(), action) == kActions.end())
    fail(ErrorCode::NOT_FOUND);
  route_name = "task_" + std::string(action);
  // The role is decided before anything of the request is read, so a caller with the wrong
  // role learns nothing about the body or the task.
  const bool post = method == "POST";
  const bool owner_action =
      (post && (action == "verification" || action == "cancel" || action == "requeue")) ||
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
    auto response =
        plane_.claim(*agent, task_id, fleet::claim_request_of(http::json_object_body(request)));
    metrics_.count_claim();
    return ok(response);
  }
  if (action == "result") return result(*agent, task_id, http::json_object_body(request));
  const auto body = [&request] { return http::json_object_body(request); };
  if (action == "heartbeat")
    return ok(plane_.heartbeat(*agent, task_id, fleet::heartbeat_of(body())));
  if (action == "release") return ok(plane_.release(*agent, task_id, fleet::release_of(body())));
  if (action == "verification") return ok(plane_.verify(task_id, fleet::verification_of(body())));
  if (action == "cancel") return ok(plane_.cancel(task_id, fleet::cancellation_of(body())));
  if (action == "requeue") return ok(plane_.requeue(task_id, fleet::requeue_of(body())));
  route_name = "unknown";
  fail(ErrorCode::NOT_FOUND);
}

}  // namespace aios
