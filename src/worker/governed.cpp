// The clean verification checkout, verification commands and the governed commit, shared by the
// deterministic and engineering adapters.
#include "worker/governed.hpp"

#include <array>
#include <system_error>

#include "aios/canonical.hpp"
#include "aios/files.hpp"
#include "aios/git.hpp"
#include "aios/log.hpp"
#include "aios/process.hpp"

namespace aios::worker {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxTestOutput = 16 * 1024;

}  // namespace

Workspace::Workspace(const WorkerConfig& config, const nlohmann::json& envelope, Random& random)
    : root_(config.workspace_root /
            (envelope.at("task_id").get<std::string>() + "-" + random.hex(6))) {
  try {
    fs::create_directories(root_ / "home");
    fs::create_directories(root_ / "tmp");
    git::Repository(config.authority_git_dir).checkout(envelope.at("base_oid"), worktree());
  } catch (const Error&) {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
    throw;
  } catch (const std::exception& error) {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
    throw Error(ErrorCode::WORKER_WORKSPACE_FAILED, error.what());
  }
}

Workspace::~Workspace() {
  std::error_code ignored;
  fs::remove_all(root_, ignored);
}

process::Sandbox worker_sandbox(const WorkerConfig& config) {
  process::Sandbox sandbox;
  sandbox.hidden = {config.state_root,     config.checkpoint_db.parent_path(),
                    config.workspace_root, config.authority_git_dir,
                    config.executor_root,  config.broker_root,
                    "/etc/credstore",      "/etc/credstore.encrypted",
                    "/etc/aios-gitops"};
  for (const auto* path : {&config.agent_token_file, &config.verification_socket}) {
    if (!path->empty()) sandbox.hidden.push_back(path->parent_path());
  }
  return sandbox;
}

process::Outcome run_sandboxed(const WorkerConfig& config, process::Spawner& spawner,
                               const process::Spec& spec) {
  return config.verification_socket.empty() ? spawner.run(spec)
                                            : spawner.run_through(config.verification_socket, spec);
}

nlohmann::json run_verification(const WorkerConfig& config, process::Spawner& spawner,
                                const fs::path& run_root, const fs::path& worktree,
                                const nlohmann::json& command) {
  std::string output;
  const auto keep = [&output](std::string_view chunk) {
    output.append(chunk);
    if (output.size() > 4 * kMaxTestOutput) output.erase(0, output.size() - 2 * kMaxTestOutput);
  };
  process::Spec spec;
  spec.argv = command.at("argv").get<std::vector<std::string>>();
  spec.environment = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + (run_root / "home").string(),
                      "LANG=C.UTF-8", "TMPDIR=" + (run_root / "tmp").string()};
  spec.working_directory = worktree / command.at("cwd").get<std::string>();
  spec.timeout = std::chrono::seconds(command.at("timeout_seconds").get<int>());
  spec.on_stdout = keep;
  spec.on_stderr = keep;
  process::Sandbox sandbox = worker_sandbox(config);
  sandbox.writable = {run_root};
  sandbox.limits.cpu_seconds = static_cast<std::uint64_t>(spec.timeout.count() / 1000 + 1);
  sandbox.limits.memory_bytes = config.verification_memory_mb << 20;
  sandbox.limits.disk_bytes = config.verification_disk_mb << 20;
  spec.sandbox = sandbox;
  process::Outcome outcome;
  try {
    outcome = run_sandboxed(config, spawner, spec);
  } catch (const std::system_error& error) {
    outcome.exit_code = 127;
    output = error.what();
  }
  if (outcome.exceeded) {
    // In kBounds' order: memory, processes, disk.
    static constexpr std::array<ErrorCode, 3> kCodes = {ErrorCode::VERIFICATION_MEMORY_LIMIT,
                                                        ErrorCode::VERIFICATION_PROCESS_LIMIT,
                                                        ErrorCode::VERIFICATION_DISK_LIMIT};
    const auto& info = error_info(kCodes[static_cast<std::size_t>(*outcome.exceeded)]);
    output = std::string(info.wire) + ": " + std::string(info.text) + "\n" + output;
  }
  const bool passed = !outcome.timed_out && !outcome.exceeded && outcome.exit_code == 0;
  return {{"label", command.at("label")},
          {"argv", command.at("argv")},
          {"exit_code", outcome.exit_code},
          {"timed_out", outcome.timed_out},
          {"passed", passed},
          {"duration_ms",
           std::chrono::duration_cast<std::chrono::milliseconds>(outcome.elapsed).count()},
          {"output", bounded_text(output, kMaxTestOutput)}};
}

