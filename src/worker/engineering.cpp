// The engineering adapter (seed 004): a pinned disposable worktree at base_oid, a
// runtime-request.v1 to the broker, then the worker's own reading of git state, allowlisted
// verification, and the writer lease and governed commit of exactly the change it read.
#include "worker/engineering.hpp"

#include <algorithm>

#include "aios/canonical.hpp"
#include "aios/executor.hpp"
#include "aios/gateway.hpp"
#include "aios/git.hpp"
#include "aios/log.hpp"
#include "worker/governed.hpp"

namespace aios::worker {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Per attempt: a restart of the same attempt finds its request (and the broker's answer); a
// later attempt gets a fresh worktree and a fresh backend run.
std::string engineering_request_id(const json& envelope, std::int64_t attempt) {
  const std::string backend = envelope.at("adapter");
  return "engineering-" + backend + "-" +
         digest({{"task_id", envelope.at("task_id")},
                 {"job_id", envelope.at("job_id")},
                 {"execution_digest", envelope.at("execution_digest")},
                 {"backend", backend},
                 {"attempt", attempt}})
             .substr(0, 32);
}

// Removes the run's directory (worktree, home, tmp) on every way out of the adapter.
class RunDirectory {
 public:
  explicit RunDirectory(fs::path root) : root_(std::move(root)) {}
  ~RunDirectory() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;
  const fs::path& root() const { return root_; }
  fs::path worktree() const { return root_ / "worktree"; }

 private:
  fs::path root_;
};

void prepare(const RunDirectory& directory, const WorkerConfig& config, const json& envelope) {
  std::error_code ignored;
  fs::remove_all(directory.root(), ignored);  // a stale run of this attempt that never asked
  try {
    fs::create_directories(directory.root() / "home");
    fs::create_directories(directory.root() / "tmp");
    git::create_worktree(config.authority_git_dir, envelope.at("base_oid"), directory.worktree());
  } catch (const Error& error) {
    throw Error(ErrorCode::ENGINEERING_WORKTREE_FAILED, error.code() + ": " + error.detail());
  } catch (const std::exception& error) {
    throw Error(ErrorCode::ENGINEERING_WORKTREE_FAILED, error.what());
  }
}

json result_of(const json& envelope, const json& state, const std::string& status,
               const std::string& classification) {
  const json& runtime = state.at("runtime_result");
  json result = governed_result(envelope, state, "engineering", status, classification,
                                state.value("changed_files", json::array()));
  result.update({{"engineering_backend", envelope.at("adapter")},
                 {"runtime_status", runtime.at("status")},
                 {"runtime_summary", runtime.at("summary")},
                 {"runtime_evidence", runtime.at("evidence")},
                 {"verification_requests", runtime.at("verification")},
                 {"broker_request_id", state.at("request_id")},
                 {"runtime_duration_ms", state.value("runtime_duration_ms", 0)},
                 {"secret_material_exposed", false},
                 {"credential_material_exposed", false},
                 {"control_plane_access_granted_to_runtime", false}});
  if (state.contains("model_usage")) result["model_usage"] = state.at("model_usage");
  return result;
}

json await_backend(RunContext& run, const json& request) {
  return await_in_slices(
      run, "engineering_backend",
      std::chrono::duration_cast<std::chrono::milliseconds>(run.config.broker_timeout),
      [&](std::chrono::milliseconds slice) {
        return broker::exchange(run.config.broker_root, request, slice, run.config.exchange_key);
      });
}

json finish(RunContext& run, json result, const std::string& phase) {
  run.checkpoint.state["result"] = result;
  run.checkpoint.phase = phase;
  run.checkpoints.save(run.checkpoint);
  return result;
}

}  // namespace

json run_engineering(RunContext& run) {
  auto& state = run.checkpoint.state;
  if (state.contains("result")) return state["result"];
  const auto& envelope = run.envelope;
  if (!state.contains("change_set")) {
    const std::string request_id = engineering_request_id(envelope, run.attempt);
    const RunDirectory directory(run.config.workspace_root / request_id);
    if (run.checkpoint.phase != "engineering_requested") {
      run.heartbeat.alive("workspace");
      prepare(directory, run.config, envelope);
      state["request_id"] = request_id;
      run.checkpoint.phase = "engineering_requested";
      run.checkpoints.save(run.checkpoint);
    } else if (!fs::is_directory(directory.worktree())) {
      throw Error(ErrorCode::ENGINEERING_WORKTREE_FAILED, "the worktree of the request is gone");
    }
    const auto& input = envelope.at("runtime_input");
    json request = {{"schema", broker::kRequestSchema},
                    {"request_id", request_id},
                    {"backend", envelope.at("adapter")},
                    {"task_id", envelope.at("task_id")},
                    {"execution_digest", envelope.at("execution_digest")},
                    {"base_oid", envelope.at("base_oid")},
                    {"worktree", directory.worktree().string()},
                    {"goal", input.at("goal")},
                    {"instructions", input.at("instructions")},
                    {"success_criteria", input.at("success_criteria")},
                    {"constraints", input.at("constraints")}};
    if (envelope.contains("model_budget")) request["model_budget"] = envelope.at("model_budget");
    const json answer = await_backend(run, request);
    state["runtime_result"] = answer.at("runtime_result");
    state["runtime_duration_ms"] = answer.at("duration_ms");
    if (const auto usage = answer.find("model_usage"); usage != answer.end()) {
      if (!gateway::parse_usage(*usage)) throw Error(ErrorCode::RUNTIME_BROKER_RESULT_MALFORMED);
      state["model_usage"] = *usage;
    }
    log::info("ENGINEERING_BACKEND_COMPLETED",
              {{"task_id", envelope.at("task_id")},
               {"backend", envelope.at("adapter")},
               {"request_id", request_id},
               {"runtime_status", answer["runtime_result"].at("status")},
               {"duration_ms", answer.at("duration_ms")}});
    const std::string status = answer["runtime_result"].at("status");
    if (status != "COMPLETED") {
      return finish(run,
                    result_of(envelope, state, status == "BLOCKED" ? "BLOCKED" : "FAILED",
                              status == "BLOCKED" ? "ENGINEERING_BACKEND_BLOCKED"
                                                  : "ENGINEERING_BACKEND_FAILED"),
                    "result_pending");
    }

    // Nothing the backend said about its work is used: git and the files say what changed.
    const auto refs = git::read_backend_refs(
        directory.worktree() / ".git", worker_sandbox(run.config), [&](const process::Spec& spec) {
          return run_sandboxed(run.config, run.environment.spawner, spec);
        });
    auto inspected = inspect_worktree(directory.worktree(), envelope.at("base_oid"), refs,
                                      run.config.authority_git_dir, {run.config.agent_token});
    if (inspected.change_set.empty()) throw Error(ErrorCode::ENGINEERING_NO_CHANGES);
    const json plan =
        verification_plan(envelope.at("verification"), answer["runtime_result"].at("verification"));
    const json tests = verify_change_set(run, inspected.change_set, plan);
    state["tests"] = tests;
    state["changed_files"] = inspected.changed_files;
    state["change_set"] = std::move(inspected.change_set);
    bool passed = true;
    for (const auto& test : tests) passed = passed && test.at("passed").get<bool>();
    if (!passed) {
      return finish(run, result_of(envelope, state, "FAILED", "ENGINEERING_VERIFICATION_FAILED"),
                    "result_pending");
    }
    run.checkpoint.phase = "verification_passed";
    run.checkpoints.save(run.checkpoint);
  }
  state["commit"] = governed_commit(run, &state["change_set"]);
  // The content is in the commit now; the checkpoint keeps only what the result needs.
  state.erase("change_set");
  return finish(run, result_of(envelope, state, "SUCCEEDED", "ENGINEERING_CHANGE_COMMITTED"),
                "committed");
}

}  // namespace aios::worker
