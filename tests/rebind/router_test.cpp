// The rebind HTTP routes as a pure function of the request: routing, the bearer, the body's
// size and JSON, and the statuses of an apply and a replay. Over the seed's database and its
// resolver, so a request that passes every check really rebinds.
#include "rebind/seed_fixture.hpp"

namespace aios::rebind_test {
namespace {

const std::string kControlToken(48, 'o');

class RebindRouter : public SeedDbTest {
 protected:
  void SetUp() override {
    make_db();
    store_.emplace(store());
    api_.emplace(*store_, kControlToken);
  }

  // An owner's request; `token` "" sends none.
  http::Response send(const std::string& method, const std::string& target, const std::string& body,
                      const std::string& token = kControlToken) {
    http::Request request;
    request.method = method;
    request.target = target;
    request.path = target.substr(0, target.find('?'));
    request.body = body;
    request.bearer_token = token;
    request.remote_address = "127.0.0.1";  // the owner's token counts from loopback only
    return api_->handle(request);
  }

  http::Response rebind(const std::string& body, const std::string& token = kControlToken) {
    return send("POST", "/v1/tasks/" + kTaskId + "/execution-rebind", body, token);
  }

  static std::string code(const http::Response& response) {
    return Json::parse(response.body).value("error", "");
  }

  std::optional<ExecutionRebindStore> store_;
  std::optional<ExecutionRebindApi> api_;
};

TEST_F(RebindRouter, HealthAnswersAnyone) {
  // Given GET /health without a token, we should say which service this is.
  const auto response = send("GET", "/health", "", "");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(Json::parse(response.body),
            (Json{{"service", "aios-agent-task-execution-rebind"}, {"status", "ok"}}));
}

TEST_F(RebindRouter, EverythingElseIsNotFoundBeforeAuthentication) {
  // Given any other method or target, we should answer 404 NOT_FOUND, even without a token.
  const std::string body = request_body().dump();
  for (const auto& [method, target] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/health?verbose=1"},
           {"POST", "/health"},
           {"GET", "/v1/tasks/" + kTaskId + "/execution-rebind"},
           {"PUT", "/v1/tasks/" + kTaskId + "/execution-rebind"},
           {"POST", "/v1/tasks//execution-rebind"},
           {"POST", "/v1/tasks/execution-rebind"},
           {"POST", "/v1/tasks/a/b/execution-rebind"},
           {"POST", "/v1/tasks/" + kTaskId + "/execution-rebind?dry_run=1"},
           {"POST", "/v1/tasks/" + kTaskId + "/execution-rebind/"},
           {"POST", "/v2/tasks/" + kTaskId + "/execution-rebind"}}) {
    SCOPED_TRACE(method + " " + target);
    const auto response = send(method, target, body, "");
    EXPECT_EQ(response.status, 404);
    EXPECT_EQ(code(response), "NOT_FOUND");
  }
  expect_untouched();
}

TEST_F(RebindRouter, OnlyTheControlTokenMayRebind) {
  // Given no token, another token, or a prefix of the right one, we should answer 401 before
  // looking at the body (an empty body too).
  for (const std::string& token : {std::string(), std::string(48, 'x'), kControlToken.substr(1)}) {
    for (const std::string& body : {request_body().dump(), std::string()}) {
      const auto response = rebind(body, token);
      EXPECT_EQ(response.status, 401);
      EXPECT_EQ(code(response), "UNAUTHORIZED");
    }
  }
  expect_untouched();
}

TEST_F(RebindRouter, BodyMustBeOneByteTo64KiB) {
  // Given an empty body or one over 64 KiB, we should answer 413 REQUEST_SIZE_INVALID; a valid
  // request padded to exactly 64 KiB is still read.
  std::string oversize = request_body().dump();
  oversize.append(kExecutionRebindMaxBodyBytes + 1 - oversize.size(), ' ');
  for (const std::string& body : {std::string(), oversize}) {
    const auto response = rebind(body);
    EXPECT_EQ(response.status, 413);
    EXPECT_EQ(code(response), "REQUEST_SIZE_INVALID");
  }
  expect_untouched();
  std::string exact = request_body().dump();
  exact.append(kExecutionRebindMaxBodyBytes - exact.size(), ' ');
  EXPECT_EQ(rebind(exact).status, 201);
}

TEST_F(RebindRouter, BodyMustBeAJsonObjectWithTheNineFields) {
  // Given malformed JSON, a non-object, invalid UTF-8 or an extra field, we should refuse with
  // 400 and write nothing.
  Json extra = request_body();
  extra["metadata"] = {{"execution", "x"}};
  for (const auto& [body, expected] : std::vector<std::pair<std::string, std::string>>{
           {"{", "REQUEST_INVALID"},
           {"[]", "REQUEST_INVALID"},
           {"\"QUEUED\"", "REQUEST_INVALID"},
           {"{\"reason\":\"\xff\"}", "REQUEST_INVALID"},
           {extra.dump(), "EXECUTION_REBIND_FIELDS_INVALID"},
           {"{}", "EXECUTION_REBIND_FIELDS_INVALID"}}) {
    SCOPED_TRACE(body);
    const auto response = rebind(body);
    EXPECT_EQ(response.status, 400);
    EXPECT_EQ(code(response), expected);
  }
  expect_untouched();
}

TEST_F(RebindRouter, PathTaskIdIsCheckedAfterTheBody) {
  // Given a task id outside the pattern, we should refuse it (400) once the body is valid.
  const auto response =
      send("POST", "/v1/tasks/%74ask-rebind-a/execution-rebind", request_body().dump());
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(code(response), "TASK_ID_INVALID");
}

TEST_F(RebindRouter, AppliedIs201AndReplayIs200) {
  // Given the seed's request twice, we should answer 201 with the outcome, then 200 with the
  // same outcome marked idempotent; a conflict on the key is 409.
  const auto applied = rebind(request_body().dump());
  ASSERT_EQ(applied.status, 201) << applied.body;
  Json expected = {{"task_id", kTaskId},
                   {"status", "QUEUED"},
                   {"attempt", 2},
                   {"revision", 6},
                   {"old_execution_digest", old_envelope()["execution_digest"]},
                   {"new_execution_digest", new_envelope()["execution_digest"]},
                   {"authorization_id", kAuthorization},
                   {"idempotent", false}};
  EXPECT_EQ(Json::parse(applied.body), expected);

  const auto replayed = rebind(request_body().dump());
  EXPECT_EQ(replayed.status, 200);
  expected["idempotent"] = true;
  EXPECT_EQ(Json::parse(replayed.body), expected);

  Json other = request_body();
  other["reason"] = "a different reason";
  const auto conflict = rebind(other.dump());
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(code(conflict), "EXECUTION_REBIND_IDEMPOTENCY_CONFLICT");
  EXPECT_EQ(count("task_execution_rebinds"), 1);
}

}  // namespace
}  // namespace aios::rebind_test
