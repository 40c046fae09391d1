// aios-agent-task-execution-rebind as a process: its start-up refusals, and its HTTP checks
// against the real scheduler's database and tasks. Here the Bridge is down (a closed loopback
// port), which is also the Bridge-down test: every refusal that comes before the Bridge is
// asked must still answer, and a request that reaches it must fail cleanly with nothing written.

#include "aios/canonical.hpp"
#include "http/http_test_support.hpp"
#include "rebind/rebind_daemon.hpp"
#include "rebind/seed_fixture.hpp"
#include "support/store_rows.hpp"
#include "taskapi/client.hpp"

namespace aios::rebind_test {
namespace {

using taskapi_test::ApiClient;
using taskapi_test::Reply;

// --- Start-up ----------------------------------------------------------------------------------

class RebindStartup : public ::testing::Test {
 protected:
  RebindStartup() : dir_("aios-rebind-start") {
    config_.store = (dir_ / "state.sqlite3").string();
    config_.token_file = dir_ / "control_token";
    config_.bridge_url = "http://127.0.0.1:18892";
    test::write_token_file(config_.token_file);
  }

  // Starts the daemon, which must refuse: exit 69 with START_FAILED naming `code`.
  void expect_refusal(const std::string& code) {
    test::Daemon daemon(rebind_options(config_), dir_.path(), "rebind");
    daemon.spawn();
    const auto status = daemon.wait_exit(std::chrono::seconds(10));
    ASSERT_TRUE(status.has_value()) << daemon.log();
    EXPECT_TRUE(status->exited_with(69)) << status->describe() << "\n" << daemon.log();
    const auto line = daemon.find_event("START_FAILED");
    ASSERT_TRUE(line.has_value()) << daemon.log();
    EXPECT_EQ((*line)["error"], code);
    EXPECT_EQ(daemon.log().find(test::read_text_file(config_.token_file).substr(0, 32)),
              std::string::npos)
        << "the log holds the token";
  }

  test::ScopedTempDir dir_;
  RebindConfig config_;
};

TEST_F(RebindStartup, MissingAuthorizationIdRefusesToStart) {
  config_.authorization_id.clear();
  expect_refusal("TASK_EXECUTION_REBIND_AUTHORIZATION_ID_MISSING");
}

TEST_F(RebindStartup, MalformedAuthorizationIdRefusesToStart) {
  config_.authorization_id = "owner rebind";
  expect_refusal("TASK_EXECUTION_REBIND_AUTHORIZATION_ID_INVALID");
}

TEST_F(RebindStartup, SymlinkedTokenRefusesToStart) {
  std::filesystem::create_symlink(config_.token_file, dir_ / "link");
  config_.token_file = dir_ / "link";
  expect_refusal("TASK_EXECUTION_REBIND_CONTROL_CREDENTIAL_UNAVAILABLE");
}

TEST_F(RebindStartup, ShortTokenRefusesToStart) {
  test::write_token_file(config_.token_file, 31);
  expect_refusal("TASK_EXECUTION_REBIND_CONTROL_CREDENTIAL_INVALID");
}

TEST_F(RebindStartup, UnusableBridgeUrlRefusesToStart) {
  config_.bridge_url = "ftp://127.0.0.1:18892";
  expect_refusal("HTTP_URL_INVALID");
}

// --- HTTP, with the real scheduler and no Bridge -------------------------------------------------

class RebindDaemonTest : public taskapi_test::SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    RebindConfig config;
    config.store = scheduler().store_location();
    config.token_file = scheduler().dir() / "control_token";
    config.bridge_url = bridge_url();
    rebind_.emplace(rebind_options(config), scheduler().dir().path(),
                    "aios-agent-task-execution-rebind");
    rebind_->start();
    rebind_owner_.emplace(rebind_->port(), scheduler().control_token());
  }

  void TearDown() override {
    if (rebind_ && rebind_->running()) {
      const auto status = rebind_->stop();
      EXPECT_TRUE(status.exited_with(0)) << status.describe() << "\n" << rebind_->log();
      EXPECT_THAT(rebind_->log(), ::testing::Not(::testing::HasSubstr("Sanitizer")));
      EXPECT_THAT(rebind_->log(), ::testing::Not(::testing::HasSubstr("runtime error:")));
    }
    SchedulerTest::TearDown();
  }

