// Each of the four executables answers --help and --version, and says plainly when the service
// it will run is not part of this build.
#include <gtest/gtest.h>

#include <string>

#include "aios/version.hpp"
#include "support/run_command.hpp"

namespace {

using aios::test::run_command;

struct Daemon {
  const char* name;
  const char* help_mentions;  // an option or variable its --help must document
  const char* plain_start;    // what a start without configuration must say
};

class DaemonCli : public ::testing::TestWithParam<Daemon> {
 protected:
  std::string binary() const {
    return std::string(AIOS_BINARY_DIR) + "/daemons/" + GetParam().name;
  }
};

// Given --version, the daemon should print its name and the project version and exit 0.
TEST_P(DaemonCli, VersionPrintsNameAndVersion) {
  const auto result = run_command(binary() + " --version");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output, std::string(GetParam().name) + " " + aios::kVersion + "\n");
}

// Given --help, the daemon should explain itself, its options and their variables, and exit 0.
TEST_P(DaemonCli, HelpDocumentsOptions) {
  const auto result = run_command(binary() + " --help");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.output.find("AIOS"), std::string::npos);
  EXPECT_NE(result.output.find(GetParam().help_mentions), std::string::npos) << result.output;
}

// Given an unknown flag, the daemon should refuse with a usage error, not start.
TEST_P(DaemonCli, UnknownFlagIsRefused) {
  const auto result = run_command(binary() + " --no-such-flag");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.output.find("no-such-flag"), std::string::npos);
}

// Given a plain start without credentials, the daemon should say what is missing and exit 69.
TEST_P(DaemonCli, PlainStartSaysWhatIsMissing) {
  const auto result = run_command("env -u CREDENTIALS_DIRECTORY " + binary());
  EXPECT_EQ(result.exit_code, 69);
  EXPECT_NE(result.output.find(GetParam().plain_start), std::string::npos) << result.output;
}

INSTANTIATE_TEST_SUITE_P(
    AllDaemons, DaemonCli,
    ::testing::Values(
        Daemon{"aios-task-scheduler", "AIOS_AGENT_TASK_DB", "CONTROL_CREDENTIAL_UNAVAILABLE"},
        Daemon{"aios-agent-task-execution-rebind",
               "AIOS_AGENT_TASK_EXECUTION_REBIND_AUTHORIZATION_ID", "AUTHORIZATION_ID_MISSING"},
        Daemon{"aios-external-agent-executor", "--executable-root",
               "EXTERNAL_AGENT_EXCHANGE_KEY_INVALID"},
        Daemon{"aios-online-agent-worker", "AIOS_WORKER_ALLOWED_ADAPTERS",
               "WORKER_AGENT_TOKEN_UNAVAILABLE"}),
    [](const ::testing::TestParamInfo<Daemon>& param_info) {
      std::string name = param_info.param.name;
      for (auto& c : name) c = (c == '-') ? '_' : c;
      return name;
    });

}  // namespace
