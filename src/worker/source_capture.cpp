// The source_capture / compact_interface_map adapter: a disposable checkout at base_oid and
// the compact interface map of it for the envelope's source signals. Read-only: no writer
// lease, no commit.
#include "aios/compact_map.hpp"
#include "aios/log.hpp"
#include "worker/internal.hpp"

namespace aios::worker {

nlohmann::json run_source_capture(RunContext& run) {
  auto& state = run.checkpoint.state;
  if (state.contains("result")) return state["result"];
  const auto& envelope = run.envelope;
  const auto signals = envelope.at("source_signals").get<std::vector<std::string>>();
  nlohmann::json map;
  {
    run.heartbeat.alive("source_capture");
    const Workspace workspace(run.config, envelope, run.environment.random);
    map = compact_map::build_compact_interface_map(workspace.worktree(), signals,
                                                   envelope.at("base_oid").get<std::string>());
  }
  auto result = compact_map::build_compact_interface_map_result(
      envelope.at("task_id").get<std::string>(), envelope, {{"interface_map", map}});
  log::info("SOURCE_CAPTURE_COMPLETED", {{"task_id", envelope.at("task_id")},
                                         {"profile", map.value("profile", "")},
                                         {"result_bytes", result.value("result_bytes", 0)}});
  state["result"] = result;
  run.checkpoint.phase = "source_capture_done";
  run.checkpoints.save(run.checkpoint);
  return result;
}

}  // namespace aios::worker
