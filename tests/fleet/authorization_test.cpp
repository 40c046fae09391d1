// Authorization inside the task plane: an agent sees and acts only through its own workers and
// leases, a worker never holds more than its agent's grant, and an agent token is kept only as
// its SHA-256.

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

class AuthorizationTest : public PlaneTest {
 protected:
  void SetUp() override {
    owner_ = make_agent("agent-owner");
    intruder_ = make_agent("agent-intruder");
    register_worker(owner_, "worker-owner");
    register_worker(intruder_, "worker-intruder");
    create_task("auth-1");
    claimed_ = claim(owner_, "auth-1", "worker-owner");
  }

  Agent owner_;
  Agent intruder_;
  Json claimed_;
};

TEST_F(AuthorizationTest, ARevokedOrRotatedTokenIsRefusedAtOnceThoughJustAuthenticated) {
  // Given tokens that have just authenticated (and so are remembered), we should refuse a
  // revoked one and a rotated one on the very next call, and accept the rotated-to token.
  const Json first = plane_.create_agent(fleet::agent_grant_of(
      {{"agent_id", "agent-cached-1"}, {"granted_capabilities", {"code.read"}}}));
  const Json second = plane_.create_agent(fleet::agent_grant_of(
      {{"agent_id", "agent-cached-2"}, {"granted_capabilities", {"code.read"}}}));
  ASSERT_TRUE(plane_.authenticate_agent(first["token"]).has_value());
  ASSERT_TRUE(plane_.authenticate_agent(second["token"]).has_value());

  plane_.revoke_agent_token("agent-cached-1");
  const Json rotated = plane_.rotate_agent_token("agent-cached-2");

  EXPECT_FALSE(plane_.authenticate_agent(first["token"]).has_value());
  EXPECT_FALSE(plane_.authenticate_agent(second["token"]).has_value());
  const auto renewed = plane_.authenticate_agent(rotated["token"]);
  ASSERT_TRUE(renewed.has_value());
  EXPECT_EQ(renewed->agent_id, "agent-cached-2");
}

TEST_F(AuthorizationTest, AnotherAgentCannotReadTheClaim) {
  // Given a task claimed by the owner agent's worker, we should show it and its events to that
  // agent and answer TASK_NOT_FOUND to any other agent, as for a task that does not exist.
  EXPECT_EQ(plane_.task_view("auth-1", &owner_)["claimed_by"], "worker-owner");
  EXPECT_EQ(plane_.task_events("auth-1", &owner_, 100, 0)["events"].size(), 2u);

  EXPECT_EQ(code_of([&] { plane_.task_view("auth-1", &intruder_); }), "TASK_NOT_FOUND");
  EXPECT_EQ(code_of([&] { plane_.task_events("auth-1", &intruder_, 100, 0); }), "TASK_NOT_FOUND");
  EXPECT_EQ(code_of([&] { plane_.task_view("no-such-task", &intruder_); }), "TASK_NOT_FOUND");
}

TEST_F(AuthorizationTest, UnclaimedTaskIsInvisibleToAgents) {
  // Given a queued task nobody claimed, we should hide it from every agent's task view (agents
  // find work through poll only).
  create_task("auth-queued");

  EXPECT_EQ(code_of([&] { plane_.task_view("auth-queued", &owner_); }), "TASK_NOT_FOUND");
  EXPECT_EQ(code_of([&] { plane_.task_events("auth-queued", &owner_, 100, 0); }), "TASK_NOT_FOUND");
}