  virtual std::string bridge_url() { return closed_loopback_url(); }

  // A source_capture task sent back by NEEDS_REWORK: QUEUED, attempt 1, no lease.
  Json returned_task(const std::string& task_id) {
    if (!agent_) {
      agent_.emplace(client(create_agent("agent-rebind", {"git.read"})));
      register_worker(*agent_, "worker-reader", {"git.read"}, {"source_capture"}, 4);
    }
    create_task(taskapi_test::source_capture_task(task_id));
    const Json lease = claim(*agent_, task_id, "worker-reader");
    taskapi_test::require(
        agent_->post("/v1/tasks/" + task_id + "/result",
                     taskapi_test::result_body(lease, lease.at("execution_digest"),
                                               task_id + "-result-1", {{"summary", "read"}})),
        201, "result of " + task_id);
    verify(task_id, "NEEDS_REWORK");
    return task(task_id);
  }

  // The owner's request for `view`, as docs/api.md builds it.
  static Json owner_request(const Json& view, const std::string& new_digest,
                            const std::string& key = "rebind-request-v1") {
    return owner_rebind_request(view, new_digest, key);
  }

  static std::string rebind_target(const std::string& task_id) {
    return "/v1/tasks/" + task_id + "/execution-rebind";
  }

  // Rows of task_execution_rebinds, read from the store as an operator would.
  std::int64_t receipts() {
    return test::count_in(scheduler(), "SELECT COUNT(*) FROM task_execution_rebinds");
  }

  // Asserts that `before` (a task view) is still the task's state, with its events.
  void expect_unchanged(const Json& before, std::size_t events_before) {
    const Json now = task(before.at("task_id"));
    EXPECT_EQ(now.at("revision"), before.at("revision"));
    EXPECT_EQ(now.at("execution_digest"), before.at("execution_digest"));
    EXPECT_EQ(events(before.at("task_id")).size(), events_before);
    EXPECT_EQ(receipts(), 0);
  }

  ApiClient& rebind_owner() { return *rebind_owner_; }
  ApiClient rebind_client(const std::string& token) { return {rebind_->port(), token}; }

  const std::string kOtherDigest = std::string(64, 'c');
  std::optional<test::Daemon> rebind_;
  std::optional<ApiClient> rebind_owner_;
  std::optional<ApiClient> agent_;
};

