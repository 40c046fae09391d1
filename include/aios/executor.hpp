#pragma once
// The credential-isolated external agent executor (seed: aios_external_agent_runtime.py).
//
// Task payloads never choose commands. A root-owned runtime profile
// (<profile_root>/<runtime>.json) chooses the executable, its fixed argv, a fixed non-secret
// environment, the provider credential projected from $CREDENTIALS_DIRECTORY and the I/O
// modes. The worker writes a hash-bound request into the exchange directory
// (requests/<id>.json); the executor runs the agent CLI without a shell in a private temporary
// directory and writes a bounded, redacted, digest-sealed result (results/<id>.json) or the
// failure (failed/<id>.json, {"error": "CODE[:detail]"}).
//
// Every refusal throws aios::Error with an EXTERNAL_AGENT_* code spelled as the seed spells
// it (docs/errors.md, "External agent executor"). Only two codes carry a wire suffix, as in the
// seed: EXTERNAL_AGENT_PROCESS_FAILED ("<exit code>:<redacted stderr>") and
// EXTERNAL_AGENT_CREDENTIAL_ENV_EXPOSED ("<NAME>,<NAME>"); failure_text() builds the string.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aios/environment.hpp"
#include "aios/error.hpp"
#include "aios/gateway.hpp"
#include "aios/process.hpp"
#include "aios/sys.hpp"

namespace CLI {
class App;
}