TEST_F(AuthorizationTest, AnotherAgentCannotActOnTheClaim) {
  // Given the owner's lease token in another agent's hands, we should refuse its heartbeat,
  // result and release with LEASE_INVALID and leave the claim untouched.
  struct Case {
    std::string name;
    std::function<void()> call;
  };
  const std::vector<Case> cases = {
      {"heartbeat",
       [&] {
         plane_.heartbeat(intruder_, "auth-1",
                          fleet::heartbeat_of({{"lease_token", claimed_["lease_token"]}}));
       }},
      {"result", [&] { submit(intruder_, claimed_); }},
      {"release", [&] { release(intruder_, claimed_); }},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(code_of(c.call), "LEASE_INVALID") << c.name;
  }

  const Json task = view("auth-1");
  EXPECT_EQ(task["status"], "CLAIMED");
  EXPECT_EQ(task["revision"], claimed_["revision"]);
  EXPECT_EQ(task["lease_expires_at"], claimed_["lease_expires_at"]);
  EXPECT_EQ(count("SELECT COUNT(*) FROM results"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM fleet_task_quarantine"), 0);
  EXPECT_EQ(worker_entry("worker-owner")["consecutive_failures"], 0);
}

TEST_F(AuthorizationTest, OnlyTheSubmittingAgentCanReplayAResult) {
  // Given a result submitted by the owner agent, we should replay it to that agent and refuse
  // the same body from another agent, which must learn nothing of the task.
  EXPECT_EQ(submit(owner_, claimed_).first, 201);
  const auto replay = submit(owner_, claimed_);
  EXPECT_EQ(replay.first, 200);
  EXPECT_EQ(replay.second["idempotent"], true);
  EXPECT_EQ(code_of([&] { submit(intruder_, claimed_); }), "LEASE_INVALID");
}

TEST_F(AuthorizationTest, WrongTokenIsRefusedForTheOwnerToo) {
  // Given the owner agent with a token that is not the lease's, we should refuse every use.
  Json forged = claimed_;
  forged["lease_token"] = std::string(64, 'f');
  EXPECT_EQ(code_of([&] { submit(owner_, forged); }), "LEASE_INVALID");
  EXPECT_EQ(code_of([&] { release(owner_, forged); }), "LEASE_INVALID");
  EXPECT_EQ(code_of([&] {
              plane_.heartbeat(owner_, "auth-1",
                               fleet::heartbeat_of({{"lease_token", forged["lease_token"]}}));
            }),
            "LEASE_INVALID");
  EXPECT_EQ(code_of([&] {
              plane_.heartbeat(owner_, "auth-1", fleet::heartbeat_of({{"lease_token", ""}}));
            }),
            "LEASE_INVALID");
}

TEST_F(AuthorizationTest, AnotherAgentCannotUseOrTakeOverAWorker) {
  // Given a worker registered to the owner agent, we should refuse another agent's poll,
  // claim and re-registration of it with WORKER_AGENT_MISMATCH.
  create_task("auth-2");

  EXPECT_EQ(code_of([&] {
              plane_.poll(intruder_, fleet::poll_request_of({{"worker_id", "worker-owner"}}));
            }),
            "WORKER_AGENT_MISMATCH");
  EXPECT_EQ(code_of([&] { claim(intruder_, "auth-2", "worker-owner"); }), "WORKER_AGENT_MISMATCH");
  EXPECT_EQ(code_of([&] { plane_.claim_next(intruder_, "worker-owner"); }),
            "WORKER_AGENT_MISMATCH");
  EXPECT_EQ(code_of([&] { register_worker(intruder_, "worker-owner"); }), "WORKER_AGENT_MISMATCH");
  EXPECT_EQ(worker_entry("worker-owner")["agent_id"], "agent-owner");
  EXPECT_EQ(view("auth-2")["status"], "QUEUED");
}

TEST_F(AuthorizationTest, WorkerCapabilitiesStayInsideTheGrant) {
  // Given an agent granted code.read only, we should refuse workers declaring anything more,
  // including through an alias, and accept the grant itself or an alias of it.
  struct Case {
    Json capabilities;
    std::string code;
  };
  const std::vector<Case> cases = {
      {{"code.read"}, "OK"},
      {Json::array(), "OK"},
      {{"code.read", "code.write"}, "WORKER_CAPABILITY_NOT_GRANTED"},
      {{"git.read"}, "WORKER_CAPABILITY_NOT_GRANTED"},
      {{"governed.git.write.branch", "governed.git.write.file"}, "WORKER_CAPABILITY_NOT_GRANTED"},
      {{"code.*"}, "CAPABILITY_UNKNOWN"},
      {{"no.such.capability"}, "CAPABILITY_UNKNOWN"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    EXPECT_EQ(code_of([&] {
                register_worker(owner_, "worker-grant-" + std::to_string(i),
                                {{"capabilities", c.capabilities}});
              }),
              c.code)
        << c.capabilities.dump();
  }
}

TEST_F(AuthorizationTest, AgentTokenIsStoredOnlyAsItsSha256) {
  // Given a freshly issued agent token, we should find its SHA-256 in the agents table and the
  // token itself nowhere in the database files.
  const Json created = plane_.create_agent(fleet::agent_grant_of(
      {{"agent_id", "agent-secret"}, {"granted_capabilities", {"code.read"}}}));
  const std::string token = created["token"];
  ASSERT_GE(token.size(), 32u);

  const auto agents = rows("SELECT * FROM agents");
  for (const auto& row : agents) {
    for (const auto& value : row) EXPECT_EQ(value.find(token), std::string::npos) << value;
  }
  EXPECT_EQ(rows("SELECT token_sha256 FROM agents WHERE agent_id='agent-secret'"),
            (std::vector<std::vector<std::string>>{{sha256_hex(token)}}));
  for (const char* suffix : {"", "-wal"}) {
    std::ifstream file(db_path().string() + suffix, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    EXPECT_EQ(bytes.find(token), std::string::npos) << "token found in the file" << suffix;
  }
  EXPECT_TRUE(plane_.authenticate_agent(token).has_value());
  EXPECT_FALSE(plane_.authenticate_agent(sha256_hex(token)).has_value());
  EXPECT_FALSE(plane_.authenticate_agent("").has_value());
}

}  // namespace
}  // namespace aios::fleet_test
