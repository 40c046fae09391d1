// The worker's calls to its peers and its verification children, against the recording fakes
// of the environment: the exact request each sends and the exact child each asks for.
#include <gtest/gtest.h>

#include <algorithm>
#include <system_error>
#include <thread>

#include "support/code_of.hpp"
#include "support/recording.hpp"
#include "worker/governed.hpp"
#include "worker/internal.hpp"

namespace aios::worker {
namespace {

using nlohmann::json;
using test::code_of;
using test::RecordingSpawner;
using test::RecordingTransport;

// Given a call with a body, we should send one request to base URL + path with the service's
// token, the body's JSON and the timeout it was built with, and answer the peer's status.
TEST(JsonServiceTest, SendsOneRequestWithItsTokenBodyAndTimeout) {
  RecordingTransport transport;
  transport.respond(201, R"({"ok":true})");
  const JsonService service(transport, "http://127.0.0.1:1", "agent-token",
                            std::chrono::milliseconds(2500));
  const json body = {{"lease_token", "l"}, {"attempt", 2}};
  EXPECT_EQ(service.require("POST", "/v1/tasks/t-1/result", &body), json({{"ok", true}}));
  const auto calls = transport.calls();
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_EQ(calls[0].method, "POST");
  EXPECT_EQ(calls[0].url, "http://127.0.0.1:1/v1/tasks/t-1/result");
  EXPECT_EQ(calls[0].bearer_token, "agent-token");
  EXPECT_EQ(json::parse(calls[0].body), body);
  EXPECT_EQ(calls[0].timeout, std::chrono::milliseconds(2500));
  EXPECT_TRUE(service.call("GET", "/v1/health").second.is_object());
  EXPECT_EQ(transport.calls().at(1).body, "");
}

// Given a refusal, require() should throw the peer's own code with its status; a body that is
// not a JSON object is HTTP_UPSTREAM_RESPONSE_INVALID whatever the status.
TEST(JsonServiceTest, RefusalsCarryThePeersCodeAndBadBodiesAreRefused) {
  RecordingTransport transport;
  const JsonService service(transport, "http://peer", "t", std::chrono::milliseconds(1));
  transport.respond(409, R"({"error":"TASK_LEASE_MISMATCH"})");
  try {
    service.require("POST", "/v1/tasks/t/heartbeat");
    FAIL() << "a 409 was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), "TASK_LEASE_MISMATCH");
    EXPECT_EQ(error.http_status(), 409);
  }
  transport.respond(200, "not json");
  EXPECT_EQ(code_of([&] { service.call("GET", "/x"); }), "HTTP_UPSTREAM_RESPONSE_INVALID");
  transport.respond(200, "[1]");
  EXPECT_EQ(code_of([&] { service.call("GET", "/x"); }), "HTTP_UPSTREAM_RESPONSE_INVALID");
}

// Given several replicas, a call should go to the one the last call reached; a replica that is
// not the Bridge leader or refuses the connection passes the call on at once (nothing was done
// or sent); one lost after the request went out fails
// the call without sending it again elsewhere (it may have arrived), and the next call starts
// at the next replica.
TEST(JsonServiceTest, ReplicasAreTriedInTurnWithoutResendingWhatMayHaveArrived) {
  RecordingTransport transport;
  const JsonService service(transport, "http://a,http://b,,http://c", "t",
                            std::chrono::milliseconds(1));
  transport.respond(503, R"({"error":"BRIDGE_NOT_LEADER"})");
  transport.respond(201, R"({"commit":1})");
  EXPECT_EQ(service.require("POST", "/v2/governed-commits"), json({{"commit", 1}}));
  transport.respond(200, R"({"again":1})");
  service.require("POST", "/v2/governed-commits");
  transport.unreachable();
  EXPECT_EQ(code_of([&] { service.require("POST", "/v2/governed-commits"); }),
            "HTTP_UPSTREAM_UNAVAILABLE");
  transport.refused();
  service.call("GET", "/health");
  std::vector<std::string> urls;
  for (const auto& call : transport.calls()) urls.push_back(call.url);
  EXPECT_EQ(urls, (std::vector<std::string>{
                      "http://a/v2/governed-commits", "http://b/v2/governed-commits",
                      "http://b/v2/governed-commits", "http://b/v2/governed-commits",
                      "http://c/health", "http://a/health"}));
  // Every replica refusing: the caller sees the refusal, after one try of each.
  for (int i = 0; i < 3; ++i) transport.respond(503, R"({"error":"BRIDGE_NOT_LEADER"})");
  EXPECT_EQ(code_of([&] { service.require("POST", "/v2/governed-commits"); }), "BRIDGE_NOT_LEADER");
  EXPECT_EQ(transport.calls().size(), 9U);
}

// Given a Task API that accepts three heartbeats and then refuses the lease, the heartbeat
// should have sent the task's lease token and the stage the work loop last reported, and then
// report the lease lost. (A beat may go out before the loop's first alive(), with no stage yet,
// when the test thread is starved for an interval: the stage is looked for, not assumed first.)
TEST(HeartbeatTest, ARefusedLeaseIsReportedLost) {
  RecordingTransport transport;
  for (int i = 0; i < 3; ++i) transport.respond(200, R"({"status":"CLAIMED"})");
  transport.fallback = {409, R"({"error":"TASK_LEASE_EXPIRED"})"};
  const JsonService api(transport, "http://api", "t", std::chrono::milliseconds(100));
  Heartbeat heartbeat(api, "task-9", "lease-9", std::chrono::milliseconds(10));
  heartbeat.alive("executing");
  for (int i = 0; i < 500 && !heartbeat.lost(); ++i) {
    heartbeat.alive("executing");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(heartbeat.lost());
  const auto calls = transport.calls();
  ASSERT_GE(calls.size(), 4U);
  const auto reported = std::find_if(calls.begin(), calls.end(), [](const auto& call) {
    return json::parse(call.body).value("stage", "") == "executing";
  });
  ASSERT_NE(reported, calls.end());
  EXPECT_EQ(reported->url, "http://api/v1/tasks/task-9/heartbeat");
  EXPECT_EQ(json::parse(reported->body),
            json({{"lease_token", "lease-9"}, {"stage", "executing"}}));
}

class VerificationTest : public ::testing::Test {
 protected:
  VerificationTest() {
    config_.state_root = "/srv/worker-state";
    config_.checkpoint_db = "/srv/worker-checkpoints/checkpoints.sqlite3";
    config_.workspace_root = "/srv/worker-workspaces";
    config_.authority_git_dir = "/srv/authority.git";
    config_.executor_root = "/srv/executor";
    config_.broker_root = "/srv/broker";
    config_.agent_token_file = "/run/credentials/worker/agent_token";
  }
  json run(const json& command) {
    return run_verification(config_, spawner_, "/srv/worker-workspaces/run-1",
                            "/srv/worker-workspaces/run-1/worktree", command);
  }
  static json command() {
    return {{"label", "unit"},
            {"argv", {"/usr/bin/make", "test"}},
            {"cwd", "pkg"},
            {"timeout_seconds", 60}};
  }

  WorkerConfig config_;
  RecordingSpawner spawner_;
};

// Given an allowlisted command, we should ask for exactly its argv in the worktree's cwd, a
// fixed environment with HOME and TMPDIR under the run root, no network, the run root as the
// only writable path and every worker secret hidden; its output and status make the test.
TEST_F(VerificationTest, AsksForExactlyTheCommandInItsSandbox) {
  spawner_.answer = [](const process::Spec& spec) {
    spec.on_stdout("ran ");
    spec.on_stderr("tests");
    return process::Outcome{
        .exit_code = 0, .elapsed = std::chrono::milliseconds(42), .exceeded = {}};
  };
  const auto test = run(command());
  const auto calls = spawner_.calls();
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_TRUE(calls[0].socket.empty());
  const auto& spec = calls[0].spec;
  EXPECT_EQ(spec.argv, (std::vector<std::string>{"/usr/bin/make", "test"}));
  EXPECT_EQ(spec.working_directory, "/srv/worker-workspaces/run-1/worktree/pkg");
  EXPECT_EQ(spec.environment,
            (std::vector<std::string>{"PATH=/usr/local/bin:/usr/bin:/bin",
                                      "HOME=/srv/worker-workspaces/run-1/home", "LANG=C.UTF-8",
                                      "TMPDIR=/srv/worker-workspaces/run-1/tmp"}));
  EXPECT_FALSE(spec.stdin_data.has_value());
  EXPECT_EQ(spec.timeout, std::chrono::seconds(60));
  ASSERT_TRUE(spec.sandbox.has_value());
  EXPECT_TRUE(spec.sandbox->network.empty());
  EXPECT_EQ(spec.sandbox->writable,
            (std::vector<std::filesystem::path>{"/srv/worker-workspaces/run-1"}));
  EXPECT_EQ(spec.sandbox->limits.cpu_seconds, 61U);
  for (const char* secret : {"/srv/worker-state", "/srv/worker-checkpoints", "/srv/authority.git",
                             "/srv/worker-workspaces", "/srv/executor", "/srv/broker",
                             "/run/credentials/worker", "/etc/credstore"}) {
    const auto& hidden = spec.sandbox->hidden;
    EXPECT_NE(std::find(hidden.begin(), hidden.end(), secret), hidden.end()) << secret;
  }
  EXPECT_EQ(test, json({{"label", "unit"},
                        {"argv", {"/usr/bin/make", "test"}},
                        {"exit_code", 0},
                        {"timed_out", false},
                        {"passed", true},
                        {"duration_ms", 42},
                        {"output", "ran tests"}}));
}

// Given a verification socket, the same spec should go to the sandbox service instead; a
// command that cannot be started or times out is a failed test, never a passed one.
TEST_F(VerificationTest, GoesThroughTheServiceAndFailuresDoNotPass) {
  config_.verification_socket = "/run/aios-verification/sandbox.sock";
  spawner_.answer = [](const process::Spec&) -> process::Outcome {
    throw std::system_error(ENOENT, std::generic_category(), "no such executable");
  };
  const auto refused = run(command());
  const auto calls = spawner_.calls();
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_EQ(calls[0].socket, config_.verification_socket);
  const auto& hidden = calls[0].spec.sandbox->hidden;
  EXPECT_NE(std::find(hidden.begin(), hidden.end(), "/run/aios-verification"), hidden.end());
  EXPECT_EQ(refused["exit_code"], 127);
  EXPECT_EQ(refused["passed"], false);
  spawner_.answer = [](const process::Spec&) {
    return process::Outcome{.timed_out = true, .exit_code = -9, .elapsed = {}, .exceeded = {}};
  };
  const auto timed_out = run(command());
  EXPECT_EQ(timed_out["timed_out"], true);
  EXPECT_EQ(timed_out["passed"], false);
}

// Given the worker's verification bounds, the command's sandbox should carry them, and a run
// that passed one should fail with its code at the head of its output.
TEST_F(VerificationTest, ARunPastAWholeRunBoundFailsWithItsCode) {
  config_.verification_memory_mb = 512;
  config_.verification_disk_mb = 100;
  spawner_.answer = [](const process::Spec&) {
    return process::Outcome{
        .timed_out = false, .exit_code = -9, .elapsed = {}, .exceeded = process::Bound::disk};
  };
  const auto refused = run(command());
  const auto calls = spawner_.calls();
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_EQ(calls[0].spec.sandbox->limits.memory_bytes, 512ULL << 20);
  EXPECT_EQ(calls[0].spec.sandbox->limits.disk_bytes, 100ULL << 20);
  EXPECT_EQ(refused["passed"], false);
  EXPECT_EQ(refused["output"].get<std::string>().rfind("VERIFICATION_DISK_LIMIT: ", 0), 0U)
      << refused.dump();
}

}  // namespace
}  // namespace aios::worker
