#pragma once
// End-to-end set-up for engineering tasks: the worker fixture's real scheduler and bare
// authority repository, the real aios-external-agent-executor in --broker mode with a scripted
// Python backend behind it, and a real worker running the engineering adapter.

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "worker/worker_fixture.hpp"

namespace aios::engineering_test {

using worker_test::Json;
using worker_test::WorkerTest;

inline const std::vector<std::string> kEngineeringWorker = {
    "git.read", "git.test", "governed.write.branch", "governed.write.file"};

// What the scripted backend does, chosen per test by AIOS_FAKE_SCENARIO in its (non-secret)
// backend configuration. Every scenario but "malformed" and "timeout" first makes the edit.
inline constexpr std::string_view kFakeBackend = R"PY(
import json, os, subprocess, sys, time
request = json.load(sys.stdin)
scenario = os.environ["AIOS_FAKE_SCENARIO"]
witness(json.dumps({"cwd": os.getcwd(), "request": request, "environ": dict(os.environ)}))

def git(*args):
    subprocess.run(["/usr/bin/git", "-c", "user.name=backend", "-c",
                    "user.email=backend@example.invalid", *args], check=True,
                   capture_output=True)

def write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as out:
        out.write(text)

if scenario == "malformed":
    print("I changed some files, trust me")
    sys.exit(0)
if scenario == "timeout":
    time.sleep(60)
write("docs/BASE.md", "edited by the backend\n")
verification = [{"label": "smoke", "argv": ["/usr/bin/true"], "cwd": ".", "timeout_seconds": 30}]
if scenario == "commit":
    git("commit", "-q", "-am", "the backend commits")
elif scenario == "move_head":
    git("symbolic-ref", "HEAD", "refs/heads/elsewhere")
elif scenario == "tag":
    git("tag", "backend-tag")
elif scenario == "garbage_git":
    # Metadata no git reads: the worker must neither parse it itself nor take it for no change.
    write(".git/HEAD", "\x00garbage" * 512)
    write(".git/packed-refs", "# pack-refs with: peeled\nnot-an-id refs/heads/x\n")
elif scenario == "secret":
    write("config/provider.env", "OPENAI_API_KEY=sk-" + "Q7" * 24 + "\n")
elif scenario == "symlink":
    os.symlink("/etc/passwd", "docs/passwd")
elif scenario == "poison":
    # Left beside the edit, out of the change: ignored by a .gitignore of its own (which is a
    # change), and inside its .git (which is never one).
    write(".gitignore", "poison.txt\n")
    write("poison.txt", "left by the backend\n")
    write(".git/poison.txt", "left by the backend\n")
    verification = []
elif scenario == "not_allowed":
    verification = [{"label": "who", "argv": ["/usr/bin/id"], "cwd": ".", "timeout_seconds": 30}]
print(json.dumps({"schema": "aios.online-agent.runtime-result.v1", "status": "COMPLETED",
                  "summary": "rewrote docs/BASE.md", "verification": verification,
                  "evidence": {"root_cause": "the note was stale"}}))
)PY";

class EngineeringTest : public WorkerTest {
 protected:
  std::filesystem::path broker_root() { return dir() / "broker"; }
  std::filesystem::path workspaces() { return dir() / "workspaces"; }

  // The broker serving `backend` through the scripted Python backend.
  void start_broker(const std::string& backend, const std::string& scenario,
                    int timeout_seconds = 60) {
    const auto script = dir() / "backend.py";
    test::write_text_file(script, witness_.python() + std::string(kFakeBackend), kReadableByAll);
    serve_backend({{"schema", "aios.agent-runtime-broker.backend.v1"},
                   {"backend", backend},
                   {"protocol", "runtime-result"},
                   {"argv", {"/usr/bin/python3", script.string()}},
                   {"timeout_seconds", timeout_seconds},
                   {"environment", {{"AIOS_FAKE_SCENARIO", scenario}}},
                   // What the backend saw reaches the test through the witness.
                   {"network", {witness_.destination()}}});
  }

