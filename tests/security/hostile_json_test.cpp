// Hostile bodies against the running scheduler. Bodies nested far deeper than
// aios::kMaxJsonDepth but inside the body limit (200,000 levels are 400 KB) once killed its io
// thread with a stack overflow in a recursive copy: each must be refused with
// JSON_NESTING_TOO_DEEP before any tree is built. A large body from a caller without a valid
// token must be refused on its headers. Either way the daemon goes on serving, nothing written.
#include <string>

#include "aios/canonical.hpp"
#include "taskapi/client.hpp"

namespace aios::taskapi_test {
namespace {

// `{"task_id": …, "execution": [[[…]]]}` whose deepest array is `depth` levels below the body.
std::string task_nesting(std::size_t depth) {
  return R"({"task_id":"deep-task","goal":"g","execution":)" + std::string(depth, '[') +
         std::string(depth, ']') + "}";
}

class HostileJsonTest : public SchedulerTest {
 protected:
  // The answer of `client` to `body` at `target`, then proof the daemon still serves.
  static void expect_refused(ApiClient& client, std::string_view target, const std::string& body,
                             int status, std::string_view code) {
    const Reply reply = client.send("POST", target, body);
    EXPECT_EQ(reply.status, status)
        << target << " " << body.size() << " bytes: " << describe(reply);
    EXPECT_EQ(reply.code(), code) << target << " " << body.size() << " bytes";
  }

  void expect_serving() {
    ApiClient fresh = client(scheduler().control_token());
    EXPECT_EQ(fresh.get("/health").status, 200);
    const Reply tasks = fresh.get("/v1/tasks");
    ASSERT_EQ(tasks.status, 200) << describe(tasks);
    EXPECT_EQ(tasks.body.at("tasks").size(), 0u) << tasks.raw;
  }
};

TEST_F(HostileJsonTest, TaskBodiesNestedPastTheBoundAreRefusedAndTheSchedulerServesOn) {
  // Given bodies one level past the bound, 10^5 and 2 * 10^5 levels deep (all inside the body
  // limit), the Task API should refuse each with 400 JSON_NESTING_TOO_DEEP.
  for (const std::size_t depth : {kMaxJsonDepth, std::size_t{100000}, std::size_t{200000}}) {
    expect_refused(owner(), "/v1/tasks", task_nesting(depth), 400, "JSON_NESTING_TOO_DEEP");
  }
  // 10^6 levels are over the body limit, refused before the body is read.
  expect_refused(owner(), "/v1/tasks", task_nesting(1000000), 413, "REQUEST_SIZE_INVALID");
  // At the bound the parser reads it, and the task's own validation answers.
  const Reply at_bound = owner().send("POST", "/v1/tasks", task_nesting(kMaxJsonDepth - 1));
  EXPECT_EQ(at_bound.status, 400) << describe(at_bound);
  EXPECT_NE(at_bound.code(), "JSON_NESTING_TOO_DEEP");
  expect_serving();
}

TEST_F(HostileJsonTest, AnAgentsDeeplyNestedEnvelopeRequestIsRefusedAndTheBridgeServesOn) {
  // Given any agent token, a 200,000-level body to the Bridge's envelope resolution and to the
  // worker registration should be refused the same way.
  const std::string token = create_agent("agent-deep", {"agent.runtime.hermes"});
  ApiClient bridge(scheduler().bridge_port(), token);
  ApiClient agent = client(token);
  const std::string deep = R"({"task_id":"deep-task","required_capabilities":)" +
                           std::string(200000, '[') + std::string(200000, ']') + "}";
  expect_refused(bridge, "/v2/execution-envelope", deep, 400, "JSON_NESTING_TOO_DEEP");
  expect_refused(agent, "/v1/workers/register", deep, 400, "JSON_NESTING_TOO_DEEP");
  ApiClient bridge_again(scheduler().bridge_port(), token);
  EXPECT_EQ(bridge_again.get("/health").status, 200);
  expect_serving();
}

TEST_F(HostileJsonTest, AStrangersLargeBodyIsRefusedOnItsHeaders) {
  // Given a caller whose token is no token of this scheduler, a 400 KB body to the Task API and
  // to the Bridge should be answered 401 UNAUTHORIZED from the headers, and nothing written.
  const std::string large = task_nesting(1) + std::string(400 * 1024, ' ');
  ApiClient stranger = client("not-a-token-of-this-scheduler-at-all-0000");
  expect_refused(stranger, "/v1/tasks", large, 401, "UNAUTHORIZED");
  ApiClient bridge_stranger(scheduler().bridge_port(), "not-a-token-of-this-scheduler-at-all-0000");
  expect_refused(bridge_stranger, "/v2/plans", large, 401, "UNAUTHORIZED");
  expect_serving();
}

}  // namespace
}  // namespace aios::taskapi_test
