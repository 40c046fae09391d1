// The shipped Hermes profile against a stand-in that behaves as the real Hermes CLI does
// (tests/executor/hermes_standin.py): one-shot argv, a writable HERMES_HOME seeded from the
// root-owned template, the provider's base URL from that home's config.yaml, the run's usage
// file, and exit 0 on a provider it cannot reach. The model is an in-process fake upstream.
#include <atomic>
#include <mutex>

#include "aios/http.hpp"
#include "executor/fixture.hpp"

namespace aios::executor::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kProviderKey = "sk-hermes-canary-H3H3H3H3H3H3H3H3H3H3H3H3";
constexpr const char* kReply = "HERMES-STANDIN-REPLY";

fs::path shipped(const std::string& name) {
  return fs::path(AIOS_SOURCE_DIR) / "config" / "external-agent-runtime.d" / name;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

class HermesStandIn : public ExecutorTest {
 protected:
  HermesStandIn()
      : upstream_({}, [this](const http::Request& request) {
          http::Response response;
          {
            const std::lock_guard lock(mutex_);
            calls_.push_back({{"path", request.target},
                              {"authorization", request.header("Authorization")},
                              {"body", parse_json(request.body)}});
          }
          if (provider_down_) {
            response.status = 503;
            response.body = R"({"error":{"message":"upstream unavailable"}})";
            return response;
          }
          response.body =
              json{{"choices", {{{"message", {{"role", "assistant"}, {"content", kReply}}}}}},
                   {"usage",
                    {{"prompt_tokens", 10}, {"completion_tokens", 5}, {"total_tokens", 15}}}}
                  .dump();
          return response;
        }) {
    upstream_.start();
    std::filesystem::create_directories(credentials());
    write_text_file(credentials() / "aios-external-agent-oneapi-env",
                    std::string("ONEAPI_REGULAR_TOKEN=") + kProviderKey + "\n");
    options_.credentials_directory = credentials();
    // The stand-in installed as the real one is: an executable script under its own root.
    const auto bin = dir_ / "opt" / "aios-hermes-agent" / "bin";
    fs::create_directories(bin);
    fs::copy_file(fs::path(AIOS_SOURCE_DIR) / "tests" / "executor" / "hermes_standin.py",
                  bin / "hermes");
    fs::permissions(bin / "hermes", fs::perms::owner_all | fs::perms::group_read |
                                        fs::perms::group_exec | fs::perms::others_read |
                                        fs::perms::others_exec);
    for (auto path = bin; path != dir_.path(); path = path.parent_path()) {
      fs::permissions(path, fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
    }
    options_.executable_roots = {dir_ / "opt" / "aios-hermes-agent", "/usr/bin"};
    // The shipped home template, naming this test's upstream where it names the staging one.
    fs::create_directories(home());
    write_text_file(home() / "config.yaml",
                    replaced(read_text_file(shipped("hermes-home/config.yaml")), kStaging, url()));
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(upstream_.port()) + "/v1"; }
  fs::path home() const { return dir_ / "hermes-home"; }

  // The shipped profile as it is, but for where the stand-in, the upstream and the template are.
  json profile() const {
    auto value = parse_json(read_text_file(shipped("hermes.profile.json")));
    value["argv"][0] = (dir_ / "opt" / "aios-hermes-agent" / "bin" / "hermes").string();
    value["provider"]["upstream"] = url();
    value["provider"]["credential"]["credential"] = "aios-external-agent-oneapi-env";
    value["state_template"]["from"] = home().string();
    return value;
  }

  std::vector<json> calls() {
    const std::lock_guard lock(mutex_);
    return calls_;
  }

  static constexpr const char* kStaging = "http://172.18.0.2:3000/v1";
  std::mutex mutex_;
  std::vector<json> calls_;
  std::atomic<bool> provider_down_{false};
  http::Server upstream_;
};

// Given the shipped profile, the stand-in should answer through the gateway: its one call made
// with the provider key the gateway added, the model and toolset the profile names, its state
// written into the run's copy of the home (the template untouched), and the call's usage in the
// result.
TEST_F(HermesStandIn, TheShippedProfileAnswersThroughTheGateway) {
  const auto result = run(profile(), request_value("hermes"));
  EXPECT_EQ(result["exit_code"], 0);
  EXPECT_EQ(result["output_text"], std::string(kReply) + "\n");
  EXPECT_EQ(result["model_usage"]["requests"], 1) << result.dump();
  EXPECT_EQ(result["model_usage"]["total"], 15) << result.dump();
  EXPECT_EQ(result["model_usage"]["unmetered"], 0) << result.dump();
  const auto seen = calls();
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0]["path"], "/v1/chat/completions");
  EXPECT_EQ(seen[0]["authorization"], std::string("Bearer ") + kProviderKey);
  EXPECT_EQ(seen[0]["body"]["model"], "deepseek-v4-flash");
  EXPECT_EQ(seen[0]["body"]["tools"][0]["function"]["name"], "file");
  EXPECT_NE(seen[0]["body"]["messages"][0]["content"].get<std::string>().find("Return ok."),
            std::string::npos);
  EXPECT_EQ(result.dump().find(kProviderKey), std::string::npos);
  EXPECT_FALSE(fs::exists(home() / "state.db"));
  EXPECT_FALSE(fs::exists(home() / "sessions"));
  EXPECT_TRUE(temporary_root_is_empty());
}

