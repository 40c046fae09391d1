// The broker self-test with the real OpenClaw CLI: `aios-external-agent-executor --broker
// --self-test openclaw` runs `openclaw agent exec --message-file - --cwd <worktree> --model
// openai/gpt-6-luna --auth-env-only --timeout <s> --json` (the seed's command line, checked
// against the installed CLI's --help) against a fake OpenAI-compatible server on 127.0.0.1
// whose scripted reply is a tool call that writes SELFTEST.md. Node 24 and OpenClaw come from
// npm through scripts/install-realcli, cached between runs.
#include <gtest/gtest.h>

#include <sstream>

#include "aios/canonical.hpp"
#include "support/daemon.hpp"
#include "support/realcli.hpp"

namespace aios::engineering_test {
namespace {

using nlohmann::json;

TEST(RealOpenClawBroker, SelfTestSeesTheWorktreeChangedWithHeadAtTheBase) {
  const auto cli = test::install_realcli();
  const test::ScopedTempDir dir("aios-broker-realcli");
  const std::string provider_key = "sk-provider-" + test::random_token(24);
  const std::string edit = "written by the fake model " + test::random_token(8);

  test::DaemonOptions fake;
  fake.binary = "/usr/bin/python3";
  fake.args = {std::string(AIOS_SOURCE_DIR) + "/tests/executor/fake_openai_server.py",
               "--port",
               "0",
               "--log",
               (dir.path() / "requests.jsonl").string(),
               "--scenario",
               "edit",
               "--edit-file",
               "SELFTEST.md",
               "--edit-content",
               edit,
               "--reply",
               "I rewrote SELFTEST.md."};
  fake.ready_event = "FAKE_OPENAI_LISTENING";
  test::Daemon server(fake, dir.path(), "fake-openai");
  const auto port = server.start();

  const auto config = dir.path() / "config";
  const auto credentials = dir.path() / "credentials";
  const auto temporary = dir.path() / "tmp";
  for (const auto& path : {config, credentials, temporary})
    std::filesystem::create_directories(path);
  const json backend = {
      {"schema", "aios.agent-runtime-broker.backend.v1"},
      {"backend", "openclaw"},
      {"protocol", "openclaw-agent-exec"},
      {"argv",
       {(cli.node_root / "bin" / "node").string(), (cli.openclaw_root / "openclaw.mjs").string(),
        "agent", "exec", "--message-file", "-", "--cwd", "{worktree}", "--model",
        "openai/gpt-6-luna", "--auth-env-only", "--timeout", "{timeout_seconds}", "--json"}},
      {"timeout_seconds", 120},
      {"environment",
       {{"OPENAI_BASE_URL", "http://127.0.0.1:" + std::to_string(port) + "/v1"},
        {"NODE_COMPILE_CACHE", cli.compile_cache.string()}}},
      {"credential_env",
       {{"OPENAI_API_KEY",
         {{"credential", "aios-external-agent-oneapi-env"},
          {"format", "dotenv"},
          {"key", "ONEAPI_REGULAR_TOKEN"}}}}}};
  test::write_text_file(config / "agent-runtime-openclaw.conf", backend.dump(2));
  test::write_text_file(credentials / "aios-external-agent-oneapi-env",
                        "ONEAPI_REGULAR_TOKEN=" + provider_key + "\n");

  std::string out;
  std::string err;
  process::Spec spec;
  spec.argv = {(std::filesystem::path(AIOS_BINARY_DIR) / "daemons" / "aios-external-agent-executor")
                   .string(),
               "--broker",
               "--self-test",
               "openclaw",
               "--config-root",
               config.string(),
               "--executable-root",
               cli.node_root.string(),
               "--executable-root",
               cli.openclaw_root.string()};
  spec.environment = {
      "PATH=/usr/bin:/bin", "CREDENTIALS_DIRECTORY=" + credentials.string(),
      "TMPDIR=" + temporary.string(),
      "LSAN_OPTIONS=suppressions=" + std::string(AIOS_SOURCE_DIR) + "/tests/engineering/lsan.supp"};
  spec.working_directory = dir.path();
  spec.timeout = std::chrono::minutes(3);
  spec.on_stdout = [&out](std::string_view chunk) { out.append(chunk); };
  spec.on_stderr = [&err](std::string_view chunk) { err.append(chunk); };
  const auto outcome = process::run(spec);
  ASSERT_EQ(outcome.exit_code, 0) << out << err << server.log();

  const auto report = json::parse(out);
  EXPECT_EQ(report.at("backend"), "openclaw");
  EXPECT_EQ(report.at("head_oid"), report.at("base_oid"));
  EXPECT_EQ(report.at("changed_files"), json({"SELFTEST.md"}));
  EXPECT_EQ(report.at("runtime_result").at("status"), "COMPLETED") << report.dump();
  EXPECT_EQ(report.at("runtime_result").at("summary"), "I rewrote SELFTEST.md.");

  // The model was reached through the Responses API with exactly the projected key, and the
  // key is nowhere in what the broker printed.
  const auto log = test::read_text_file(dir.path() / "requests.jsonl");
  std::istringstream lines(log);
  bool authorized = false;
  for (std::string line; std::getline(lines, line);) {
    const auto entry = json::parse(line);
    if (entry.at("path") != "/v1/responses") continue;
    authorized = entry.at("headers").value("authorization-sha256", "") ==
                 sha256_hex("Bearer " + provider_key);
  }
  EXPECT_TRUE(authorized) << log;
  EXPECT_EQ((out + err).find(provider_key), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(temporary));
}

}  // namespace
}  // namespace aios::engineering_test