TEST_F(RebindDaemonTest, HealthAndUnknownRoutes) {
  // Given the running daemon, /health should answer anyone and other routes 404.
  ApiClient anonymous = rebind_client("");
  const Reply health = anonymous.get("/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, (Json{{"service", "aios-agent-task-execution-rebind"}, {"status", "ok"}}));
  EXPECT_EQ(rebind_owner().get("/v1/tasks").code(), "NOT_FOUND");
  EXPECT_EQ(rebind_owner().post("/v1/tasks/t-1/rebind", Json::object()).status, 404);
}

TEST_F(RebindDaemonTest, OnlyTheOwnerTokenIsAccepted) {
  // Given no token, or an agent's token, we should answer 401 and write nothing.
  const Json view = returned_task("task-auth-1");
  const auto count = events("task-auth-1").size();
  const Json body = owner_request(view, kOtherDigest);
  for (const std::string& token : {std::string(), agent_->token(), std::string(48, 'x')}) {
    const Reply reply = rebind_client(token).post(rebind_target("task-auth-1"), body);
    EXPECT_EQ(reply.status, 401) << taskapi_test::describe(reply);
    EXPECT_EQ(reply.code(), "UNAUTHORIZED");
  }
  expect_unchanged(view, count);
}

TEST_F(RebindDaemonTest, BodyMustBeOneByteTo64KiB) {
  // Given an empty body or one a byte over 64 KiB, we should answer 413 REQUEST_SIZE_INVALID.
  const Json view = returned_task("task-size-1");
  const auto count = events("task-size-1").size();
  std::string oversize = owner_request(view, kOtherDigest).dump();
  oversize.append(64 * 1024 + 1 - oversize.size(), ' ');
  for (const std::string& body : {std::string(), oversize}) {
    const Reply reply = rebind_owner().send("POST", rebind_target("task-size-1"), body);
    EXPECT_EQ(reply.status, 413) << taskapi_test::describe(reply);
    EXPECT_EQ(reply.code(), "REQUEST_SIZE_INVALID");
  }
  expect_unchanged(view, count);
}

TEST_F(RebindDaemonTest, ANonNumericContentLengthIsRefusedInTheSeedsOrder) {
  // Given "Content-Length: abc", the seed checks the bearer before the length: a missing or
  // wrong bearer is 401, the owner 400 CONTENT_LENGTH_INVALID, and nothing is written; the
  // Task API answers the same. (The seed's route check comes first; here the server answers
  // before routing, so an unknown route with the owner's bearer is 400 too: docs/api.md.)
  const Json view = returned_task("task-length-1");
  const auto count = events("task-length-1").size();
  const auto raw = [](std::uint16_t port, const std::string& target, const std::string& token) {
    const std::string request = "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                                (token.empty() ? "" : "Authorization: Bearer " + token + "\r\n") +
                                "Content-Type: application/json\r\nContent-Length: abc\r\n\r\n{}";
    const auto answer = http::testing::exchange(port, request);
    return std::pair(
        http::testing::status_of(answer),
        Json::parse(http::testing::body_of(answer), nullptr, false).value("error", ""));
  };
  const auto owner = scheduler().control_token();
  const auto target = rebind_target("task-length-1");
  using Answer = std::pair<int, std::string>;
  EXPECT_EQ(raw(rebind_->port(), target, owner), (Answer{400, "CONTENT_LENGTH_INVALID"}));
  EXPECT_EQ(raw(rebind_->port(), target, ""), (Answer{401, "UNAUTHORIZED"}));
  EXPECT_EQ(raw(rebind_->port(), target, agent_->token()), (Answer{401, "UNAUTHORIZED"}));
  EXPECT_EQ(raw(rebind_->port(), "/v1/elsewhere", owner), (Answer{400, "CONTENT_LENGTH_INVALID"}));
  EXPECT_EQ(raw(scheduler().port(), "/v1/tasks", owner), (Answer{400, "CONTENT_LENGTH_INVALID"}));
  EXPECT_EQ(raw(scheduler().port(), "/v1/tasks", ""), (Answer{401, "UNAUTHORIZED"}));
  expect_unchanged(view, count);
}

TEST_F(RebindDaemonTest, MalformedRequestsAreRefused) {
  // Given malformed JSON, an extra field or an unchanged digest, we should answer 400.
  const Json view = returned_task("task-bad-1");
  const auto count = events("task-bad-1").size();
  Json extra = owner_request(view, kOtherDigest);
  extra["metadata"] = {{"execution", {{"action", "deterministic"}}}};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"expected_status\":", "REQUEST_INVALID"},
      {"[1,2]", "REQUEST_INVALID"},
      {extra.dump(), "EXECUTION_REBIND_FIELDS_INVALID"},
      {owner_request(view, view.at("execution_digest")).dump(),
       "EXECUTION_REBIND_DIGEST_UNCHANGED"}};
  for (const auto& [body, code] : cases) {
    const Reply reply = rebind_owner().send("POST", rebind_target("task-bad-1"), body);
    EXPECT_EQ(reply.status, 400) << taskapi_test::describe(reply);
    EXPECT_EQ(reply.code(), code);
  }
  expect_unchanged(view, count);
}

