// The authorization matrix: every endpoint of the Task API, the governed Bridge and the rebind
// daemon, called by each of five principals (no token, a wrong token, agent A who holds the
// claim, agent B who does not, the owner). Only the role docs/api.md names succeeds; every
// refusal carries the documented code and writes nothing (the database's row counts and the sum
// of task revisions are the same before and after it). Each cell gets a fresh task, so a call
// that succeeds cannot change what the next principal sees.

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "bridge/bridge_fixture.hpp"
#include "rebind/rebind_daemon.hpp"
#include "support/store_rows.hpp"

namespace aios::security_test {
namespace {

using bridge_test::kWriterCapabilities;
using taskapi_test::ApiClient;
using taskapi_test::describe;
using taskapi_test::Json;
using taskapi_test::Reply;
using taskapi_test::require;

enum class Principal { kNone, kWrong, kAgentA, kAgentB, kOwner };
constexpr std::array kPrincipals = {Principal::kNone, Principal::kWrong, Principal::kAgentA,
                                    Principal::kAgentB, Principal::kOwner};

const char* name_of(Principal principal) {
  switch (principal) {
    case Principal::kNone:
      return "no token";
    case Principal::kWrong:
      return "wrong token";
    case Principal::kAgentA:
      return "agent A";
    case Principal::kAgentB:
      return "agent B";
    case Principal::kOwner:
      return "owner";
  }
  return "?";
}

enum class Port { kTaskApi, kBridge, kRebind };

// One request: the path and body are built for each cell by `prepare` (given a fresh id).
struct Call {
  std::string target;
  Json body;  // null: no body
};

// One row: an endpoint and what each principal must get: "" means success (any 2xx), otherwise
// the {"error": CODE} it must be refused with.
struct Row {
  std::string endpoint;
  Port port;
  std::string method;
  std::function<Call(const std::string& id)> prepare;
  std::array<std::string, 5> expected;  // in the order of kPrincipals
};

constexpr const char* kOk = "";
constexpr const char* kUnauthorized = "UNAUTHORIZED";
constexpr const char* kForbidden = "FORBIDDEN";

class AuthorizationMatrixTest : public bridge_test::BridgeTest {
 protected:
  void SetUp() override {
    BridgeTest::SetUp();
    // Agent A is the fixture's writer agent; both agents get a reader worker and a writer with
    // room for every claim the matrix leaves open.
    register_worker(agent(), "worker-a", kWriterCapabilities, {"deterministic", "source_capture"},
                    64);
    agent_b_.emplace(client(create_agent("agent-b", kWriterCapabilities)));
    register_worker(*agent_b_, "worker-b", kWriterCapabilities, {"deterministic", "source_capture"},
                    64);
    rebind_.emplace(rebind_test::rebind_options(
                        {.store = scheduler().store_location(),
                         .token_file = scheduler().dir() / "control_token",
                         .bridge_url = "http://127.0.0.1:" + std::to_string(bridge_port())}),
                    scheduler().dir().path(), "aios-agent-task-execution-rebind");
    rebind_->start();
  }

  void TearDown() override {
    if (rebind_ && rebind_->running()) {
      const auto status = rebind_->stop();
      EXPECT_TRUE(status.exited_with(0)) << status.describe() << "\n" << rebind_->log();
      EXPECT_THAT(rebind_->log(), ::testing::Not(::testing::HasSubstr("Sanitizer")));
    }
    BridgeTest::TearDown();
  }

  std::uint16_t bridge_port() { return scheduler().bridge_port(); }

  std::string token_of(Principal principal) {
    switch (principal) {
      case Principal::kNone:
        return "";
      case Principal::kWrong:
        return "aios_" + std::string(43, 'x');
      case Principal::kAgentA:
        return agent().token();
      case Principal::kAgentB:
        return agent_b_->token();
      case Principal::kOwner:
        return scheduler().control_token();
    }
    return "";
  }

  Reply send(const Row& row, Principal principal, const Call& call) {
    const std::uint16_t port = row.port == Port::kTaskApi  ? scheduler().port()
                               : row.port == Port::kBridge ? bridge_port()
                                                           : rebind_->port();
    ApiClient caller(port, token_of(principal));
    return caller.send(row.method, call.target, call.body.is_null() ? "" : call.body.dump());
  }

