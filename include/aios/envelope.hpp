#pragma once
// The governed binding and the canonical execution envelope: what a task may do, fixed by a
// SHA-256 digest before any worker sees it. Pure logic: no I/O. docs/envelope.md is the full
// schema with every field, limit and error code; this header is the contract in brief.
//
// Every function throws aios::Error with the first failing rule's code and never returns a
// partially projected value.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "aios/error.hpp"

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

// Field-level rules shared by the binding, envelope and task projections and by every module
// that reads a request body the same way (the task plane, the Bridge, the rebind service). Each
// check throws aios::Error with the code it is given, so every caller keeps its own wire codes.
namespace envelope {

[[noreturn]] void fail(ErrorCode code);

// `value` when it is a JSON string, else `code`.
const std::string& require_string(const nlohmann::json& value, ErrorCode code);

// Python's _string: a string that is not blank after str.strip(); returns the stripped text.
std::string require_text(const nlohmann::json& value, ErrorCode code);

// A JSON integer (never a bool or a float) within [min, max].
std::int64_t require_int(const nlohmann::json& value, std::int64_t min, std::int64_t max,
                         ErrorCode code);

// `object` is a JSON object whose keys are exactly `keys`.
void require_exact_keys(const nlohmann::json& object, std::initializer_list<std::string_view> keys,
                        ErrorCode code);

// `object` is a JSON object whose keys all appear in `keys`.
void require_known_keys(const nlohmann::json& object, std::initializer_list<std::string_view> keys,
                        ErrorCode code);

// `key` of `object`, or `fallback` when absent or null (Python's `get(key) or default` for the
// null case only: an explicit wrong type is still refused by the caller).
const nlohmann::json& get_or(const nlohmann::json& object, std::string_view key,
                             const nlohmann::json& fallback);
// The result may be the fallback itself, so a temporary fallback would dangle.
const nlohmann::json& get_or(const nlohmann::json& object, std::string_view key,
                             const nlohmann::json&& fallback) = delete;

// The seed's identifier shape: an ASCII letter or digit, then `min_rest`..`max_rest` characters
// that are letters, digits or one of `extra`.
bool is_identifier(std::string_view text, std::string_view extra, std::size_t min_rest,
                   std::size_t max_rest);

// TASK_RE ^[A-Za-z0-9][A-Za-z0-9._:-]{2,179}$ and KEY_RE ^[A-Za-z0-9][A-Za-z0-9._:-]{7,159}$.
bool is_task_id(std::string_view text);
bool is_idempotency_key(std::string_view text);

// A relative path inside a worktree: no leading '/', no '\', no NUL or control character, no
// empty, '.' or '..' component (a lone "." is allowed only when `allow_dot`), at most 1024 bytes.
bool is_safe_relative_path(std::string_view path, bool allow_dot);

// True when a field name looks like it carries a secret (token, secret, password, credential,
// authorization, api_key, apikey), after Python-compatible lower-casing.
bool is_secret_field_name(std::string_view name);

// True when `value` holds an object key anywhere (at any depth) that is_secret_field_name.
bool has_secret_field(const nlohmann::json& value);

// Python truthiness of a JSON value (null, false, 0, 0.0, "", [] and {} are false), for the
// seed's `value or default`.
bool python_truthy(const nlohmann::json& value);

// UTF-8 size of the canonical form.
std::size_t canonical_size(const nlohmann::json& value);

// Fallbacks for get_or that outlive every call.
inline const nlohmann::json kNull;
inline const nlohmann::json kEmptyText = "";
inline const nlohmann::json kEmptyArray = nlohmann::json::array();
inline const nlohmann::json kEmptyObject = nlohmann::json::object();

// Normalizers for the action-specific parts of an envelope, shared with the Bridge (a commit's
// change set, a plan's capabilities) and the broker (an agent run's input). Each returns the
// canonical form of its part or throws aios::Error with the part's code; projection stores the
// canonical form and validation requires the stored part to equal it.
inline constexpr std::size_t kMaxChangeEntries = 128;
inline constexpr std::size_t kMaxChangeContentBytes = 2 * 1024 * 1024;
inline constexpr std::size_t kMaxVerificationCommands = 32;
inline constexpr std::size_t kMaxSourceSignals = 32;
inline constexpr std::size_t kMaxAgentRuntimeInputBytes = 64 * 1024;

// [{path, operation: write_file, content} | {path, operation: delete_file}], at most 128.
nlohmann::json normalize_change_set(const nlohmann::json& value);

// [{label, argv, cwd, timeout_seconds}], at most 32; argv[0] absolute, no shell, no inline code.
nlohmann::json normalize_verification(const nlohmann::json& value);

// Trimmed, non-blank, de-duplicated strings in their first order, at most 32 of 240 code points.
nlohmann::json normalize_source_signals(const nlohmann::json& value);

// The seed's _agent_runtime_input: {goal, instructions, success_criteria, constraints}.
nlohmann::json normalize_agent_runtime_input(const nlohmann::json& value);

// A sorted, de-duplicated list of trimmed lower-case capability names, each known to the task
// vocabulary; `empty_code` when the list is empty.
nlohmann::json normalize_capability_list(const nlohmann::json& value, ErrorCode invalid_code,
                                         ErrorCode empty_code);

}  // namespace envelope
}  // namespace aios
