// A run through the provider gateway (executor::open_gateway): a Python agent in the real
// sandbox calls its model at OPENAI_BASE_URL with the placeholder it holds, while a fake
// upstream on the host sees only the provider key the gateway adds.
#include <mutex>

#include "aios/http.hpp"
#include "executor/fixture.hpp"

namespace aios::executor::test {
namespace {

constexpr const char* kProviderKey = "sk-gateway-canary-Q7Q7Q7Q7Q7Q7Q7Q7Q7Q7Q7Q7";

// Calls the model four ways, then reports everything of itself a key could hide in: its
// environment, every /proc environ and cmdline it can read, and the files of its directory.
constexpr const char* kAgent = R"PY(
import glob, json, os, sys, urllib.error, urllib.request
base = os.environ["OPENAI_BASE_URL"]
key = os.environ["OPENAI_API_KEY"]
def call(url, body, token):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return [answer.status, answer.read().decode()]
    except urllib.error.HTTPError as error:
        return [error.code, error.read().decode()]
    except Exception as error:
        return [0, repr(error)]
report = {"base": base, "key": key, "calls": []}
for _ in range(int(sys.argv[1])):
    report["calls"].append(call(base + "/chat/completions", {"model": "m1", "messages": []}, key))
report["stream"] = call(base + "/chat/completions", {"model": "m1", "stream": True, "messages": []}, key)
report["guessed_key"] = call(base + "/chat/completions", {}, "sk-guess")[0]
report["outside_prefix"] = call(base.rsplit("/", 1)[0] + "/admin", {}, key)[0]
seen = {"env": dict(os.environ)}
for path in glob.glob("/proc/*/environ") + glob.glob("/proc/*/cmdline"):
    try:
        seen[path] = open(path, "rb").read().decode("utf-8", "replace")
    except OSError:
        pass
for root, _, names in os.walk(os.getcwd()):
    for name in names:
        try:
            seen[os.path.join(root, name)] = open(os.path.join(root, name), "rb").read(65536).decode("utf-8", "replace")
        except OSError:
            pass
report["seen"] = seen
print(json.dumps(report))
)PY";

class GatewayRun : public ExecutorTest {
 protected:
  GatewayRun()
      : upstream_({}, [this](const http::Request& request) {
          const std::lock_guard lock(mutex_);
          authorizations_.emplace_back(request.header("Authorization"));
          http::Response response;
          const json usage = {
              {"prompt_tokens", 10}, {"completion_tokens", 5}, {"total_tokens", 15}};
          if (request.body.find("\"stream\":true") != std::string::npos) {
            response.content_type = "text/event-stream";
            response.body = "data: " + json{{"choices", json::array()}, {"usage", usage}}.dump() +
                            "\n\ndata: [DONE]\n\n";
          } else {
            response.body = json{{"choices", json::array()}, {"usage", usage}}.dump();
          }
          return response;
        }) {
    upstream_.start();
    std::filesystem::create_directories(credentials());
    write_text_file(credentials() / "provider.env",
                    std::string("ONEAPI_REGULAR_TOKEN=") + kProviderKey + "\n");
    options_.credentials_directory = credentials();
  }

  json profile(int calls) {
    auto value = python_profile("hermes", write_script("gateway_agent.py", kAgent));
    value["argv"].push_back(std::to_string(calls));
    value["provider"] = {
        {"upstream", "http://127.0.0.1:" + std::to_string(upstream_.port()) + "/v1"},
        {"credential",
         {{"credential", "provider.env"}, {"format", "dotenv"}, {"key", "ONEAPI_REGULAR_TOKEN"}}}};
    return value;
  }

