// The owner's hold on agents: tenants granted at creation bound every worker of the agent (a
// registration may only narrow them; poll and claim never cross them), and a token can be
// revoked or rotated, refused at once, with its workers' claims released in the same step.
#include <gmock/gmock.h>

#include "taskapi/client.hpp"

namespace aios::taskapi_test {
namespace {

using ::testing::ElementsAre;

// A hermes task in `tenant`'s scope.
Json tenant_task(const std::string& task_id, const std::string& tenant) {
  auto body = hermes_task(task_id);
  body["scope_type"] = "tenant";
  body["tenant_id"] = tenant;
  return body;
}

class AgentsTest : public SchedulerTest {
 protected:
  std::string create_agent_with(const Json& body) {
    return require(owner().post("/v1/agents", body), 201, "create agent").at("token");
  }
  Reply register_in(ApiClient& agent, const std::string& worker_id, const Json& tenants) {
    Json body = {{"worker_id", worker_id},
                 {"capabilities", {"agent.runtime.hermes"}},
                 {"allowed_adapters", {"hermes"}},
                 {"max_concurrency", 4}};
    if (!tenants.is_null()) body["tenants"] = tenants;
    return agent.post("/v1/workers/register", body);
  }
  std::vector<std::string> polled(ApiClient& agent, const std::string& worker_id) {
    const auto reply = agent.post("/v1/tasks/poll", {{"worker_id", worker_id}, {"limit", 50}});
    EXPECT_EQ(reply.status, 200) << describe(reply);
    std::vector<std::string> ids;
    for (const auto& task : reply.body.at("tasks")) ids.push_back(task.at("task_id"));
    std::sort(ids.begin(), ids.end());
    return ids;
  }
};

// Given an agent granted tenant-a and tenant-b, its workers should register only inside that
// grant (none declared: the grant itself), and poll and claim should never cross it.
TEST_F(AgentsTest, GrantedTenantsBoundRegistrationPollAndClaim) {
  ApiClient agent = client(create_agent_with({{"agent_id", "agent-tenants"},
                                              {"granted_capabilities", {"agent.runtime.hermes"}},
                                              {"granted_tenants", {"tenant-b", "tenant-a"}}}));
  const auto outside = register_in(agent, "w-outside", Json{"tenant-a", "tenant-c"});
  EXPECT_EQ(outside.status, 403) << describe(outside);
  EXPECT_EQ(outside.code(), "WORKER_TENANT_NOT_GRANTED");
  const auto narrowed = register_in(agent, "w-narrow", Json{"tenant-a"});
  ASSERT_EQ(narrowed.status, 200) << describe(narrowed);
  EXPECT_EQ(narrowed.body.at("tenants"), Json({"tenant-a"}));
  const auto whole = register_in(agent, "w-whole", nullptr);
  ASSERT_EQ(whole.status, 200) << describe(whole);
  EXPECT_EQ(whole.body.at("tenants"), Json({"tenant-a", "tenant-b"}));

  create_task(tenant_task("task-a", "tenant-a"));
  create_task(tenant_task("task-b", "tenant-b"));
  create_task(tenant_task("task-c", "tenant-c"));
  create_task(hermes_task("task-global"));
  EXPECT_THAT(polled(agent, "w-narrow"), ElementsAre("task-a"));
  EXPECT_THAT(polled(agent, "w-whole"), ElementsAre("task-a", "task-b"));
  for (const char* task_id : {"task-c", "task-global"}) {
    const auto refused = try_claim(agent, task_id, "w-whole");
    EXPECT_EQ(refused.status, 403) << task_id << " " << describe(refused);
    EXPECT_EQ(refused.code(), "WORKER_SCOPE_DENY") << task_id;
  }
  EXPECT_EQ(try_claim(agent, "task-b", "w-narrow").code(), "WORKER_SCOPE_DENY");
  claim(agent, "task-b", "w-whole");

  // No grant is every tenant, as before; a malformed grant is refused.
  ApiClient open_agent = client(create_agent("agent-open", {"agent.runtime.hermes"}));
  ASSERT_EQ(register_in(open_agent, "w-open", nullptr).status, 200);
  EXPECT_THAT(polled(open_agent, "w-open"), ElementsAre("task-a", "task-c", "task-global"));
  for (const Json& bad : {Json("tenant-a"), Json({"bad tenant"}), Json({1})}) {
    const auto refused = owner().post("/v1/agents", {{"agent_id", "agent-bad"},
                                                     {"granted_capabilities", Json::array()},
                                                     {"granted_tenants", bad}});
    EXPECT_EQ(refused.status, 400) << bad.dump();
    EXPECT_EQ(refused.code(), "AGENT_TENANTS_INVALID") << bad.dump();
  }
}

// Given an agent whose worker holds a claim, revoking its token should refuse the token at once
// on every endpoint, release the claim (back to QUEUED with a TASK_RELEASED event) and make the
// old lease useless; rotating should issue a token that works while the old one does not.
TEST_F(AgentsTest, RevokedAndRotatedTokensAreRefusedAndTheirClaimsReleased) {
  const std::string token = create_agent("agent-leaky", {"agent.runtime.hermes"});
  ApiClient agent = client(token);
  ASSERT_EQ(register_in(agent, "w-leaky", nullptr).status, 200);
  create_task(hermes_task("task-held"));
  create_task(hermes_task("task-free"));
  const auto lease = claim(agent, "task-held", "w-leaky");

  const auto revoked = owner().post("/v1/agents/agent-leaky/revoke", Json::object());
  ASSERT_EQ(revoked.status, 200) << describe(revoked);
  EXPECT_EQ(revoked.body.at("released_tasks"), Json({"task-held"}));
  EXPECT_FALSE(revoked.body.at("revoked_at").get<std::string>().empty());
  EXPECT_EQ(revoked.raw.find(token), std::string::npos);
  EXPECT_EQ(task("task-held").at("status"), "QUEUED");
  const auto released = events("task-held").back();
  EXPECT_EQ(released.at("event_type"), "TASK_RELEASED");
  EXPECT_EQ(released.at("payload").at("reason"), "AGENT_TOKEN_REVOKED");
  for (const char* path : {"/v1/tasks/poll", "/v1/tasks/task-free/claim",
                           "/v1/tasks/task-held/heartbeat", "/v1/workers/register"}) {
    const auto refused = agent.post(path, {{"worker_id", "w-leaky"}});
    EXPECT_EQ(refused.status, 401) << path << " " << describe(refused);
  }
  // Revoking again changes nothing; an unknown agent is 404; only the owner may.
  EXPECT_EQ(owner().post("/v1/agents/agent-leaky/revoke", Json::object()).body.at("revoked_at"),
            revoked.body.at("revoked_at"));
  EXPECT_EQ(owner().post("/v1/agents/agent-nobody/revoke", Json::object()).code(),
            "AGENT_NOT_FOUND");

  const auto rotated = owner().post("/v1/agents/agent-leaky/rotate", Json::object());
  ASSERT_EQ(rotated.status, 200) << describe(rotated);
  const std::string fresh = rotated.body.at("token");
  EXPECT_NE(fresh, token);
  EXPECT_EQ(agent.post("/v1/tasks/poll", {{"worker_id", "w-leaky"}}).status, 401);
  ApiClient renewed = client(fresh);
  EXPECT_EQ(renewed.post("/v1/agents/agent-leaky/rotate", Json::object()).status, 403);
  const auto again = claim(renewed, "task-held", "w-leaky");
  EXPECT_EQ(again.at("attempt"), 2);
  EXPECT_NE(again.at("lease_token"), lease.at("lease_token"));
  // The old lease of the first attempt is dead, even with a valid token.
  const auto stale =
      renewed.post("/v1/tasks/task-held/heartbeat",
                   {{"lease_token", lease.at("lease_token")}, {"attempt", lease.at("attempt")}});
  EXPECT_NE(stale.status, 200) << describe(stale);

  // Rotating releases the claims held under the token it replaces.
  const auto rotated_again = owner().post("/v1/agents/agent-leaky/rotate", Json::object());
  EXPECT_EQ(rotated_again.body.at("released_tasks"), Json({"task-held"}));
  EXPECT_EQ(events("task-held").back().at("payload").at("reason"), "AGENT_TOKEN_ROTATED");
}

}  // namespace
}  // namespace aios::taskapi_test
