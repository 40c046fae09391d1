// One engineering request: the backend configuration, the worktree check, the backend run in
// the worktree with only the provider credential, and the sealed result.
#include <sys/stat.h>

#include <array>
#include <set>
#include <system_error>

#include "aios/canonical.hpp"
#include "aios/executor.hpp"
#include "aios/files.hpp"
#include "aios/process.hpp"
#include "executor/exchange_core.hpp"
#include "executor/output.hpp"
#include "executor/profile_rules.hpp"

namespace aios::broker {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

[[noreturn]] void config_invalid(const std::string& detail) {
  throw Error(ErrorCode::RUNTIME_BROKER_BACKEND_CONFIG_INVALID, detail);
}

json read_request(const fs::path& path) {
  const auto read = files::read_file(path, executor::kMaxRequestBytes);
  if (read.status != files::ReadStatus::ok) {
    throw Error(ErrorCode::RUNTIME_BROKER_REQUEST_INVALID, "unreadable request file");
  }
  const json value = parse_json(read.content);
  if (value.is_discarded()) throw Error(ErrorCode::RUNTIME_BROKER_REQUEST_INVALID, "not JSON");
  return validate_request(value);
}

// The worktree must be a real directory (no symlink anywhere on its path) under the root the
// worker prepares worktrees in, so a request can never point a backend at another directory.
fs::path checked_worktree(const json& request, const fs::path& worktree_root) {
  const fs::path worktree = request["worktree"].get<std::string>();
  std::error_code error;
  const fs::path root = fs::canonical(worktree_root, error);
  if (error) throw Error(ErrorCode::RUNTIME_BROKER_WORKTREE_INVALID, "worktree root missing");
  const fs::path resolved = fs::canonical(worktree, error);
  struct stat info {};
  if (error || resolved != worktree || ::lstat(worktree.c_str(), &info) != 0 ||
      !S_ISDIR(info.st_mode)) {
    throw Error(ErrorCode::RUNTIME_BROKER_WORKTREE_INVALID, "not a real directory");
  }
  const auto relative = resolved.lexically_relative(root);
  if (relative.empty() || *relative.begin() == ".." || relative == ".") {
    throw Error(ErrorCode::RUNTIME_BROKER_WORKTREE_INVALID, "outside the worktree root");
  }
  return resolved;
}

void replace_all(std::string& item, std::string_view marker, const std::string& replacement) {
  for (auto pos = item.find(marker); pos != std::string::npos;
       pos = item.find(marker, pos + replacement.size())) {
    item.replace(pos, marker.size(), replacement);
  }
}

json runtime_result_of(Protocol protocol, std::string_view text) {
  switch (protocol) {
    case Protocol::runtime_result:
      return parse_runtime_result(text);
    case Protocol::openclaw_agent_exec:
      return openclaw_runtime_result(text);
    case Protocol::codex_exec:
      return codex_runtime_result(text);
  }
  throw Error(ErrorCode::INTERNAL_ERROR, "unknown protocol");
}

json run_backend(const json& request, const Backend& backend, const BrokerOptions& options,
                 const executor::ExecuteOptions& execute) {
  const fs::path worktree = checked_worktree(request, options.worktree_root);
  const auto& profile = backend.profile;
  files::PrivateDirectory temporary(options.temporary_root, "aios-broker-" + profile.runtime + "-");
  for (const char* sub : {"home", "tmp"}) {
    if (::mkdir((temporary.path() / sub).c_str(), 0700) != 0) {
      throw Error(ErrorCode::INTERNAL_ERROR, "cannot create the private directories");
    }
  }
  process::Spec spec;
  for (auto item : profile.argv) {
    replace_all(item, "{worktree}", worktree.string());
    replace_all(item, "{timeout_seconds}", std::to_string(profile.timeout_seconds));
    spec.argv.push_back(std::move(item));
  }
  spec.working_directory = worktree;
  spec.timeout = std::chrono::seconds(profile.timeout_seconds);
  json seen = request;
  seen.erase("model_budget");  // the backend's request is the seed's runtime-request.v1
  spec.stdin_data = backend.protocol == Protocol::runtime_result ? canonical_json(seen)
                                                                 : render_agent_prompt(seen);
  const fs::path home = temporary.path() / "home";
  // git in the backend stops at the worktree and never looks into the directories above it.
  spec.environment = {"PATH=/usr/bin:/usr/local/bin:/bin",
                      "LC_ALL=C.UTF-8",
                      "LANG=C.UTF-8",
                      "HOME=" + home.string(),
                      "TMPDIR=" + (temporary.path() / "tmp").string(),
                      "XDG_CACHE_HOME=" + (home / ".cache").string(),
                      "GIT_CEILING_DIRECTORIES=" + worktree.parent_path().string(),
                      "NO_COLOR=1"};
  for (const auto& [name, value] : profile.environment) {
    spec.environment.push_back(name + "=" + value);
  }
  executor::seed_state(profile, temporary.path(), spec);
  std::vector<std::string> secrets;
  for (const auto& [name, value] :
       executor::project_credentials(profile, options.credentials_directory)) {
    spec.environment.push_back(name + "=" + value);
    secrets.push_back(value);
  }
  std::string out;
  bool too_large = false;
  executor::StreamCapture err(4096);
  spec.on_stdout = [&](std::string_view chunk) {
    if (out.size() + chunk.size() > profile.max_output_bytes) {
      too_large = true;
      return;
    }
    out.append(chunk);
  };
  spec.on_stderr = [&err](std::string_view chunk) { err.feed(chunk); };
  spec.sandbox = executor::child_sandbox(profile, execute, {worktree, temporary.path()});
  gateway::Budget budget;
  if (const auto bounds = request.find("model_budget"); bounds != request.end()) {
    budget = gateway::parse_budget(*bounds).value_or(gateway::Budget{});
  }
  const auto gateway = executor::open_gateway(profile, execute, budget,
                                              {{"request_id", request["request_id"]},
                                               {"task_id", request["task_id"]},
                                               {"backend", profile.runtime}},
                                              spec, secrets);

  if (execute.before_spawn) execute.before_spawn();
  process::Outcome outcome;
  try {
    outcome = executor::environment_of(execute).spawner.run(spec);
  } catch (const std::system_error& error) {
    throw Error(ErrorCode::RUNTIME_BROKER_SPAWN_FAILED, error.what());
  }
  err.finish();
  if (outcome.timed_out) throw Error(ErrorCode::RUNTIME_BROKER_BACKEND_TIMEOUT);
  if (outcome.exceeded) {
    // In kBounds' order: memory, processes, disk.
    static constexpr std::array<ErrorCode, 3> kCodes = {
        ErrorCode::RUNTIME_BROKER_BACKEND_MEMORY_LIMIT,
        ErrorCode::RUNTIME_BROKER_BACKEND_PROCESS_LIMIT,
        ErrorCode::RUNTIME_BROKER_BACKEND_DISK_LIMIT};
    throw Error(kCodes[static_cast<std::size_t>(*outcome.exceeded)]);
  }
  if (gateway && gateway->budget_exhausted()) {
    throw Error(ErrorCode::EXTERNAL_AGENT_MODEL_BUDGET_EXHAUSTED,
                canonical_json(gateway->usage().to_json()));
  }
  if (outcome.exit_code != 0) {
    const auto text = executor::redact_values(utf8::decode_replace(err.text()), secrets);
    throw Error(ErrorCode::RUNTIME_BROKER_BACKEND_FAILED,
                std::to_string(outcome.exit_code) + ":" + bounded_text(text, 2048));
  }
  if (too_large) throw Error(ErrorCode::RUNTIME_BROKER_OUTPUT_TOO_LARGE);
  const std::string text = executor::redact_values(utf8::decode_replace(out), secrets);
  const json runtime_result = runtime_result_of(backend.protocol, text);
  json result = {
      {"schema", kBrokerResultSchema},
      {"request_id", request["request_id"]},
      {"request_sha256", digest(request)},
      {"backend", profile.runtime},
      {"task_id", request["task_id"]},
      {"execution_digest", request["execution_digest"]},
      {"exit_code", outcome.exit_code},
      {"duration_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(outcome.elapsed).count()},
      {"stderr_sha256", err.sha256()},
      {"runtime_result", runtime_result},
      {"credential_material_exposed", false},
  };
  if (gateway) result["model_usage"] = gateway->usage().to_json();
  result["result_sha256"] = executor::result_digest(result);
  return result;
}

}  // namespace

Backend load_backend(std::string_view name, const fs::path& config_root,
                     const std::vector<fs::path>& executable_roots) {
  const std::string backend_name(name);
  if (!is_backend_name(backend_name)) throw Error(ErrorCode::RUNTIME_BROKER_BACKEND_UNSUPPORTED);
  if (files::is_symlink(config_root)) {
    throw Error(ErrorCode::RUNTIME_BROKER_BACKEND_CONFIG_UNAVAILABLE, "config root is a symlink");
  }
  const auto read = files::read_file(config_root / ("agent-runtime-" + backend_name + ".conf"),
                                     executor::kMaxProfileBytes);
  if (read.status != files::ReadStatus::ok) {
    throw Error(ErrorCode::RUNTIME_BROKER_BACKEND_CONFIG_UNAVAILABLE, backend_name);
  }
  using Ordered = nlohmann::ordered_json;
  const Ordered value = parse_json_ordered(read.content);
  if (!value.is_object() || value.value("schema", Ordered()) != Ordered(kBackendSchema)) {
    config_invalid("schema");
  }
  if (value.value("backend", Ordered()) != Ordered(backend_name)) config_invalid("backend");
  for (const auto& [key, item] : value.items()) {
    static const std::set<std::string> kKeys = {
        "schema",           "backend",     "protocol",       "argv",    "timeout_seconds",
        "max_output_bytes", "environment", "credential_env", "network", "read_only_paths",
        "limits",           "provider",    "state_template"};
    if (!kKeys.contains(key)) config_invalid("unknown field " + key);
  }
  Backend backend;
  backend.profile.runtime = backend_name;
  executor::load_profile_argv(value, executable_roots, backend.profile);
  const auto protocol = value.value("protocol", Ordered("runtime-result"));
  if (protocol == "runtime-result") {
    backend.protocol = Protocol::runtime_result;
  } else if (protocol == "openclaw-agent-exec") {
    backend.protocol = Protocol::openclaw_agent_exec;
  } else if (protocol == "codex-exec") {
    backend.protocol = Protocol::codex_exec;
  } else {
    config_invalid("protocol");
  }
  executor::load_profile_limits(value, backend.profile);
  return backend;
}

json run_request(const fs::path& request_path, const BrokerOptions& options,
                 const executor::ExecuteOptions& execute) {
  const json request = read_request(request_path);
  const Backend backend = load_backend(request["backend"].get<std::string>(), options.config_root,
                                       options.executable_roots);
  // The backend sees its own worktree and private directory; the other worktrees, the exchange
  // and the credentials are not there at all.
  executor::ExecuteOptions confined = execute;
  confined.executable_roots = options.executable_roots;
  confined.credentials_directory = options.credentials_directory;
  confined.temporary_root = options.temporary_root;
  confined.hidden.push_back(options.worktree_root);
  confined.hidden.push_back(fs::absolute(request_path));
  return run_backend(request, backend, options, confined);
}

json execute_request(const fs::path& request_path, const fs::path& result_path,
                     const BrokerOptions& options, const executor::ExecuteOptions& execute) {
  executor::ExecuteOptions confined = execute;
  confined.hidden.push_back(fs::absolute(result_path));
  const json result = run_request(request_path, options, confined);
  executor::write_result(result_path, result, nullptr, executor::environment_of(execute).faults);
  return result;
}

executor::ServeOptions serve_options(const fs::path& root, const BrokerOptions& options,
                                     unsigned concurrency, executor::ExchangeKey key,
                                     const executor::ExecuteOptions& execute) {
  executor::ServeOptions serve;
  serve.root = root;
  serve.concurrency = concurrency;
  serve.execute = execute;
  serve.execute.credentials_directory = options.credentials_directory;
  serve.execute.temporary_root = options.temporary_root;
  serve.handler = [options](const fs::path& request, const executor::ExecuteOptions& run) {
    return run_request(request, options, run);
  };
  serve.key = std::move(key);
  return serve;
}

json exchange(const fs::path& root, const json& request, std::chrono::milliseconds timeout,
              const executor::ExchangeKey& key) {
  const json checked = validate_request(request);
  return executor::exchange_request(
      root, checked["request_id"], checked, timeout, key,
      [&checked](const std::string& content, const std::string& request_sha) {
        json value = parse_json(content);
        const auto field = [&](const char* name) { return value.value(name, json()); };
        if (value.is_discarded() || !value.is_object() ||
            field("schema") != json(kBrokerResultSchema) ||
            field("request_id") != checked["request_id"] ||
            field("request_sha256") != json(request_sha) ||
            field("backend") != checked["backend"] || field("task_id") != checked["task_id"] ||
            field("execution_digest") != checked["execution_digest"] ||
            field("credential_material_exposed") != false) {
          throw Error(ErrorCode::RUNTIME_BROKER_RESULT_INVALID, "binding");
        }
        const json declared = field("result_sha256");
        if (!declared.is_string() || !constant_time_equal(declared.get_ref<const std::string&>(),
                                                          executor::result_digest(value))) {
          throw Error(ErrorCode::RUNTIME_BROKER_RESULT_INVALID, "digest");
        }
        // Re-read as a backend's answer: a result file is trusted no further than stdout was.
        value["runtime_result"] = parse_runtime_result(canonical_json(field("runtime_result")));
        return value;
      });
}

}  // namespace aios::broker
