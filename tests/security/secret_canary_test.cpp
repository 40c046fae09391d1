// The secret canary: a provider key in the executor's credential file, the owner's control token
// and the agent's token are each a recognisable canary. After a whole Hermes task (scheduler,
// worker, executor, agent child) each canary is found where it must be and nowhere else: not in
// any log, database (task rows, events, results, checkpoints), exchange or state file, nor any
// process's argv, nor an error answer. The agent child is the one place the provider key may
// be, and it echoes the key on stdout and stderr, so the executor's redaction is tested too.
#include <dirent.h>

#include <set>
#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "worker/worker_fixture.hpp"

namespace aios::security_test {
namespace {

using taskapi_test::ApiClient;
using ::testing::HasSubstr;
using ::testing::Not;
using worker_test::Json;

// The content of a /proc file that holds NUL-separated items (cmdline, environ); "" when the
// process is gone or not readable.
std::string read_proc(const std::string& pid, const char* file) {
  return test::read_proc_file("/proc/" + pid + "/" + file);
}

std::vector<std::string> all_pids() {
  std::vector<std::string> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* entry = ::readdir(proc)) {
    const std::string name = entry->d_name;
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
      out.push_back(name);
    }
  }
  ::closedir(proc);
  return out;
}

class SecretCanaryTest : public worker_test::WorkerTest {
 protected:
  // The executor with a provider credential projected as OPENAI_API_KEY, and an agent that
  // reports the key's SHA-256 (never the key), then echoes the key to stdout and stderr.
  void start_canary_executor() {
    const auto credentials = dir() / "credentials";
    std::filesystem::create_directories(credentials);
    test::write_text_file(credentials / "provider-env",
                          "# provider\nexport ONEAPI_REGULAR_TOKEN=" + provider_key_ + "\n");
    std::filesystem::create_directories(dir() / "profiles");
    std::filesystem::create_directories(dir() / "executor-tmp");
    const auto script = dir() / "agent.py";
    test::write_text_file(script,
                          witness_.python() +
                              "import hashlib, json, os, sys, time\n"
                              "request = json.load(sys.stdin)\n"
                              "key = os.environ.get('OPENAI_API_KEY', '')\n"
                              "witness(hashlib.sha256(key.encode()).hexdigest())\n"
                              "time.sleep(1.5)\n"
                              "sys.stderr.write('leaking ' + key + '\\n')\n"
                              "print(json.dumps({'answer': 'echo ' + key}))\n",
                          kReadableByAll);
    const Json profile = {{"schema", "aios.external-agent-runtime.profile.v1"},
                          {"runtime", "hermes"},
                          {"argv", {"/usr/bin/python3", script.string()}},
                          {"credential_env",
                           {{"OPENAI_API_KEY",
                             {{"credential", "provider-env"},
                              {"format", "dotenv"},
                              {"key", "ONEAPI_REGULAR_TOKEN"}}}}},
                          {"input_mode", "stdin_json"},
                          {"output_mode", "stdout_json"},
                          {"timeout_seconds", 60},
                          {"max_output_bytes", 65536},
                          {"network", {witness_.destination()}}};
    test::write_text_file(dir() / "profiles" / "hermes.json", profile.dump());
    std::filesystem::create_directories(exchange());
    test::DaemonOptions options = test::executor_options(exchange(), dir() / "profiles", dir());
    options.env = {"TMPDIR=" + (dir() / "executor-tmp").string(),
                   "CREDENTIALS_DIRECTORY=" + credentials.string()};
    executor_ = std::make_unique<test::Daemon>(options, dir(), "executor");
    executor_->start();
  }

  // Every canary found in one /proc scan, outside the agent child; and whether the agent child
  // was seen, with the provider key in its environment and no control-plane token.
  void scan_processes() {
    const std::set<pid_t> daemons = daemon_pids();
    for (const auto& pid : all_pids()) {
      const std::string cmdline = read_proc(pid, "cmdline");
      for (const auto& [name, canary] : canaries()) {
        if (cmdline.find(canary) != std::string::npos) {
          leaks_.insert(name + " in the argv of pid " + pid);
        }
      }
      const bool is_agent = cmdline.find("agent.py") != std::string::npos;
      if (!is_agent && !daemons.contains(std::stoi(pid))) continue;
      const std::string environ = read_proc(pid, "environ");
      if (environ.empty()) continue;
      for (const auto& [name, canary] : canaries()) {
        if (environ.find(canary) == std::string::npos) continue;
        if (is_agent && name == "provider key") continue;
        leaks_.insert(name + " in the environment of pid " + pid);
      }
      if (is_agent && environ.find("OPENAI_API_KEY=" + provider_key_) != std::string::npos) {
        agent_seen_with_key_ = true;
      }
    }
  }

