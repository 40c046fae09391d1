// The Bridge resolver's side of the POST /v2/execution-envelope contract, against a loopback
// http::Server that answers as the test tells it: what is sent (canonical body, control token)
// and how every kind of answer maps to a result or a code. The real Bridge is exercised by
// tests/rebind/daemon_bridge_test.cpp.
#include <gtest/gtest.h>

#include <mutex>
#include <optional>

#include "aios/http.hpp"
#include "aios/rebind.hpp"
#include "support/code_of.hpp"
#include "support/recording.hpp"

namespace aios {
namespace {

using Json = nlohmann::json;
using test::code_of;

const std::string kToken(40, 't');
// The real transport: these tests talk to a loopback peer.
http::SystemTransport resolver_transport;

// A loopback peer that records the last request and answers with `answer`.
class Peer {
 public:
  Peer()
      : server_({}, [this](const http::Request& request) {
          const std::lock_guard lock(mutex_);
          seen_ = request;
          return answer_;
        }) {
    server_.start();
  }

  void answer(int status, std::string body) {
    const std::lock_guard lock(mutex_);
    answer_.status = status;
    answer_.body = std::move(body);
  }
  http::Request seen() {
    const std::lock_guard lock(mutex_);
    return seen_.value();
  }
  std::string url(const std::string& suffix = "") const {
    return "http://127.0.0.1:" + std::to_string(server_.port()) + suffix;
  }

 private:
  std::mutex mutex_;
  http::Response answer_;
  std::optional<http::Request> seen_;
  http::Server server_;
};

// The error a call throws, with its status.
template <typename F>
std::pair<std::string, int> failure_of(F&& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return {error.code(), error.http_status()};
  }
  return {"OK", 0};
}

TEST(BridgeResolver, SendsTheCanonicalRequestWithTheControlToken) {
  // Given a Bridge that resolves, we should POST the canonical body with the control token to
  // /v2/execution-envelope under the base URL (trailing slashes dropped) and return its object.
  Peer peer;
  peer.answer(200, R"({"action":"deterministic","execution_digest":"d"})");
  const auto resolve =
      make_bridge_execution_resolver(peer.url("/base//"), kToken, resolver_transport);
  const Json capabilities = {"git.read", "governed.write.file"};
  EXPECT_EQ(resolve("task-rebind-a", capabilities),
            (Json{{"action", "deterministic"}, {"execution_digest", "d"}}));
  const auto seen = peer.seen();
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.target, "/base/v2/execution-envelope");
  EXPECT_EQ(seen.bearer_token, kToken);
  EXPECT_EQ(
      seen.body,
      R"({"required_capabilities":["git.read","governed.write.file"],"task_id":"task-rebind-a"})");
  EXPECT_EQ(seen.header("Content-Type"), "application/json");
}

TEST(BridgeResolver, SendsOneRequestThroughItsTransportWithTheTimeoutItWasGiven) {
  test::RecordingTransport transport;
  transport.respond(200, R"({"envelope":{}})");
  const auto resolve = make_bridge_execution_resolver("http://bridge.invalid:18892/", kToken,
                                                      transport, std::chrono::milliseconds(750));
  EXPECT_EQ(resolve("task-rebind-a", Json::array({"git.read"})),
            Json({{"envelope", Json::object()}}));
  const auto calls = transport.calls();
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_EQ(calls[0].method, "POST");
  EXPECT_EQ(calls[0].url, "http://bridge.invalid:18892/v2/execution-envelope");
  EXPECT_EQ(calls[0].bearer_token, kToken);
  EXPECT_EQ(calls[0].body, R"({"required_capabilities":["git.read"],"task_id":"task-rebind-a"})");
  EXPECT_EQ(calls[0].timeout, std::chrono::milliseconds(750));
}

TEST(BridgeResolver, AnswersMapToTheSeedsCodes) {
  // Given each kind of Bridge answer, we should throw the seed's code with the seed's status.
  struct Case {
    const char* name;
    int status;
    const char* body;
    std::pair<std::string, int> expected;
  };
  const std::vector<Case> cases = {
      {"a refusal with a code",
       409,
       R"({"error":"EXECUTION_PLAN_NOT_REGISTERED"})",
       {"EXECUTION_PLAN_NOT_REGISTERED", 409}},
      {"a 4xx keeps 409", 403, R"({"error":"FORBIDDEN"})", {"FORBIDDEN", 409}},
      {"a 5xx becomes 502", 503, R"({"error":"STORE_BUSY"})", {"STORE_BUSY", 502}},
      {"a refusal without a code",
       404,
       R"({"detail":"x"})",
       {"CANONICAL_EXECUTION_RESOLUTION_FAILED", 409}},
      {"a 5xx without a code", 500, R"({})", {"CANONICAL_EXECUTION_RESOLUTION_FAILED", 502}},
      {"a code that is not code-shaped",
       409,
       R"({"error":"<script>"})",
       {"CANONICAL_EXECUTION_RESOLUTION_FAILED", 409}},
      {"a code that is not a string",
       409,
       R"({"error":7})",
       {"CANONICAL_EXECUTION_RESOLUTION_FAILED", 409}},
      {"a 200 that is not JSON", 200, "plan", {"CANONICAL_EXECUTION_RESPONSE_INVALID", 502}},
      {"a 200 list", 200, "[]", {"CANONICAL_EXECUTION_RESPONSE_INVALID", 502}},
      {"a 500 in HTML", 500, "<html></html>", {"CANONICAL_EXECUTION_RESPONSE_INVALID", 502}},
      {"an empty body", 502, "", {"CANONICAL_EXECUTION_RESPONSE_INVALID", 502}},
  };
  Peer peer;
  const auto resolve = make_bridge_execution_resolver(peer.url(), kToken, resolver_transport);
  for (const auto& item : cases) {
    SCOPED_TRACE(item.name);
    peer.answer(item.status, item.body);
    EXPECT_EQ(failure_of([&] { resolve("task-rebind-a", Json::array()); }), item.expected);
  }
}

TEST(BridgeResolver, UnreachableBridgeIsAnUpstreamFailure) {
  // Given a Bridge that is not running, we should fail cleanly with the client's 502 code.
  std::uint16_t closed_port = 0;
  {
    http::Server probe({}, [](const http::Request&) { return http::Response{}; });
    probe.start();
    closed_port = probe.port();
  }
  const auto resolve =
      make_bridge_execution_resolver("http://127.0.0.1:" + std::to_string(closed_port), kToken,
                                     resolver_transport, std::chrono::seconds(2));
  EXPECT_EQ(failure_of([&] { resolve("task-rebind-a", Json::array()); }),
            (std::pair<std::string, int>{"HTTP_UPSTREAM_UNAVAILABLE", 502}));
}

TEST(BridgeResolver, BadUrlIsRefusedWhenBuilt) {
  // Given a URL the client cannot use, we should refuse at start-up, not at the first rebind.
  for (const char* url : {"ftp://127.0.0.1:18892", "127.0.0.1:18892", "http://host:99999"}) {
    SCOPED_TRACE(url);
    EXPECT_EQ(code_of([&] { make_bridge_execution_resolver(url, kToken, resolver_transport); }),
              "HTTP_URL_INVALID");
  }
}

}  // namespace
}  // namespace aios
