// The agent_runtime adapter: hands the envelope's runtime input to the credential-isolated
// executor through its exchange directory and builds the read-only result. The request id is
// derived from the execution, so a restart finds the first run's result instead of running the
// agent again.
#include "aios/canonical.hpp"
#include "aios/executor.hpp"
#include "aios/log.hpp"
#include "worker/internal.hpp"

namespace aios::worker {

nlohmann::json run_agent_runtime(RunContext& run) {
  const auto& envelope = run.envelope;
  auto& state = run.checkpoint.state;
  if (state.contains("result")) return state["result"];
  if (envelope.at("action") != "agent_runtime") {
    throw Error(ErrorCode::EXTERNAL_AGENT_ACTION_INVALID);
  }
  const auto& runtime_input = envelope.at("runtime_input");
  if (!runtime_input.is_object() || runtime_input.empty()) {
    throw Error(ErrorCode::EXTERNAL_AGENT_RUNTIME_INPUT_MISSING);
  }
  const std::string task_id = envelope.at("task_id");
  const std::string request_id =
      external_request_id(envelope, state.value("requeues", std::int64_t{0}));
  const executor::Exchange exchange(run.config.executor_root, run.config.exchange_key);
  nlohmann::json result;
  try {
    const auto external = await_in_slices(
        run, "external_agent",
        std::chrono::duration_cast<std::chrono::milliseconds>(run.config.executor_timeout),
        [&](std::chrono::milliseconds slice) {
          return exchange.execute(
              {.request_id = request_id,
               .runtime = envelope.at("adapter"),
               .task_id = task_id,
               .execution_digest = envelope.at("execution_digest"),
               .payload = runtime_input,
               .timeout = slice,
               .model_budget = envelope.value("model_budget", nlohmann::json())});
        });
    log::info("EXTERNAL_AGENT_RUNTIME_COMPLETED",
              {{"task_id", task_id},
               {"adapter", envelope.at("adapter")},
               {"request_id", request_id},
               {"output_sha256", external.value("output_sha256", "")},
               {"duration_ms", external.value("duration_ms", 0)},
               {"credential_material_exposed", false}});
    state["execution"] = {{"external_agent", external}};
    result = build_agent_runtime_result(task_id, envelope, external);
  } catch (const Error& error) {
    if (!error.is(ErrorCode::EXTERNAL_AGENT_MODEL_BUDGET_EXHAUSTED)) throw;
    // At most once: the run spent its budget, and another attempt would spend it again, so it
    // ends in a FAILED result for the owner to read, not a release.
    const auto usage = parse_json(error.detail());
    log::warn("EXTERNAL_AGENT_MODEL_BUDGET_EXHAUSTED",
              {{"task_id", task_id}, {"request_id", request_id}, {"model_usage", usage}});
    result = build_budget_exhausted_result(task_id, envelope, request_id, usage);
  }
  state["result"] = result;
  run.checkpoint.phase = "agent_runtime_done";
  run.checkpoints.save(run.checkpoint);
  return result;
}

}  // namespace aios::worker