nlohmann::json verify_change_set(RunContext& run, const nlohmann::json& change_set,
                                 const nlohmann::json& commands) {
  run.heartbeat.alive("workspace");
  const Workspace workspace(run.config, run.envelope, run.environment.random);
  for (const auto& change : change_set) {
    const std::string& path = change.at("path").get_ref<const std::string&>();
    try {
      if (change.at("operation") == "delete_file") {
        files::remove_beneath(workspace.worktree(), path);
      } else {
        files::write_beneath(workspace.worktree(), path,
                             change.at("content").get_ref<const std::string&>());
      }
    } catch (const std::system_error& error) {
      throw Error(ErrorCode::WORKER_WORKSPACE_FAILED, path + ": " + error.code().message());
    }
  }
  nlohmann::json tests = nlohmann::json::array();
  for (const auto& command : commands) {
    run.heartbeat.alive("verification");
    tests.push_back(run_verification(run.config, run.environment.spawner, workspace.root(),
                                     workspace.worktree(), command));
    if (!tests.back().at("passed").get<bool>()) break;
  }
  return tests;
}

nlohmann::json governed_commit(RunContext& run, const nlohmann::json* change_set) {
  run.heartbeat.alive("committing");
  nlohmann::json body = {{"task_id", run.envelope.at("task_id")},
                         {"lease_token", run.lease_token},
                         {"attempt", run.attempt},
                         {"execution_digest", run.envelope.at("execution_digest")}};
  const auto lease = run.bridge.require("POST", "/v2/writer-leases", &body);
  body["writer_lease_id"] = lease.at("writer_lease_id");
  if (change_set != nullptr) body["change_set"] = *change_set;
  auto commit = run.bridge.require("POST", "/v2/governed-commits", &body);
  log::info("GOVERNED_COMMIT_DONE",
            {{"task_id", run.envelope.at("task_id")}, {"commit_oid", commit.at("commit_oid")}});
  return commit;
}

nlohmann::json governed_result(const nlohmann::json& envelope, const nlohmann::json& state,
                               const std::string& mode, const std::string& status,
                               const std::string& classification,
                               const nlohmann::json& changed_files) {
  const bool committed = state.contains("commit");
  return {{"status", status},
          {"classification", classification},
          {"verification_state", "VERIFIED_BY_WORKER_PENDING_SERVER_REVIEW"},
          {"execution_mode", mode},
          {"execution_backend", "generic-online-agent-worker-v2"},
          {"task_id", envelope.at("task_id")},
          {"job_id", envelope.at("job_id")},
          {"repository", envelope.at("repository")},
          {"base_oid", envelope.at("base_oid")},
          {"target_branch", envelope.at("target_branch")},
          {"execution_digest", envelope.at("execution_digest")},
          {"commit_oid", committed ? state.at("commit").at("commit_oid") : nlohmann::json()},
          {"commit_idempotency_key", envelope.at("governance").at("commit_idempotency_key")},
          {"changed_files", changed_files},
          {"tests", state.value("tests", nlohmann::json::array())},
          {"workspace_cleanup", "PASS"},
          {"writer_lease", committed ? "GRANTED" : "NONE"},
          {"direct_main_write", false},
          {"force_push", false},
          {"protected_ref_bypass", false}};
}

}  // namespace aios::worker
