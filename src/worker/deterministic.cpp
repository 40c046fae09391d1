// The deterministic adapter: a disposable worktree of the authority repository at base_oid,
// the envelope's change set applied, its allowlisted verification commands run (argv, no
// shell, bounded output, timeout), then the writer lease and the governed commit through the
// Bridge, which applies the same change set from the same envelope.
#include "worker/governed.hpp"
#include "worker/internal.hpp"

namespace aios::worker {
namespace {

nlohmann::json result_of(const nlohmann::json& envelope, const nlohmann::json& state) {
  nlohmann::json changed = nlohmann::json::array();
  for (const auto& change : envelope.at("change_set")) changed.push_back(change.at("path"));
  const bool committed = state.contains("commit");
  return governed_result(
      envelope, state, "deterministic", committed ? "SUCCEEDED" : "FAILED",
      committed ? "DETERMINISTIC_CHANGE_COMMITTED" : "DETERMINISTIC_VERIFICATION_FAILED", changed);
}

}  // namespace

nlohmann::json run_deterministic(RunContext& run) {
  auto& state = run.checkpoint.state;
  if (state.contains("result")) return state["result"];
  const auto& envelope = run.envelope;
  if (!state.contains("tests")) {
    state["tests"] = verify_change_set(run, envelope.at("change_set"), envelope.at("verification"));
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
