// The worker's command line: the configuration its options and files assemble, before any
// daemon starts.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>

#include "aios/worker.hpp"
#include "support/code_of.hpp"
#include "support/daemon.hpp"

namespace aios::worker_test {
namespace {

class WorkerCommandLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write(token_file_, std::string(40, 't'));
    write(key_file_, std::string(48, 'k'));
  }
  static void write(const std::filesystem::path& path, const std::string& content) {
    test::write_text_file(path, content);  // owner-only, as a secret file must be
  }
  // The configuration `arguments` (a shell-free command line) name.
  WorkerConfig config_of(const std::string& arguments) {
    CLI::App app;
    const WorkerCommandLine command_line(app);
    app.parse(arguments, false);
    return command_line.config();
  }

  test::ScopedTempDir dir_{"aios-worker-cli"};
  std::filesystem::path token_file_ = dir_.path() / "agent_token";
  std::filesystem::path key_file_ = dir_.path() / "exchange_result_key";
};

TEST_F(WorkerCommandLineTest, DerivedPathsFollowTheStateRootAndListsAreTrimmed) {
  // Given a state root and no checkpoint or workspace path, we should put both under it, and
  // split the comma lists as the environment spells them.
  const auto state = dir_.path() / "state";
  const auto config = config_of("--agent-token-file " + token_file_.string() + " --state-root " +
                                state.string() + " --capabilities \" git.read, git.test,, \"" +
                                " --allowed-adapters deterministic,codex --heartbeat-ms 250");
  EXPECT_EQ(config.agent_token, std::string(40, 't'));
  EXPECT_EQ(config.agent_token_file, token_file_);
  EXPECT_EQ(config.checkpoint_db, state / "checkpoints.sqlite3");
  EXPECT_EQ(config.workspace_root, state / "workspaces");
  EXPECT_EQ(config.capabilities, (std::vector<std::string>{"git.read", "git.test"}));
  EXPECT_EQ(config.allowed_adapters, (std::set<std::string>{"codex", "deterministic"}));
  EXPECT_EQ(config.heartbeat_interval, std::chrono::milliseconds(250));
}

TEST_F(WorkerCommandLineTest, ARemoteWorkerMirrorsTheRepositoryUnderItsState) {
  // Given --repository-from-bridge, the authority repository should be the worker's own mirror
  // under its state root unless named, and the TLS files should be taken as given.
  const auto state = dir_.path() / "state";
  const auto remote =
      config_of("--agent-token-file " + token_file_.string() + " --state-root " + state.string() +
                " --repository-from-bridge --tls-ca-file /etc/aios/tls/ca.pem"
                " --tls-certificate-file /run/c/w.pem --tls-key-file /run/c/w.key");
  EXPECT_TRUE(remote.repository_from_bridge);
  EXPECT_EQ(remote.authority_git_dir, state / "authority-mirror.git");
  EXPECT_EQ(remote.tls.ca_bundle, "/etc/aios/tls/ca.pem");
  EXPECT_EQ(remote.tls.certificate, "/run/c/w.pem");
  EXPECT_EQ(remote.tls.private_key, "/run/c/w.key");
  const auto named = config_of("--agent-token-file " + token_file_.string() +
                               " --repository-from-bridge --authority-git-dir /srv/mirror.git");
  EXPECT_EQ(named.authority_git_dir, "/srv/mirror.git");
  const auto local = config_of("--agent-token-file " + token_file_.string());
  EXPECT_FALSE(local.repository_from_bridge);
  EXPECT_EQ(local.authority_git_dir, "/data/aios-gitops/repo.git");
  EXPECT_TRUE(local.tls.empty());
}

TEST_F(WorkerCommandLineTest, ExplicitPathsWinOverTheStateRoot) {
  const auto config = config_of("--agent-token-file " + token_file_.string() +
                                " --checkpoint-db /var/tmp/c.sqlite3 --workspace-root /var/tmp/w");
  EXPECT_EQ(config.checkpoint_db, "/var/tmp/c.sqlite3");
  EXPECT_EQ(config.workspace_root, "/var/tmp/w");
}

TEST_F(WorkerCommandLineTest, AMissingTokenFileIsRefusedWithItsCode) {
  EXPECT_EQ(
      test::code_of([&] { config_of("--agent-token-file " + (dir_.path() / "none").string()); }),
      "WORKER_AGENT_TOKEN_UNAVAILABLE");
}

TEST_F(WorkerCommandLineTest, AGivenExchangeKeyFileMustHoldAKey) {
  // Given --exchange-key-file, the key is required: a short one is refused, not skipped.
  write(key_file_, "short");
  EXPECT_EQ(test::code_of([&] {
              config_of("--agent-token-file " + token_file_.string() + " --exchange-key-file " +
                        key_file_.string());
            }),
            "EXTERNAL_AGENT_EXCHANGE_KEY_INVALID");
}

}  // namespace
}  // namespace aios::worker_test
