#include <CLI/CLI.hpp>
#include <cstdlib>

#include "aios/worker.hpp"
#include "worker/internal.hpp"

namespace aios {
struct WorkerCommandLine::Values {
  WorkerConfig config;
  std::string token_file = credential_file("agent_token");
  std::string key_file = credential_file("exchange_result_key");
  const CLI::Option* key_option = nullptr;
  std::string capabilities;
  std::string adapters = "deterministic,source_capture,compact_interface_map,codex";
  std::string state_root = config.state_root.string();
  std::string checkpoint_db;
  std::string workspace_root;
  std::string authority = config.authority_git_dir.string();
  const CLI::Option* authority_option = nullptr;
  std::string tls_ca;
  std::string tls_certificate;
  std::string tls_key;
  std::string executor_root = config.executor_root.string();
  int executor_timeout = static_cast<int>(config.executor_timeout.count());
  std::string broker_root = config.broker_root.string();
  int broker_timeout = static_cast<int>(config.broker_timeout.count());
  int heartbeat_ms = static_cast<int>(config.heartbeat_interval.count());
  int http_timeout_ms = static_cast<int>(config.http_timeout.count());
  int claim_wait_ms = static_cast<int>(config.claim_wait.count());
  std::string verification_socket;
  bool once = false;
  bool serve_verification = false;
};

WorkerCommandLine::WorkerCommandLine(CLI::App& app) : values_(std::make_unique<Values>()) {
  auto& v = *values_;
  auto& config = v.config;
  app.add_option("--api-url", config.task_api_url,
                 "Task API base URL, or several (comma-separated) for scheduler replicas on one "
                 "store")
      ->envname("AIOS_AGENT_TASK_API_URL")
      ->capture_default_str();
  app.add_option("--bridge-url", config.bridge_url,
                 "Governed Bridge base URL, or several (comma-separated, every replica's): a "
                 "commit refused with BRIDGE_NOT_LEADER goes on to the next")
      ->envname("AIOS_GOVERNED_WRITE_API_URL")
      ->capture_default_str();
  app.add_option("--agent-token-file", v.token_file,
                 "Agent token file (default $CREDENTIALS_DIRECTORY/agent_token)")
      ->envname("AIOS_AGENT_TOKEN_FILE");
  v.key_option =
      app.add_option("--exchange-key-file", v.key_file,
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
  app.add_option("--capabilities", v.capabilities, "Comma-separated worker capabilities")
      ->envname("AIOS_WORKER_CAPABILITIES");
  app.add_option("--allowed-adapters", v.adapters, "Comma-separated adapters this worker runs")
      ->envname("AIOS_WORKER_ALLOWED_ADAPTERS")
      ->capture_default_str();
  v.authority_option =
      app.add_option("--authority-git-dir", v.authority,
                     "Authority repository (read only); with --repository-from-bridge, the\n"
                     "worker's own mirror of it (default <state-root>/authority-mirror.git)")
          ->envname("AIOS_AUTHORITY_GIT_DIR")
          ->capture_default_str();
  app.add_flag("--repository-from-bridge", config.repository_from_bridge,
               "A worker on another host: read the authority repository through the Bridge\n"
               "(each task's base fetched into a local mirror, read-only), not from disk")
      ->envname("AIOS_WORKER_REPOSITORY_FROM_BRIDGE");
  app.add_option("--tls-ca-file", v.tls_ca,
                 "https:// URLs: the CA bundle (PEM) the scheduler's certificate must chain\n"
                 "to (default: the system's)")
      ->envname("AIOS_TLS_CA_FILE");
  app.add_option("--tls-certificate-file", v.tls_certificate,
                 "Mutual TLS: this worker's client certificate (PEM), the one recorded for\n"
                 "its agent (under systemd a credential: LoadCredential= and %d/<name>)")
      ->envname("AIOS_TLS_CERTIFICATE_FILE");
  app.add_option("--tls-key-file", v.tls_key,
                 "Mutual TLS: the client certificate's private key (PEM)")
      ->envname("AIOS_TLS_KEY_FILE");
  app.add_option("--executor-root", v.executor_root, "External agent executor exchange directory")
      ->envname("AIOS_EXTERNAL_AGENT_EXECUTOR_ROOT")
      ->capture_default_str();
  app.add_option("--executor-timeout-seconds", v.executor_timeout,
                 "How long to wait for an external agent's result")
      ->envname("AIOS_EXTERNAL_AGENT_EXECUTOR_TIMEOUT_SECONDS")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--broker-root", v.broker_root,
                 "Engineering runtime broker exchange directory (codex and other\n"
                 "engineering backends); the broker's --worktree-root is --workspace-root")
      ->envname("AIOS_AGENT_RUNTIME_BROKER_ROOT")
      ->capture_default_str();
  app.add_option("--broker-timeout-seconds", v.broker_timeout,
                 "How long to wait for an engineering backend's result")
      ->envname("AIOS_AGENT_RUNTIME_BROKER_TIMEOUT_SECONDS")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--state-root", v.state_root, "Worker state directory")
      ->envname("AIOS_WORKER_STATE_ROOT")
      ->capture_default_str();
  app.add_option("--checkpoint-db", v.checkpoint_db,
                 "Checkpoint database (default <state-root>/checkpoints.sqlite3)")
      ->envname("AIOS_WORKER_CHECKPOINT_DB");
  app.add_option("--workspace-root", v.workspace_root,
                 "Disposable worktrees (default <state-root>/workspaces)")
      ->envname("AIOS_WORKER_WORKSPACE_ROOT");
  app.add_option("--heartbeat-ms", v.heartbeat_ms, "Heartbeat interval")
      ->envname("AIOS_WORKER_HEARTBEAT_MS")
      ->check(CLI::Range(50, 600000))
      ->capture_default_str();
  app.add_option("--http-timeout-ms", v.http_timeout_ms,
                 "How long a Task API or Bridge call may take; a task whose call fails\n"
                 "this way is kept and retried from its checkpoint")
      ->envname("AIOS_WORKER_HTTP_TIMEOUT_MS")
      ->check(CLI::Range(100, 600000))
      ->capture_default_str();
  app.add_option("--max-concurrency", config.max_concurrency,
                 "Tasks this worker runs at once (its fleet slots): one claim-next asks for\n"
                 "every free slot, and results that finish together go in one request")
      ->envname("AIOS_WORKER_MAX_CONCURRENCY")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--claim-wait-ms", v.claim_wait_ms,
                 "How long one claim-next waits at the Task API for a task to become\n"
                 "claimable (a long poll; a stop gives it up within 250 ms); 0: no\n"
                 "wait, poll with the idle backoff instead")
      ->envname("AIOS_WORKER_CLAIM_WAIT_MS")
      ->check(CLI::Range(0, 30000))
      ->capture_default_str();
  app.add_option("--verification-socket", v.verification_socket,
                 "Run every verification command in the sandbox service on this Unix\n"
                 "socket (aios-verification-sandbox.socket) instead of building the\n"
                 "sandbox here; default: build it here")
      ->envname("AIOS_VERIFICATION_SOCKET");
  app.add_option("--verification-memory-mb", config.verification_memory_mb,
                 "A verification command's memory bound, per process and for the whole run\n"
                 "(resident anonymous memory of all its processes plus its /tmp): past it\n"
                 "the run is ended and fails with VERIFICATION_MEMORY_LIMIT")
      ->envname("AIOS_VERIFICATION_MEMORY_MB")
      ->check(CLI::Range(64, 262144))
      ->capture_default_str();
  app.add_option("--verification-disk-mb", config.verification_disk_mb,
                 "What a verification command may add to its checkout, home and tmp\n"
                 "together: past it the run is ended and fails with VERIFICATION_DISK_LIMIT")
      ->envname("AIOS_VERIFICATION_DISK_MB")
      ->check(CLI::Range(1, 1048576))
      ->capture_default_str();
  app.add_flag("--once", v.once, "Take at most one task, then exit");
  app.add_flag("--serve-verification", v.serve_verification,
               "Be the sandbox service for one connection: read one sandboxed run from\n"
               "stdin, run it, answer on stdout and exit (aios-verification-sandbox@.service,\n"
               "socket-activated); nothing else is read or started");
}

