// aios-online-agent-worker: polls, claims, executes through an adapter and submits results.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../common/daemon_cli.hpp"
#include "../common/lifecycle.hpp"
#include "../common/signals.hpp"
#include "aios/log.hpp"
#include "aios/process.hpp"
#include "aios/worker.hpp"

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto first = item.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    items.push_back(item.substr(first, item.find_last_not_of(" \t") - first + 1));
  }
  return items;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "The AIOS online agent worker: registers with the Task API, polls for tasks its\n"
      "capabilities allow, resolves each envelope through the governed Bridge, claims under a\n"
      "lease, heartbeats, checkpoints every phase, runs the adapter (deterministic through the\n"
      "governed commit; hermes/openclaw through the external agent executor) and submits an\n"
      "idempotent result. A restart resumes from the checkpoints and never runs an agent,\n"
      "commits or submits twice. Each option also reads the environment variable shown.",
      "aios-online-agent-worker"};
  aios::daemon::add_version_flag(app);
  aios::WorkerConfig config;
  std::string token_file = aios::daemon::credential_file("agent_token");
  std::string key_file = aios::daemon::credential_file("exchange_result_key");
  std::string capabilities;
  std::string adapters = "deterministic,source_capture,compact_interface_map,codex";
  std::string state_root = config.state_root.string();
  std::string checkpoint_db;
  std::string workspace_root;
  std::string authority = config.authority_git_dir.string();
  std::string executor_root = config.executor_root.string();
  int executor_timeout = 1800;
  std::string broker_root = config.broker_root.string();
  int broker_timeout = static_cast<int>(config.broker_timeout.count());
  int heartbeat_ms = 10000;
  int http_timeout_ms = 30000;
  std::string verification_socket;
  bool once = false;
  bool serve_verification = false;
  app.add_option("--api-url", config.task_api_url, "Task API base URL")
      ->envname("AIOS_AGENT_TASK_API_URL")
      ->capture_default_str();
  app.add_option("--bridge-url", config.bridge_url, "Governed Bridge base URL")
      ->envname("AIOS_GOVERNED_WRITE_API_URL")
      ->capture_default_str();
  app.add_option("--agent-token-file", token_file,
                 "Agent token file (default $CREDENTIALS_DIRECTORY/agent_token)")
      ->envname("AIOS_AGENT_TOKEN_FILE");
  const auto* key_option =
      app.add_option("--exchange-key-file", key_file,
                     "The exchange key the executor and broker seal their answers with\n"
                     "(default $CREDENTIALS_DIRECTORY/exchange_result_key); required when\n"
                     "given, else read when present. Without it, tasks that go through\n"
                     "an exchange fail with EXTERNAL_AGENT_EXCHANGE_KEY_INVALID")
          ->envname("AIOS_EXCHANGE_KEY_FILE");
  app.add_option("--agent-id", config.agent_id, "Agent id; also the worker id")
      ->envname("AIOS_AGENT_ID")
      ->capture_default_str();
  app.add_option("--agent-type", config.agent_type, "Agent type (a worker label)")
      ->envname("AIOS_AGENT_TYPE")
      ->capture_default_str();
  app.add_option("--agent-version", config.agent_version, "Agent version (a worker label)")
      ->envname("AIOS_AGENT_VERSION")
      ->capture_default_str();
  app.add_option("--capabilities", capabilities, "Comma-separated worker capabilities")
      ->envname("AIOS_WORKER_CAPABILITIES");
  app.add_option("--allowed-adapters", adapters, "Comma-separated adapters this worker runs")
      ->envname("AIOS_WORKER_ALLOWED_ADAPTERS")
      ->capture_default_str();
  app.add_option("--authority-git-dir", authority, "Authority repository (read only)")
      ->envname("AIOS_AUTHORITY_GIT_DIR")
      ->capture_default_str();
  app.add_option("--executor-root", executor_root, "External agent executor exchange directory")
      ->envname("AIOS_EXTERNAL_AGENT_EXECUTOR_ROOT")
      ->capture_default_str();
  app.add_option("--executor-timeout-seconds", executor_timeout,
                 "How long to wait for an external agent's result")
      ->envname("AIOS_EXTERNAL_AGENT_EXECUTOR_TIMEOUT_SECONDS")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--broker-root", broker_root,
                 "Engineering runtime broker exchange directory (codex and other\n"
                 "engineering backends); the broker's --worktree-root is --workspace-root")
      ->envname("AIOS_AGENT_RUNTIME_BROKER_ROOT")
      ->capture_default_str();
  app.add_option("--broker-timeout-seconds", broker_timeout,
                 "How long to wait for an engineering backend's result")
      ->envname("AIOS_AGENT_RUNTIME_BROKER_TIMEOUT_SECONDS")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--state-root", state_root, "Worker state directory")
      ->envname("AIOS_WORKER_STATE_ROOT")
      ->capture_default_str();
  app.add_option("--checkpoint-db", checkpoint_db,
                 "Checkpoint database (default <state-root>/checkpoints.sqlite3)")
      ->envname("AIOS_WORKER_CHECKPOINT_DB");
  app.add_option("--workspace-root", workspace_root,
                 "Disposable worktrees (default <state-root>/workspaces)")
      ->envname("AIOS_WORKER_WORKSPACE_ROOT");
  app.add_option("--heartbeat-ms", heartbeat_ms, "Heartbeat interval")
      ->envname("AIOS_WORKER_HEARTBEAT_MS")
      ->check(CLI::Range(50, 600000))
      ->capture_default_str();
  app.add_option("--http-timeout-ms", http_timeout_ms,
                 "How long a Task API or Bridge call may take; a task whose call fails\n"
                 "this way is kept and retried from its checkpoint")
      ->envname("AIOS_WORKER_HTTP_TIMEOUT_MS")
      ->check(CLI::Range(100, 600000))
      ->capture_default_str();
  app.add_option("--verification-socket", verification_socket,
                 "Run every verification command in the sandbox service on this Unix\n"
                 "socket (aios-verification-sandbox.socket) instead of building the\n"
                 "sandbox here; default: build it here")
      ->envname("AIOS_VERIFICATION_SOCKET");
  app.add_flag("--once", once, "Take at most one task, then exit");
  app.add_flag("--serve-verification", serve_verification,
               "Be the sandbox service for one connection: read one sandboxed run from\n"
               "stdin, run it, answer on stdout and exit (aios-verification-sandbox@.service,\n"
               "socket-activated); nothing else is read or started");
  // Crash tests only; deliberately without a flag so it cannot sit in a unit's ExecStart.
  if (const char* phase = std::getenv("AIOS_WORKER_FAULT_KILL_AFTER_PHASE")) {
    config.kill_after_phase = phase;
  }
  CLI11_PARSE(app, argc, argv);
  if (serve_verification) {
    try {
      aios::process::serve_connection(STDIN_FILENO, STDOUT_FILENO);
      return 0;
    } catch (const std::exception& error) {
      aios::log::error("SANDBOX_SERVICE_ANSWER_FAILED", {{"detail", error.what()}});
      return 1;
    }
  }

  const aios::daemon::TerminationSignals signals;
  try {
    config.agent_token_file = token_file;
    config.agent_token =
        aios::read_secret_file(token_file, 32, aios::ErrorCode::WORKER_AGENT_TOKEN_UNAVAILABLE,
                               aios::ErrorCode::WORKER_AGENT_TOKEN_INVALID);
    if (key_option->count() > 0 || std::filesystem::exists(key_file)) {
      config.exchange_key = aios::executor::ExchangeKey::from_file(key_file);
    }
    config.capabilities = split_list(capabilities);
    const auto adapter_list = split_list(adapters);
    config.allowed_adapters = {adapter_list.begin(), adapter_list.end()};
    config.state_root = state_root;
    config.checkpoint_db = checkpoint_db.empty() ? config.state_root / "checkpoints.sqlite3"
                                                 : std::filesystem::path(checkpoint_db);
    config.workspace_root = workspace_root.empty() ? config.state_root / "workspaces"
                                                   : std::filesystem::path(workspace_root);
    config.authority_git_dir = authority;
    config.executor_root = executor_root;
    config.executor_timeout = std::chrono::seconds(executor_timeout);
    config.broker_root = broker_root;
    config.broker_timeout = std::chrono::seconds(broker_timeout);
    config.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
    config.http_timeout = std::chrono::milliseconds(http_timeout_ms);
    config.verification_socket = verification_socket;
    std::filesystem::create_directories(config.workspace_root);
    aios::Worker worker(config);
    worker.start();
    aios::log::info("WORKER_READY", {{"worker_id", config.agent_id}, {"once", once}});
    if (once) {
      const auto outcome = worker.run_once();
      aios::log::info("WORKER_ONCE_DONE", {{"task_id", outcome ? outcome->task_id : ""},
                                           {"outcome", outcome ? outcome->outcome : "IDLE"}});
      return 0;
    }
    std::atomic<bool> stop{false};
    std::atomic<bool> looping{true};
    std::thread loop([&] {
      worker.run(stop);
      looping = false;
    });
    aios::service_manager::notify_ready("worker " + config.agent_id + " polling");
    const aios::service_manager::Watchdog watchdog([&looping] { return looping.load(); });
    const int signal = signals.wait();
    aios::log::info("SHUTDOWN_REQUESTED", {{"signal", signal}});
    aios::service_manager::notify_stopping("finishing the current task");
    stop = true;
    loop.join();
    return 0;
  } catch (const aios::Error& error) {
    aios::log::error("START_FAILED", {{"error", error.code()}, {"detail", error.detail()}});
    return aios::daemon::kExitUnavailable;
  }
}