  // Row counts of every table a call could write, and the sum of task revisions.
  std::vector<std::int64_t> footprint() {
    std::vector<std::int64_t> out;
    for (const char* table : {"tasks", "task_events", "claims", "agents", "workers", "results",
                              "fleet_dispatches", "fleet_task_quarantine", "bridge_plans",
                              "bridge_writer_leases", "bridge_commits", "task_execution_rebinds"}) {
      out.push_back(test::count_in(scheduler(), std::string("SELECT COUNT(*) FROM ") + table));
    }
    out.push_back(test::count_in(scheduler(), "SELECT COALESCE(SUM(revision),0) FROM tasks"));
    return out;
  }

  // --- Cell set-ups: each returns the state a documented caller needs ------------------------

  Json queued_capture(const std::string& id) {
    return create_task(bridge_test::BridgeTest::source_capture_task(binding(id, "agent/" + id)));
  }
  // A source_capture task claimed by agent A's worker; returns the lease (with the digest).
  Json claimed_by_a(const std::string& id) {
    queued_capture(id);
    auto lease = claim(agent(), id, "worker-a");
    lease["execution_digest"] = task(id).at("execution_digest");
    return lease;
  }
  // A deterministic task claimed by agent A's worker.
  Json deterministic_claimed_by_a(const std::string& id) {
    create_task(deterministic_task(binding(id, "agent/" + id), {write_file("docs/" + id, "x\n")}));
    auto lease = claim(agent(), id, "worker-a");
    lease["execution_digest"] = task(id).at("execution_digest");
    return lease;
  }
  // A task whose result agent A submitted: VERIFYING.
  Json verifying(const std::string& id) {
    const auto lease = claimed_by_a(id);
    require(agent().post("/v1/tasks/" + id + "/result",
                         taskapi_test::result_body(lease, lease.at("execution_digest"),
                                                   id + "-result", {{"summary", "read"}})),
            201, "result " + id);
    return task(id);
  }
  // A task sent back by NEEDS_REWORK with its deterministic plan registered: the body of a
  // rebind the owner may send.
  Json rebind_request(const std::string& id) {
    verifying(id);
    verify(id, "NEEDS_REWORK");
    const auto view = task(id);
    const Json plan =
        require(bridge().post("/v2/plans",
                              {{"task_id", id},
                               {"capability_scope", kWriterCapabilities},
                               {"change_set", Json::array({write_file("docs/NOTE.md", "r\n")})}}),
                201, "plan " + id);
    return rebind_test::owner_rebind_request(view, plan.at("execution_digest"), id + "-rebind",
                                             "authorization matrix");
  }

  static Json proof(const Json& lease) {
    return {{"task_id", lease.at("task_id")},
            {"lease_token", lease.at("lease_token")},
            {"attempt", lease.at("attempt")},
            {"execution_digest", lease.at("execution_digest")}};
  }

