#pragma once
// The online agent worker (seed: aios_online_agent_worker.py): registers with the Task API,
// polls, resolves each envelope through the Bridge and validates it against the task's binding
// and its own capabilities, skips adapters it does not run, claims, heartbeats while its work
// loop is alive, checkpoints every phase durably, executes through an adapter and submits an
// idempotent result. docs/operations.md explains each flavour (generic, Hermes, OpenClaw).
//
// At most once: an external agent runs through the executor's exchange under a request id
// derived from the execution, a governed commit is idempotent by its commit key, and a result
// is stored in the checkpoint before it is submitted; a restart resumes from the checkpoint
// and never runs, commits or submits anything a second time.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "aios/environment.hpp"
#include "aios/executor.hpp"
#include "aios/sys.hpp"

namespace CLI {
class App;
}

namespace aios {

struct WorkerConfig {
  std::string task_api_url = "http://127.0.0.1:18940";
  std::string bridge_url = "http://127.0.0.1:18892";
  std::string agent_token;  // from $CREDENTIALS_DIRECTORY/agent_token; never logged
  // Where the token file is; hidden from every verification command's sandbox.
  std::filesystem::path agent_token_file;
  std::string agent_id = "aios-online-agent-worker";
  std::string agent_type = "generic";
  std::string agent_version = "1";
  std::string worker_id;  // default: agent_id
  std::vector<std::string> capabilities;
  std::set<std::string> allowed_adapters = {"deterministic", "source_capture",
                                            "compact_interface_map", "codex"};
  std::filesystem::path authority_git_dir = "/data/aios-gitops/repo.git";
  // A worker on another host: authority_git_dir is its own mirror, each task's base fetched
  // into it through the Bridge (POST /v2/repository-pack) before the task reads it.
  bool repository_from_bridge = false;
  // https:// URLs: the CA bundle the scheduler must chain to and, for mutual TLS, this worker's
  // client certificate and key. The main builds the transport from them.
  http::TlsClientFiles tls;
  std::filesystem::path executor_root = "/var/lib/aios-external-agent-executor";
  std::chrono::seconds executor_timeout{1800};
  // The engineering runtime broker's exchange; its worktree root must be workspace_root.
  std::filesystem::path broker_root = "/var/lib/aios-agent-runtime-broker/exchange";
  // Checks the seal on every answer of both exchanges; without it, a task that needs either
  // fails with EXTERNAL_AGENT_EXCHANGE_KEY_INVALID before any request is written.
  executor::ExchangeKey exchange_key;
  std::chrono::seconds broker_timeout{3600};
  std::filesystem::path state_root = "/var/lib/aios-online-agent-worker";
  std::filesystem::path checkpoint_db = "/var/lib/aios-online-agent-worker/checkpoints.sqlite3";
  std::filesystem::path workspace_root = "/var/lib/aios-online-agent-worker/workspaces";
  // The sandbox service's socket (process::run_through): when set, every verification command
  // runs there and this process never builds a sandbox itself, so its unit can deny namespaces
  // and mounts; its directory is hidden from every sandbox. Empty: the worker builds them.
  std::filesystem::path verification_socket;
  // A verification command's whole-run bounds (process::Limits; the envelope's digest must not
  // change, so they are the worker's, not the task's): resident memory of all its processes
  // with its /tmp, and what it adds to its checkout, home and tmp together.
  std::uint64_t verification_memory_mb = 32768;
  std::uint64_t verification_disk_mb = 8192;
  int max_concurrency = 1;
  std::chrono::milliseconds idle_backoff_min{500};
  std::chrono::milliseconds idle_backoff_max{10000};
  std::chrono::milliseconds heartbeat_interval{10000};
  std::chrono::milliseconds http_timeout{30000};
  // How long one POST /v1/tasks/claim-next waits at the Task API for work (the long poll); the
  // call's timeout is http_timeout beyond it, and a stop gives it up within 250 ms. 0: answered
  // at once, idle rounds back off.
  std::chrono::milliseconds claim_wait{10000};
  // Fault injection for crash tests: the worker kills itself with SIGKILL right after this
  // checkpoint phase is durable (AIOS_WORKER_FAULT_KILL_AFTER_PHASE). Empty: never.
  std::string kill_after_phase;
};

// The worker's command line: every option, bound to `app` with the environment variable it also
// reads. config() is what they name, with the agent token and the exchange key read from their
// files (aios::Error WORKER_AGENT_TOKEN_*, EXTERNAL_AGENT_EXCHANGE_KEY_*).
class WorkerCommandLine {
 public:
  explicit WorkerCommandLine(CLI::App& app);
  ~WorkerCommandLine();
  WorkerCommandLine(const WorkerCommandLine&) = delete;
  WorkerCommandLine& operator=(const WorkerCommandLine&) = delete;

  WorkerConfig config() const;
  bool once() const;
  bool serve_verification() const;

 private:
  struct Values;
  std::unique_ptr<Values> values_;
};

// What one pass of the loop did with a task.
struct WorkOutcome {
  std::string task_id;
  std::string outcome;  // SUBMITTED, RELEASED, SKIPPED, LOST_LEASE, INTERRUPTED
  std::string detail;
};

// Result documents exactly as the seed builds them; throw aios::Error with the seed's codes.
nlohmann::json build_agent_runtime_result(const std::string& task_id,
                                          const nlohmann::json& envelope,
                                          const nlohmann::json& external);

// The FAILED result of a run the provider gateway stopped at its model_budget, with the usage
// the executor reported: submitted, not released, so no second attempt spends the budget again.
nlohmann::json build_budget_exhausted_result(const std::string& task_id,
                                             const nlohmann::json& envelope,
                                             const std::string& request_id,
                                             const nlohmann::json& usage);

// The result idempotency key: derived from task, attempt and execution digest, so a replay of
// the same attempt is recognised and another attempt never collides.
std::string result_idempotency_key(const std::string& task_id, std::int64_t attempt,
                                   const std::string& execution_digest);

// The executor request id of an agent_runtime execution:
// external-<runtime>-<first 32 hex of the digest over task, job, execution digest, runtime>,
// and the task's requeue generation once the owner has requeued it: the same for every attempt
// of a generation (a crash mid-run finds the run's answer, never runs it twice), new for a
// requeued task's next generation (which must really run again).
std::string external_request_id(const nlohmann::json& envelope, std::int64_t requeues = 0);

class Worker {
 public:
  // Calls the Task API and the Bridge through the environment's transport, runs verification
  // through its spawner and dates checkpoints by its clock; `environment` must outlive it.
  Worker(WorkerConfig config, const Environment& environment);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Registers the worker (idempotent) and resumes tasks left by a previous run from their
  // checkpoints.
  void start();

  // Polls once and works at most one task to its end; nullopt when nothing was claimable.
  std::optional<WorkOutcome> run_once();

  // Polls and works until `stop` is set, backing off while idle.
  void run(const std::atomic<bool>& stop);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace aios