  // The broker serving the backend `conf` configures; `args` and `env` come on top of its
  // exchange, configuration, worktree and temporary directories.
  void serve_backend(const Json& conf, const std::vector<std::string>& args = {},
                     const std::vector<std::string>& env = {}) {
    const auto config = dir() / "broker-config";
    for (const auto& path : {config, broker_root(), workspaces(), dir() / "broker-tmp"}) {
      std::filesystem::create_directories(path);
    }
    test::write_text_file(
        config / ("agent-runtime-" + conf.at("backend").get<std::string>() + ".conf"), conf.dump());
    test::DaemonOptions options;
    options.binary = test::daemon_binary("aios-external-agent-executor");
    options.args = {"--broker",
                    "--root",
                    broker_root().string(),
                    "--config-root",
                    config.string(),
                    "--worktree-root",
                    workspaces().string(),
                    "--exchange-key-file",
                    test::exchange_key_file(dir()).string()};
    options.args.insert(options.args.end(), args.begin(), args.end());
    options.env = {"TMPDIR=" + (dir() / "broker-tmp").string()};
    options.env.insert(options.env.end(), env.begin(), env.end());
    options.ready_event = "EXTERNAL_AGENT_EXECUTOR_SERVING";
    options.port_field.clear();
    broker_ = std::make_unique<test::Daemon>(options, dir(), "broker");
    broker_->start();
  }

  // A worker that runs `adapter` engineering tasks once, with the broker's exchange.
  test::Daemon& make_engineering_worker(const std::string& name, const std::string& adapter,
                                        bool once = true) {
    const auto token = create_agent("agent-" + name, Json(kEngineeringWorker));
    const auto token_file = dir() / (name + ".token");
    test::write_text_file(token_file, token);
    agent_token_ = token;
    std::filesystem::create_directories(dir() / ("state-" + name));
    std::string caps;
    for (const auto& capability : kEngineeringWorker)
      caps += (caps.empty() ? "" : ",") + capability;
    test::DaemonOptions options;
    options.binary = test::daemon_binary("aios-online-agent-worker");
    options.args = {
        "--api-url",           "http://127.0.0.1:" + std::to_string(port()),
        "--bridge-url",        "http://127.0.0.1:" + std::to_string(scheduler().bridge_port()),
        "--agent-token-file",  token_file.string(),
        "--agent-id",          name,
        "--capabilities",      caps,
        "--allowed-adapters",  adapter,
        "--authority-git-dir", scheduler().authority_git_dir().string(),
        "--broker-root",       broker_root().string(),
        "--exchange-key-file", test::exchange_key_file(dir()).string(),
        "--state-root",        (dir() / ("state-" + name)).string(),
        "--workspace-root",    workspaces().string(),
        "--heartbeat-ms",      "200"};
    if (once) options.args.push_back("--once");
    options.ready_event = once ? "WORKER_ONCE_DONE" : "WORKER_READY";
    options.port_field.clear();
    options.ready_timeout = std::chrono::seconds(60);
    workers_.push_back(std::make_unique<test::Daemon>(options, dir(), "worker-" + name));
    return *workers_.back();
  }

  // An engineering task on `branch` whose verification allowlist is /usr/bin/true.
  Json engineering_task(const std::string& task_id, const std::string& branch,
                        const std::string& adapter = "codex") const {
    return {{"task_id", task_id},
            {"goal", "Rewrite docs/BASE.md"},
            {"instructions", "Keep it short."},
            {"success_criteria", {{{"id", "note"}, {"description", "docs/BASE.md is rewritten"}}}},
            {"max_attempts", 1},
            {"binding", binding(task_id, branch)},
            {"execution",
             {{"action", "engineering"},
              {"adapter", adapter},
              {"capability_scope", bridge_test::kWriterCapabilities},
              {"verification",
               {{{"label", "smoke"},
                 {"argv", {"/usr/bin/true"}},
                 {"cwd", "."},
                 {"timeout_seconds", 30}}}}}}};
  }

  // How often the backend ran: it reports once per run.
  std::size_t backend_runs() const { return witness_.size(); }

  // What the backend saw in its last run: {cwd, request, environ}.
  Json backend_record() const { return Json::parse(witness_.records().back()); }

  std::unique_ptr<test::Daemon> broker_;
  std::string agent_token_;
};

}  // namespace aios::engineering_test