  std::set<pid_t> daemon_pids() {
    std::set<pid_t> out{scheduler().process().pid()};
    if (executor_ && executor_->running()) out.insert(executor_->pid());
    for (const auto& worker : workers_) {
      if (worker->running()) out.insert(worker->pid());
    }
    return out;
  }

  std::vector<std::pair<std::string, std::string>> canaries() const {
    return {{"provider key", provider_key_},
            {"control token", control_token_},
            {"agent token", agent_token_}};
  }

  // Every file under the test's directory but the three credential files themselves.
  void scan_files() {
    const std::set<std::filesystem::path> holders = {
        dir() / "credentials" / "provider-env", dir() / "control_token", dir() / "canary.token"};
    std::size_t scanned = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir())) {
      if (!entry.is_regular_file() || holders.contains(entry.path())) continue;
      ++scanned;
      const std::string content = test::read_text_file(entry.path());
      for (const auto& [name, canary] : canaries()) {
        if (content.find(canary) != std::string::npos) {
          leaks_.insert(name + " in " + entry.path().string());
        }
      }
    }
    EXPECT_GT(scanned, 10u);  // logs, databases, WAL, exchange, checkpoint, state
  }

  const std::string provider_key_ = "sk-canary-provider-" + test::random_token(32);
  std::string control_token_;
  std::string agent_token_;
  std::set<std::string> leaks_;
  bool agent_seen_with_key_ = false;
};

TEST_F(SecretCanaryTest, CanariesAppearOnlyInTheAgentChildsEnvironment) {
  // Given canary secrets in every credential, a whole Hermes task should succeed while no
  // canary reaches a log, a database, the exchange, a state file, an argv, another process's
  // environment or an error answer; the agent child alone gets the provider key.
  control_token_ = scheduler().control_token();
  start_canary_executor();
  create_task({{"task_id", "task-canary"},
               {"goal", "Summarize the layout"},
               {"required_capabilities", {"agent.runtime.hermes"}},
               {"binding", binding("task-canary", "agent/canary")},
               {"execution", {{"action", "agent_runtime"}, {"adapter", "hermes"}}}});
  auto& worker = make_worker("canary", {"agent.runtime.hermes"}, "hermes", false);
  agent_token_ = test::read_text_file(dir() / "canary.token");
  ASSERT_FALSE(agent_token_.empty());
  worker.start();
  ASSERT_TRUE(taskapi_test::eventually(
      [&] {
        scan_processes();
        return task("task-canary").at("status") == "VERIFYING";
      },
      std::chrono::seconds(60)))
      << worker.log() << executor_->log();
  EXPECT_TRUE(agent_seen_with_key_) << "the scan never saw the agent child with its key";

  // The agent got exactly the projected key (it reported the key's SHA-256).
  EXPECT_EQ(witness_.records(), std::vector<std::string>{sha256_hex(provider_key_)});

  // The result carries the agent's answer with the key redacted.
  const Json view = task("task-canary");
  const auto& result = view.at("result");
  EXPECT_EQ(result.at("classification"), "EXTERNAL_AGENT_RUNTIME_SUCCEEDED") << result.dump();
  EXPECT_EQ(result.at("credential_material_exposed"), false);
  EXPECT_THAT(result.at("output_json").at("answer").get<std::string>(), HasSubstr("[REDACTED]"));

  // Error answers never echo a presented secret.
  for (const auto& [name, canary] : canaries()) {
    ApiClient wrong(port(), canary + "x");
    const auto reply = wrong.get("/v1/tasks/task-canary");
    EXPECT_EQ(reply.code(), "UNAUTHORIZED") << name;
    EXPECT_THAT(reply.raw, Not(HasSubstr(canary))) << name;
    ApiClient bridge_caller(scheduler().bridge_port(), canary + "x");
    EXPECT_THAT(bridge_caller.post("/v2/plans", {{"task_id", canary}}).raw, Not(HasSubstr(canary)))
        << name;
  }
  for (const auto& api_path : {"/v1/tasks/task-canary", "/v1/tasks/task-canary/events",
                               "/v1/tasks?status=VERIFYING", "/v1/fleet", "/metrics"}) {
    const auto reply = owner().get(api_path);
    for (const auto& [name, canary] : canaries()) {
      EXPECT_THAT(reply.raw, Not(HasSubstr(canary))) << name << " in " << api_path;
    }
  }

  verify("task-canary", "PASS");
  EXPECT_TRUE(worker.stop().exited_with(0)) << worker.log();
  EXPECT_TRUE(executor_->stop().exited_with(0)) << executor_->log();
  scheduler().stop();
  scan_files();
  EXPECT_TRUE(leaks_.empty()) << [&] {
    std::string all;
    for (const auto& leak : leaks_) all += leak + "\n";
    return all;
  }();
}

}  // namespace
}  // namespace aios::security_test
