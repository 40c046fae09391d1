// End to end with the real OpenClaw CLI: the worker-side exchange hands a request to the
// executor daemon, which runs `openclaw agent --local --json ...` (profile shaped like the
// seed's) against a fake OpenAI-compatible server on 127.0.0.1. Node 24 and OpenClaw come from
// npm through scripts/install-realcli, cached between runs.
#include "support/realcli.hpp"

#include "aios/process.hpp"
#include "executor/fixture.hpp"

namespace aios::executor::test {
namespace {

using aios::test::Daemon;
using aios::test::DaemonOptions;
using aios::test::install_realcli;
using aios::test::RealCli;

// The install runs in SetUp, not SetUpTestSuite: a suite set-up that throws leaves GoogleTest
// reporting its tests as skipped, where a missing CLI must fail them.
class RealOpenClaw : public ExecutorTest {
 protected:
  void SetUp() override {
    ExecutorTest::SetUp();
    cli_ = std::make_unique<RealCli>(install_realcli());
  }

  void answers(bool through_gateway);

  std::unique_ptr<RealCli> cli_;
};

// Given the real OpenClaw CLI behind the executor, the result should carry the fake model's
// answer, and the model should have been called with exactly the provider key: projected into
// the agent's environment, or (`through_gateway`) added by the provider gateway to the calls of
// an agent that holds only its run's placeholder, with the calls' usage in the result.
void RealOpenClaw::answers(bool through_gateway) {
  const std::string reply = "AIOS-REALCLI-" + aios::test::random_token(12);
  const std::string provider_key = "sk-provider-" + aios::test::random_token(24);
  const std::string other_key = "sk-other-" + aios::test::random_token(24);
  const auto work = dir_ / "openclaw";
  for (const char* sub : {"home", "state", "workspace"})
    std::filesystem::create_directories(work / sub);

  Daemon server(
      aios::test::fake_model(dir_ / "requests.jsonl", {"--model", "fake-model", "--reply", reply}),
      dir_.path(), "fake-openai");
  const auto port = server.start();

  const json config = {
      {"logging", {{"file", (work / "openclaw.log").string()}}},
      {"tools", {{"profile", "minimal"}}},
      {"memory", {{"search", {{"enabled", false}}}}},
      {"agents",
       {{"defaults",
         {{"workspace", (work / "workspace").string()},
          {"skipBootstrap", true},
          {"model", {{"primary", "openai/fake-model"}}},
          {"thinkingDefault", "off"}}},
        {"entries",
         {{"main", {{"default", true}, {"workspace", (work / "workspace").string()}}}}}}},
      {"models",
       {{"providers",
         {{"openai",
           {{"baseUrl", "http://127.0.0.1:" + std::to_string(port) + "/v1"},
            {"api", "openai-completions"},
            {"models",
             {{{"id", "fake-model"},
               {"name", "fake-model"},
               {"contextWindow", 32768},
               {"maxTokens", 256}}}}}}}}}}};
  // Readable by others: the agent's sandbox, started by root (as the tests are), runs as nobody.
  write_text_file(work / "openclaw.json", config.dump(2),
                  std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                      std::filesystem::perms::others_read);

  json profile = {{"schema", kProfileSchema},
                  {"runtime", "openclaw"},
                  {"argv",
                   {(cli_->node_root / "bin" / "node").string(),
                    (cli_->openclaw_root / "openclaw.mjs").string(), "agent", "--local", "--json",
                    "--agent", "main", "--thinking", "off", "--message", "{prompt}", "--model",
                    "openai/fake-model", "--timeout", "60"}},
                  {"credential_env",
                   {{"OPENAI_API_KEY",
                     {{"credential", "aios-external-agent-oneapi-env"},
                      {"format", "dotenv"},
                      {"key", "ONEAPI_REGULAR_TOKEN"}}}}},
                  {"environment",
                   {{"OPENCLAW_CONFIG_PATH", (work / "openclaw.json").string()},
                    {"NODE_COMPILE_CACHE", cli_->compile_cache.string()}}},
                  {"input_mode", "stdin_text"},
                  {"output_mode", "stdout_json"},
                  {"max_output_bytes", 131072},
                  {"timeout_seconds", 120},
                  // The agent's sandbox reaches the fake model and nothing else.
                  {"network", {"127.0.0.1:" + std::to_string(port)}}};
  if (through_gateway) {
    profile["provider"] = {{"upstream", "http://127.0.0.1:" + std::to_string(port) + "/v1"},
                           {"credential", profile["credential_env"]["OPENAI_API_KEY"]}};
    profile.erase("credential_env");
    profile.erase("network");
  }
  write_profile("openclaw", profile);

  const auto credentials = dir_ / "credentials";
  std::filesystem::create_directories(credentials);
  write_text_file(
      credentials / "aios-external-agent-oneapi-env",
      "ONEAPI_REGULAR_TOKEN=" + provider_key + "\nOTHER_PROVIDER_TOKEN=" + other_key + "\n");
  const auto root = dir_ / "exchange";
  std::filesystem::create_directories(root);
  DaemonOptions options = aios::test::executor_options(root, profiles(), dir_.path());
  options.args.insert(options.args.end(), {"--executable-root", cli_->node_install().string(),
                                           "--executable-root", cli_->openclaw_install().string()});
  options.env = {"CREDENTIALS_DIRECTORY=" + credentials.string(), "TMPDIR=" + temporary().string()};
  Daemon executor(options, dir_.path(), "executor");
  executor.start();

  auto payload = default_payload();
  payload["goal"] = "Reply with a greeting. Do not use tools.";
  const Exchange exchange(root, ExchangeKey::from_file(aios::test::exchange_key_file(dir_.path())));
  json result;
  try {
    result = exchange.execute({.request_id = "external-openclaw-realcli-0001",
                               .runtime = "openclaw",
                               .task_id = "task-openclaw-runtime",
                               .execution_digest = kDigest,
                               .payload = payload,
                               .timeout = std::chrono::minutes(3)});
  } catch (const Error& error) {
    FAIL() << failure_text(error) << "\n" << executor.log() << server.log();
  }
  EXPECT_EQ(result["runtime"], "openclaw");
  EXPECT_EQ(result["exit_code"], 0);
  ASSERT_TRUE(result.contains("output_json")) << result.dump();
  EXPECT_EQ(result["output_json"]["payloads"][0]["text"], reply) << result.dump();
  EXPECT_EQ(result["output_json"]["meta"]["finalAssistantVisibleText"], reply);
  EXPECT_EQ(result["credential_material_exposed"], false);
  EXPECT_EQ(result["control_plane_access_granted"], false);
  EXPECT_EQ(result["result_sha256"], result_digest(result));
  if (through_gateway) {
    EXPECT_GE(result["model_usage"]["requests"], 1) << result.dump();
    EXPECT_EQ(result["model_usage"]["unmetered"], 0) << result.dump();
    EXPECT_EQ(result["model_usage"]["total"].get<int>(),
              15 * result["model_usage"]["requests"].get<int>())
        << result.dump();
  } else {
    EXPECT_FALSE(result.contains("model_usage"));
  }

  // What the model saw: chat completions authorized with exactly the projected key; the other
  // provider key of the same credential file reached nothing.
  const auto log = read_text_file(dir_ / "requests.jsonl");
  EXPECT_TRUE(aios::test::model_called_only_with_key(dir_ / "requests.jsonl",
                                                     "/v1/chat/completions", provider_key))
      << log;
  for (const auto& text :
       {log, result.dump(), executor.log(), read_text_file(work / "openclaw.log")}) {
    EXPECT_EQ(text.find(provider_key), std::string::npos);
    EXPECT_EQ(text.find(other_key), std::string::npos);
  }
  EXPECT_TRUE(std::filesystem::is_empty(work / "workspace"));
  EXPECT_TRUE(std::filesystem::is_empty(temporary()));
  EXPECT_TRUE(executor.stop().exited_with(0));
}

TEST_F(RealOpenClaw, AnswersThroughTheExecutorWithOnlyTheProviderKey) {
  answers(false);
}

TEST_F(RealOpenClaw, AnswersThroughTheGatewayWithoutEverHoldingTheKey) {
  answers(true);
}

}  // namespace
}  // namespace aios::executor::test
