// Every refusal the Task API can give, as a table run against the real daemon: each case's
// HTTP status and {"error": CODE} body, and the proof that nothing was written (every task
// view, every task's events and the fleet view are unchanged).
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "support/store_rows.hpp"
#include "taskapi/client.hpp"

namespace aios::taskapi_test {
namespace {

enum class Who { kOwner, kAgentA, kAgentB, kAgentTenant, kNobody, kStranger, kHugeToken };

struct Case {
  std::string name;
  Who who;
  std::string method;
  std::string target;
  std::string body;  // sent as is; "" sends none
  int status;
  std::string code;
};

// Codes of the "Task API" section of error_codes.inc that no request can draw from a running
// daemon here, each with the reason and where else it is covered.
const std::set<std::string> kNotInTheTable = {
    // Start-up refusals: startup_test.cpp.
    "CONTROL_CREDENTIAL_UNAVAILABLE",
    "CONTROL_CREDENTIAL_INVALID",
    // Needs a lease past its expiry that the sweeper has not reached: lease_test.cpp.
    "LEASE_EXPIRED",
    // A claim is the claimant's liveness signal, so it never refuses the claimant as offline;
    // eligibility reports "offline" only after 90 s of silence.
    "WORKER_OFFLINE",
    // A task whose attempts are spent is FAILED, never QUEUED: TASK_NOT_CLAIMABLE answers
    // first.
    "TASK_ATTEMPTS_EXHAUSTED",
    // Needs a task whose CREATE_NEW branch a governed commit made: RequeueTest in
    // tests/bridge/requeue_test.cpp.
    "TASK_COMMIT_ALREADY_APPLIED",
};

// The codes of the "// Task API" section of include/aios/error_codes.inc.
std::set<std::string> task_api_codes() {
  std::ifstream file(std::string(AIOS_SOURCE_DIR) + "/include/aios/error_codes.inc");
  std::set<std::string> codes;
  bool in_section = false;
  const std::regex entry(R"(^AIOS_ERROR\(([A-Z0-9_]+),)");
  for (std::string line; std::getline(file, line);) {
    if (line.starts_with("// ")) in_section = line == "// Task API";
    std::smatch match;
    if (in_section && std::regex_search(line, match, entry)) codes.insert(match[1]);
  }
  return codes;
}

std::string dump(const Json& value) {
  return value.dump();
}

// One verification command that starts `executable`.
Json verification(const std::string& executable) {
  return Json::array({{{"label", "tests"},
                       {"argv", Json::array({executable, "check"})},
                       {"cwd", "."},
                       {"timeout_seconds", 60}}});
}

class ErrorTableTest : public SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    token_a_ = create_agent("agent-alpha", {"agent.runtime.hermes", "git.read"});
    token_b_ = create_agent("agent-beta", {"agent.runtime.hermes"});
    token_tenant_ = require(owner().post("/v1/agents", {{"agent_id", "agent-gamma"},
                                                        {"granted_capabilities", Json::array()},
                                                        {"granted_tenants", {"tenant-g"}}}),
                            201, "create agent-gamma")
                        .at("token");
    ApiClient a = client(token_a_);
    ApiClient b = client(token_b_);
    const Json hermes = {"agent.runtime.hermes"};
    register_worker(a, "w-main", hermes, {"hermes"}, 8);
    register_worker(a, "w-nocap", hermes, {"hermes", "source_capture"}, 8);
    register_worker(a, "w-noadapter", {"agent.runtime.hermes", "git.read"}, {"hermes"}, 8);
    register_worker(a, "w-quar", hermes, {"hermes"}, 8);
    register_worker(a, "w-broken", hermes, {"hermes"}, 8);
    register_worker(a, "w-parked", hermes, {"hermes"}, 8);
    require(a.post("/v1/workers/register", {{"worker_id", "w-tenant"},
                                            {"capabilities", hermes},
                                            {"allowed_adapters", {"hermes"}},
                                            {"tenants", {"tenant-x"}}}),
            200, "register w-tenant");
    register_worker(b, "w-beta", hermes, {"hermes"}, 1);
    require(owner().put("/v1/fleet/workers/w-parked", {{"quarantined", true}}), 200, "park");

    for (const auto* id : {"task-queued", "task-claimed", "task-verifying", "task-cancelled",
                           "task-held-b", "task-released", "task-r1", "task-r2", "task-r3"}) {
      create_task(hermes_task(id));
    }
    create_task(source_capture_task("task-source"));
    digest_ = task("task-queued").at("execution_digest");
    lease_ = claim(a, "task-claimed", "w-main");
    verifying_lease_ = claim(a, "task-verifying", "w-main");
    require(a.post("/v1/tasks/task-verifying/result",
                   result_body(verifying_lease_, task("task-verifying").at("execution_digest"),
                               "result-verifying-1", {{"n", 1}})),
            201, "result task-verifying");
    require(owner().post("/v1/tasks/task-cancelled/cancel", Json::object()), 200, "cancel");
    beta_lease_ = claim(b, "task-held-b", "w-beta");
    lease_token_ = lease_.at("lease_token").get<std::string>();
    claimed_digest_ = task("task-claimed").at("execution_digest").get<std::string>();
    release(a, claim(a, "task-released", "w-quar"));
    // Three failures in a row open w-broken's circuit.
    for (const auto* id : {"task-r1", "task-r2", "task-r3"}) release(a, claim(a, id, "w-broken"));
  }

  static void release(ApiClient& agent, const Json& lease) {
    require(agent.post("/v1/tasks/" + lease.at("task_id").get<std::string>() + "/release",
                       {{"lease_token", lease.at("lease_token")}, {"failure_class", "crashed"}}),
            200, "release");
  }

  std::string token_of(Who who) {
    switch (who) {
      case Who::kOwner:
        return scheduler().control_token();
      case Who::kAgentA:
        return token_a_;
      case Who::kAgentB:
        return token_b_;
      case Who::kAgentTenant:
        return token_tenant_;
      case Who::kNobody:
        return "";
      case Who::kStranger:
        return "aios_" + std::string(64, 'f');
      case Who::kHugeToken:
        return std::string(20000, 'y');
    }
    return "";
  }

  // Everything the API shows of the store.
  Json snapshot() {
    Json state;
    state["tasks"] = require(owner().get("/v1/tasks?limit=1000"), 200, "list").at("tasks");
    for (const auto& item : state["tasks"]) {
      const std::string id = item.at("task_id");
      state["events"][id] = events(id);
    }
    state["fleet"] = require(owner().get("/v1/fleet"), 200, "fleet");
    return state;
  }

