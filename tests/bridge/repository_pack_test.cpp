// POST /v2/repository-pack on the real scheduler: the history of a task's base for a worker on
// another host, only for an agent that holds or could claim the task, as a pack the worker's
// mirror indexes.
#include "aios/git.hpp"
#include "bridge/bridge_fixture.hpp"

namespace aios::bridge_test {
namespace {

class RepositoryPackTest : public BridgeTest {
 protected:
  void SetUp() override {
    BridgeTest::SetUp();
    require(owner().post("/v1/tasks", deterministic_task(binding("pack-1", "agent/pack-1"),
                                                         {write_file("docs/P.md", "p\n")})),
            201, "create pack-1");
  }
};

// Given an agent whose worker could claim the task, we should answer a pack that gives the
// worker's mirror the task's base.
TEST_F(RepositoryPackTest, AnswersThePackOfTheTasksBase) {
  const auto reply = agent_bridge().post("/v2/repository-pack", {{"task_id", "pack-1"}});
  ASSERT_EQ(reply.status, 200) << describe(reply);
  EXPECT_TRUE(reply.raw.starts_with("PACK"));
  git::Mirror mirror(scheduler().dir() / "mirror.git");
  mirror.add(reply.raw, base());
  EXPECT_TRUE(mirror.has_commit(base()));
  // Naming the base as held leaves nothing to send but the pack's frame.
  const auto again =
      agent_bridge().post("/v2/repository-pack", {{"task_id", "pack-1"}, {"have", {base()}}});
  ASSERT_EQ(again.status, 200);
  EXPECT_LT(again.raw.size(), reply.raw.size());
}

// Given the owner, another agent, an unknown task or a malformed body, we should refuse with
// their codes.
TEST_F(RepositoryPackTest, RefusesWhoeverCannotTakeTheTask) {
  EXPECT_EQ(bridge().post("/v2/repository-pack", {{"task_id", "pack-1"}}).code(), "FORBIDDEN");
  auto stranger =
      ApiClient(scheduler().bridge_port(), create_agent("agent-reader", Json::array({"git.read"})));
  EXPECT_EQ(stranger.post("/v2/repository-pack", {{"task_id", "pack-1"}}).code(), "TASK_NOT_FOUND");
  EXPECT_EQ(agent_bridge().post("/v2/repository-pack", {{"task_id", "pack-none"}}).code(),
            "TASK_NOT_FOUND");
  for (const auto& body : {Json{{"task_id", "pack-1"}, {"have", "x"}},
                           Json{{"task_id", "pack-1"}, {"have", {"not-an-oid"}}},
                           Json{{"task_id", "pack-1"}, {"want", base()}}}) {
    SCOPED_TRACE(body.dump());
    EXPECT_EQ(agent_bridge().post("/v2/repository-pack", body).code(), "REQUEST_FIELDS_INVALID");
  }
}

}  // namespace
}  // namespace aios::bridge_test
