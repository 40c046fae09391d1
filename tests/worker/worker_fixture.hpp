#pragma once
// End-to-end set-up for the worker: the real scheduler (Task API + Bridge over a real bare
// authority repository), the real external agent executor serving an exchange directory with
// a Python "agent" profile, and the real worker binary started with the seed's options.

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bridge/bridge_fixture.hpp"
#include "support/witness.hpp"

namespace aios::worker_test {

using bridge_test::Json;
using bridge_test::Reply;
using bridge_test::require;

using test::daemon_binary;

// The capabilities of a worker that may write through the governed path.
inline const std::vector<std::string> kWriter = {"git.read", "git.test", "governed.write.branch",
                                                 "governed.write.file"};

class WorkerTest : public bridge_test::BridgeTest {
 protected:
  test::SchedulerConfig config() const override {
    test::SchedulerConfig result;
    result.extra_args = {"--verification-executables",
                         "/usr/bin/true,/usr/bin/false,/usr/bin/test"};
    return result;
  }

  std::filesystem::path dir() { return scheduler().dir().path(); }
  std::filesystem::path exchange() { return dir() / "exchange"; }
  // The "agent" the executor runs: reports each invocation to the witness (its one network
  // destination), calls its model twice when a provider gateway serves it, waits
  // `sleep_seconds`, answers. `profile_extra` goes into its profile (a provider).
  void start_executor(const std::string& runtime, double sleep_seconds = 0,
                      const std::vector<std::string>& extra_env = {},
                      const Json& profile_extra = Json::object()) {
    std::filesystem::create_directories(dir() / "profiles");
    std::filesystem::create_directories(dir() / "executor-tmp");
    const auto script = dir() / "agent.py";
    test::write_text_file(script,
                          witness_.python() +
                              "import json, os, sys, time, urllib.request\n"
                              "request = json.load(sys.stdin)\n"
                              "witness('run')\n"
                              "for _ in range(2 if 'OPENAI_BASE_URL' in os.environ else 0):\n"
                              "    urllib.request.urlopen(urllib.request.Request(\n"
                              "        os.environ['OPENAI_BASE_URL'] + '/chat/completions',\n"
                              "        data=b'{\"model\": \"m1\"}', method='POST', headers={\n"
                              "        'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY'],\n"
                              "        'Content-Type': 'application/json'}), timeout=20).read()\n"
                              "time.sleep(" +
                              std::to_string(sleep_seconds) +
                              ")\n"
                              "print(json.dumps({'answer': 'done: ' + request['goal']}))\n",
                          kReadableByAll);
    Json profile = {{"schema", "aios.external-agent-runtime.profile.v1"},
                    {"runtime", runtime},
                    {"argv", {"/usr/bin/python3", script.string()}},
                    {"input_mode", "stdin_json"},
                    {"output_mode", "stdout_json"},
                    {"timeout_seconds", 60},
                    {"max_output_bytes", 65536},
                    {"network", {witness_.destination()}}};
    profile.update(profile_extra);
    test::write_text_file(dir() / "profiles" / (runtime + ".json"), profile.dump());
    std::filesystem::create_directories(exchange());
    test::DaemonOptions options = test::executor_options(exchange(), dir() / "profiles", dir());
    options.env = {"TMPDIR=" + (dir() / "executor-tmp").string()};
    options.env.insert(options.env.end(), extra_env.begin(), extra_env.end());
    executor_ = std::make_unique<test::Daemon>(options, dir(), "executor");
    executor_->start();
  }

  // A worker process for a new agent granted `capabilities`, running `adapters`, with `extra`
  // arguments.
  test::Daemon& make_worker(const std::string& name, const std::vector<std::string>& capabilities,
                            const std::string& adapters, bool once,
                            const std::vector<std::string>& extra = {}) {
    Json granted = capabilities;
    const auto token = create_agent("agent-" + name, granted);
    const auto token_file = dir() / (name + ".token");
    test::write_text_file(token_file, token);
    std::string caps;
    for (const auto& capability : capabilities) caps += (caps.empty() ? "" : ",") + capability;
    test::DaemonOptions options;
    options.binary = daemon_binary("aios-online-agent-worker");
    options.args = {
        "--api-url",           "http://127.0.0.1:" + std::to_string(port()),
        "--bridge-url",        "http://127.0.0.1:" + std::to_string(scheduler().bridge_port()),
        "--agent-token-file",  token_file.string(),
        "--agent-id",          name,
        "--capabilities",      caps,
        "--authority-git-dir", scheduler().authority_git_dir().string(),
        "--executor-root",     exchange().string(),
        "--exchange-key-file", test::exchange_key_file(dir()).string(),
        "--state-root",        (dir() / ("state-" + name)).string(),
        "--heartbeat-ms",      "200"};
    if (!adapters.empty()) {
      options.args.push_back("--allowed-adapters");
      options.args.push_back(adapters);
    }
    if (once) options.args.push_back("--once");
    options.args.insert(options.args.end(), extra.begin(), extra.end());
    options.ready_event = once ? "WORKER_ONCE_DONE" : "WORKER_READY";
    options.port_field.clear();
    options.ready_timeout = std::chrono::seconds(60);
    workers_.push_back(std::make_unique<test::Daemon>(options, dir(), "worker-" + name));
    return *workers_.back();
  }

  // The JSON log line `event` of `daemon`'s current run (throws when there is none).
  static Json event(test::Daemon& daemon, std::string_view name) {
    const auto line = daemon.find_event(name);
    if (!line) throw std::runtime_error("no " + std::string(name) + " in\n" + daemon.log());
    return *line;
  }

  std::size_t agent_runs() const { return witness_.size(); }

  // Scripts the agent's sandbox (run as nobody, since the tests run as root) must read.
  static constexpr auto kReadableByAll = std::filesystem::perms::owner_read |
                                         std::filesystem::perms::owner_write |
                                         std::filesystem::perms::others_read;
  test::Witness witness_;
  std::unique_ptr<test::Daemon> executor_;
  std::vector<std::unique_ptr<test::Daemon>> workers_;
};

}  // namespace aios::worker_test