  static std::string claim_body(const std::string& worker, const Json& revision,
                                const Json& digest) {
    return dump(
        {{"worker_id", worker}, {"expected_revision", revision}, {"execution_digest", digest}});
  }
  static std::string result_for(const Json& lease_token, const Json& attempt, const Json& digest,
                                const Json& key, const Json& result) {
    return dump({{"lease_token", lease_token},
                 {"attempt", attempt},
                 {"execution_digest", digest},
                 {"idempotency_key", key},
                 {"result", result}});
  }
  // `body` changed by `change`, as text.
  static std::string with(Json body, const std::function<void(Json&)>& change) {
    change(body);
    return dump(body);
  }

  // Bodies.
  std::vector<Case> body_cases() {
    const std::string huge_body = dump({{"goal", std::string(600 * 1024, 'x')}});
    return {
        {"claim with an unknown field", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim",
         dump({{"worker_id", "w-main"},
               {"expected_revision", 1},
               {"execution_digest", digest_},
               {"priority", 9}}),
         400, "REQUEST_FIELDS_INVALID"},
        {"claim without execution_digest", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim",
         dump({{"worker_id", "w-main"}, {"expected_revision", 1}}), 400, "REQUEST_FIELDS_INVALID"},
        {"agent with an unknown field", Who::kOwner, "POST", "/v1/agents",
         dump(
             {{"agent_id", "agent-new"}, {"granted_capabilities", Json::array()}, {"admin", true}}),
         400, "REQUEST_FIELDS_INVALID"},
        {"verification with an unknown field", Who::kOwner, "POST",
         "/v1/tasks/task-verifying/verification",
         dump({{"expected_revision", 3}, {"decision", "PASS"}, {"force", true}}), 400,
         "REQUEST_FIELDS_INVALID"},
        {"heartbeat with an unknown field", Who::kAgentA, "POST",
         "/v1/tasks/task-claimed/heartbeat",
         dump({{"lease_token", lease_token_}, {"extend_by", 3600}}), 400, "REQUEST_FIELDS_INVALID"},
        {"result with an unknown field", Who::kAgentA, "POST", "/v1/tasks/task-claimed/result",
         with(Json::parse(
                  result_for(lease_token_, 1, claimed_digest_, "result-claimed-1", {{"a", 1}})),
              [](Json& b) { b["status"] = "SUCCEEDED"; }),
         400, "REQUEST_FIELDS_INVALID"},
        {"release with an unknown field", Who::kAgentA, "POST", "/v1/tasks/task-claimed/release",
         dump({{"lease_token", lease_token_}, {"failure_class", "crashed"}, {"requeue", false}}),
         400, "REQUEST_FIELDS_INVALID"},
        {"worker with an unknown field", Who::kAgentA, "POST", "/v1/workers/register",
         dump({{"worker_id", "w-new"}, {"speed", 10}}), 400, "REQUEST_FIELDS_INVALID"},
        {"cancel with an unknown field", Who::kOwner, "POST", "/v1/tasks/task-queued/cancel",
         dump({{"reason", "x"}, {"force", true}}), 400, "REQUEST_FIELDS_INVALID"},
        {"poll with an unknown field", Who::kAgentA, "POST", "/v1/tasks/poll",
         dump({{"worker_id", "w-main"}, {"status", "QUEUED"}}), 400, "REQUEST_FIELDS_INVALID"},
        {"fleet update with an unknown field", Who::kOwner, "PUT", "/v1/fleet/workers/w-main",
         dump({{"max_slots", 2}, {"colour", "red"}}), 400, "REQUEST_FIELDS_INVALID"},
        {"task body over 512 KiB", Who::kOwner, "POST", "/v1/tasks", huge_body, 413,
         "REQUEST_SIZE_INVALID"},
        {"result body over 512 KiB", Who::kAgentA, "POST", "/v1/tasks/task-claimed/result",
         result_for(lease_token_, 1, claimed_digest_, "result-claimed-1",
                    {{"log", std::string(600 * 1024, 'z')}}),
         413, "REQUEST_SIZE_INVALID"},
        {"malformed JSON", Who::kOwner, "POST", "/v1/tasks/task-verifying/verification",
         R"({"expected_revision": 3, "decision": )", 400, "REQUEST_INVALID"},
        {"JSON array body", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim", "[1, 2]", 400,
         "REQUEST_INVALID"},
        {"invalid UTF-8 body", Who::kOwner, "POST", "/v1/tasks/task-queued/cancel",
         "{\"reason\": \"\xff\xfe\"}", 400, "REQUEST_INVALID"},
        {"headers over 16 KiB", Who::kHugeToken, "GET", "/v1/tasks", "", 400,
         "HTTP_HEADER_TOO_LARGE"},
    };
  }
  // Tokens and roles.
  std::vector<Case> role_cases() {
    const std::string hermes = dump(hermes_task("task-new"));
    return {
        {"no lease_token_", Who::kNobody, "GET", "/v1/tasks/task-queued", "", 401, "UNAUTHORIZED"},
        {"no lease_token_ on a write", Who::kNobody, "POST", "/v1/tasks/task-queued/cancel", "{}",
         401, "UNAUTHORIZED"},
        {"unknown lease_token_", Who::kStranger, "POST", "/v1/tasks", hermes, 401, "UNAUTHORIZED"},
        {"agent creates a task", Who::kAgentA, "POST", "/v1/tasks", hermes, 403, "FORBIDDEN"},
        {"agent lists tasks", Who::kAgentA, "GET", "/v1/tasks", "", 403, "FORBIDDEN"},
        {"agent lists agents", Who::kAgentA, "GET", "/v1/agents", "", 403, "FORBIDDEN"},
        {"agent creates an agent", Who::kAgentA, "POST", "/v1/agents",
         dump({{"agent_id", "agent-gamma"}, {"granted_capabilities", {"git.read"}}}), 403,
         "FORBIDDEN"},
        {"agent verifies", Who::kAgentA, "POST", "/v1/tasks/task-verifying/verification",
         dump({{"expected_revision", 3}, {"decision", "PASS"}}), 403, "FORBIDDEN"},
        {"agent cancels", Who::kAgentA, "POST", "/v1/tasks/task-claimed/cancel", "{}", 403,
         "FORBIDDEN"},
        {"agent reads the fleet", Who::kAgentA, "GET", "/v1/fleet", "", 403, "FORBIDDEN"},
        {"agent configures a worker", Who::kAgentA, "PUT", "/v1/fleet/workers/w-main",
         dump({{"max_slots", 64}}), 403, "FORBIDDEN"},
        {"agent asks for eligibility", Who::kAgentA, "GET", "/v1/tasks/task-queued/eligibility", "",
         403, "FORBIDDEN"},
        {"owner claims", Who::kOwner, "POST", "/v1/tasks/task-queued/claim",
         claim_body("w-main", 1, digest_), 403, "FORBIDDEN"},
        {"owner polls", Who::kOwner, "POST", "/v1/tasks/poll", dump({{"worker_id", "w-main"}}), 403,
         "FORBIDDEN"},
        {"owner registers a worker", Who::kOwner, "POST", "/v1/workers/register",
         dump({{"worker_id", "w-owner"}}), 403, "FORBIDDEN"},
        {"owner heartbeats", Who::kOwner, "POST", "/v1/tasks/task-claimed/heartbeat",
         dump({{"lease_token", lease_token_}}), 403, "FORBIDDEN"},
        {"owner submits a result", Who::kOwner, "POST", "/v1/tasks/task-claimed/result",
         result_for(lease_token_, 1, claimed_digest_, "result-claimed-1", {{"a", 1}}), 403,
         "FORBIDDEN"},
        {"owner releases", Who::kOwner, "POST", "/v1/tasks/task-claimed/release",
         dump({{"lease_token", lease_token_}, {"failure_class", "crashed"}}), 403, "FORBIDDEN"},
    };
  }
  // Unknown things.
  std::vector<Case> unknown_cases() {
    return {
        {"unknown task", Who::kOwner, "GET", "/v1/tasks/task-missing", "", 404, "TASK_NOT_FOUND"},
        {"events of an unknown task", Who::kOwner, "GET", "/v1/tasks/task-missing/events", "", 404,
         "TASK_NOT_FOUND"},
        {"cancel an unknown task", Who::kOwner, "POST", "/v1/tasks/task-missing/cancel", "{}", 404,
         "TASK_NOT_FOUND"},
        // A body is checked whole before what it names is looked up.
        {"cancel an unknown task with a malformed revision", Who::kOwner, "POST",
         "/v1/tasks/task-missing/cancel", dump({{"expected_revision", "one"}}), 400,
         "REVISION_INVALID"},
        {"configure an unknown worker with a malformed field", Who::kOwner, "PUT",
         "/v1/fleet/workers/w-ghost", dump({{"max_slots", 0}}), 400, "WORKER_REGISTRATION_INVALID"},
        {"verify an unknown task", Who::kOwner, "POST", "/v1/tasks/task-missing/verification",
         dump({{"expected_revision", 1}, {"decision", "PASS"}}), 404, "TASK_NOT_FOUND"},
        {"eligibility of an unknown task", Who::kOwner, "GET", "/v1/tasks/task-missing/eligibility",
         "", 404, "TASK_NOT_FOUND"},
        {"claim an unknown task", Who::kAgentA, "POST", "/v1/tasks/task-missing/claim",
         claim_body("w-main", 1, digest_), 404, "TASK_NOT_FOUND"},
        {"heartbeat an unknown task", Who::kAgentA, "POST", "/v1/tasks/task-missing/heartbeat",
         dump({{"lease_token", lease_token_}}), 404, "TASK_NOT_FOUND"},
        {"a task id outside the pattern", Who::kOwner, "GET", "/v1/tasks/x", "", 404,
         "TASK_NOT_FOUND"},
        {"another agent's claimed task", Who::kAgentB, "GET", "/v1/tasks/task-claimed", "", 404,
         "TASK_NOT_FOUND"},
        {"another agent's task events", Who::kAgentB, "GET", "/v1/tasks/task-claimed/events", "",
         404, "TASK_NOT_FOUND"},
        {"an unclaimed task read by an agent", Who::kAgentA, "GET", "/v1/tasks/task-queued", "",
         404, "TASK_NOT_FOUND"},
        {"unknown route", Who::kOwner, "GET", "/v1/nothing", "", 404, "NOT_FOUND"},
        {"unknown route outside /v1", Who::kNobody, "GET", "/nothing", "", 404, "NOT_FOUND"},
        {"unknown task action", Who::kOwner, "POST", "/v1/tasks/task-queued/explode", "{}", 404,
         "NOT_FOUND"},
        {"GET on a POST route", Who::kOwner, "GET", "/v1/tasks/task-queued/claim", "", 404,
         "NOT_FOUND"},
        {"DELETE a task", Who::kOwner, "DELETE", "/v1/tasks/task-queued", "", 404, "NOT_FOUND"},
        {"too deep a path", Who::kOwner, "GET", "/v1/tasks/task-queued/events/1", "", 404,
         "NOT_FOUND"},
        {"unknown fleet route", Who::kOwner, "GET", "/v1/fleet/workers", "", 404, "NOT_FOUND"},
        {"unknown worker on claim", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim",
         claim_body("w-ghost", 1, digest_), 404, "WORKER_NOT_FOUND"},
        {"unknown worker on poll", Who::kAgentA, "POST", "/v1/tasks/poll",
         dump({{"worker_id", "w-ghost"}}), 404, "WORKER_NOT_FOUND"},
        {"configure an unknown worker", Who::kOwner, "PUT", "/v1/fleet/workers/w-ghost",
         dump({{"max_slots", 2}}), 404, "WORKER_NOT_FOUND"},
        {"an unknown worker says it stopped", Who::kAgentA, "POST", "/v1/workers/w-ghost/stopped",
         "", 404, "WORKER_NOT_FOUND"},
        {"the owner says a worker stopped", Who::kOwner, "POST", "/v1/workers/w-main/stopped", "",
         403, "FORBIDDEN"},
    };
  }
  // Stale views.
  std::vector<Case> stale_cases() {
    return {
        {"claim at a stale revision", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim",
         claim_body("w-main", 2, digest_), 409, "TASK_REVISION_CONFLICT"},
        {"verify at a stale revision", Who::kOwner, "POST", "/v1/tasks/task-verifying/verification",
         dump({{"expected_revision", 2}, {"decision", "PASS"}}), 409, "TASK_REVISION_CONFLICT"},
        {"cancel at a stale revision", Who::kOwner, "POST", "/v1/tasks/task-queued/cancel",
         dump({{"expected_revision", 5}}), 409, "TASK_REVISION_CONFLICT"},
        {"claim with a stale digest", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim",
         claim_body("w-main", 1, zeros_), 409, "TASK_EXECUTION_DIGEST_MISMATCH"},
        {"claim with another task's digest", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim",
         claim_body("w-main", 1, claimed_digest_), 409, "TASK_EXECUTION_DIGEST_MISMATCH"},
        {"result with a stale digest", Who::kAgentA, "POST", "/v1/tasks/task-claimed/result",
         result_for(lease_token_, 1, zeros_, "result-claimed-1", {{"a", 1}}), 409,
         "TASK_EXECUTION_DIGEST_MISMATCH"},
        {"result for a stale attempt", Who::kAgentA, "POST", "/v1/tasks/task-claimed/result",
         result_for(lease_token_, 2, claimed_digest_, "result-claimed-1", {{"a", 1}}), 409,
         "ATTEMPT_STALE"},
        {"result for attempt 0", Who::kAgentA, "POST", "/v1/tasks/task-claimed/result",
         result_for(lease_token_, 0, claimed_digest_, "result-claimed-1", {{"a", 1}}), 400,
         "ATTEMPT_INVALID"},
        {"result with a text attempt", Who::kAgentA, "POST", "/v1/tasks/task-claimed/result",
         result_for(lease_token_, "1", claimed_digest_, "result-claimed-1", {{"a", 1}}), 400,
         "ATTEMPT_INVALID"},
        {"result with a malformed digest", Who::kAgentA, "POST", "/v1/tasks/task-claimed/result",
         result_for(lease_token_, 1, "not-a-digest", "result-claimed-1", {{"a", 1}}), 400,
         "EXECUTION_DIGEST_INVALID"},
    };
  }
  // Leases.
  std::vector<Case> lease_cases() {
    return {
        {"heartbeat with a wrong lease", Who::kAgentA, "POST", "/v1/tasks/task-claimed/heartbeat",
         dump({{"lease_token", zeros_}}), 409, "LEASE_INVALID"},
        {"heartbeat without a lease", Who::kAgentA, "POST", "/v1/tasks/task-claimed/heartbeat",
         "{}", 409, "LEASE_INVALID"},
        {"result with a wrong lease", Who::kAgentA, "POST", "/v1/tasks/task-claimed/result",
         result_for(zeros_, 1, claimed_digest_, "result-claimed-1", {{"a", 1}}), 409,
         "LEASE_INVALID"},
        {"release with a wrong lease", Who::kAgentA, "POST", "/v1/tasks/task-claimed/release",
         dump({{"lease_token", zeros_}, {"failure_class", "crashed"}}), 409, "LEASE_INVALID"},
        {"the right lease from another agent", Who::kAgentB, "POST",
         "/v1/tasks/task-claimed/heartbeat", dump({{"lease_token", lease_token_}}), 409,
         "LEASE_INVALID"},
        {"another agent's lease on its task", Who::kAgentA, "POST",
         "/v1/tasks/task-held-b/heartbeat", dump({{"lease_token", beta_lease_.at("lease_token")}}),
         409, "LEASE_INVALID"},
        {"heartbeat on a queued task", Who::kAgentA, "POST", "/v1/tasks/task-queued/heartbeat",
         dump({{"lease_token", lease_token_}}), 409, "TASK_NOT_CLAIMED"},
        {"result on a verifying task", Who::kAgentA, "POST", "/v1/tasks/task-verifying/result",
         result_for(verifying_lease_.at("lease_token"), 1,
                    task("task-verifying").at("execution_digest"), "result-verifying-2",
                    {{"n", 2}}),
         409, "TASK_NOT_CLAIMED"},
    };
  }
  // Agents and workers.
  std::vector<Case> agent_cases() {
    const std::string hermes = dump(hermes_task("task-new"));
    return {
        {"worker capability outside the grant", Who::kAgentB, "POST", "/v1/workers/register",
         dump({{"worker_id", "w-beta-2"}, {"capabilities", {"git.read"}}}), 403,
         "WORKER_CAPABILITY_NOT_GRANTED"},
        {"re-register another agent's worker", Who::kAgentB, "POST", "/v1/workers/register",
         dump({{"worker_id", "w-main"}, {"capabilities", {"agent.runtime.hermes"}}}), 403,
         "WORKER_AGENT_MISMATCH"},
        {"claim through another agent's worker", Who::kAgentB, "POST",
         "/v1/tasks/task-queued/claim", claim_body("w-main", 1, digest_), 403,
         "WORKER_AGENT_MISMATCH"},
        {"poll through another agent's worker", Who::kAgentB, "POST", "/v1/tasks/poll",
         dump({{"worker_id", "w-main"}}), 403, "WORKER_AGENT_MISMATCH"},
        {"another agent's worker said stopped", Who::kAgentB, "POST", "/v1/workers/w-main/stopped",
         "", 403, "WORKER_AGENT_MISMATCH"},
        {"existing agent id", Who::kOwner, "POST", "/v1/agents",
         dump({{"agent_id", "agent-alpha"}, {"granted_capabilities", {"agent.runtime.hermes"}}}),
         409, "AGENT_ALREADY_EXISTS"},
        {"tenants outside the agent's grant", Who::kAgentTenant, "POST", "/v1/workers/register",
         dump({{"worker_id", "w-gamma"}, {"tenants", {"tenant-g", "tenant-x"}}}), 403,
         "WORKER_TENANT_NOT_GRANTED"},
        {"granted tenants not a list of names", Who::kOwner, "POST", "/v1/agents",
         dump({{"agent_id", "agent-delta"},
               {"granted_capabilities", Json::array()},
               {"granted_tenants", {"a tenant"}}}),
         400, "AGENT_TENANTS_INVALID"},
        {"revoke an unknown agent", Who::kOwner, "POST", "/v1/agents/agent-nobody/revoke", "", 404,
         "AGENT_NOT_FOUND"},
        {"agent id outside the pattern", Who::kOwner, "POST", "/v1/agents",
         dump({{"agent_id", "bad agent"}, {"granted_capabilities", Json::array()}}), 400,
         "AGENT_ID_INVALID"},
        {"agent grant of an unknown capability", Who::kOwner, "POST", "/v1/agents",
         dump({{"agent_id", "agent-gamma"}, {"granted_capabilities", {"warp.drive"}}}), 400,
         "CAPABILITY_UNKNOWN"},
        {"agent grant not a list", Who::kOwner, "POST", "/v1/agents",
         dump({{"agent_id", "agent-gamma"}, {"granted_capabilities", "git.read"}}), 400,
         "CAPABILITY_INVALID"},
        {"worker id outside the pattern", Who::kAgentA, "POST", "/v1/workers/register",
         dump({{"worker_id", "bad worker"}}), 400, "WORKER_ID_INVALID"},
        {"poll without a worker id", Who::kAgentA, "POST", "/v1/tasks/poll", "{}", 400,
         "WORKER_ID_INVALID"},
        {"worker with an unknown capability", Who::kAgentA, "POST", "/v1/workers/register",
         dump({{"worker_id", "w-new"}, {"capabilities", {"warp.drive"}}}), 400,
         "CAPABILITY_UNKNOWN"},
        {"worker with an unknown adapter", Who::kAgentA, "POST", "/v1/workers/register",
         dump({{"worker_id", "w-new"}, {"allowed_adapters", {"teleport"}}}), 400,
         "WORKER_ADAPTER_UNKNOWN"},
        {"worker with no slot", Who::kAgentA, "POST", "/v1/workers/register",
         dump({{"worker_id", "w-new"}, {"max_concurrency", 0}}), 400,
         "WORKER_REGISTRATION_INVALID"},
        {"worker with 65 slots", Who::kAgentA, "POST", "/v1/workers/register",
         dump({{"worker_id", "w-new"}, {"max_concurrency", 65}}), 400,
         "WORKER_REGISTRATION_INVALID"},
        {"fleet update to zero slots", Who::kOwner, "PUT", "/v1/fleet/workers/w-main",
         dump({{"max_slots", 0}}), 400, "WORKER_REGISTRATION_INVALID"},
    };
  }
  // Task state.
  std::vector<Case> state_cases() {
    return {
        {"claim a claimed task", Who::kAgentA, "POST", "/v1/tasks/task-claimed/claim",
         claim_body("w-main", 2, claimed_digest_), 409, "TASK_NOT_CLAIMABLE"},
        {"claim a cancelled task", Who::kAgentA, "POST", "/v1/tasks/task-cancelled/claim",
         claim_body("w-main", 2, task("task-cancelled").at("execution_digest")), 409,
         "TASK_NOT_CLAIMABLE"},
        {"claim a verifying task", Who::kAgentA, "POST", "/v1/tasks/task-verifying/claim",
         claim_body("w-main", 3, task("task-verifying").at("execution_digest")), 409,
         "TASK_NOT_CLAIMABLE"},
        {"verify a queued task", Who::kOwner, "POST", "/v1/tasks/task-queued/verification",
         dump({{"expected_revision", 1}, {"decision", "PASS"}}), 409, "TASK_NOT_VERIFYING"},
        {"verify a claimed task", Who::kOwner, "POST", "/v1/tasks/task-claimed/verification",
         dump({{"expected_revision", 2}, {"decision", "PASS"}}), 409, "TASK_NOT_VERIFYING"},
        {"cancel a cancelled task", Who::kOwner, "POST", "/v1/tasks/task-cancelled/cancel", "{}",
         409, "TASK_TERMINAL"},
        {"requeue a queued task", Who::kOwner, "POST", "/v1/tasks/task-queued/requeue",
         dump({{"expected_revision", 1}, {"idempotency_key", "requeue-queued-1"}}), 409,
         "TASK_NOT_REQUEUEABLE"},
        {"requeue with eleven more attempts", Who::kOwner, "POST",
         "/v1/tasks/task-cancelled/requeue",
         dump({{"expected_revision", 2},
               {"idempotency_key", "requeue-cancelled-1"},
               {"additional_attempts", 11}}),
         400, "REQUEUE_ATTEMPTS_INVALID"},
        {"requeue at a stale revision", Who::kOwner, "POST", "/v1/tasks/task-cancelled/requeue",
         dump({{"expected_revision", 1}, {"idempotency_key", "requeue-cancelled-2"}}), 409,
         "TASK_REVISION_CONFLICT"},
        {"requeue without a key", Who::kOwner, "POST", "/v1/tasks/task-cancelled/requeue",
         dump({{"expected_revision", 2}}), 400, "IDEMPOTENCY_KEY_INVALID"},
        {"requeue as an agent", Who::kAgentA, "POST", "/v1/tasks/task-cancelled/requeue",
         dump({{"expected_revision", 2}, {"idempotency_key", "requeue-cancelled-3"}}), 403,
         "FORBIDDEN"},
        {"unknown verification decision", Who::kOwner, "POST",
         "/v1/tasks/task-verifying/verification",
         dump({{"expected_revision", 3}, {"decision", "MAYBE"}}), 400,
         "VERIFICATION_DECISION_INVALID"},
        {"lower-case decision", Who::kOwner, "POST", "/v1/tasks/task-verifying/verification",
         dump({{"expected_revision", 3}, {"decision", "pass"}}), 400,
         "VERIFICATION_DECISION_INVALID"},
        {"verification without a revision", Who::kOwner, "POST",
         "/v1/tasks/task-verifying/verification", dump({{"decision", "PASS"}}), 400,
         "REVISION_INVALID"},
        {"claim at a negative revision", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim",
         claim_body("w-main", -1, digest_), 400, "REVISION_INVALID"},
        {"claim at a text revision", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim",
         claim_body("w-main", "1", digest_), 400, "REVISION_INVALID"},
        {"claim with a digest that is not hex", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim",
         claim_body("w-main", 1, "not-a-digest"), 400, "EXECUTION_DIGEST_INVALID"},
        {"cancel reason over 512 characters", Who::kOwner, "POST", "/v1/tasks/task-queued/cancel",
         dump({{"reason", std::string(513, 'r')}}), 400, "REASON_INVALID"},
        {"release reason not text", Who::kAgentA, "POST", "/v1/tasks/task-claimed/release",
         dump({{"lease_token", lease_token_}, {"failure_class", "crashed"}, {"reason", 7}}), 400,
         "REASON_INVALID"},
        {"release with a short failure class", Who::kAgentA, "POST",
         "/v1/tasks/task-claimed/release",
         dump({{"lease_token", lease_token_}, {"failure_class", "x"}}), 400,
         "FAILURE_CLASS_INVALID"},
        {"release with a failure class with a space", Who::kAgentA, "POST",
         "/v1/tasks/task-claimed/release",
         dump({{"lease_token", lease_token_}, {"failure_class", "bad class"}}), 400,
         "FAILURE_CLASS_INVALID"},
        {"release without a failure class", Who::kAgentA, "POST", "/v1/tasks/task-claimed/release",
         dump({{"lease_token", lease_token_}}), 400, "FAILURE_CLASS_INVALID"},
        {"heartbeat stage over 64 bytes", Who::kAgentA, "POST", "/v1/tasks/task-claimed/heartbeat",
         dump({{"lease_token", lease_token_}, {"stage", std::string(65, 's')}}), 400,
         "STAGE_INVALID"},
        {"result with a short idempotency key", Who::kAgentA, "POST",
         "/v1/tasks/task-claimed/result",
         result_for(lease_token_, 1, claimed_digest_, "short", {{"a", 1}}), 400,
         "IDEMPOTENCY_KEY_INVALID"},
        {"result with a numeric idempotency key", Who::kAgentA, "POST",
         "/v1/tasks/task-claimed/result",
         result_for(lease_token_, 1, claimed_digest_, 12345678, {{"a", 1}}), 400,
         "IDEMPOTENCY_KEY_INVALID"},
        {"result that is not an object", Who::kAgentA, "POST", "/v1/tasks/task-claimed/result",
         result_for(lease_token_, 1, claimed_digest_, "result-claimed-1", Json::array({1})), 400,
         "RESULT_INVALID"},
        {"result over 256 KiB", Who::kAgentA, "POST", "/v1/tasks/task-claimed/result",
         result_for(lease_token_, 1, claimed_digest_, "result-claimed-1",
                    {{"log", std::string(300 * 1024, 'z')}}),
         413, "RESULT_TOO_LARGE"},
        {"same result key, other content", Who::kAgentA, "POST", "/v1/tasks/task-verifying/result",
         result_for(verifying_lease_.at("lease_token"), 1,
                    task("task-verifying").at("execution_digest"), "result-verifying-1",
                    {{"n", 2}}),
         409, "RESULT_IDEMPOTENCY_CONFLICT"},
        {"list with limit 0", Who::kOwner, "GET", "/v1/tasks?limit=0", "", 400, "LIMIT_INVALID"},
        {"list by a status in lower case", Who::kOwner, "GET", "/v1/tasks?status=queued", "", 400,
         "TASK_STATUS_INVALID"},
        {"list by a tenant that is not a name", Who::kOwner, "GET", "/v1/tasks?tenant=a%20b", "",
         400, "TASK_TENANT_INVALID"},
        {"list by an id prefix no id has", Who::kOwner, "GET", "/v1/tasks?id_prefix=task%25", "",
         400, "TASK_ID_PREFIX_INVALID"},
        {"prune within the hour", Who::kOwner, "POST", "/v1/prune",
         dump({{"older_than_seconds", 600}}), 400, "PRUNE_AGE_INVALID"},
        {"prune without an age", Who::kOwner, "POST", "/v1/prune", "{}", 400, "PRUNE_AGE_INVALID"},
        {"list with a text limit", Who::kOwner, "GET", "/v1/tasks?limit=ten", "", 400,
         "LIMIT_INVALID"},
        {"poll with limit 101", Who::kAgentA, "POST", "/v1/tasks/poll",
         dump({{"worker_id", "w-main"}, {"limit", 101}}), 400, "LIMIT_INVALID"},
        {"claim-next waiting 30001 ms", Who::kAgentA, "POST", "/v1/tasks/claim-next",
         dump({{"worker_id", "w-main"}, {"wait_ms", 30001}}), 400, "CLAIM_WAIT_INVALID"},
        {"claim-next with a limit", Who::kAgentA, "POST", "/v1/tasks/claim-next",
         dump({{"worker_id", "w-main"}, {"limit", 1}}), 400, "REQUEST_FIELDS_INVALID"},
        {"claim-next by the owner", Who::kOwner, "POST", "/v1/tasks/claim-next",
         dump({{"worker_id", "w-main"}}), 403, "FORBIDDEN"},
        {"claim-next for 65 tasks", Who::kAgentA, "POST", "/v1/tasks/claim-next",
         dump({{"worker_id", "w-main"}, {"max_tasks", 65}}), 400, "CLAIM_MAX_TASKS_INVALID"},
        {"a result claiming 0 next tasks", Who::kAgentA, "POST", "/v1/tasks/task-claimed/result",
         with(Json::parse(
                  result_for(lease_token_, 1, claimed_digest_, "result-claimed-1", {{"a", 1}})),
              [](Json& b) {
                b["claim_next"] = {{"worker_id", "w-main"}, {"max_tasks", 0}};
              }),
         400, "CLAIM_MAX_TASKS_INVALID"},
        {"a batch of no tasks", Who::kOwner, "POST", "/v1/tasks/batch",
         dump({{"tasks", Json::array()}}), 400, "BATCH_INVALID"},
        {"results that are not a list", Who::kAgentA, "POST", "/v1/tasks/results",
         dump({{"results", Json::object()}}), 400, "BATCH_INVALID"},
    };
  }
  // The fleet refuses the claimant.
  std::vector<Case> fleet_cases() {
    return {
        {"claim without the adapter", Who::kAgentA, "POST", "/v1/tasks/task-source/claim",
         claim_body("w-noadapter", 1, task("task-source").at("execution_digest")), 403,
         "WORKER_ADAPTER_NOT_ALLOWED"},
        {"claim without the capability", Who::kAgentA, "POST", "/v1/tasks/task-source/claim",
         claim_body("w-nocap", 1, task("task-source").at("execution_digest")), 403,
         "WORKER_CAPABILITY_MISSING"},
        {"claim outside the worker's tenants", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim",
         claim_body("w-tenant", 1, digest_), 403, "WORKER_SCOPE_DENY"},
        {"claim by a full worker", Who::kAgentB, "POST", "/v1/tasks/task-queued/claim",
         claim_body("w-beta", 1, digest_), 409, "FLEET_WORKER_CAPACITY_EXHAUSTED"},
        {"re-claim right after a release", Who::kAgentA, "POST", "/v1/tasks/task-released/claim",
         claim_body("w-quar", 3, task("task-released").at("execution_digest")), 409,
         "FLEET_TASK_QUARANTINED"},
        {"claim by a quarantined worker", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim",
         claim_body("w-parked", 1, digest_), 409, "FLEET_WORKER_QUARANTINED"},
        {"claim with an open circuit", Who::kAgentA, "POST", "/v1/tasks/task-queued/claim",
         claim_body("w-broken", 1, digest_), 409, "FLEET_WORKER_CIRCUIT_OPEN"},
    };
  }
  // Task creation: projection and envelope refusals.
  std::vector<Case> create_cases() {
    const std::string hermes = dump(hermes_task("task-new"));
    return {
        {"same task id, other body", Who::kOwner, "POST", "/v1/tasks",
         with(hermes_task("task-queued"), [](Json& b) { b["goal"] = "Something else"; }), 409,
         "TASK_ALREADY_EXISTS"},
        {"secret-looking runtime constraint", Who::kOwner, "POST", "/v1/tasks",
         with(hermes_task("task-new"),
              [](Json& b) {
                b["execution"]["runtime_input"] = {{"goal", "x"},
                                                   {"constraints", {{"api_token", "abc"}}}};
              }),
         403, "AGENT_RUNTIME_SECRET_FIELD_DENY"},
        {"secret-looking task constraint", Who::kOwner, "POST", "/v1/tasks",
         with(source_capture_task("task-new"),
              [](Json& b) {
                b["constraints"] = {{"nested", {{"password", "x"}}}};
              }),
         403, "TASK_SECRET_FIELD_DENY"},
        {"unknown required capability", Who::kOwner, "POST", "/v1/tasks",
         with(hermes_task("task-new"),
              [](Json& b) { b["required_capabilities"] = {"warp.drive"}; }),
         400, "CAPABILITY_UNKNOWN"},
        {"hermes without its runtime capability", Who::kOwner, "POST", "/v1/tasks",
         with(hermes_task("task-new"),
              [](Json& b) {
                b.erase("required_capabilities");
                b["execution"]["capability_scope"] = {"git.read"};
              }),
         400, "AGENT_RUNTIME_CAPABILITY_REQUIRED"},
        {"protected target branch", Who::kOwner, "POST", "/v1/tasks",
         with(hermes_task("task-new"), [](Json& b) { b["binding"]["target_branch"] = "main"; }),
         403, "BINDING_TARGET_BRANCH_PROTECTED"},
        {"task id differs from the binding", Who::kOwner, "POST", "/v1/tasks",
         with(hermes_task("task-new"), [](Json& b) { b["task_id"] = "task-other"; }), 409,
         "TASK_BINDING_MISMATCH"},
        {"no binding", Who::kOwner, "POST", "/v1/tasks",
         with(hermes_task("task-new"), [](Json& b) { b.erase("binding"); }), 400,
         "BINDING_INVALID"},
        {"unknown task field", Who::kOwner, "POST", "/v1/tasks",
         with(hermes_task("task-new"), [](Json& b) { b["colour"] = "red"; }), 400,
         "TASK_FIELDS_INVALID"},
        {"unknown action", Who::kOwner, "POST", "/v1/tasks",
         with(hermes_task("task-new"), [](Json& b) { b["execution"]["action"] = "teleport"; }), 400,
         "EXECUTION_ACTION_UNSUPPORTED"},
        {"deterministic without changes", Who::kOwner, "POST", "/v1/tasks",
         with(deterministic_task("task-new"),
              [](Json& b) { b["execution"]["change_set"] = Json::array(); }),
         400, "CHANGE_SET_INVALID"},
        {"max_attempts 0", Who::kOwner, "POST", "/v1/tasks",
         with(hermes_task("task-new"), [](Json& b) { b["max_attempts"] = 0; }), 400,
         "TASK_MAX_ATTEMPTS_INVALID"},
        {"agent runtime adapter codex", Who::kOwner, "POST", "/v1/tasks",
         with(hermes_task("task-new"), [](Json& b) { b["execution"]["adapter"] = "codex"; }), 400,
         "AGENT_RUNTIME_ADAPTER_INVALID"},
        // Envelopes no claim could ever resolve under the scheduler's configuration: refused at
        // create with the resolution's own code, not left QUEUED for ever.
        {"deterministic verification off the allowlist", Who::kOwner, "POST", "/v1/tasks",
         with(deterministic_task("task-new"),
              [](Json& b) { b["execution"]["verification"] = verification("/usr/bin/perl"); }),
         400, "VERIFICATION_EXECUTABLE_NOT_ALLOWED"},
        {"engineering verification off the allowlist", Who::kOwner, "POST", "/v1/tasks",
         with(deterministic_task("task-new"),
              [](Json& b) {
                b["execution"] = {{"action", "engineering"},
                                  {"adapter", "codex"},
                                  {"capability_scope", b["execution"]["capability_scope"]},
                                  {"verification", verification("/usr/bin/gcc")}};
                b["success_criteria"] =
                    Json::array({{{"id", "note"}, {"description", "docs/NOTE.md is written"}}});
              }),
         400, "VERIFICATION_EXECUTABLE_NOT_ALLOWED"},
    };
  }