  std::vector<Row> rows() {
    const auto anyone = std::array<std::string, 5>{kOk, kOk, kOk, kOk, kOk};
    const auto owner_only =
        std::array<std::string, 5>{kUnauthorized, kUnauthorized, kForbidden, kForbidden, kOk};
    const auto agents_only =
        std::array<std::string, 5>{kUnauthorized, kUnauthorized, kOk, kOk, kForbidden};
    // Agent A's claim: B is told nothing about it and may not act on it.
    const auto claimant = [](const char* b_code) {
      return std::array<std::string, 5>{kUnauthorized, kUnauthorized, kOk, b_code, kForbidden};
    };
    const auto owner_or_claimant =
        std::array<std::string, 5>{kUnauthorized, kUnauthorized, kOk, "TASK_NOT_FOUND", kOk};
    return {
        {"GET /health", Port::kTaskApi, "GET",
         [](const std::string&) {
           return Call{"/health", {}};
         },
         anyone},
        {"GET /metrics", Port::kTaskApi, "GET",
         [](const std::string&) {
           return Call{"/metrics", {}};
         },
         anyone},
        {"POST /v1/agents", Port::kTaskApi, "POST",
         [](const std::string& id) {
           return Call{"/v1/agents", {{"agent_id", id}, {"granted_capabilities", {"git.read"}}}};
         },
         owner_only},
        {"POST /v1/agents/{id}/revoke", Port::kTaskApi, "POST",
         [this](const std::string& id) {
           create_agent(id, {"git.read"});
           return Call{"/v1/agents/" + id + "/revoke", Json::object()};
         },
         owner_only},
        {"POST /v1/agents/{id}/rotate", Port::kTaskApi, "POST",
         [this](const std::string& id) {
           create_agent(id, {"git.read"});
           return Call{"/v1/agents/" + id + "/rotate", Json::object()};
         },
         owner_only},
        {"POST /v1/agents/{id}/client-certificate", Port::kTaskApi, "POST",
         [this](const std::string& id) {
           create_agent(id, {"git.read"});
           return Call{"/v1/agents/" + id + "/client-certificate", {{"uri", "aios:agent:" + id}}};
         },
         owner_only},
        {"POST /v1/workers/register", Port::kTaskApi, "POST",
         [](const std::string& id) {
           return Call{"/v1/workers/register",
                       {{"worker_id", id},
                        {"capabilities", {"git.read"}},
                        {"allowed_adapters", {"source_capture"}}}};
         },
         agents_only},
        {"POST /v1/workers/register (the other agent's worker)", Port::kTaskApi, "POST",
         [](const std::string&) {
           // Agent A re-registers its worker as it was; B may not take it over.
           return Call{"/v1/workers/register",
                       {{"worker_id", "worker-a"},
                        {"capabilities", kWriterCapabilities},
                        {"allowed_adapters", {"deterministic", "source_capture"}},
                        {"max_concurrency", 64}}};
         },
         claimant("WORKER_AGENT_MISMATCH")},
        {"POST /v1/tasks", Port::kTaskApi, "POST",
         [this](const std::string& id) {
           return Call{"/v1/tasks",
                       bridge_test::BridgeTest::source_capture_task(binding(id, "agent/" + id))};
         },
         owner_only},
        {"GET /v1/tasks", Port::kTaskApi, "GET",
         [](const std::string&) {
           return Call{"/v1/tasks?status=QUEUED", {}};
         },
         owner_only},
        {"POST /v1/tasks/poll (with agent A's worker)", Port::kTaskApi, "POST",
         [](const std::string&) {
           return Call{"/v1/tasks/poll", {{"worker_id", "worker-a"}, {"limit", 5}}};
         },
         claimant("WORKER_AGENT_MISMATCH")},
        {"POST /v1/tasks/claim-next (with agent A's worker)", Port::kTaskApi, "POST",
         [](const std::string&) {
           return Call{"/v1/tasks/claim-next", {{"worker_id", "worker-a"}}};
         },
         claimant("WORKER_AGENT_MISMATCH")},
        {"GET /v1/tasks/{id}", Port::kTaskApi, "GET",
         [this](const std::string& id) {
           claimed_by_a(id);
           return Call{"/v1/tasks/" + id, {}};
         },
         owner_or_claimant},
        {"GET /v1/tasks/{id}/events", Port::kTaskApi, "GET",
         [this](const std::string& id) {
           claimed_by_a(id);
           return Call{"/v1/tasks/" + id + "/events", {}};
         },
         owner_or_claimant},
        {"POST /v1/tasks/{id}/claim (with agent A's worker)", Port::kTaskApi, "POST",
         [this](const std::string& id) {
           const auto view = queued_capture(id);
           return Call{"/v1/tasks/" + id + "/claim",
                       {{"worker_id", "worker-a"},
                        {"expected_revision", view.at("revision")},
                        {"execution_digest", view.at("execution_digest")}}};
         },
         claimant("WORKER_AGENT_MISMATCH")},
        {"POST /v1/tasks/{id}/heartbeat", Port::kTaskApi, "POST",
         [this](const std::string& id) {
           const auto lease = claimed_by_a(id);
           return Call{"/v1/tasks/" + id + "/heartbeat",
                       {{"lease_token", lease.at("lease_token")}, {"stage", "running"}}};
         },
         claimant("LEASE_INVALID")},
        {"POST /v1/tasks/{id}/result", Port::kTaskApi, "POST",
         [this](const std::string& id) {
           const auto lease = claimed_by_a(id);
           return Call{"/v1/tasks/" + id + "/result",
                       taskapi_test::result_body(lease, lease.at("execution_digest"), id + "-r",
                                                 {{"summary", "done"}})};
         },
         claimant("LEASE_INVALID")},
        {"POST /v1/tasks/{id}/release", Port::kTaskApi, "POST",
         [this](const std::string& id) {
           const auto lease = claimed_by_a(id);
           return Call{"/v1/tasks/" + id + "/release",
                       {{"lease_token", lease.at("lease_token")},
                        {"failure_class", "runtime_crash"},
                        {"reason", "matrix"}}};
         },
         claimant("LEASE_INVALID")},
        {"POST /v1/tasks/{id}/verification", Port::kTaskApi, "POST",
         [this](const std::string& id) {
           const auto view = verifying(id);
           return Call{"/v1/tasks/" + id + "/verification",
                       {{"expected_revision", view.at("revision")},
                        {"decision", "PASS"},
                        {"reason", "matrix"}}};
         },
         owner_only},
        {"POST /v1/tasks/{id}/cancel", Port::kTaskApi, "POST",
         [this](const std::string& id) {
           queued_capture(id);
           return Call{"/v1/tasks/" + id + "/cancel", {{"reason", "matrix"}}};
         },
         owner_only},
        {"GET /v1/tasks/{id}/eligibility", Port::kTaskApi, "GET",
         [this](const std::string& id) {
           queued_capture(id);
           return Call{"/v1/tasks/" + id + "/eligibility", {}};
         },
         owner_only},
        {"GET /v1/events", Port::kTaskApi, "GET",
         [](const std::string&) {
           return Call{"/v1/events?after=0", {}};
         },
         owner_only},
        {"GET /v1/dashboard", Port::kTaskApi, "GET",
         [this](const std::string& id) {
           queued_capture(id);
           return Call{"/v1/dashboard?task=" + id, {}};
         },
         owner_only},
        // The page is the same for everyone; what it shows comes from GET /v1/dashboard.
        {"GET /ui/", Port::kTaskApi, "GET",
         [](const std::string&) {
           return Call{"/ui/", {}};
         },
         anyone},
        {"GET /v1/status", Port::kTaskApi, "GET",
         [](const std::string&) {
           return Call{"/v1/status", {}};
         },
         owner_only},
        // Nothing here is old enough to prune: the owner's call writes nothing either.
        {"POST /v1/prune", Port::kTaskApi, "POST",
         [](const std::string&) {
           return Call{"/v1/prune", {{"older_than_seconds", 86400}}};
         },
         owner_only},
        {"GET /v1/fleet", Port::kTaskApi, "GET",
         [](const std::string&) {
           return Call{"/v1/fleet", {}};
         },
         owner_only},
        {"PUT /v1/fleet/workers/{id}", Port::kTaskApi, "PUT",
         [](const std::string&) {
           return Call{"/v1/fleet/workers/worker-b", {{"max_slots", 64}, {"reset_circuit", true}}};
         },
         owner_only},
        {"GET /health (Bridge)", Port::kBridge, "GET",
         [](const std::string&) {
           return Call{"/health", {}};
         },
         anyone},
        {"POST /v2/plans", Port::kBridge, "POST",
         [this](const std::string& id) {
           queued_capture(id);
           return Call{"/v2/plans",
                       {{"task_id", id},
                        {"capability_scope", kWriterCapabilities},
                        {"change_set", Json::array({write_file("docs/PLAN.md", "p\n")})}}};
         },
         owner_only},
        {"POST /v2/execution-envelope", Port::kBridge, "POST",
         [this](const std::string& id) {
           // A deterministic task is its own registered plan.
           create_task(
               deterministic_task(binding(id, "agent/" + id), {write_file("docs/" + id, "x\n")}));
           return Call{"/v2/execution-envelope",
                       {{"task_id", id}, {"required_capabilities", {"git.read"}}}};
         },
         std::array<std::string, 5>{kUnauthorized, kUnauthorized, kOk, kOk, kOk}},
        {"POST /v2/writer-leases", Port::kBridge, "POST",
         [this](const std::string& id) {
           return Call{"/v2/writer-leases", proof(deterministic_claimed_by_a(id))};
         },
         claimant("LEASE_INVALID")},
        {"POST /v2/governed-commits", Port::kBridge, "POST",
         [this](const std::string& id) {
           const auto lease = deterministic_claimed_by_a(id);
           const auto granted = require(agent_bridge().post("/v2/writer-leases", proof(lease)), 201,
                                        "writer lease " + id);
           auto body = proof(lease);
           body["writer_lease_id"] = granted.at("writer_lease_id");
           return Call{"/v2/governed-commits", body};
         },
         claimant("LEASE_INVALID")},
        // The history of the base of a task A holds: B neither holds nor could claim it.
        {"POST /v2/repository-pack", Port::kBridge, "POST",
         [this](const std::string& id) {
           deterministic_claimed_by_a(id);
           return Call{"/v2/repository-pack", {{"task_id", id}}};
         },
         claimant("TASK_NOT_FOUND")},
        {"GET /health (rebind)", Port::kRebind, "GET",
         [](const std::string&) {
           return Call{"/health", {}};
         },
         anyone},
        // The rebind daemon knows only the control token: an agent token is no token to it.
        {"POST /v1/tasks/{id}/execution-rebind", Port::kRebind, "POST",
         [this](const std::string& id) {
           return Call{"/v1/tasks/" + id + "/execution-rebind", rebind_request(id)};
         },
         std::array<std::string, 5>{kUnauthorized, kUnauthorized, kUnauthorized, kUnauthorized,
                                    kOk}},
    };
  }

