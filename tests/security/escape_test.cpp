// The escape suite, executor side: a hostile agent program (escape_agent.py) run by the real
// aios-external-agent-executor in serve mode tries every escape of docs/security.md's threat
// model. Each check passes only when the escape failed; the host side is checked too (no forged
// file appeared, nothing of the run is still running, the executor still serves).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "aios/canonical.hpp"
#include "executor/fixture.hpp"
#include "support/witness.hpp"

namespace aios::executor::test {
namespace {

namespace fs = std::filesystem;
using aios::test::Daemon;
using aios::test::DaemonOptions;
using aios::test::processes_with;

class AgentEscape : public ExecutorTest {
 protected:
  AgentEscape() {
    fs::create_directories(root() / "requests");
    fs::create_directories(root() / "results");
    fs::create_directories(credentials());
    fs::create_directories(temporary() / "aios-hermes-other-run");
    write_text_file(credentials() / "aios-external-agent-oneapi-env",
                    "ONEAPI_REGULAR_TOKEN=sk-projected-0123456789\n"
                    "ONEAPI_PREMIUM_TOKEN=sk-other-tier-9876543210\n");
    write_text_file(temporary() / "aios-hermes-other-run" / "input.json", "other run's input");
  }

  fs::path root() const { return dir_ / "exchange"; }
  fs::path credentials() const { return dir_ / "credentials"; }

  // The escape agent as the hermes runtime, knowing every path and port worth attacking.
  void write_escape_profile(const json& known, const json& limits) {
    json profile = python_profile(
        "hermes", fs::path(AIOS_SOURCE_DIR) / "tests" / "security" / "escape_agent.py");
    profile["argv"].push_back(known.dump());
    profile["input_mode"] = "stdin_text";
    profile["credential_env"] = {{"OPENAI_API_KEY",
                                  {{"credential", "aios-external-agent-oneapi-env"},
                                   {"format", "dotenv"},
                                   {"key", "ONEAPI_REGULAR_TOKEN"}}}};
    profile["limits"] = limits;
    write_profile("hermes", profile);
  }

  Daemon& start(const std::string& marker) {
    DaemonOptions options = aios::test::executor_options(root(), profiles(), dir_.path());
    options.env = {"TMPDIR=" + temporary().string(),
                   "CREDENTIALS_DIRECTORY=" + credentials().string(),
                   "AIOS_ESCAPE_MARKER=" + marker};
    daemon_ = std::make_unique<Daemon>(options, dir_.path(), "executor");
    daemon_->start();
    return *daemon_;
  }