  // Every case of the table.
  std::vector<Case> table() {
    std::vector<Case> all;
    for (auto group :
         {&ErrorTableTest::body_cases, &ErrorTableTest::role_cases, &ErrorTableTest::unknown_cases,
          &ErrorTableTest::stale_cases, &ErrorTableTest::lease_cases, &ErrorTableTest::agent_cases,
          &ErrorTableTest::state_cases, &ErrorTableTest::fleet_cases,
          &ErrorTableTest::create_cases}) {
      auto cases = (this->*group)();
      all.insert(all.end(), cases.begin(), cases.end());
    }
    return all;
  }

  std::string token_a_;
  std::string token_b_;
  std::string token_tenant_;
  std::string digest_;  // of task-queued; every hermes task here has its own
  Json lease_;          // task-claimed, held by w-main
  Json verifying_lease_;
  Json beta_lease_;             // task-held-b, held by w-beta (max_concurrency 1)
  std::string lease_token_;     // lease_'s token
  std::string claimed_digest_;  // of task-claimed
  const std::string zeros_ = std::string(64, '0');
};

TEST_F(ErrorTableTest, EveryRefusalHasItsStatusAndWritesNothing) {
  // Given each bad request, we should answer its code and HTTP status and write nothing.
  const std::vector<Case> cases = table();

  std::set<std::string> covered;
  Json before = snapshot();
  ASSERT_EQ(before.at("tasks").size(), 10u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    covered.insert(c.code);
    ApiClient caller = client(token_of(c.who));
    Reply reply;
    try {
      reply = caller.send(c.method, c.target, c.body);
    } catch (const Error& error) {
      ADD_FAILURE() << "the request failed: " << error.code() << " " << error.detail();
      continue;
    }
    EXPECT_EQ(reply.status, c.status) << describe(reply);
    EXPECT_EQ(reply.body, (Json{{"error", c.code}})) << describe(reply);
    const Json after = snapshot();
    EXPECT_EQ(after, before) << Json::diff(before, after).dump();
    before = after;
  }

  // The table covers the whole Task API section of the registry but the listed exceptions.
  for (const auto& code : task_api_codes()) {
    if (kNotInTheTable.contains(code)) {
      EXPECT_FALSE(covered.contains(code)) << code << " is in the table: drop the exception";
    } else {
      EXPECT_TRUE(covered.contains(code)) << code << " has no case in the table";
    }
  }
  EXPECT_GT(task_api_codes().size(), 40u);
}