namespace aios::executor {

inline constexpr std::string_view kRequestSchema = "aios.external-agent-runtime.request.v1";
inline constexpr std::string_view kResultSchema = "aios.external-agent-runtime.result.v1";
inline constexpr std::string_view kProfileSchema = "aios.external-agent-runtime.profile.v1";

inline constexpr std::size_t kMaxRequestBytes = 256 * 1024;
inline constexpr std::size_t kMaxOutputBytes = 128 * 1024;
inline constexpr std::size_t kMaxProfileBytes = 64 * 1024;
inline constexpr std::size_t kMaxCredentialBytes = 64 * 1024;
// Characters (code points) of a profile environment value, as the seed counts them.
inline constexpr std::size_t kMaxProfileEnvironmentValue = 4096;

inline const std::filesystem::path kDefaultProfileRoot = "/etc/aios/external-agent-runtime.d";
inline const std::filesystem::path kDefaultExchangeRoot = "/var/lib/aios-external-agent-executor";

// Where a profile's executable (and a node script) must resolve to: the seed's list.
std::vector<std::filesystem::path> default_executable_roots();

// --- Profiles ---------------------------------------------------------------------------------

enum class InputMode { stdin_text, stdin_json, file_json };
enum class OutputMode { stdout_text, stdout_json, file_json };

// One provider credential projected into the child's environment.
struct CredentialBinding {
  std::string env_name;    // only OPENAI_API_KEY
  std::string credential;  // file name under $CREDENTIALS_DIRECTORY
  std::string format;      // "dotenv" or "raw"
  std::string key;         // the dotenv key ("" for raw)
};

// The provider a profile reaches through the gateway (gateway.hpp), which alone holds its key.
struct Provider {
  gateway::Upstream upstream;    // with its ca_file
  CredentialBinding credential;  // env_name empty: the key goes to no environment
  // model_budget {default, ceiling}: a run whose request sets no budget gets the default, and
  // no run gets more than the ceiling (unset bounds: none).
  gateway::Budget default_budget;
  gateway::Budget ceiling;
};

// A writable state directory an agent needs (Hermes' HERMES_HOME), seeded from a root-owned
// template: copied into the run's private directory, named to the child by `env`, and removed
// with the run, never written back.
struct StateTemplate {
  std::filesystem::path from;
  std::string env;
};
inline constexpr std::size_t kMaxStateTemplateEntries = 4096;
inline constexpr std::uint64_t kMaxStateTemplateBytes = 64ULL << 20;

struct RuntimeProfile {
  std::string runtime;            // "hermes" or "openclaw"
  std::vector<std::string> argv;  // argv[0] resolved; a node script resolved too
  InputMode input_mode = InputMode::stdin_text;
  OutputMode output_mode = OutputMode::stdout_text;
  int timeout_seconds = 900;
  std::size_t max_output_bytes = kMaxOutputBytes;
  std::vector<std::pair<std::string, std::string>> environment;  // sorted by name
  std::vector<CredentialBinding> credential_env;                 // sorted by env name
  // Set: the child reaches this provider through the gateway and holds only a placeholder key
  // (no credential_env then).
  std::optional<Provider> provider;
  std::optional<StateTemplate> state_template;
  // The sandbox the child runs in (docs/executor.md, "Sandbox"): the only host:port
  // destinations it reaches (none: no network), what it sees read-only besides the system and
  // the executable roots, and its limits.
  std::vector<process::Destination> network;
  std::vector<std::filesystem::path> read_only_paths;
  process::Limits limits;
  // The CLI version the profile was validated against (optional): `aiosctl doctor` checks the
  // installed executable's --version answer names it, as the seed asks before activation.
  std::string validated_version{};
};

// Loads and validates <profile_root>/<runtime>.json by the seed's rules: schema, runtime, an
// allowlisted absolute executable (after resolving symlinks) under `executable_roots`, no
// shell (also: the executable itself is not a shell), no secret-looking argument, node only
// with a script under the roots and without -e/--eval/-p/--print/-r/--require, known modes,
// timeout 1..3600 s, output limit 1024..131072 bytes, a non-secret fixed environment, a
// provider-only credential mapping and the sandbox fields (network, read_only_paths, limits).
// Throws EXTERNAL_AGENT_* codes.
RuntimeProfile load_profile(std::string_view runtime, const std::filesystem::path& profile_root,
                            const std::vector<std::filesystem::path>& executable_roots);

// --- Requests -----------------------------------------------------------------------------------

// The normalized request ({schema, request_id, runtime, task_id, execution_digest, payload}) or
// EXTERNAL_AGENT_REQUEST_SCHEMA_INVALID, _REQUEST_ID_INVALID, _RUNTIME_UNSUPPORTED,
// _TASK_ID_INVALID, _EXECUTION_DIGEST_INVALID, _PAYLOAD_INVALID, _PAYLOAD_TOO_LARGE,
// _GOAL_REQUIRED, _INSTRUCTIONS_INVALID.
nlohmann::json validate_request(const nlohmann::json& value);

// The prompt text the seed renders from a payload, byte for byte.
std::string render_prompt(const nlohmann::json& payload);

// Python's json.dumps(value, ensure_ascii=False, sort_keys=True) with its default separators
// (", " and ": "), as the prompt shows success criteria and constraints.
std::string python_json_dumps(const nlohmann::json& value);

// --- Credentials --------------------------------------------------------------------------------

// NAME -> value for the profile's credential bindings, read from `credentials_directory` (the
// daemon's $CREDENTIALS_DIRECTORY; nullopt when unset). dotenv: blank lines and # comments
// skipped, an `export ` prefix allowed, one matching key, one pair of matching quotes removed.
// Throws EXTERNAL_AGENT_CREDENTIAL_DIRECTORY_MISSING, _DIRECTORY_INVALID, _FILE_INVALID,
// _TOO_LARGE, _READ_FAILED, _CONTENT_INVALID, _KEY_DUPLICATE, _KEY_MISSING, _VALUE_INVALID,
// _VALUE_TOO_LARGE. The error never carries the content.
std::vector<std::pair<std::string, std::string>> project_credentials(
    const RuntimeProfile& profile,
    const std::optional<std::filesystem::path>& credentials_directory);

// The provider's key, read by the same rules (and codes) as a credential_env binding.
std::string provider_key(const Provider& provider,
                         const std::optional<std::filesystem::path>& credentials_directory);

// The names in `environment` ("NAME=value" entries) that look like secrets (TOKEN, SECRET,
// PASSWORD, CREDENTIAL, AUTHORIZATION, PRIVATE_KEY, API_KEY in the upper-cased name) and have a
// value, sorted; CREDENTIALS_DIRECTORY is systemd metadata and never listed.
std::vector<std::string> secret_looking_variables(const std::vector<std::string>& environment);

// Throws EXTERNAL_AGENT_CREDENTIAL_ENV_EXPOSED (detail: the names joined by ",") when
// secret_looking_variables(environment) is not empty: the executor must not hold a secret in
// its own environment, where every child would inherit it by mistake.
void assert_no_secret_environment(const std::vector<std::string>& environment);

// --- Running one request -------------------------------------------------------------------------

struct ExecuteOptions {
  std::filesystem::path profile_root = kDefaultProfileRoot;
  std::vector<std::filesystem::path> executable_roots = default_executable_roots();
  std::optional<std::filesystem::path> credentials_directory;
  // Where the private per-request directories are made ($TMPDIR; PrivateTmp in the unit).
  std::filesystem::path temporary_root = "/tmp";
  // Called after validation, right before the child is spawned; serve mode records "started"
  // durably here. If it throws, the child is not spawned.
  std::function<void()> before_spawn;
  // Never visible inside a child's sandbox, wherever a visible path contains them (the
  // exchange root; serve mode adds it). The credential directory and temporary_root always are.
  std::vector<std::filesystem::path> hidden;
  // Required: what the run acts through (the spawner, the clock of start markers, randomness,
  // the fault plan); it must outlive every run. A main passes system_environment().
  const Environment* environment = nullptr;
};

// *options.environment; INTERNAL_ERROR when the caller gave none.
const Environment& environment_of(const ExecuteOptions& options);

// The sandbox of one child of `profile`: the system, the executable roots, the profile's
// read_only_paths and every existing absolute path its argv or environment names as written
// (a script, a configuration file) visible read-only; `writable` (the run's private directory, a
// worktree) read-write; the credential directory, temporary_root (other runs), options.hidden and
// the host's credential stores hidden; the profile's destinations and limits.
process::Sandbox child_sandbox(const RuntimeProfile& profile, const ExecuteOptions& options,
                               std::vector<std::filesystem::path> writable);

// With a profile that names a provider: the run's gateway (gateway.hpp) under `budget`, served
// at the upstream's host and port inside `spec`'s sandbox (set already), logging `log_fields`
// with each call; the child's environment gets OPENAI_BASE_URL (the gateway, with the upstream's
// prefix) and OPENAI_API_KEY (a placeholder for this run), `secrets` the provider's key (for
// redaction). Null without one. Throws the credential codes. It must outlive the run.
std::unique_ptr<gateway::Gateway> open_gateway(const RuntimeProfile& profile,
                                               const ExecuteOptions& options,
                                               gateway::Budget budget, nlohmann::json log_fields,
                                               process::Spec& spec,
                                               std::vector<std::string>& secrets);

// With a profile's state_template: copies it to <private_directory>/state and names that to the
// child in `spec`'s environment. Throws EXTERNAL_AGENT_STATE_TEMPLATE_INVALID (a link, a special
// file, more than 4096 entries or 64 MiB, or a template that cannot be read).
void seed_state(const RuntimeProfile& profile, const std::filesystem::path& private_directory,
                process::Spec& spec);

// Runs one request file and writes its result to `result_path` (atomic, 0640, fsync'd file and
// directory). Returns the result. Throws the EXTERNAL_AGENT_* code of the first refusal or
// failure, e.g. _REQUEST_FILE_INVALID, _REQUEST_TOO_LARGE, _REQUEST_JSON_INVALID, any profile,
// request or credential code, _INPUT/_OUTPUT_PLACEHOLDER_REQUIRED, _SPAWN_FAILED, _TIMEOUT,
// _PROCESS_FAILED, _OUTPUT_FILE_MISSING, _OUTPUT_TOO_LARGE, _OUTPUT_JSON_INVALID,
// _RESULT_WRITE_FAILED. The private directory is removed on every path.
nlohmann::json execute_request(const std::filesystem::path& request_path,
                               const std::filesystem::path& result_path,
                               const ExecuteOptions& options);

// The text a failure is reported with (failed/ files, one-request stderr): the code, plus
// ":" and the wire suffix for the two codes that carry one; redacted.
std::string failure_text(const Error& error);

// SHA-256 of the canonical result without its result_sha256 field.
std::string result_digest(const nlohmann::json& result);

// --- Sealing the exchange's answers -------------------------------------------------------------

// The key the executor seals every answer it writes to an exchange with (results/ and failed/)
// and the worker checks them with: HMAC-SHA256 under a root-provisioned secret no child sees, so
// an answer that anyone else wrote into the exchange is refused, never taken as done. The seal
// travels in a sidecar, `<answer>.mac`, so the result document stays the seed's byte for byte.
class ExchangeKey {
 public:
  // No key: serving and exchanging refuse with EXTERNAL_AGENT_EXCHANGE_KEY_INVALID.
  ExchangeKey() = default;
  // Reads a key file by read_secret_file's rules (a regular file, not a symlink, trimmed) and
  // needs at least 32 bytes; EXTERNAL_AGENT_EXCHANGE_KEY_INVALID otherwise.
  static ExchangeKey from_file(const std::filesystem::path& file);

