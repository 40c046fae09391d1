#pragma once
// Shared builders for the envelope suites: the bindings, envelopes and task requests of the
// seed's tests (test_agent_task_execution_rebind.py, test_external_agent_online_runtime.py,
// test_online_agent_source_capture_replay.py), and small helpers to observe error codes.

#include <cstddef>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/error.hpp"
#include "support/code_of.hpp"

namespace aios::envelope_test {

using Json = nlohmann::json;

using aios::test::code_of;
using aios::test::kOk;

// `unit` repeated `count` times.
inline std::string repeat(std::string_view unit, std::size_t count) {
  std::string out;
  out.reserve(unit.size() * count);
  for (std::size_t i = 0; i < count; ++i) out.append(unit);
  return out;
}

// `value` with the member at JSON pointer `pointer` set to `replacement`.
inline Json with(Json value, const std::string& pointer, const Json& replacement) {
  value[Json::json_pointer(pointer)] = replacement;
  return value;
}

// A write_file mutation of `path`.
inline Json write_file(const std::string& path, const Json& content = "x") {
  return {{"path", path}, {"operation", "write_file"}, {"content", content}};
}

// A field value the table tests treat as "leave the key out".
inline const Json kAbsent = Json::object({{"__absent__", true}});
inline const std::string kEmoji = "\xF0\x9F\x98\x80";  // U+1F600, four UTF-8 bytes
inline const std::string kEAcute = "\xC3\xA9";         // U+00E9, two UTF-8 bytes

// The envelope with its execution_digest recomputed independently of execution_digest_of:
// sha256 of the canonical form of a copy without the digest key.
inline Json reseal(Json envelope) {
  Json body = envelope;
  body.erase("execution_digest");
  envelope["execution_digest"] = aios::digest(body);
  return envelope;
}

// --- test_agent_task_execution_rebind.py -------------------------------------------------------

inline const std::string kBase(40, 'a');
inline constexpr std::string_view kRebindTaskId = "task-rebind-a";
inline constexpr std::string_view kRebindJobId = "job-rebind-a";
inline constexpr std::string_view kRebindBranch = "agent/task-rebind-a";
inline constexpr std::string_view kRebindIdempotency = "task-rebind-a-binding-v1";

inline Json rebind_binding_mapping() {
  return {
      {"task_id", kRebindTaskId},
      {"job_id", kRebindJobId},
      {"repository", "aios/aios"},
      {"base_oid", kBase},
      {"expected_branch_oid", kBase},
      {"target_branch", kRebindBranch},
      {"branch_mode", "CREATE_NEW"},
      {"generation", 1},
      {"idempotency_key", kRebindIdempotency},
  };
}

inline GovernedBinding rebind_binding() {
  return GovernedBinding::from_mapping(rebind_binding_mapping());
}

inline Json rebind_scope() {
  return Json::array({"git.read", "git.test", "governed.write.branch", "governed.write.file"});
}

// The seed's old_envelope(): the source_capture projection made before the plan existed.
inline Json old_request() {
  return {
      {"action", "source_capture"},
      {"adapter", "compact_interface_map"},
      {"capability_scope", rebind_scope()},
  };
}

inline Json old_envelope() {
  return project_execution_envelope(rebind_binding(), old_request());
}

// The seed's new_envelope(): the deterministic plan. "VALUE=1\\n" is the seed's literal (a
// backslash and an n, not a newline).
inline Json new_request() {
  return Json::parse(R"({
    "action": "deterministic",
    "adapter": "deterministic",
    "capability_scope": ["git.read", "git.test", "governed.write.branch", "governed.write.file"],
    "change_set": [
      {"path": "active-runtime/app/example.py", "operation": "write_file", "content": "VALUE=1\\n"}
    ],
    "verification": [
      {"label": "unit", "argv": ["/usr/bin/python3", "-m", "pytest", "-q"], "cwd": ".",
       "timeout_seconds": 120}
    ],
    "governance": {"commit_idempotency_key": "task-rebind-a-commit-v1"}
  })");
}