TEST_F(ErrorTableTest, RefusalsStillLetTheRightRequestThrough) {
  // Given the table's fleet, we should accept the well-formed requests its refusals vary.
  ApiClient a = client(token_a_);
  ApiClient b = client(token_b_);
  const auto stale =
      a.post("/v1/tasks/task-queued/claim",
             {{"worker_id", "w-main"}, {"expected_revision", 2}, {"execution_digest", digest_}});
  EXPECT_EQ(stale.code(), "TASK_REVISION_CONFLICT") << describe(stale);
  const auto beat =
      a.post("/v1/tasks/task-claimed/heartbeat", {{"lease_token", lease_.at("lease_token")}});
  EXPECT_EQ(beat.status, 200) << describe(beat);
  const auto replay =
      a.post("/v1/tasks/task-verifying/result",
             result_body(verifying_lease_, task("task-verifying").at("execution_digest"),
                         "result-verifying-1", {{"n", 1}}));
  EXPECT_EQ(replay.status, 200) << describe(replay);
  EXPECT_EQ(replay.body.at("idempotent"), true);
  const auto reset = owner().put("/v1/fleet/workers/w-broken", {{"reset_circuit", true}});
  ASSERT_EQ(reset.status, 200) << describe(reset);
  EXPECT_EQ(reset.body.at("circuit_state"), "CLOSED");
  const auto claimed =
      a.post("/v1/tasks/task-queued/claim",
             {{"worker_id", "w-broken"}, {"expected_revision", 1}, {"execution_digest", digest_}});
  ASSERT_EQ(claimed.status, 200) << describe(claimed);
  const auto verified = owner().post("/v1/tasks/task-verifying/verification",
                                     {{"expected_revision", 3}, {"decision", "PASS"}});
  EXPECT_EQ(verified.status, 200) << describe(verified);
  const auto beta =
      b.post("/v1/tasks/task-held-b/heartbeat", {{"lease_token", beta_lease_.at("lease_token")}});
  EXPECT_EQ(beta.status, 200) << describe(beta);
}

