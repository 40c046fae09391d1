// Start-up of the real daemon: it refuses to run (exit 69, a START_FAILED log line with the
// code, no listening line) without a usable control token, database or port, and starts with
// a token of exactly the minimum length.
#include <chrono>
#include <filesystem>
#include <string>

#include "taskapi/client.hpp"

namespace aios::taskapi_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kExitUnavailable = 69;

class StartupTest : public ::testing::Test {
 protected:
  test::DaemonOptions options(const std::filesystem::path& db,
                              const std::filesystem::path& token_file,
                              const std::string& port = "0") const {
    test::DaemonOptions result;
    result.binary = test::scheduler_binary();
    result.args = {"--db",       db.string(), "--control-token-file", token_file.string(),
                   "--api-port", port};
    return result;
  }

  // Runs the daemon to its exit; returns the START_FAILED error code after checking the exit
  // code and that it never listened.
  std::string start_failure(test::DaemonOptions daemon_options) {
    test::Daemon daemon(std::move(daemon_options), dir_.path(),
                        "refused-" + std::to_string(++runs_));
    daemon.spawn();
    const auto status = daemon.wait_exit(std::chrono::seconds(10));
    if (!status) throw std::runtime_error("the daemon kept running\n" + daemon.log());
    EXPECT_TRUE(status->exited_with(kExitUnavailable)) << status->describe() << "\n"
                                                       << daemon.log();
    EXPECT_FALSE(daemon.find_event("TASK_API_LISTENING").has_value()) << daemon.log();
    last_log_ = daemon.log();
    const auto line = daemon.find_event("START_FAILED");
    if (!line) throw std::runtime_error("no START_FAILED line\n" + daemon.log());
    EXPECT_EQ(line->at("level"), "error");
    return line->at("error").get<std::string>();
  }

  test::ScopedTempDir dir_{"aios-startup"};
  std::string last_log_;
  int runs_ = 0;
};

TEST_F(StartupTest, ShortControlTokenIsInvalid) {
  // Given a 31-character control token, we should refuse to start and never log the token.
  const std::string token = test::random_token(31);
  test::write_text_file(dir_ / "token", "  " + token + "\n");
  EXPECT_EQ(start_failure(options(dir_ / "state.sqlite3", dir_ / "token")),
            "CONTROL_CREDENTIAL_INVALID");
  EXPECT_THAT(last_log_, Not(HasSubstr(token)));
}

TEST_F(StartupTest, SymlinkedControlTokenIsUnavailable) {
  // Given a symlinked control token file, we should refuse to start.
  test::write_token_file(dir_ / "real-token");
  std::filesystem::create_symlink(dir_ / "real-token", dir_ / "token");
  EXPECT_EQ(start_failure(options(dir_ / "state.sqlite3", dir_ / "token")),
            "CONTROL_CREDENTIAL_UNAVAILABLE");
}

TEST_F(StartupTest, ControlTokenOthersMayReadIsRefused) {
  // Given a control token its group may read, we should refuse to start and name the mode.
  test::write_text_file(dir_ / "token", test::random_token(48) + "\n",
                        std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                            std::filesystem::perms::group_read);
  EXPECT_EQ(start_failure(options(dir_ / "state.sqlite3", dir_ / "token")),
            "SECRET_FILE_MODE_INVALID");
}

TEST_F(StartupTest, MissingControlTokenIsUnavailable) {
  // Given no control token file (or a directory there), we should refuse to start.
  EXPECT_EQ(start_failure(options(dir_ / "state.sqlite3", dir_ / "absent")),
            "CONTROL_CREDENTIAL_UNAVAILABLE");
  std::filesystem::create_directory(dir_ / "token-dir");
  EXPECT_EQ(start_failure(options(dir_ / "state.sqlite3", dir_ / "token-dir")),
            "CONTROL_CREDENTIAL_UNAVAILABLE");
}

TEST_F(StartupTest, DatabaseInAMissingDirectoryIsUnavailable) {
  // Given a database path in a missing directory, we should refuse to start and create nothing.
  test::write_token_file(dir_ / "token");
  EXPECT_EQ(start_failure(options(dir_ / "missing" / "state.sqlite3", dir_ / "token")),
            "STORE_UNAVAILABLE");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "missing"));
}

TEST_F(StartupTest, FileThatIsNotADatabaseIsUnavailable) {
  // Given a database file that is not SQLite, we should refuse to start with STORE_UNAVAILABLE.
  test::write_token_file(dir_ / "token");
  const std::string garbage = "this is not a database, " + test::random_token(4000);
  test::write_text_file(dir_ / "state.sqlite3", garbage);
  EXPECT_EQ(start_failure(options(dir_ / "state.sqlite3", dir_ / "token")), "STORE_UNAVAILABLE")
      << last_log_;
  EXPECT_EQ(test::read_text_file(dir_ / "state.sqlite3"), garbage);
}

TEST_F(StartupTest, PortInUseFailsToBind) {
  // Given a port another scheduler listens on, we should refuse to start with HTTP_BIND_FAILED.
  test::SchedulerDaemon first;
  first.start();
  test::write_token_file(dir_ / "token");
  EXPECT_EQ(
      start_failure(options(dir_ / "state.sqlite3", dir_ / "token", std::to_string(first.port()))),
      "HTTP_BIND_FAILED");
  const auto stopped = first.stop();
  EXPECT_TRUE(stopped.exited_with(0)) << stopped.describe();
}

TEST_F(StartupTest, TokenOfExactly32CharactersStarts) {
  // Given a control token of exactly 32 characters, we should start and accept it as the owner.
  const std::string token = test::random_token(32);
  test::write_text_file(dir_ / "token", "\n" + token + "  \n");
  test::Daemon daemon(options(dir_ / "state.sqlite3", dir_ / "token"), dir_.path(), "minimal");
  const auto port = daemon.start();
  ApiClient owner(port, token);
  const auto listed = owner.get("/v1/tasks");
  EXPECT_EQ(listed.status, 200) << describe(listed);
  ApiClient prefix(port, token.substr(0, 31));
  EXPECT_EQ(prefix.get("/v1/tasks").code(), "UNAUTHORIZED");
  const auto stopped = daemon.stop();
  EXPECT_TRUE(stopped.exited_with(0)) << stopped.describe() << daemon.log();
  EXPECT_TRUE(daemon.find_event("STOPPED").has_value()) << daemon.log();
}

}  // namespace
}  // namespace aios::taskapi_test