inline Json new_envelope() {
  return project_execution_envelope(rebind_binding(), new_request());
}

// test_rebind_rejects_binding_drift: the same task under another job.
inline Json drift_binding_mapping() {
  Json mapping = rebind_binding_mapping();
  mapping["job_id"] = "job-other";
  return mapping;
}

inline Json drift_request() {
  return Json::parse(R"({
    "action": "deterministic",
    "capability_scope": ["git.read"],
    "change_set": [{"path": "x.py", "operation": "write_file", "content": "x=1\\n"}]
  })");
}

inline Json drift_envelope() {
  return project_execution_envelope(GovernedBinding::from_mapping(drift_binding_mapping()),
                                    drift_request());
}

// --- test_external_agent_online_runtime.py -----------------------------------------------------

inline std::string runtime_task_id(std::string_view runtime) {
  return "task-" + std::string(runtime) + "-runtime";
}

inline Json runtime_binding_mapping(std::string_view task_id) {
  const std::string id(task_id);
  return {
      {"task_id", id},
      {"job_id", "job-" + id},
      {"repository", "aios/aios"},
      {"base_oid", kBase},
      {"expected_branch_oid", kBase},
      {"target_branch", "agent/" + id},
      {"branch_mode", "CREATE_NEW"},
      {"generation", 1},
      {"idempotency_key", id + "-binding-v1"},
  };
}

inline GovernedBinding runtime_binding(std::string_view task_id) {
  return GovernedBinding::from_mapping(runtime_binding_mapping(task_id));
}

inline Json runtime_task_request(std::string_view task_id, std::string_view runtime) {
  Json request = Json::parse(R"({
    "goal": "Summarize the requested operation.",
    "instructions": "Return a concise result.",
    "success_criteria": [{"id": "done", "description": "A result is returned."}],
    "constraints": {"network": "runtime-managed"},
    "max_attempts": 3
  })");
  request["task_id"] = task_id;
  request["required_capabilities"] = Json::array({"agent.runtime." + std::string(runtime)});
  return request;
}

inline Json runtime_execution_request(std::string_view runtime) {
  return {
      {"action", "agent_runtime"},
      {"adapter", runtime},
      {"capability_scope", Json::array({"agent.runtime." + std::string(runtime)})},
  };
}

// The seed's projected(task_id, runtime).
inline Json projected(std::string_view runtime) {
  const std::string task_id = runtime_task_id(runtime);
  return project_online_task(runtime_binding(task_id), runtime_task_request(task_id, runtime),
                             runtime_execution_request(runtime));
}

// An agent_runtime execution request for project_execution_envelope with `runtime_input`.
inline Json hermes_request(const Json& runtime_input) {
  Json request = runtime_execution_request("hermes");
  request["runtime_input"] = runtime_input;
  return request;
}

// --- test_online_agent_source_capture_replay.py ------------------------------------------------

inline Json replay_binding_mapping() {
  return {
      {"task_id", "r42-source-capture-replay-test-20260818"},
      {"job_id", "job-source-capture-replay-test"},
      {"repository", "aios/aios"},
      {"base_oid", kBase},
      {"expected_branch_oid", kBase},
      {"target_branch", "agent/source-capture-replay-test"},
      {"branch_mode", "CREATE_NEW"},
      {"generation", 1},
      {"idempotency_key", "source-capture-replay-test-v1"},
  };
}

inline GovernedBinding replay_binding() {
  return GovernedBinding::from_mapping(replay_binding_mapping());
}

inline Json replay_request() {
  return Json::parse(R"({
    "action": "source_capture",
    "adapter": "compact_interface_map",
    "capability_scope": ["git.read", "git.test"],
    "source_signals": ["model provider registry version pinning"]
  })");
}

// A source_capture Online Task request for the rebind binding: the task fields only, so that
// TASK_* rules are reached without an agent_runtime rule answering first.
inline Json source_task_request() {
  return {
      {"task_id", kRebindTaskId},
      {"goal", "Map the interfaces."},
  };
}

}  // namespace aios::envelope_test