TEST_F(ErrorTableTest, RoleIsDecidedBeforeTheRequestIsRead) {
  // Given a caller in the wrong role, we should answer FORBIDDEN whatever its body or task id.
  const std::vector<Case> cases = {
      {"owner claims with a malformed body", Who::kOwner, "POST", "/v1/tasks/task-queued/claim",
       "{", 403, "FORBIDDEN"},
      {"owner registers with a malformed body", Who::kOwner, "POST", "/v1/workers/register", "[",
       403, "FORBIDDEN"},
      {"owner polls with a malformed body", Who::kOwner, "POST", "/v1/tasks/poll", "{", 403,
       "FORBIDDEN"},
      {"owner heartbeats with a malformed body", Who::kOwner, "POST",
       "/v1/tasks/task-claimed/heartbeat", "{", 403, "FORBIDDEN"},
      {"owner submits a malformed result", Who::kOwner, "POST", "/v1/tasks/task-claimed/result",
       "{", 403, "FORBIDDEN"},
      {"owner releases with a malformed body", Who::kOwner, "POST",
       "/v1/tasks/task-claimed/release", "{", 403, "FORBIDDEN"},
      {"agent creates a task with a malformed body", Who::kAgentA, "POST", "/v1/tasks", "{", 403,
       "FORBIDDEN"},
      {"agent verifies with a malformed body", Who::kAgentA, "POST",
       "/v1/tasks/task-verifying/verification", "{", 403, "FORBIDDEN"},
      {"agent cancels a task id outside the pattern", Who::kAgentA, "POST", "/v1/tasks/x/cancel",
       "{}", 403, "FORBIDDEN"},
      {"agent asks eligibility of a task id outside the pattern", Who::kAgentA, "GET",
       "/v1/tasks/x/eligibility", "", 403, "FORBIDDEN"},
  };
  const Json before = snapshot();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ApiClient caller = client(token_of(c.who));
    const auto reply = caller.send(c.method, c.target, c.body);
    EXPECT_EQ(reply.status, c.status) << describe(reply);
    EXPECT_EQ(reply.code(), c.code) << describe(reply);
  }
  EXPECT_EQ(snapshot(), before);
}