WorkerCommandLine::~WorkerCommandLine() = default;

bool WorkerCommandLine::once() const {
  return values_->once;
}
bool WorkerCommandLine::serve_verification() const {
  return values_->serve_verification;
}

WorkerConfig WorkerCommandLine::config() const {
  const auto& v = *values_;
  WorkerConfig config = v.config;
  // Crash tests only; deliberately without a flag so it cannot sit in a unit's ExecStart.
  if (const char* phase = std::getenv("AIOS_WORKER_FAULT_KILL_AFTER_PHASE")) {
    config.kill_after_phase = phase;
  }
  config.agent_token_file = v.token_file;
  config.agent_token = read_secret_file(v.token_file, 32, ErrorCode::WORKER_AGENT_TOKEN_UNAVAILABLE,
                                        ErrorCode::WORKER_AGENT_TOKEN_INVALID);
  if (v.key_option->count() > 0 || std::filesystem::exists(v.key_file)) {
    config.exchange_key = executor::ExchangeKey::from_file(v.key_file);
  }
  config.capabilities = worker::split_list(v.capabilities);
  const auto adapter_list = worker::split_list(v.adapters);
  config.allowed_adapters = {adapter_list.begin(), adapter_list.end()};
  config.state_root = v.state_root;
  config.checkpoint_db = v.checkpoint_db.empty() ? config.state_root / "checkpoints.sqlite3"
                                                 : std::filesystem::path(v.checkpoint_db);
  config.workspace_root = v.workspace_root.empty() ? config.state_root / "workspaces"
                                                   : std::filesystem::path(v.workspace_root);
  config.authority_git_dir = config.repository_from_bridge && v.authority_option->count() == 0
                                 ? config.state_root / "authority-mirror.git"
                                 : std::filesystem::path(v.authority);
  config.tls = {v.tls_ca, v.tls_certificate, v.tls_key};
  config.executor_root = v.executor_root;
  config.executor_timeout = std::chrono::seconds(v.executor_timeout);
  config.broker_root = v.broker_root;
  config.broker_timeout = std::chrono::seconds(v.broker_timeout);
  config.heartbeat_interval = std::chrono::milliseconds(v.heartbeat_ms);
  config.http_timeout = std::chrono::milliseconds(v.http_timeout_ms);
  config.claim_wait = std::chrono::milliseconds(v.claim_wait_ms);
  config.verification_socket = v.verification_socket;
  return config;
}

}  // namespace aios
