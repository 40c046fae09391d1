#include <optional>

#include "aios/bridge.hpp"
#include "aios/envelope.hpp"
#include "aios/log.hpp"
#include "taskapi/query.hpp"

namespace aios {
namespace {

using envelope::fail;

http::Response reply(const std::pair<int, nlohmann::json>& result) {
  return http::json_response(result.first, result.second);
}

}  // namespace

Bridge::Bridge(store::Store& store, TaskPlane& plane, const resolution::Resolver& resolver,
               const Environment& environment, http::OwnerToken owner, BridgeOptions options)
    : store_(store),
      plane_(plane),
      resolver_(resolver),
      environment_(environment),
      owner_(std::move(owner)),
      options_(std::move(options)) {}

bool Bridge::admits(const http::Request& request) {
  if (owner_.admits(request)) return true;
  try {
    return plane_.authenticate_agent(request).has_value();
  } catch (const Error&) {
    return false;  // a certificate refusal: the body is not read either
  }
}

http::Response Bridge::handle(const http::Request& request) {
  try {
    return route(request);
  } catch (const Error& error) {
    log::request_failure("BRIDGE_REQUEST_FAILED", error, {{"path", request.path}});
    return http::error_response(error);
  }
}

http::Response Bridge::route(const http::Request& request) {
  if (request.path == "/health" && request.method == "GET") {
    return http::json_response(
        200,
        {{"status", "ok"}, {"service", "aios-governed-bridge"}, {"leader", !leads_ || leads_()}});
  }
  // Reading plans: the owner's alone.
  if (request.method == "GET" &&
      (request.path == "/v2/plans" || request.path.starts_with("/v2/plans/"))) {
    if (!owner_.matches(request)) {
      if (!plane_.authenticate_agent(request)) fail(ErrorCode::UNAUTHORIZED);
      fail(ErrorCode::FORBIDDEN);
    }
    if (request.path == "/v2/plans") {
      const auto after = request.query.find("after");
      return http::json_response(
          200, plans(after == request.query.end() ? std::string() : after->second,
                     static_cast<std::size_t>(taskapi::query_int(request, "limit", 100, 1, 1000))));
    }
    return http::json_response(
        200, plan(taskapi::task_id_of(request.path.substr(std::string_view("/v2/plans/").size()))));
  }
  static const std::set<std::string> kRoutes = {"/v2/plans", "/v2/execution-envelope",
                                                "/v2/writer-leases", "/v2/governed-commits",
                                                "/v2/repository-pack"};
  if (!kRoutes.contains(request.path) || request.method != "POST") fail(ErrorCode::NOT_FOUND);

  const bool owner = owner_.matches(request);
  std::optional<Agent> agent;
  if (!owner) {
    agent = plane_.authenticate_agent(request);
    if (!agent) fail(ErrorCode::UNAUTHORIZED);
  }
  if (request.path == "/v2/plans") {
    if (!owner) fail(ErrorCode::FORBIDDEN);
    return reply(register_plan(http::json_object_body(request)));
  }
  if (request.path == "/v2/execution-envelope") {
    return http::json_response(
        200, resolve_envelope(http::json_object_body(request), agent ? &*agent : nullptr));
  }
  if (!agent) fail(ErrorCode::FORBIDDEN);
  if (request.path == "/v2/repository-pack") {
    return repository_pack(*agent, http::json_object_body(request));
  }
  if (request.path == "/v2/writer-leases")
    return reply(acquire_writer_lease(*agent, http::json_object_body(request)));
  if (leads_ && !leads_()) fail(ErrorCode::BRIDGE_NOT_LEADER);
  return reply(governed_commit(*agent, http::json_object_body(request)));
}

}  // namespace aios
