// Fuzz targets of the HTTP surface: the request head (and body framing) through the server's
// own parser and the client's URL parser, and every endpoint's body, or a whole request with any
// path and query, through the real handlers of the Task API, the governed Bridge and the rebind
// API over one scratch database.
#include "aios/bridge.hpp"
#include "aios/fleet.hpp"
#include "aios/http.hpp"
#include "aios/rebind.hpp"
#include "aios/store.hpp"
#include "aios/sys.hpp"
#include "aios/taskapi.hpp"
#include "fuzz_targets.hpp"
#include "http/request_parser.hpp"
#include "store/sqlite/database.hpp"
#include "support.hpp"

namespace aios::fuzz {
namespace {

namespace beast = http::detail::beast;

bool visible_ascii(std::string_view text) {
  for (const char c : text) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

// Not a run of one byte: libFuzzer's InsertRepeatedBytes writes such runs into paths and bodies,
// which owner answers may echo, and the invariant below is about tokens the input never held.
const std::string kControlToken = "owner-7f3c9a1e5b2d8046fa93c17e2b5d09a4c6e18f3b72d5";

// The three handlers over one database, with an agent, its worker and a claimable task.
struct Endpoints {
  Endpoints()
      : db({.path = scratch_dir() / "endpoints.sqlite3", .connections = 2}),
        task_store(db, clock),
        plane(task_store, system_environment(), {}, &resolver),
        api(plane, kControlToken, metrics),
        bridge(task_store, plane, resolver, system_environment(), kControlToken,
               BridgeOptions{.authority_git_dir = scratch_dir() / "authority.git"}),
        rebind_store(
            task_store,
            [](const std::string&, const nlohmann::json&) -> nlohmann::json {
              throw Error(ErrorCode::CANONICAL_EXECUTION_RESOLUTION_FAILED);
            },
            "owner-execution-rebind-fuzz", system_environment().faults),
        rebind_api(rebind_store, kControlToken) {
    const nlohmann::json scope = {"git.read", "git.test", "governed.write.branch",
                                  "governed.write.file"};
    agent_token = plane
                      .create_agent(fleet::agent_grant_of(
                          {{"agent_id", "fz-agent"}, {"granted_capabilities", scope}}))
                      .at("token")
                      .get<std::string>();
    const auto agent = plane.authenticate_agent(agent_token);
    require(agent.has_value(), "the fuzz agent does not authenticate");
    plane.register_worker(*agent, fleet::worker_registration_of(
                                      {{"worker_id", "fz-worker"},
                                       {"capabilities", scope},
                                       {"allowed_adapters", {"source_capture", "deterministic"}},
                                       {"max_concurrency", 64}}));
    const std::string oid(40, 'a');
    plane.create_task(fleet::task_submission_of({{"task_id", "fz-1"},
                                                 {"goal", "Capture the interface"},
                                                 {"binding",
                                                  {{"task_id", "fz-1"},
                                                   {"job_id", "job-fz-1"},
                                                   {"repository", "aios/aios"},
                                                   {"base_oid", oid},
                                                   {"expected_branch_oid", oid},
                                                   {"target_branch", "agent/fz-1"},
                                                   {"branch_mode", "CREATE_NEW"},
                                                   {"generation", 1},
                                                   {"idempotency_key", "fz-1-binding-v1"}}},
                                                 {"execution",
                                                  {{"action", "source_capture"},
                                                   {"adapter", "source_capture"},
                                                   {"capability_scope", {"git.read"}}}}}));
  }

  SystemClock clock;
  Database db;
  store::SqliteStore task_store;
  resolution::Resolver resolver{{"/usr/bin/true"}};  // the claims' and the Bridge's, as deployed
  TaskPlane plane;
  TaskApiMetrics metrics;
  TaskApi api;
  Bridge bridge;
  ExecutionRebindStore rebind_store;
  ExecutionRebindApi rebind_api;
  std::string agent_token;
};

enum class Server { kTaskApi, kBridge, kRebind };

struct Route {
  Server server;
  const char* method;
  const char* path;
};

constexpr Route kRoutes[] = {
    {Server::kTaskApi, "POST", "/v1/agents"},
    {Server::kTaskApi, "POST", "/v1/workers/register"},
    {Server::kTaskApi, "POST", "/v1/tasks"},
    {Server::kTaskApi, "POST", "/v1/tasks/poll"},
    {Server::kTaskApi, "POST", "/v1/tasks/fz-1/claim"},
    {Server::kTaskApi, "POST", "/v1/tasks/fz-1/heartbeat"},
    {Server::kTaskApi, "POST", "/v1/tasks/fz-1/result"},
    {Server::kTaskApi, "POST", "/v1/tasks/fz-1/release"},
    {Server::kTaskApi, "POST", "/v1/tasks/fz-1/verification"},
    {Server::kTaskApi, "POST", "/v1/tasks/fz-1/cancel"},
    {Server::kTaskApi, "PUT", "/v1/fleet/workers/fz-worker"},
    {Server::kTaskApi, "POST", "/v1/tasks/batch"},
    {Server::kTaskApi, "POST", "/v1/tasks/results"},
    {Server::kTaskApi, "POST", "/v1/tasks/verifications"},
    {Server::kBridge, "POST", "/v2/plans"},
    {Server::kBridge, "POST", "/v2/execution-envelope"},
    {Server::kBridge, "POST", "/v2/writer-leases"},
    {Server::kBridge, "POST", "/v2/governed-commits"},
    {Server::kRebind, "POST", "/v1/tasks/fz-1/execution-rebind"},
};

// A first byte of kWholeRequest or more: the rest is a whole HTTP request (any method, path and
// query string, then the body), parsed by the server's parser and answered by the server the
// first byte names. Below it, the first byte picks one of kRoutes and the rest is the body.
constexpr std::uint8_t kWholeRequest = 0x80;

// Feeds `text` to `parser` as one connection would. True when a request head parsed without
// error (the body may be cut short: see parser.is_done()).
bool parse_request(std::string_view text, http::detail::RequestParser& parser) {
  parser.eager(true);
  beast::error_code ec;
  while (!text.empty() && !parser.is_done()) {
    const std::size_t used = parser.put(boost::asio::buffer(text.data(), text.size()), ec);
    if (ec) break;
    text.remove_prefix(used);
    if (used == 0) break;
  }
  if (!ec && !parser.is_done() && parser.got_some()) parser.put_eof(ec);
  return !ec && parser.is_header_done();
}

}  // namespace

int http_request_head(const std::uint8_t* data, std::size_t size) {
  http::Request request;
  http::detail::RequestParser parser(request, 64 * 1024, 8 * 1024);
  if (!parse_request(text_of(data, size), parser)) return 0;
  require(!request.target.empty() && request.target.front() == '/',
          "a parsed request-target is not origin-form");
  require(parser.version() == 10 || parser.version() == 11, "an unsupported HTTP version");
  require(request.target.starts_with(request.path), "the path is not the target's prefix");
  require(visible_ascii(request.bearer_token), "a bearer token with invisible characters");
  (void)request.header("authorization");
  // The client's URL parser (the daemons' --api-url and --bridge-url) over the same text.
  refusal_ok([&] {
    const auto endpoint =
        http::parse_http_url("http://" + std::string(request.header("host")) + request.target);
    require(!endpoint.host.empty() && endpoint.port != 0, "a parsed URL without host or port");
    require(endpoint.target.starts_with("/"), "a parsed URL's target is not origin-form");
  });
  return 0;
}

int http_endpoints(const std::uint8_t* data, std::size_t size) {
  static Endpoints endpoints;
  if (size < 2) return 0;
  http::Request request;
  Server server = Server::kTaskApi;
  if (data[0] >= kWholeRequest) {
    http::detail::RequestParser parser(request, 64 * 1024, 8 * 1024, &TaskApi::body_limit_for);
    if (!parse_request(text_of(data + 2, size - 2), parser) || !parser.is_done()) return 0;
    server = static_cast<Server>(data[0] % 3);
  } else {
    const Route& route = kRoutes[data[0] % std::size(kRoutes)];
    server = route.server;
    request.method = route.method;
    request.target = route.path;
    request.path = route.path;
    request.body.assign(text_of(data + 2, size - 2));
  }
  request.remote_address = "127.0.0.1";
  request.bearer_token = data[1] % 2 == 0 ? kControlToken : endpoints.agent_token;
  const http::Response response = server == Server::kTaskApi ? endpoints.api.handle(request)
                                  : server == Server::kBridge
                                      ? endpoints.bridge.handle(request)
                                      : endpoints.rebind_api.handle(request);
  require(response.status >= 200 && response.status <= 599, "a status outside 200-599");
  require(response.body.find(kControlToken) == std::string::npos,
          "an answer carries the control token");
  require(response.body.find(endpoints.agent_token) == std::string::npos,
          "an answer carries the agent token");
  if (response.status >= 400) {
    const auto body = json_of(response.body);
    require(body && body->is_object() && body->contains("error"), "a refusal without a code");
    require(body->at("error") != "INTERNAL_ERROR", "an input reached the last-resort 500");
  }
  return 0;
}

}  // namespace aios::fuzz