TEST_F(RebindDaemonTest, StaleCoordinatesAreConflicts) {
  // Given a request naming a revision, verification or old digest the task no longer has, we
  // should answer 409 with the drifted coordinate's code, without asking the (absent) Bridge.
  const Json view = returned_task("task-cas-1");
  const auto count = events("task-cas-1").size();
  Json stale_revision = owner_request(view, kOtherDigest);
  stale_revision["expected_revision"] = view.at("revision").get<int>() - 1;
  Json stale_attempt = owner_request(view, kOtherDigest);
  stale_attempt["expected_attempt"] = 2;
  Json other_verification = owner_request(view, kOtherDigest);
  other_verification["previous_verification_sha256"] = digest(Json{{"decision", "NEEDS_REWORK"}});
  Json other_old = owner_request(view, kOtherDigest);
  other_old["expected_old_execution_digest"] = std::string(64, 'd');
  const std::vector<std::pair<Json, std::string>> cases = {
      {stale_revision, "EXECUTION_REBIND_CAS_MISMATCH"},
      {stale_attempt, "EXECUTION_REBIND_CAS_MISMATCH"},
      {other_verification, "EXECUTION_REBIND_VERIFICATION_DRIFT"},
      {other_old, "EXECUTION_REBIND_OLD_DIGEST_DRIFT"}};
  for (const auto& [body, code] : cases) {
    const Reply reply = rebind_owner().post(rebind_target("task-cas-1"), body);
    EXPECT_EQ(reply.status, 409) << taskapi_test::describe(reply);
    EXPECT_EQ(reply.code(), code);
  }
  const Reply missing =
      rebind_owner().post(rebind_target("task-missing-1"), owner_request(view, kOtherDigest));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.code(), "TASK_NOT_FOUND");
  expect_unchanged(view, count);
}

TEST_F(RebindDaemonTest, ClaimedTaskIsNotRebound) {
  // Given the returned task claimed again (a live lease), the owner's QUEUED no longer holds.
  const Json view = returned_task("task-leased-1");
  claim(*agent_, "task-leased-1", "worker-reader");
  const Reply reply =
      rebind_owner().post(rebind_target("task-leased-1"), owner_request(view, kOtherDigest));
  EXPECT_EQ(reply.status, 409) << taskapi_test::describe(reply);
  EXPECT_EQ(reply.code(), "EXECUTION_REBIND_CAS_MISMATCH");
  EXPECT_EQ(task("task-leased-1").at("status"), "CLAIMED");
  EXPECT_EQ(receipts(), 0);
}

TEST_F(RebindDaemonTest, BridgeDownIsACleanBadGatewayAndWritesNothing) {
  // Given a request that passes every check up to the Bridge, and no Bridge, we should answer
  // 502 HTTP_UPSTREAM_UNAVAILABLE and leave the task, its events and the receipts untouched.
  const Json view = returned_task("task-down-1");
  const auto count = events("task-down-1").size();
  const Reply reply =
      rebind_owner().post(rebind_target("task-down-1"), owner_request(view, kOtherDigest));
  EXPECT_EQ(reply.status, 502) << taskapi_test::describe(reply);
  EXPECT_EQ(reply.code(), "HTTP_UPSTREAM_UNAVAILABLE");
  expect_unchanged(view, count);
  const auto refused = rebind_->find_event("TASK_EXECUTION_REBIND_REFUSED");
  ASSERT_TRUE(refused.has_value()) << rebind_->log();
  EXPECT_EQ((*refused)["error"], "HTTP_UPSTREAM_UNAVAILABLE");
  EXPECT_EQ(rebind_->log().find(scheduler().control_token()), std::string::npos);
}

// --- The seed's minimal schema, served by the daemon -------------------------------------------

TEST(RebindDaemonOnSeedSchema, ActiveLeaseIsDenied) {
  // Given the seed's own database with a QUEUED task that still holds a lease (a state only an
  // older scheduler could leave), the daemon should deny the rebind over HTTP.
  test::ScopedTempDir dir("aios-rebind-seed");
  make_seed_db(dir / "state.sqlite3", {.lease = true});
  const std::string token = test::write_token_file(dir / "control_token");
  test::Daemon daemon(rebind_options({.store = (dir / "state.sqlite3").string(),
                                      .token_file = dir / "control_token",
                                      .bridge_url = closed_loopback_url()}),
                      dir.path(), "rebind");
  daemon.start();
  ApiClient owner(daemon.port(), token);
  const Reply reply = owner.post("/v1/tasks/" + kTaskId + "/execution-rebind", request_body());
  EXPECT_EQ(reply.status, 409) << taskapi_test::describe(reply);
  EXPECT_EQ(reply.code(), "EXECUTION_REBIND_ACTIVE_LEASE_DENY");
  EXPECT_TRUE(daemon.stop().exited_with(0)) << daemon.log();
}

}  // namespace
}  // namespace aios::rebind_test
