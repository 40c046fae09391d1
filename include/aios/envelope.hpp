#pragma once
// The governed binding and the canonical execution envelope: what a task may do, fixed by a
// SHA-256 digest before any worker sees it. Pure logic: no I/O. docs/envelope.md is the full
// schema with every field, limit and error code; this header is the contract in brief.
//
// Every function throws aios::Error with the first failing rule's code and never returns a
// partially projected value.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace aios {

inline constexpr std::string_view kExecutionSchema = "aios.online-agent.execution.v1";
inline constexpr std::string_view kTaskProjectionSchema = "aios.online-agent.task-projection.v1";
inline constexpr std::string_view kAuthorityGitDir = "/data/aios-gitops/repo.git";

// The governed identity of one unit of work: which task and job, which repository, from which
// base, onto which agent branch. Part of every envelope; a binding never changes for a task.
struct GovernedBinding {
  std::string task_id;
  std::string job_id;
  std::string repository;
  std::string base_oid;
  std::string expected_branch_oid;
  std::string target_branch;
  std::string branch_mode;  // CREATE_NEW or UPDATE_EXISTING
  std::int64_t generation = 0;
  std::string idempotency_key;

  // Reads the nine binding fields of `value` (other keys are ignored, so an envelope or a task
  // view is accepted) and validates each; BINDING_* codes.
  static GovernedBinding from_mapping(const nlohmann::json& value);

  // The nine fields as a JSON object (the seed's `public()`).
  nlohmann::json to_public() const;

  bool operator==(const GovernedBinding&) const = default;
};

struct EnvelopeChecks {
  const GovernedBinding* binding = nullptr;             // must match when set
  const nlohmann::json* worker_capabilities = nullptr;  // must hold the scope when set
};

// Builds the canonical envelope for `binding` from an execution request
// {action, adapter, capability_scope, change_set, verification, source_signals, runtime_input,
// governance}, validates it, and checks that `required_capabilities` (a JSON array, possibly
// empty) lies inside its capability scope. Returns the envelope with its execution_digest.
nlohmann::json project_execution_envelope(
    const GovernedBinding& binding, const nlohmann::json& request,
    const nlohmann::json& required_capabilities = nlohmann::json::array());

// Validates a complete envelope (exact fields, every rule, the digest) and returns it.
nlohmann::json validate_execution_envelope(const nlohmann::json& envelope,
                                           const EnvelopeChecks& checks = {});

// Projects an Online Task: validates the task request, projects its execution envelope (an
// agent_runtime envelope takes its runtime_input from the task's goal, instructions, success
// criteria and constraints unless the request carries one), and returns the task document:
// the binding's public fields, the task fields, and metadata.execution plus
// metadata.execution_projection.
nlohmann::json project_online_task(const GovernedBinding& binding,
                                   const nlohmann::json& task_request,
                                   const nlohmann::json& execution_request);

// The execution digest of an envelope: sha256 of its canonical form without execution_digest.
std::string execution_digest_of(const nlohmann::json& envelope);

}  // namespace aios