  bool empty() const { return bytes_.empty(); }
  // Lower-case hex HMAC-SHA256 over the answer's directory name, file name and bytes.
  std::string seal(std::string_view directory, std::string_view name,
                   std::string_view content) const;

 private:
  std::string bytes_;
};

// --- Serving the exchange -----------------------------------------------------------------------

// Runs one request file (validation, profile, the sandboxed child) and returns its result
// without writing it: serve mode seals and writes it. Throws as execute_request does.
nlohmann::json run_request(const std::filesystem::path& request_path,
                           const ExecuteOptions& options);

// Runs one request file into its result; serve mode calls it for each request.
using RequestHandler = std::function<nlohmann::json(const std::filesystem::path& request,
                                                    const ExecuteOptions& options)>;

struct ServeOptions {
  std::filesystem::path root = kDefaultExchangeRoot;
  ExecuteOptions execute;
  unsigned concurrency = 1;  // requests run at once
  // run_request for the read-only runtime; the engineering broker serves its own.
  RequestHandler handler = run_request;
  // Seals every result and failure written; required.
  ExchangeKey key;
};

// Serves requests/ of an exchange directory: inotify (no polling) picks up requests renamed or
// written into requests/, up to `concurrency` run at once, each result or failure is written
// before its request is removed. At most once: a durable started/<name> marker is written
// (fsync) right before the child is spawned; at start, a request with a marker but no result or
// failure goes to failed/ as EXTERNAL_AGENT_OUTCOME_INDETERMINATE instead of running again.
// A malformed or symlinked request goes to failed/ and serving continues. An answer already in
// results/ or failed/ without the key's seal is not ours: it is logged
// (EXTERNAL_AGENT_RESULT_MAC_INVALID), removed, and the request is handled as if it were absent.
class Server {
 public:
  // Checks the exchange root (EXTERNAL_AGENT_EXCHANGE_UNAVAILABLE when it is missing, a symlink
  // or not a directory) and the key (EXTERNAL_AGENT_EXCHANGE_KEY_INVALID when empty), creates
  // requests/, results/, failed/ and started/ when missing, and settles requests left by a
  // previous run. Does not start serving.
  explicit Server(ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves until stop(); then drains: running requests finish (their children run to their
  // own end or timeout), queued ones stay in requests/ for the next start. Call once.
  void run();
  // Thread-safe and signal-free; makes run() drain and return.
  void stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// --- The worker side -----------------------------------------------------------------------------

// The worker's idempotent request/result exchange (seed: ExternalAgentExchange). Thread-safe
// for distinct request ids.
class Exchange {
 public:
  // Without a key, execute() refuses with EXTERNAL_AGENT_EXCHANGE_KEY_INVALID before writing.
  Exchange(std::filesystem::path root, ExchangeKey key);

  struct Call {
    std::string request_id;
    std::string runtime;
    std::string task_id;
    std::string execution_digest;
    nlohmann::json payload;
    std::chrono::milliseconds timeout = std::chrono::seconds(1800);
    // The envelope's model_budget (null: none), for the run's provider gateway.
    nlohmann::json model_budget = nullptr;
  };

  // Validates the request, reuses an existing result (a restart never runs an agent twice),
  // reports an existing failure, refuses a different request under the same id
  // (EXTERNAL_AGENT_REQUEST_ID_CONFLICT; an unreadable one: _EXISTING_REQUEST_INVALID),
  // otherwise writes the request atomically (0640, fsync) and waits (inotify, no polling) for
  // results/ or failed/. An answer must carry the key's seal (_RESULT_MAC_INVALID); a result
  // must be bound to the request (_RESULT_BINDING_INVALID) and carry its own digest
  // (_RESULT_DIGEST_INVALID); unreadable: _RESULT_INVALID. A failure is thrown with its recorded
  // code; no answer in time: EXTERNAL_AGENT_EXCHANGE_TIMEOUT.
  nlohmann::json execute(const Call& call) const;

 private:
  std::filesystem::path root_;
  ExchangeKey key_;
};

}  // namespace aios::executor

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
                               const executor::ExecuteOptions& execute);

// The same without writing the result (serve mode seals and writes it).
nlohmann::json run_request(const std::filesystem::path& request_path, const BrokerOptions& options,
                           const executor::ExecuteOptions& execute);

// Serve mode: the executor's Server (inotify, bounded concurrency, start markers, drain) with
// the broker's handler, every answer sealed under `key`.
// `execute` carries the environment.
executor::ServeOptions serve_options(const std::filesystem::path& root,
                                     const BrokerOptions& options, unsigned concurrency,
                                     executor::ExchangeKey key,
                                     const executor::ExecuteOptions& execute);

// The worker's side: writes the request into the broker's exchange and waits for the result,
// checking the executor's seal (EXTERNAL_AGENT_RESULT_MAC_INVALID), that it is bound to the
// request and carries its own digest (RUNTIME_BROKER_RESULT_INVALID). A recorded failure is
// thrown with its code.
nlohmann::json exchange(const std::filesystem::path& root, const nlohmann::json& request,
                        std::chrono::milliseconds timeout, const executor::ExchangeKey& key);

// The disposable self-test: a fresh repository with one commit, a worktree detached at it under a
// temporary worktree root, one request to `backend` asking it to change the file the fake
// model edits, and the checks that a file changed while HEAD and every ref stayed at the base.
// Returns {backend, base_oid, head_oid, changed_files, runtime_result}; throws
// RUNTIME_BROKER_SELF_TEST_FAILED (or the request's failure code). `execute` carries the
// environment.
nlohmann::json self_test(std::string_view backend, const BrokerOptions& options,
                         const executor::ExecuteOptions& execute);

}  // namespace aios::broker

namespace aios::executor {

// aios-external-agent-executor's command line, bound to `app` (both modes, the executor's and
// the broker's). Each accessor is what the options name; the environment supplies
// CREDENTIALS_DIRECTORY and TMPDIR.
class CommandLine {
 public:
  enum class Mode { serve, one_request, self_test };

  // The options it builds act through `environment`, which must outlive them.
  CommandLine(CLI::App& app, const Environment& environment);
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  Mode mode() const;
  bool broker() const;
  const std::string& request() const;
  const std::string& result() const;
  const std::string& self_test_backend() const;
  // The exchange: --root, or the broker's own default in broker mode.
  std::filesystem::path root() const;
  ExecuteOptions execute_options() const;
  broker::BrokerOptions broker_options() const;
  // Serve mode's options, sealed under the key file's key (EXTERNAL_AGENT_EXCHANGE_KEY_*).
  ServeOptions serve_options() const;

 private:
  struct Values;
  std::unique_ptr<Values> values_;
};

}  // namespace aios::executor