class StoreFailureTest : public SchedulerTest {};

TEST_F(StoreFailureTest, AFailureOfTheStoreIsAnsweredAndLoggedWithItsCause) {
  // Given a store that refuses every new task (a trigger, as a damaged database would), a create
  // should be answered 500 STORE_FAILURE with nothing written, and the scheduler's log should
  // name the route, the code and the store's own words, so an operator can tell which failure
  // a 5xx was (on PostgreSQL, its SQLSTATE).
  test::exec_in(scheduler(),
                "CREATE TRIGGER refuse_tasks BEFORE INSERT ON tasks "
                "BEGIN SELECT RAISE(ABORT, 'injected refusal'); END",
                "CREATE FUNCTION refuse_tasks() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'injected refusal'; END $$; "
                "CREATE TRIGGER refuse_tasks BEFORE INSERT ON tasks "
                "FOR EACH ROW EXECUTE FUNCTION refuse_tasks()");
  const auto reply = owner().post("/v1/tasks", hermes_task("task-refused"));
  EXPECT_EQ(reply.status, 500) << describe(reply);
  EXPECT_EQ(reply.code(), "STORE_FAILURE") << describe(reply);
  EXPECT_EQ(owner().get("/v1/tasks/task-refused").status, 404);
  const auto logged = scheduler().process().find_event("TASK_API_REQUEST_FAILED");
  ASSERT_TRUE(logged.has_value()) << scheduler().process().log();
  EXPECT_EQ(logged->value("route", ""), "tasks_create");
  EXPECT_EQ(logged->value("error", ""), "STORE_FAILURE");
  const std::string detail = logged->value("detail", "");
  EXPECT_NE(detail.find("injected refusal"), std::string::npos) << detail;
  if (test::is_postgres_location(scheduler().store_location())) {
    EXPECT_NE(detail.find("(SQLSTATE P0001)"), std::string::npos) << detail;
  }
}

}  // namespace
}  // namespace aios::taskapi_test
