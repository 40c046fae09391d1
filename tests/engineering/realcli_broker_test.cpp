// The engineering broker with the real agent CLIs against a fake OpenAI-compatible server on
// 127.0.0.1 whose scripted reply is a tool call that writes a file: OpenClaw through `openclaw
// agent exec --message-file - --cwd <worktree> --model openai/gpt-6-luna --auth-env-only
// --timeout <s> --json` (the seed's command line, checked against the installed CLI's --help)
// and Codex through `codex exec --json --ephemeral -C <worktree> -`. For each, first the broker's
// self-test, then a whole engineering task through the scheduler, the broker and the worker.
// Node 24, OpenClaw and Codex come from npm through scripts/install-realcli, cached between runs.
#include <gtest/gtest.h>

#include "engineering/engineering_fixture.hpp"
#include "support/realcli.hpp"

namespace aios::engineering_test {
namespace {

using nlohmann::json;

// The model's scripted edit and the provider credential the broker projects into the backend.
struct FakeProvider {
  std::string key = "sk-provider-" + test::random_token(24);
  std::filesystem::path credentials;
  std::filesystem::path requests;
};

FakeProvider make_provider(const std::filesystem::path& dir) {
  FakeProvider provider;
  provider.credentials = dir / "credentials";
  provider.requests = dir / "requests.jsonl";
  std::filesystem::create_directories(provider.credentials);
  test::write_text_file(provider.credentials / "aios-external-agent-oneapi-env",
                        "ONEAPI_REGULAR_TOKEN=" + provider.key + "\n");
  return provider;
}

// The backend configuration an operator writes (config/agent-runtime-<backend>.conf.example),
// pointed at the installed CLI and the fake model on `port`: the key projected into the
// backend's environment, or (`through_gateway`) kept by the provider gateway.
json backend_config(const std::string& backend, const test::RealCli& cli, std::uint16_t port,
                    bool through_gateway = false) {
  const std::string base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  json config = {{"schema", "aios.agent-runtime-broker.backend.v1"},
                 {"backend", backend},
                 {"timeout_seconds", 120},
                 {"credential_env",
                  {{"OPENAI_API_KEY",
                    {{"credential", "aios-external-agent-oneapi-env"},
                     {"format", "dotenv"},
                     {"key", "ONEAPI_REGULAR_TOKEN"}}}}}};
  if (through_gateway) {
    config["provider"] = {{"upstream", base_url},
                          {"credential", config["credential_env"]["OPENAI_API_KEY"]}};
    config.erase("credential_env");
  } else {
    // The backend's sandbox reaches the fake model and nothing else.
    config["network"] = {"127.0.0.1:" + std::to_string(port)};
  }
  if (backend == "codex") {
    config["protocol"] = "codex-exec";
    config["argv"] = {cli.codex_binary().string(),
                      "exec",
                      "--json",
                      "--ephemeral",
                      "--ignore-user-config",
                      "-C",
                      "{worktree}",
                      "-m",
                      "fake-model",
                      "--config",
                      "model_provider=\"aios\"",
                      "--config",
                      "model_providers.aios.name=\"aios\"",
                      "--config",
                      "model_providers.aios.base_url=\"" + base_url + "\"",
                      "--config",
                      "model_providers.aios.env_key=\"OPENAI_API_KEY\"",
                      "--config",
                      "model_providers.aios.wire_api=\"responses\"",
                      "--config",
                      "approval_policy=\"never\"",
                      "--config",
                      "sandbox_mode=\"danger-full-access\"",
                      "--config",
                      "check_for_update_on_startup=false",
                      "--config",
                      "analytics.enabled=false",
                      "--disable",
                      "plugins",
                      "--disable",
                      "remote_plugin",
                      "--disable",
                      "apps",
                      "-"};
    config["environment"] = json::object();
    return config;
  }
  config["protocol"] = "openclaw-agent-exec";
  config["argv"] = {(cli.node_root / "bin" / "node").string(),
                    (cli.openclaw_root / "openclaw.mjs").string(),
                    "agent",
                    "exec",
                    "--message-file",
                    "-",
                    "--cwd",
                    "{worktree}",
                    "--model",
                    "openai/gpt-6-luna",
                    "--auth-env-only",
                    "--timeout",
                    "{timeout_seconds}",
                    "--json"};
  config["environment"] = {{"NODE_COMPILE_CACHE", cli.compile_cache.string()}};
  // Through the gateway, the executor sets the base URL (the gateway's, the same address).
  if (!through_gateway) config["environment"]["OPENAI_BASE_URL"] = base_url;
  return config;
}

std::vector<std::string> executable_roots(const std::string& backend, const test::RealCli& cli) {
  if (backend == "codex") return {"--executable-root", cli.codex_root.string()};
  return {"--executable-root", cli.node_install().string(), "--executable-root",
          cli.openclaw_install().string()};
}

const std::string kLsanOptions =
    "LSAN_OPTIONS=suppressions=" + std::string(AIOS_SOURCE_DIR) + "/tests/engineering/lsan.supp";

class RealCliBroker : public ::testing::TestWithParam<std::string> {};

TEST_P(RealCliBroker, SelfTestSeesTheWorktreeChangedWithHeadAtTheBase) {
  const auto& backend = GetParam();
  const auto cli = test::install_realcli();
  const test::ScopedTempDir dir("aios-broker-realcli");
  const auto provider = make_provider(dir.path());
  const std::string edit = "written by the fake model " + test::random_token(8);
  test::Daemon server(test::fake_model(provider.requests, {"--scenario", "edit", "--edit-file",
                                                           "SELFTEST.md", "--edit-content", edit,
                                                           "--reply", "I rewrote SELFTEST.md."}),
                      dir.path(), "fake-openai");
  const auto port = server.start();

  const auto config = dir.path() / "config";
  const auto temporary = dir.path() / "tmp";
  for (const auto& path : {config, temporary}) std::filesystem::create_directories(path);
  test::write_text_file(config / ("agent-runtime-" + backend + ".conf"),
                        backend_config(backend, cli, port).dump(2));

  std::string out;
  std::string err;
  process::Spec spec;
  spec.argv = {test::daemon_binary("aios-external-agent-executor").string(),
               "--broker",
               "--self-test",
               backend,
               "--config-root",
               config.string()};
  const auto roots = executable_roots(backend, cli);
  spec.argv.insert(spec.argv.end(), roots.begin(), roots.end());
  spec.environment = {"PATH=/usr/bin:/bin",
                      "CREDENTIALS_DIRECTORY=" + provider.credentials.string(),
                      "TMPDIR=" + temporary.string(), kLsanOptions};
  spec.working_directory = dir.path();
  spec.timeout = std::chrono::minutes(3);
  spec.on_stdout = [&out](std::string_view chunk) { out.append(chunk); };
  spec.on_stderr = [&err](std::string_view chunk) { err.append(chunk); };
  const auto outcome = process::run(spec);
  ASSERT_EQ(outcome.exit_code, 0) << out << err << server.log();

  const auto report = json::parse(out);
  EXPECT_EQ(report.at("backend"), backend);
  EXPECT_EQ(report.at("head_oid"), report.at("base_oid"));
  EXPECT_EQ(report.at("changed_files"), json({"SELFTEST.md"}));
  EXPECT_EQ(report.at("runtime_result").at("status"), "COMPLETED") << report.dump();
  EXPECT_EQ(report.at("runtime_result").at("summary"), "I rewrote SELFTEST.md.");

  // The model was reached through the Responses API with exactly the projected key, and the
  // key is nowhere in what the broker printed.
  EXPECT_TRUE(test::model_called_only_with_key(provider.requests, "/v1/responses", provider.key))
      << test::read_text_file(provider.requests);
  EXPECT_EQ((out + err).find(provider.key), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(temporary));
}

class RealCliEngineering : public EngineeringTest,
                           public ::testing::WithParamInterface<std::string> {};

TEST_P(RealCliEngineering, TaskSucceedsWithACommitOfExactlyTheModelsEdit) {
  // Given the broker running the real agent CLI through the provider gateway and a model whose
  // reply is a tool call that rewrites docs/BASE.md, an engineering task should go from creation
  // to SUCCEEDED with one governed commit whose diff against the base is that edit, the provider
  // key should reach only the model (set by the gateway: the CLI never held it), and the result
  // should count the model calls.
  const auto& backend = GetParam();
  const auto cli = test::install_realcli();
  const auto provider = make_provider(dir());
  const std::string edit = "rewritten by the fake model " + test::random_token(8);
  test::Daemon server(test::fake_model(provider.requests, {"--scenario", "edit", "--edit-file",
                                                           "docs/BASE.md", "--edit-content", edit,
                                                           "--reply", "I rewrote docs/BASE.md."}),
                      dir(), "fake-openai");
  const auto port = server.start();
  serve_backend(backend_config(backend, cli, port, true), executable_roots(backend, cli),
                {"CREDENTIALS_DIRECTORY=" + provider.credentials.string(), kLsanOptions});

  const std::string task_id = "task-eng-" + backend;
  create_task(engineering_task(task_id, "agent/" + task_id, backend));
  auto& worker = make_engineering_worker("eng-" + backend, backend);
  worker.options().ready_timeout = std::chrono::minutes(3);
  worker.start();
  ASSERT_TRUE(worker.wait_exit(std::chrono::seconds(30))) << worker.log();
  ASSERT_FALSE(worker.find_event("TASK_FAILED").has_value()) << worker.log() << broker_->log();

  const auto view = task(task_id);
  ASSERT_EQ(view.at("status"), "VERIFYING") << view.dump();
  const auto& result = view.at("result");
  EXPECT_EQ(result.at("status"), "SUCCEEDED") << result.dump();
  EXPECT_EQ(result.at("classification"), "ENGINEERING_CHANGE_COMMITTED");
  EXPECT_EQ(result.at("runtime_status"), "COMPLETED");
  const auto commit = branch_oid("agent/" + task_id);
  EXPECT_EQ(result.at("commit_oid"), commit);
  EXPECT_EQ(repo_git("diff --name-status " + base() + " " + commit), "M\tdocs/BASE.md");
  EXPECT_EQ(repo_git("show " + commit + ":docs/BASE.md"), edit);
  EXPECT_EQ(repo_git("rev-parse " + commit + "^"), base());
  EXPECT_GE(result.at("model_usage").at("requests"), 2) << result.dump();
  EXPECT_EQ(result.at("model_usage").at("unmetered"), 0) << result.dump();
  EXPECT_GT(result.at("model_usage").at("total"), 0) << result.dump();

  EXPECT_TRUE(test::model_called_only_with_key(provider.requests, "/v1/responses", provider.key))
      << test::read_text_file(provider.requests);
  for (const auto& text : {view.dump(), worker.log(), broker_->log()})
    EXPECT_EQ(text.find(provider.key), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(workspaces()));

  verify(task_id, "PASS");
  EXPECT_EQ(task(task_id).at("status"), "SUCCEEDED");
}

INSTANTIATE_TEST_SUITE_P(Backends, RealCliBroker, ::testing::Values("openclaw", "codex"));
INSTANTIATE_TEST_SUITE_P(Backends, RealCliEngineering, ::testing::Values("openclaw", "codex"));

}  // namespace
}  // namespace aios::engineering_test