  std::optional<ApiClient> agent_b_;
  std::optional<test::Daemon> rebind_;
};

TEST_F(AuthorizationMatrixTest, OnlyTheDocumentedRoleSucceedsAndRefusalsWriteNothing) {
  // Given every endpoint and every principal, we should let exactly the documented role through
  // and refuse the rest with the documented code, without a write.
  int row_number = 0;
  int cells = 0;
  for (const auto& row : rows()) {
    ++row_number;
    for (std::size_t p = 0; p < kPrincipals.size(); ++p) {
      const Principal principal = kPrincipals[p];
      const std::string id = "mx-" + std::to_string(row_number) + "-" + std::to_string(p);
      const Call call = row.prepare(id);
      const auto before = footprint();
      const Reply reply = send(row, principal, call);
      const std::string& expected = row.expected[p];
      SCOPED_TRACE(row.endpoint + " as " + name_of(principal) + ": " + describe(reply));
      ++cells;
      if (expected.empty()) {
        EXPECT_GE(reply.status, 200);
        EXPECT_LT(reply.status, 300);
        continue;
      }
      EXPECT_EQ(reply.code(), expected);
      EXPECT_GE(reply.status, 400);
      EXPECT_EQ(footprint(), before) << "a refused call wrote to the database";
    }
  }
  EXPECT_EQ(cells, 36 * 5);
}

TEST_F(AuthorizationMatrixTest, AnAgentNeverSeesAnotherAgentsClaimInListsOrPolls) {
  // Given a task claimed by agent A, we should keep it out of agent B's poll and let B neither
  // read nor act on it, while the owner sees it claimed by A's worker.
  const auto lease = claimed_by_a("mx-private");
  ApiClient b = client(agent_b_->token());
  const auto polled =
      require(b.post("/v1/tasks/poll", {{"worker_id", "worker-b"}, {"limit", 100}}), 200, "poll");
  for (const auto& item : polled.at("tasks")) EXPECT_NE(item.at("task_id"), "mx-private");
  EXPECT_EQ(b.get("/v1/tasks/mx-private").code(), "TASK_NOT_FOUND");
  EXPECT_EQ(b.get("/v1/tasks/mx-private/events").code(), "TASK_NOT_FOUND");
  EXPECT_EQ(task("mx-private").at("claimed_by"), "worker-a");
  EXPECT_EQ(task("mx-private").at("status"), "CLAIMED");
  EXPECT_EQ(task("mx-private").at("revision"), lease.at("revision"));
}

}  // namespace
}  // namespace aios::security_test