// Given a provider that answers 503, the stand-in (as Hermes) should exit 0 with the error as
// its answer; the usage file's failed: true should make the run fail with that text, and the
// calls it made still counted by the gateway.
TEST_F(HermesStandIn, AProviderItCannotReachFailsTheRunThoughItExitsZero) {
  provider_down_ = true;
  const auto failed = failure(profile(), request_value("hermes"), true);
  EXPECT_TRUE(failed.starts_with("EXTERNAL_AGENT_REPORTED_FAILURE:API call failed after 3 retries"))
      << failed;
  EXPECT_EQ(calls().size(), 3U);
  // Without the usage file, the same run would pass for an answer.
  auto blind = profile();
  blind["argv"].erase(blind["argv"].end() - 2, blind["argv"].end());
  const auto result = run(blind, request_value("hermes"));
  EXPECT_TRUE(result["output_text"].get<std::string>().starts_with("API call failed"));
  EXPECT_TRUE(temporary_root_is_empty());
}

// Given the profiles of the first round, or the shipped one with a part taken away, the
// stand-in should refuse them as the real CLI does: `run --non-interactive` and --provider
// without -m are argparse errors (exit 2), a read-only HERMES_HOME is fatal, and lazy installs
// left on stop the run.
TEST_F(HermesStandIn, ProfilesTheRealCliWouldRefuseFail) {
  auto example = profile();
  example["argv"] = {example["argv"][0], "run", "--non-interactive"};
  EXPECT_TRUE(failure(example, request_value("hermes"), true)
                  .starts_with("EXTERNAL_AGENT_PROCESS_FAILED:2:"));

  auto no_model = profile();
  auto& argv = no_model["argv"];
  argv.erase(std::find(argv.begin(), argv.end(), "-m"), std::find(argv.begin(), argv.end(), "-t"));
  EXPECT_TRUE(failure(no_model, request_value("hermes"), true)
                  .starts_with("EXTERNAL_AGENT_PROCESS_FAILED:2:"));

  auto read_only = profile();
  read_only.erase("state_template");
  read_only["environment"]["HERMES_HOME"] = home().string();
  const auto denied = failure(read_only, request_value("hermes"), true);
  EXPECT_TRUE(denied.starts_with("EXTERNAL_AGENT_PROCESS_FAILED:1:")) << denied;
  // "Permission denied" under systemd's ReadOnlyPaths=, "Read-only file system" in bubblewrap.
  EXPECT_NE(denied.find(": '" + (home() / "cron").string() + "'"), std::string::npos) << denied;

  auto lazy = profile();
  lazy["environment"].erase("HERMES_DISABLE_LAZY_INSTALLS");
  write_text_file(home() / "config.yaml",
                  replaced(read_text_file(home() / "config.yaml"), "allow_lazy_installs: false",
                           "allow_lazy_installs: true"));
  EXPECT_TRUE(
      failure(lazy, request_value("hermes"), true).starts_with("EXTERNAL_AGENT_PROCESS_FAILED:3:"));
  EXPECT_TRUE(calls().empty());
  EXPECT_TRUE(temporary_root_is_empty());
}

// Given the weaker mode (the agent holds the key and reaches the provider directly), the
// model usage should come from the agent's own usage file.
TEST_F(HermesStandIn, WithoutTheGatewayTheUsageFileCounts) {
  auto direct = profile();
  direct["credential_env"] = {{"OPENAI_API_KEY", direct["provider"]["credential"]}};
  direct.erase("provider");
  direct["network"] = {"127.0.0.1:" + std::to_string(upstream_.port())};
  const auto result = run(direct, request_value("hermes"));
  EXPECT_EQ(result["model_usage"]["requests"], 1) << result.dump();
  EXPECT_EQ(result["model_usage"]["input"], 10);
  EXPECT_EQ(result["model_usage"]["output"], 5);
  EXPECT_EQ(result["model_usage"]["total"], 15);
  EXPECT_EQ(result.dump().find(kProviderKey), std::string::npos);
}

}  // namespace
}  // namespace aios::executor::test
