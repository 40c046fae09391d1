#pragma once
// Shared pieces of the Task API integration suites: a keep-alive JSON client for one bearer
// token (owner or agent), request bodies for the three kinds of task, and a fixture that starts
// a fresh aios-task-scheduler (temporary database, ephemeral port) for every test.
//
// Helpers that need a particular answer to go on (create an agent, claim a task, ...) throw
// std::runtime_error with the status and body they got instead; GoogleTest reports it as a
// failure of the test that called them.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/http.hpp"
#include "support/daemon.hpp"

namespace aios::taskapi_test {

using Json = nlohmann::json;

// One answer of the API.
struct Reply {
  int status = 0;
  std::string raw;  // the body as received
  Json body;        // `raw` parsed; a discarded value when it is not JSON

  // The {"error": CODE} of a refusal, or "" for any other body.
  std::string code() const {
    if (!body.is_object()) return "";
    const auto it = body.find("error");
    return it != body.end() && it->is_string() ? it->get<std::string>() : "";
  }
};

// How GoogleTest prints a Reply in a failure message.
inline void PrintTo(const Reply& reply, std::ostream* out) {
  *out << "HTTP " << reply.status << " " << reply.raw.substr(0, 1500);
}

inline std::string describe(const Reply& reply) {
  std::ostringstream out;
  PrintTo(reply, &out);
  return out.str();
}

// Throws unless `reply` has `status`; returns (a copy of) its body.
inline Json require(const Reply& reply, int status, std::string_view what) {
  if (reply.status != status) {
    throw std::runtime_error(std::string(what) + ": expected HTTP " + std::to_string(status) +
                             ", got " + describe(reply));
  }
  return reply.body;
}

// Deep enough for any answer of ours; parse_json keeps integers past 64 bits exactly.
inline constexpr std::size_t kDeepestReply = 1000;

// A keep-alive connection to the Task API on 127.0.0.1:port carrying one bearer token (empty:
// none), over TLS with `tls`. One per thread.
class ApiClient {
 public:
  ApiClient(std::uint16_t port, std::string token,
            std::shared_ptr<http::TlsClientCredentials> tls = nullptr)
      : token_(std::move(token)),
        connection_("127.0.0.1", port, std::chrono::seconds(30), std::move(tls)) {}

  Reply send(std::string_view method, std::string_view target, std::string_view body) {
    const auto response = connection_.request(method, target, token_, body);
    Reply reply;
    reply.status = response.status;
    reply.raw = response.body;
    reply.body = parse_json(reply.raw, kDeepestReply);
    return reply;
  }
  Reply get(std::string_view target) { return send("GET", target, ""); }
  // Sent as canonical JSON, so exact integers past 64 bits go out as their digits.
  Reply post(std::string_view target, const Json& body) {
    return send("POST", target, canonical_json(body));
  }
  Reply put(std::string_view target, const Json& body) {
    return send("PUT", target, canonical_json(body));
  }

  const std::string& token() const { return token_; }

 private:
  std::string token_;
  http::Connection connection_;
};

// --- Request bodies ---------------------------------------------------------------------------

inline const std::string kOid(40, 'a');

inline Json binding_for(const std::string& task_id) {
  return {{"task_id", task_id},
          {"job_id", "job-" + task_id},
          {"repository", "aios/aios"},
          {"base_oid", kOid},
          {"expected_branch_oid", kOid},
          {"target_branch", "agent/" + task_id},
          {"branch_mode", "CREATE_NEW"},
          {"generation", 1},
          {"idempotency_key", task_id + "-binding-v1"}};
}

// An agent_runtime task for the hermes adapter; workers need agent.runtime.hermes.
inline Json hermes_task(const std::string& task_id, int max_attempts = 3) {
  return {{"task_id", task_id},
          {"goal", "Summarize the layout of the repository"},
          {"required_capabilities", {"agent.runtime.hermes"}},
          {"max_attempts", max_attempts},
          {"binding", binding_for(task_id)},
          {"execution", {{"action", "agent_runtime"}, {"adapter", "hermes"}}}};
}

// A source_capture task; workers need git.read and the source_capture adapter.
inline Json source_capture_task(const std::string& task_id) {
  return {{"task_id", task_id},
          {"goal", "Capture the interface of the scheduler"},
          {"binding", binding_for(task_id)},
          {"execution",
           {{"action", "source_capture"},
            {"adapter", "source_capture"},
            {"capability_scope", {"git.read"}}}}};
}

// A deterministic task with a one-file change set.
inline Json deterministic_task(const std::string& task_id) {
  return {{"task_id", task_id},
          {"goal", "Write the release note"},
          {"binding", binding_for(task_id)},
          {"execution",
           {{"action", "deterministic"},
            {"adapter", "deterministic"},
            {"capability_scope",
             {"git.read", "git.test", "governed.write.branch", "governed.write.file"}},
            {"change_set",
             {{{"path", "docs/NOTE.md"}, {"operation", "write_file"}, {"content", "hello\n"}}}}}}};
}

inline Json result_body(const Json& lease, const std::string& digest, const std::string& key,
                        const Json& result) {
  return {{"lease_token", lease.at("lease_token")},
          {"attempt", lease.at("attempt")},
          {"execution_digest", digest},
          {"idempotency_key", key},
          {"result", result}};
}

// The value of an unlabelled Prometheus sample `name`, or nullopt.
inline std::optional<double> metric(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.starts_with(name + " ")) return std::stod(line.substr(name.size() + 1));
  }
  return std::nullopt;
}