  std::mutex mutex_;
  std::vector<std::string> authorizations_;
  http::Server upstream_;
};

// Given a profile with a provider, the agent should reach its model only through the gateway:
// its calls answered, a guessed key and a path outside the prefix refused, every call upstream
// carrying the provider key, which appears nowhere the agent can look; the result counts usage.
TEST_F(GatewayRun, TheAgentCallsItsModelWithoutEverHoldingTheKey) {
  const auto result = run(profile(2), request_value("hermes"));
  const auto& report = result["output_json"];
  EXPECT_EQ(report["base"], "http://127.0.0.1:" + std::to_string(upstream_.port()) + "/v1");
  EXPECT_TRUE(report["key"].get<std::string>().starts_with("aios-run-")) << report["key"];
  for (const auto& call : report["calls"]) EXPECT_EQ(call[0], 200) << call;
  EXPECT_EQ(report["stream"][0], 200) << report["stream"];
  EXPECT_EQ(report["guessed_key"], 401);
  EXPECT_EQ(report["outside_prefix"], 403);
  EXPECT_EQ(report["seen"].dump().find(kProviderKey), std::string::npos);
  EXPECT_GE(report["seen"].size(), 3U) << "the agent saw its environment, /proc and its files";
  {
    const std::lock_guard lock(mutex_);
    ASSERT_EQ(authorizations_.size(), 3U);
    for (const auto& authorization : authorizations_) {
      EXPECT_EQ(authorization, std::string("Bearer ") + kProviderKey);
    }
  }
  EXPECT_EQ(result["model_usage"], json({{"requests", 3},
                                         {"input", 30},
                                         {"output", 15},
                                         {"total", 45},
                                         {"unmetered", 0},
                                         {"refused", 2},
                                         {"bytes_up", result["model_usage"]["bytes_up"]},
                                         {"bytes_down", result["model_usage"]["bytes_down"]}}));
  EXPECT_EQ(result.dump().find(kProviderKey), std::string::npos);
  EXPECT_EQ(result["result_sha256"], result_digest(result));
  EXPECT_TRUE(temporary_root_is_empty());
}

// Given a request whose model_budget allows two requests, the agent's third call should be
// refused and the run should fail with EXTERNAL_AGENT_MODEL_BUDGET_EXHAUSTED and its usage.
TEST_F(GatewayRun, ARunOverItsBudgetFailsWithItsUsage) {
  auto request = request_value("hermes");
  request["model_budget"] = {{"max_requests", 2}};
  const auto failed = failure(profile(3), request, true);
  EXPECT_TRUE(failed.starts_with("EXTERNAL_AGENT_MODEL_BUDGET_EXHAUSTED:")) << failed;
  const auto usage = parse_json(failed.substr(failed.find(':') + 1));
  EXPECT_EQ(usage["requests"], 2);
  EXPECT_EQ(usage["total"], 30);
  EXPECT_EQ(authorizations_.size(), 2U);
  request["model_budget"] = {{"max_requests", 0}};
  EXPECT_EQ(failure(profile(1), request), "EXTERNAL_AGENT_MODEL_BUDGET_INVALID");
}

// Given a profile's default budget, a task without one should be held to it; given its ceiling,
// a task that asks for more should be held to the ceiling.
TEST_F(GatewayRun, AProfilesDefaultAndCeilingBoundEveryRun) {
  auto bounded = profile(2);
  bounded["provider"]["model_budget"] = {{"default", {{"max_requests", 1}}}};
  EXPECT_EQ(failure(bounded, request_value("hermes")), "EXTERNAL_AGENT_MODEL_BUDGET_EXHAUSTED");
  EXPECT_EQ(authorizations_.size(), 1U);
  bounded["provider"]["model_budget"] = {{"ceiling", {{"max_requests", 1}}}};
  auto request = request_value("hermes");
  request["model_budget"] = {{"max_requests", 5}};
  EXPECT_EQ(failure(bounded, request), "EXTERNAL_AGENT_MODEL_BUDGET_EXHAUSTED");
  EXPECT_EQ(authorizations_.size(), 2U);
  bounded["provider"]["model_budget"] = {{"most", {{"max_requests", 1}}}};
  EXPECT_EQ(failure(bounded, request), "EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID");
}

// Given a provider beside credential_env, or beside a network entry naming its upstream, or
// naming an upstream that is no URL, the profile should be refused.
TEST_F(GatewayRun, AProviderComesAlone) {
  auto with_key = profile(1);
  with_key["credential_env"] = {
      {"OPENAI_API_KEY",
       {{"credential", "provider.env"}, {"format", "dotenv"}, {"key", "ONEAPI_REGULAR_TOKEN"}}}};
  EXPECT_EQ(failure(with_key, request_value("hermes")), "EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID");
  auto relayed = profile(1);
  relayed["network"] = {"127.0.0.1:" + std::to_string(upstream_.port())};
  EXPECT_EQ(failure(relayed, request_value("hermes")), "EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID");
  auto based = profile(1);
  based["environment"] = {{"OPENAI_BASE_URL", "http://elsewhere.example.com/v1"}};
  EXPECT_EQ(failure(based, request_value("hermes")), "EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID");
  auto unknown = profile(1);
  unknown["provider"]["api_key"] = "sk-inline";
  EXPECT_EQ(failure(unknown, request_value("hermes")), "EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID");
  auto no_url = profile(1);
  no_url["provider"]["upstream"] = "127.0.0.1:443";
  EXPECT_EQ(failure(no_url, request_value("hermes")), "EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID");
  EXPECT_TRUE(authorizations_.empty());
}

}  // namespace
}  // namespace aios::executor::test
