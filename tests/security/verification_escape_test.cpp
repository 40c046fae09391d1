// The escape suite, worker side: a deterministic plan whose verification command runs the
// hostile program (tests/security/escape_agent.py, written into the worktree by the change set)
// through the real worker, once in the sandbox the worker builds and once in the sandbox service
// (the real binary in --serve-verification mode, one instance per connection as systemd starts
// it). It knows the worker's token file, checkpoint database, authority repository, exchange,
// the sandbox service's socket and the control-plane ports; each check passes only when the
// escape failed, on both sides (its own report, and the host afterwards).
#include <unistd.h>

#include "support/socket_activator.hpp"
#include "worker/worker_fixture.hpp"

namespace aios::worker_test {
namespace {

namespace fs = std::filesystem;

// The scheduler lets plans start python3, as the shipped allowlist does. The parameter: whether
// the worker hands its verification commands to the sandbox service.
class VerificationEscape : public WorkerTest, public ::testing::WithParamInterface<bool> {
 protected:
  test::SchedulerConfig config() const override {
    auto result = WorkerTest::config();
    result.extra_args = {"--verification-executables", "/usr/bin/true,/usr/bin/python3"};
    return result;
  }
};

const std::vector<std::string> kWriter = {"git.read", "git.test", "governed.write.branch",
                                          "governed.write.file"};

// The JSON report escape_agent.py printed, from a verification command's bounded output.
Json report_in(const std::string& output) {
  const auto start = output.rfind("{\"escapes\"");
  if (start == std::string::npos) return nullptr;
  return Json::parse(output.substr(start, output.find('\n', start) - start), nullptr, false);
}

// Given a verification command that tries to read the agent token and the checkpoint
// database, list the authority repository and the exchange, write into them, reach the Task API
// and the Bridge, find a token in its environment and leave a process behind, none of it should
// work, and the task should still go through as verified.
TEST_P(VerificationEscape, HostileVerificationCommandStaysInItsSandbox) {
  const std::string marker = "aios-verification-escape-" + std::to_string(::getpid());
  const auto state = dir() / "state-escape";
  const auto authority = scheduler().authority_git_dir();
  fs::create_directories(exchange() / "results");
  const auto socket = dir() / "verification" / "sandbox.sock";
  fs::create_directories(socket.parent_path());
  std::unique_ptr<test::SocketActivator> service;
  if (GetParam()) {
    service = std::make_unique<test::SocketActivator>(
        socket,
        std::vector<std::string>{daemon_binary("aios-online-agent-worker").string(),
                                 "--serve-verification"},
        dir() / "sandbox-service.log");
  }
  const Json known = {
      {"marker", marker},
      {"secrets",
       {(dir() / "escape.token").string(), (state / "checkpoints.sqlite3").string(),
        (authority / "HEAD").string()}},
      {"listings", {authority.string(), exchange().string()}},
      {"writes",
       {(authority / "refs" / "heads" / "escaped").string(),
        (exchange() / "results" / "forged.json").string(), (state / "escaped").string()}},
      {"connects", Json::array({"127.0.0.1:" + std::to_string(port()),
                                "127.0.0.1:" + std::to_string(scheduler().bridge_port())})},
      {"unix_connects", {socket.string()}},
      {"survive", true},
      {"kernel", true}};
  auto body = deterministic_task(
      binding("task-escape", "agent/escape"),
      {write_file("escape.py", test::read_text_file(fs::path(AIOS_SOURCE_DIR) / "tests" /
                                                    "security" / "escape_agent.py"))});
  body["execution"]["verification"] = {{{"label", "hostile"},
                                        {"argv", {"/usr/bin/python3", "escape.py", known.dump()}},
                                        {"cwd", "."},
                                        {"timeout_seconds", 60}}};
  create_task(body);
  auto& worker = make_worker("escape", kWriter, "deterministic", true);
  if (service) {
    worker.options().args.insert(worker.options().args.end(),
                                 {"--verification-socket", socket.string()});
  }
  worker.start();
  ASSERT_TRUE(worker.wait_exit(std::chrono::seconds(60))) << worker.log();

  const auto view = task("task-escape");
  ASSERT_EQ(view.at("status"), "VERIFYING") << view.dump() << worker.log();
  const auto& test = view.at("result").at("tests").at(0);
  ASSERT_EQ(test.at("passed"), true) << test.dump();
  const Json report = report_in(test.at("output").get<std::string>());
  ASSERT_TRUE(report.is_object()) << test.dump();
  const auto& escapes = report.at("escapes");
  ASSERT_FALSE(escapes.empty());
  for (const auto& [name, outcome] : escapes.items()) {
    // Writes may land in the sandbox's own /tmp (the test's directories lie below /tmp) and
    // "survive" may daemonise inside: the host checks below decide those.
    if (name.rfind("write:", 0) == 0 || name == "survive" || !outcome.is_string()) continue;
    EXPECT_EQ(outcome.get<std::string>().rfind("refused:", 0), 0U) << name << " " << outcome;
  }
  for (const auto& path : known.at("writes")) {
    EXPECT_FALSE(fs::exists(path.get<std::string>())) << path;
  }
  for (int i = 0; i < 100 && test::processes_with(marker + "-survivor") > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(test::processes_with(marker + "-survivor"), 0);
  // The plan's own change is what was committed; nothing the command tried reached the repo.
  EXPECT_EQ(branch_oid("agent/escaped"), "");
  // The command ran where it was meant to, and asked the service for nothing itself.
  if (service) {
    EXPECT_EQ(service->instances(), 1) << test::read_text_file(dir() / "sandbox-service.log");
  }
}

INSTANTIATE_TEST_SUITE_P(Sandboxes, VerificationEscape, ::testing::Values(false, true),
                         [](const auto& param) { return param.param ? "Service" : "Worker"; });

}  // namespace
}  // namespace aios::worker_test