// Calls `done` every 20 ms until it returns true or `timeout` passes; returns its last answer.
// For effects the daemon makes on its own (the lease sweeper); the bound only keeps a broken
// daemon from hanging the suite.
template <typename F>
bool eventually(F&& done, std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Registers `worker_id` for the agent behind `agent`; returns the worker view.
inline Json register_worker(ApiClient& agent, const std::string& worker_id,
                            const Json& capabilities, const Json& adapters, int max_concurrency) {
  return require(agent.post("/v1/workers/register", {{"worker_id", worker_id},
                                                     {"capabilities", capabilities},
                                                     {"allowed_adapters", adapters},
                                                     {"max_concurrency", max_concurrency}}),
                 200, "register worker " + worker_id);
}

// --- Fixture ----------------------------------------------------------------------------------

// A fresh scheduler per test; `owner()` is a client with the control token.
class SchedulerTest : public ::testing::Test {
 protected:
  // Overridden by suites that need a short lease or another sweep interval.
  virtual test::SchedulerConfig config() const { return {}; }
  // The credentials of the test's clients when the scheduler speaks TLS (none: plaintext).
  virtual std::shared_ptr<http::TlsClientCredentials> client_tls() const { return nullptr; }

  void SetUp() override {
    scheduler_.emplace(config());
    scheduler_->start();
    owner_.emplace(scheduler_->port(), scheduler_->control_token(), client_tls());
  }

  // Every test ends with a graceful stop, so a sanitizer report or a leak in the daemon (which
  // changes its exit code) fails the test that caused it.
  void TearDown() override {
    if (!scheduler_) return;
    auto& process = scheduler_->process();
    if (process.running()) {
      const auto status = process.stop();
      EXPECT_TRUE(status.exited_with(0)) << "the scheduler ended with " << status.describe() << "\n"
                                         << process.log();
    }
    for (int run = 1; run <= process.runs(); ++run) {
      const std::string log = process.log(run);
      EXPECT_THAT(log, ::testing::Not(::testing::HasSubstr("Sanitizer"))) << log;
      EXPECT_THAT(log, ::testing::Not(::testing::HasSubstr("runtime error:"))) << log;
    }
  }

  test::SchedulerDaemon& scheduler() { return *scheduler_; }
  ApiClient& owner() { return *owner_; }
  std::uint16_t port() const { return scheduler_->port(); }
  ApiClient client(const std::string& token) const {
    return {scheduler_->port(), token, client_tls()};
  }

  // After a restart the port changes: a new owner connection.
  void reconnect() {
    owner_.emplace(scheduler_->port(), scheduler_->control_token(), client_tls());
  }

  // Creates an agent; returns its token.
  std::string create_agent(const std::string& agent_id, const Json& granted) {
    const auto& body = require(
        owner().post("/v1/agents", {{"agent_id", agent_id}, {"granted_capabilities", granted}}),
        201, "create agent " + agent_id);
    return body.at("token").get<std::string>();
  }

  Json create_task(const Json& body) {
    return require(owner().post("/v1/tasks", body), 201,
                   "create task " + body.value("task_id", std::string()));
  }

  Json task(const std::string& task_id) {
    return require(owner().get("/v1/tasks/" + task_id), 200, "get task " + task_id);
  }

  Json events(const std::string& task_id) {
    return require(owner().get("/v1/tasks/" + task_id + "/events"), 200, "events of " + task_id)
        .at("events");
  }

  std::vector<std::string> event_types(const std::string& task_id) {
    std::vector<std::string> types;
    for (const auto& event : events(task_id)) types.push_back(event.at("event_type"));
    return types;
  }

  // A claim with the task's current revision and digest, as a worker would send it.
  Reply try_claim(ApiClient& agent, const std::string& task_id, const std::string& worker_id) {
    const auto view = task(task_id);
    return agent.post("/v1/tasks/" + task_id + "/claim",
                      {{"worker_id", worker_id},
                       {"expected_revision", view.at("revision")},
                       {"execution_digest", view.at("execution_digest")}});
  }

  // try_claim that must succeed; returns {claim_id, lease_token, attempt, revision, ...}.
  Json claim(ApiClient& agent, const std::string& task_id, const std::string& worker_id) {
    return require(try_claim(agent, task_id, worker_id), 200,
                   "claim " + task_id + " by " + worker_id);
  }

  Json verify(const std::string& task_id, const std::string& decision) {
    const auto view = task(task_id);
    return require(owner().post("/v1/tasks/" + task_id + "/verification",
                                {{"expected_revision", view.at("revision")},
                                 {"decision", decision},
                                 {"reason", "checked by the test"}}),
                   200, "verify " + task_id + " " + decision);
  }

  // The workers of GET /v1/fleet.
  Json fleet_workers() { return require(owner().get("/v1/fleet"), 200, "fleet").at("workers"); }

  // One worker of GET /v1/fleet.
  Json fleet_worker(const std::string& worker_id) {
    for (const auto& item : fleet_workers()) {
      if (item.at("worker_id") == worker_id) return item;
    }
    throw std::runtime_error("no worker " + worker_id + " in GET /v1/fleet");
  }

  std::string metrics_text() {
    const auto reply = owner().get("/metrics");
    if (reply.status != 200) throw std::runtime_error("GET /metrics: " + describe(reply));
    return reply.raw;
  }

 private:
  std::optional<test::SchedulerDaemon> scheduler_;
  std::optional<ApiClient> owner_;
};

}  // namespace aios::taskapi_test
