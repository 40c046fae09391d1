#pragma once
// The engineering runtime broker (seed 004, the Autonomous Engineering Runtime Contract v1): a
// mode of aios-external-agent-executor with its own exchange root. The worker writes a
// runtime-request.v1 (goal, instructions, success criteria, constraints and a pinned disposable
// worktree) into requests/; the broker runs the backend that root-owned, non-secret
// configuration names (<config_root>/agent-runtime-<backend>.conf) with the worktree as its
// working directory, the request on stdin and only the provider credential in its environment,
// and seals the backend's runtime-result.v1 from stdout into results/ (or the failure into
// failed/). The broker never holds a task token, lease or writer lease, and neither reads nor
// judges the worktree: the worker inspects git state itself afterwards.
//
// Three backend protocols: `runtime-result` (the backend reads the request JSON on stdin and
// prints one runtime-result.v1 object), `openclaw-agent-exec` and `codex-exec` (the broker
// renders the request as a prompt on stdin for `openclaw agent exec --message-file - --json` or
// `codex exec --json -`, and turns the CLI's JSON account of the turn into a runtime-result.v1).

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aios/executor.hpp"

namespace aios::broker {

inline constexpr std::string_view kRequestSchema = "aios.online-agent.runtime-request.v1";
inline constexpr std::string_view kRuntimeResultSchema = "aios.online-agent.runtime-result.v1";
inline constexpr std::string_view kBrokerResultSchema = "aios.agent-runtime-broker.result.v1";
inline constexpr std::string_view kBackendSchema = "aios.agent-runtime-broker.backend.v1";

inline const std::filesystem::path kDefaultExchangeRoot =
    "/var/lib/aios-agent-runtime-broker/exchange";
inline const std::filesystem::path kDefaultConfigRoot = "/etc/aios";
inline const std::filesystem::path kDefaultWorktreeRoot =
    "/var/lib/aios-agent-runtime-broker/worktrees";

inline constexpr std::size_t kMaxVerificationRequests = 32;
inline constexpr std::size_t kMaxSummaryBytes = 16 * 1024;
inline constexpr std::size_t kMaxEvidenceBytes = 32 * 1024;
// Commands of a Codex turn kept in the evidence; each is cut to 512 bytes.
inline constexpr std::size_t kMaxEvidenceCommands = 16;

// ^[a-z][a-z0-9_-]{2,31}$: the name of a backend and of its configuration file.
bool is_backend_name(std::string_view name);

enum class Protocol { runtime_result, openclaw_agent_exec, codex_exec };

// A backend: the executor's profile rules (allowlisted executable, no shell, no secret
// argument, a non-secret fixed environment, provider-only credential projection, timeout and
// output limit) plus the protocol. argv may hold {worktree} and {timeout_seconds}.
struct Backend {
  executor::RuntimeProfile profile;  // profile.runtime is the backend name
  Protocol protocol = Protocol::runtime_result;
};

// Loads <config_root>/agent-runtime-<name>.conf ({schema, backend, protocol, argv,
// timeout_seconds, max_output_bytes, environment, credential_env}). Throws
// RUNTIME_BROKER_BACKEND_UNSUPPORTED, _BACKEND_CONFIG_UNAVAILABLE, _BACKEND_CONFIG_INVALID, or the
// executor's EXTERNAL_AGENT_* profile code of the rule that failed.
Backend load_backend(std::string_view name, const std::filesystem::path& config_root,
                     const std::vector<std::filesystem::path>& executable_roots);

// The normalized runtime-request.v1: {schema, request_id, backend, task_id, execution_digest,
// base_oid, worktree, goal, instructions, success_criteria, constraints}; the last four as the
// envelope's canonical runtime_input has them. RUNTIME_BROKER_REQUEST_INVALID or
// RUNTIME_BROKER_BACKEND_UNSUPPORTED.
nlohmann::json validate_request(const nlohmann::json& value);

// The runtime-result.v1 a backend printed: {schema, status (COMPLETED, BLOCKED, FAILED),
// summary, verification [{label, argv, cwd, timeout_seconds}], evidence {}}; summary and the
// string values of evidence redacted and bounded. RUNTIME_BROKER_RESULT_MALFORMED otherwise.
nlohmann::json parse_runtime_result(std::string_view stdout_text);

// The prompt an OpenClaw or Codex agent turn gets for `request`.
std::string render_agent_prompt(const nlohmann::json& request);

// A runtime-result.v1 from `openclaw agent exec --json` output: a final answer that is itself
// a runtime-result.v1 object is taken as it is; any other successful turn is COMPLETED with
// the final text as summary; an unsuccessful one is FAILED. RUNTIME_BROKER_RESULT_MALFORMED
// when the output is not OpenClaw's JSON envelope.
nlohmann::json openclaw_runtime_result(std::string_view stdout_text);

// The same from `codex exec --json` output (JSONL events): the last agent_message is the final
// answer; a turn.failed or error event, or no turn.completed, is FAILED; the turn's commands and
// usage go into the evidence. RUNTIME_BROKER_RESULT_MALFORMED when a line is not an event.
nlohmann::json codex_runtime_result(std::string_view stdout_text);

struct BrokerOptions {
  std::filesystem::path config_root = kDefaultConfigRoot;
  std::vector<std::filesystem::path> executable_roots = executor::default_executable_roots();
  std::optional<std::filesystem::path> credentials_directory;
  std::filesystem::path temporary_root = "/tmp";
  // A request's worktree must be a real directory directly below this root.
  std::filesystem::path worktree_root = kDefaultWorktreeRoot;
};

// Runs one request file and writes the digest-sealed broker result to `result_path` ({schema,
// request_id, request_sha256, backend, task_id, execution_digest, exit_code, duration_ms,
// stderr_sha256, runtime_result, credential_material_exposed, result_sha256}). Throws the
// first refusal: a request, backend or worktree code, RUNTIME_BROKER_SPAWN_FAILED,
// _BACKEND_TIMEOUT, _BACKEND_FAILED, _OUTPUT_TOO_LARGE, _RESULT_MALFORMED, or a credential code.
// `execute.before_spawn` is honoured, so serve mode keeps its at-most-once markers.
nlohmann::json execute_request(const std::filesystem::path& request_path,
                               const std::filesystem::path& result_path,
                               const BrokerOptions& options,
                               const executor::ExecuteOptions& execute = {});

// The same without writing the result (serve mode seals and writes it).
nlohmann::json run_request(const std::filesystem::path& request_path, const BrokerOptions& options,
                           const executor::ExecuteOptions& execute);

// Serve mode: the executor's Server (inotify, bounded concurrency, start markers, drain) with
// the broker's handler, every answer sealed under `key`.
executor::ServeOptions serve_options(const std::filesystem::path& root,
                                     const BrokerOptions& options, unsigned concurrency,
                                     executor::ExchangeKey key);

// The worker's side: writes the request into the broker's exchange and waits for the result,
// checking the executor's seal (EXTERNAL_AGENT_RESULT_MAC_INVALID), that it is bound to the
// request and carries its own digest (RUNTIME_BROKER_RESULT_INVALID). A recorded failure is
// thrown with its code.
nlohmann::json exchange(const std::filesystem::path& root, const nlohmann::json& request,
                        std::chrono::milliseconds timeout, const executor::ExchangeKey& key);

// The disposable self-test: a fresh repository with one commit, a clone detached at it under a
// temporary worktree root, one request to `backend` asking it to change the file the fake
// model edits, and the checks that a file changed while HEAD and every ref stayed at the base.
// Returns {backend, base_oid, head_oid, changed_files, runtime_result}; throws
// RUNTIME_BROKER_SELF_TEST_FAILED (or the request's failure code).
nlohmann::json self_test(std::string_view backend, const BrokerOptions& options);

}  // namespace aios::broker