  json run_request(const std::string& id) {
    const auto name = "external-hermes-" + id + ".json";
    const auto staging = root() / "requests" / ("." + name + ".tmp");
    write_text_file(staging, canonical_json(request_value("hermes", default_payload(),
                                                          "external-hermes-" + id)));
    fs::rename(staging, root() / "requests" / name);
    const auto result = root() / "results" / name;
    const auto failure = root() / "failed" / name;
    for (int i = 0; i < 6000 && !fs::exists(result) && !fs::exists(failure); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (fs::exists(failure)) return json::parse(read_text_file(failure));
    if (!fs::exists(result)) return nullptr;
    return json::parse(read_text_file(result));
  }

  std::unique_ptr<Daemon> daemon_;
};

// Given a hostile agent that knows every path and port of its executor, none of its escapes
// should work: no credential file, no exchange read or write, no forged result, no queue
// injection, no other run's files, no profile root, no host loopback or other address, no
// foreign /proc, no second secret in its environment, no syscall of the kernel's larger surfaces
// (tests/process/sandbox_test.cpp lists them), nothing outliving the run, a bounded fork
// bomb and disk fill; and the executor should go on serving.
TEST_F(AgentEscape, HostileAgentStaysInItsSandbox) {
  // A listener on the host's loopback standing in for the Task API and the Bridge.
  const aios::test::Witness control_plane;
  const std::string marker = "aios-escape-" + std::to_string(::getpid());
  const std::string other = "external-hermes-00000000000000ff.json";
  const json known = {
      {"marker", marker},
      {"secrets",
       {(credentials() / "aios-external-agent-oneapi-env").string(),
        (temporary() / "aios-hermes-other-run" / "input.json").string()}},
      {"listings", {root().string(), (root() / "requests").string(), credentials().string()}},
      {"writes",
       {(root() / "results" / other).string(), (root() / "requests" / "injected.json").string(),
        (root() / "started" / other).string(), (profiles() / "codex.json").string(),
        (dir_ / "executor-home-file").string()}},
      {"forged", canonical_json(json{{"schema", kResultSchema}, {"request_id", "forged"}})},
      {"connects",
       json::array({"127.0.0.1:" + std::to_string(control_plane.port()),
                    "127.0.0.2:" + std::to_string(control_plane.port()), "10.255.255.1:80"})},
      {"survive", true},
      {"kernel", true},
      {"fork_bomb", true},
      {"fill", "fill.bin"},
      {"fill_bytes", 64 << 20}};
  write_escape_profile(known, {{"processes", 64}, {"file_size_mb", 8}, {"tmp_mb", 8}});
  start(marker);

  const json result = run_request("0000000000000001");
  ASSERT_TRUE(result.is_object()) << daemon_->log();
  ASSERT_TRUE(result.contains("output_json")) << result.dump() << daemon_->log();
  const json escapes = result["output_json"]["escapes"];
  ASSERT_FALSE(escapes.empty());
  for (const auto& [name, outcome] : escapes.items()) {
    // A write may land in the sandbox's own /tmp (the test's directories lie below /tmp), and
    // "survive" may daemonise inside: the host checks below decide those. "forked" is a count.
    if (name.rfind("write:", 0) == 0 || name == "survive" || !outcome.is_string()) continue;
    EXPECT_EQ(outcome.get<std::string>().rfind("refused:", 0), 0U) << name << " " << outcome;
  }
  EXPECT_LT(result["output_json"]["escapes"].value("forked", 0), 64);

  // The host side: nothing forged or injected, nothing of the run still running, no connection
  // reached the control plane, the credential never in the result.
  for (const auto& path : known["writes"]) {
    EXPECT_FALSE(fs::exists(path.get<std::string>())) << path;
  }
  for (int i = 0; i < 100 && processes_with(marker + "-survivor") > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(processes_with(marker + "-survivor"), 0);
  EXPECT_EQ(control_plane.size(), 0U);
  EXPECT_EQ(result.dump().find("sk-other-tier"), std::string::npos);

  // Still serving: the next request runs to its result.
  const json next = run_request("0000000000000002");
  ASSERT_TRUE(next.is_object()) << daemon_->log();
  EXPECT_TRUE(next.contains("output_json")) << next.dump();
  EXPECT_TRUE(daemon_->stop().exited_with(0));
}

// Given an agent that holds 4 x 100 MiB in four processes under memory_mb 256, and one that
// writes 12 files of 16 MiB under disk_mb 64 (each file within file_size_mb), each run should
// fail with its bound's code while the agent still runs, nothing of it should keep running,
// and the executor should go on serving.
TEST_F(AgentEscape, MemoryAndDiskAreBoundedOverTheWholeRun) {
  const std::string marker = "aios-escape-bounds-" + std::to_string(::getpid());
  const json limits = {
      {"memory_mb", 256}, {"processes", 64}, {"file_size_mb", 128}, {"disk_mb", 64}};
  write_escape_profile({{"marker", marker}, {"hog", {{"processes", 4}, {"mib", 100}}}}, limits);
  start(marker);
  const json hog = run_request("0000000000000011");
  ASSERT_TRUE(hog.is_object()) << daemon_->log();
  EXPECT_EQ(hog.value("error", "").rfind("EXTERNAL_AGENT_MEMORY_LIMIT", 0), 0U) << hog.dump();
  ASSERT_TRUE(daemon_->stop().exited_with(0));

  write_escape_profile({{"marker", marker},
                        {"fill", "fill.bin"},
                        {"fill_bytes", 192 << 20},
                        {"fill_file_bytes", 16 << 20},
                        {"fill_hold", 30}},
                       limits);
  start(marker);
  const json fill = run_request("0000000000000012");
  ASSERT_TRUE(fill.is_object()) << daemon_->log();
  EXPECT_EQ(fill.value("error", "").rfind("EXTERNAL_AGENT_DISK_LIMIT", 0), 0U) << fill.dump();
  EXPECT_EQ(processes_with(marker), 0);
  EXPECT_TRUE(daemon_->stop().exited_with(0));
}

}  // namespace
}  // namespace aios::executor::test
