// The deterministic adapter: a disposable worktree of the authority repository at base_oid,
// the envelope's change set applied, its allowlisted verification commands run (argv, no
// shell, bounded output, timeout), then the writer lease and the governed commit through the
// Bridge, which applies the same change set from the same envelope.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "aios/canonical.hpp"
#include "aios/git.hpp"
#include "worker/governed.hpp"
#include "worker/internal.hpp"

namespace aios::worker {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void workspace_failed(const std::string& detail) {
  throw Error(ErrorCode::WORKER_WORKSPACE_FAILED, detail);
}

// Every existing component of `relative` below `root` must be a real directory (or, for the
// last, a regular file): a change never writes through a symlink the tree carries.
void check_no_symlink(const fs::path& root, const fs::path& relative) {
  fs::path at = root;
  for (const auto& part : relative) {
    at /= part;
    struct stat info {};
    if (::lstat(at.c_str(), &info) != 0) return;
    if (S_ISLNK(info.st_mode)) workspace_failed(relative.string() + ": through a symlink");
  }
}

void apply_change(const fs::path& worktree, const nlohmann::json& change) {
  const fs::path relative = change.at("path").get<std::string>();
  check_no_symlink(worktree, relative);
  const fs::path target = worktree / relative;
  if (change.at("operation") == "delete_file") {
    std::error_code error;
    if (!fs::remove(target, error)) workspace_failed(relative.string() + ": nothing to delete");
    return;
  }
  fs::create_directories(target.parent_path());
  const int fd =
      ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) workspace_failed(relative.string() + ": cannot write");
  const std::string& content = change.at("content").get_ref<const std::string&>();
  std::size_t written = 0;
  while (written < content.size()) {
    const auto n = ::write(fd, content.data() + written, content.size() - written);
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (written != content.size()) workspace_failed(relative.string() + ": short write");
}

nlohmann::json result_of(const nlohmann::json& envelope, const nlohmann::json& state) {
  nlohmann::json changed = nlohmann::json::array();
  for (const auto& change : envelope.at("change_set")) changed.push_back(change.at("path"));
  const bool committed = state.contains("commit");
  return governed_result(
      envelope, state, "deterministic", committed ? "SUCCEEDED" : "FAILED",
      committed ? "DETERMINISTIC_CHANGE_COMMITTED" : "DETERMINISTIC_VERIFICATION_FAILED", changed);
}

}  // namespace

Workspace::Workspace(const WorkerConfig& config, const nlohmann::json& envelope)
    : root_(config.workspace_root /
            (envelope.at("task_id").get<std::string>() + "-" + random_hex(6))) {
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
    workspace_failed(error.what());
  }
}

Workspace::~Workspace() {
  std::error_code ignored;
  fs::remove_all(root_, ignored);
}

nlohmann::json run_deterministic(RunContext& run) {
  auto& state = run.checkpoint.state;
  if (state.contains("result")) return state["result"];
  const auto& envelope = run.envelope;
  if (!state.contains("tests")) {
    {
      run.heartbeat.alive("workspace");
      const Workspace workspace(run.config, envelope);
      for (const auto& change : envelope.at("change_set")) {
        apply_change(workspace.worktree(), change);
      }
      nlohmann::json tests = nlohmann::json::array();
      for (const auto& command : envelope.at("verification")) {
        run.heartbeat.alive("verification");
        tests.push_back(
            run_verification(run.config, workspace.root(), workspace.worktree(), command));
        if (!tests.back().at("passed").get<bool>()) break;
      }
      state["tests"] = tests;
    }
    bool passed = true;
    for (const auto& test : state["tests"]) passed = passed && test.at("passed").get<bool>();
    if (!passed) {
      state["result"] = result_of(envelope, state);
      run.checkpoint.phase = "result_pending";
      run.checkpoints.save(run.checkpoint);
      return state["result"];
    }
    run.checkpoint.phase = "verification_passed";
    run.checkpoints.save(run.checkpoint);
  }
  state["commit"] = governed_commit(run, nullptr);
  state["result"] = result_of(envelope, state);
  run.checkpoint.phase = "committed";
  run.checkpoints.save(run.checkpoint);
  return state["result"];
}

}  // namespace aios::worker
