// aios-external-agent-executor's command line: the mode and the options each mode runs with.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>

#include "aios/executor.hpp"

namespace aios::executor_test {
namespace {

struct Parsed {
  CLI::App app;
  executor::CommandLine command_line{app, system_environment()};
  explicit Parsed(const std::string& arguments) { app.parse(arguments, false); }
};

TEST(ExecutorCommandLine, TheModeFollowsTheOptionsGiven) {
  EXPECT_EQ(Parsed("").command_line.mode(), executor::CommandLine::Mode::serve);
  EXPECT_EQ(Parsed("--request a.json --result b.json").command_line.mode(),
            executor::CommandLine::Mode::one_request);
  EXPECT_EQ(Parsed("--broker --self-test codex").command_line.mode(),
            executor::CommandLine::Mode::self_test);
}

TEST(ExecutorCommandLine, TheBrokerHasItsOwnExchangeUnlessRootIsGiven) {
  EXPECT_EQ(Parsed("").command_line.root(), executor::kDefaultExchangeRoot);
  EXPECT_EQ(Parsed("--broker").command_line.root(), broker::kDefaultExchangeRoot);
  EXPECT_EQ(Parsed("--broker --root /srv/x").command_line.root(), "/srv/x");
}

TEST(ExecutorCommandLine, ExecutableRootsReplaceTheBuiltInListInBothModes) {
  const Parsed parsed(
      "--profile-root /srv/p --executable-root /opt/a --executable-root /opt/b "
      "--config-root /srv/c --worktree-root /srv/w");
  const std::vector<std::filesystem::path> roots{"/opt/a", "/opt/b"};
  EXPECT_EQ(parsed.command_line.execute_options().profile_root, "/srv/p");
  EXPECT_EQ(parsed.command_line.execute_options().executable_roots, roots);
  const auto broker = parsed.command_line.broker_options();
  EXPECT_EQ(broker.executable_roots, roots);
  EXPECT_EQ(broker.config_root, "/srv/c");
  EXPECT_EQ(broker.worktree_root, "/srv/w");
}

TEST(ExecutorCommandLine, ARequestNeedsAResult) {
  CLI::App app;
  const executor::CommandLine command_line(app, system_environment());
  EXPECT_THROW(app.parse("--request a.json", false), CLI::RequiresError);
}

}  // namespace
}  // namespace aios::executor_test
