// execute_request of the seed: one request file in, one sealed result file out.
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <system_error>

#include "aios/canonical.hpp"
#include "aios/executor.hpp"
#include "aios/files.hpp"
#include "aios/process.hpp"
#include "executor/exchange_core.hpp"
#include "executor/output.hpp"

namespace aios::executor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_request(const fs::path& request_path) {
  const auto read = files::read_file(request_path, kMaxRequestBytes);
  if (read.status == files::ReadStatus::too_large) {
    throw Error(ErrorCode::EXTERNAL_AGENT_REQUEST_TOO_LARGE);
  }
  if (read.status != files::ReadStatus::ok)
    throw Error(ErrorCode::EXTERNAL_AGENT_REQUEST_FILE_INVALID);
  const json value = parse_json(read.content);
  if (value.is_discarded()) throw Error(ErrorCode::EXTERNAL_AGENT_REQUEST_JSON_INVALID);
  return validate_request(value);
}

void replace_all(std::string& item, std::string_view marker, const std::string& replacement) {
  for (auto pos = item.find(marker); pos != std::string::npos;
       pos = item.find(marker, pos + replacement.size())) {
    item.replace(pos, marker.size(), replacement);
  }
}

bool mentions(const std::vector<std::string>& argv, std::string_view marker) {
  for (const auto& item : argv) {
    if (item.find(marker) != std::string::npos) return true;
  }
  return false;
}

// The seed's _argv_with_files: placeholders replaced in this order, so a prompt that contains
// "{input_json}" stays as written.
// {usage_json} is ours: where an agent that reports its own run (Hermes' --usage-file) writes.
std::vector<std::string> argv_with_files(const RuntimeProfile& profile, const fs::path& input,
                                         const fs::path& output, const fs::path& usage,
                                         const std::string& prompt) {
  std::vector<std::string> argv;
  for (auto item : profile.argv) {
    replace_all(item, "{input_json}", input.string());
    replace_all(item, "{output_json}", output.string());
    replace_all(item, "{usage_json}", usage.string());
    replace_all(item, "{prompt}", prompt);
    argv.push_back(std::move(item));
  }
  if (profile.input_mode == InputMode::file_json && !mentions(profile.argv, "{input_json}")) {
    throw Error(ErrorCode::EXTERNAL_AGENT_INPUT_PLACEHOLDER_REQUIRED);
  }
  if (profile.output_mode == OutputMode::file_json && !mentions(profile.argv, "{output_json}")) {
    throw Error(ErrorCode::EXTERNAL_AGENT_OUTPUT_PLACEHOLDER_REQUIRED);
  }
  // execve would end the item at the NUL, so the agent would run on a prompt cut short. Profile
  // items and our paths hold none, so only {prompt} can bring one.
  const auto holds_nul = [](const std::string& item) {
    return item.find('\0') != std::string::npos;
  };
  if (std::any_of(argv.begin(), argv.end(), holds_nul)) {
    throw Error(ErrorCode::EXTERNAL_AGENT_PROMPT_NUL_INVALID);
  }
  // execve refuses an item past MAX_ARG_STRLEN (32 pages with its NUL) with E2BIG: say why
  // before anything starts rather than fail the spawn.
  constexpr std::size_t kMaxArgumentBytes = 32 * 4096 - 1;
  const auto too_long = [](const std::string& item) { return item.size() > kMaxArgumentBytes; };
  if (std::any_of(argv.begin(), argv.end(), too_long)) {
    throw Error(ErrorCode::EXTERNAL_AGENT_PROMPT_TOO_LARGE);
  }
  return argv;
}

// A new file in the private directory; nobody else can have created it.
void write_private(const fs::path& path, std::string_view content) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!file.flush()) throw Error(ErrorCode::INTERNAL_ERROR, "cannot write the input file");
}

}  // namespace

std::string result_digest(const json& result) {
  json material = result;
  material.erase("result_sha256");
  return digest(material);
}

std::string failure_text(const Error& error) {
  std::string text = error.code();
  if (error.is_any({ErrorCode::EXTERNAL_AGENT_PROCESS_FAILED,
                    ErrorCode::EXTERNAL_AGENT_CREDENTIAL_ENV_EXPOSED,
                    ErrorCode::EXTERNAL_AGENT_MODEL_BUDGET_EXHAUSTED,
                    ErrorCode::EXTERNAL_AGENT_REPORTED_FAILURE})) {
    text += ":" + error.detail();
  }
  return sanitize_text(text);
}

std::unique_ptr<gateway::Gateway> open_gateway(const RuntimeProfile& profile,
                                               const ExecuteOptions& options,
                                               gateway::Budget budget, json log_fields,
                                               process::Spec& spec,
                                               std::vector<std::string>& secrets) {
  if (!profile.provider) return nullptr;
  const auto& upstream = profile.provider->upstream;
  std::string key = provider_key(*profile.provider, options.credentials_directory);
  secrets.push_back(key);
  // Agent CLIs refuse an empty key; this one opens nothing but this run's gateway.
  const std::string placeholder = "aios-run-" + environment_of(options).random.hex(16);
  const auto& provider = *profile.provider;
  const auto bounds =
      (budget.bounded() ? budget : provider.default_budget).within(provider.ceiling);
  auto gate = std::make_unique<gateway::Gateway>(upstream, std::move(key), placeholder, bounds,
                                                 std::move(log_fields));
  spec.sandbox->served.push_back(
      {{upstream.host, upstream.port},
       [gate = gate.get()](process::Fd listener) { gate->listen(std::move(listener)); }});
  spec.environment.push_back("OPENAI_BASE_URL=http://" + upstream.host + ":" +
                             std::to_string(upstream.port) + upstream.prefix);
  spec.environment.push_back("OPENAI_API_KEY=" + placeholder);
  return gate;
}

namespace {

// Runs the agent in its private directory and returns the sealed result; the directory is
// gone when this returns, so a visible result always means the run is entirely over.
json run_agent(const json& request, const RuntimeProfile& profile, const ExecuteOptions& options) {
  const std::string& runtime = request["runtime"].get_ref<const std::string&>();
  files::PrivateDirectory temporary(options.temporary_root, "aios-" + runtime + "-");
  const fs::path home = temporary.path() / "home";
  if (::mkdir(home.c_str(), 0700) != 0) {
    throw Error(ErrorCode::INTERNAL_ERROR, "cannot create the private home directory");
  }
  const fs::path input_path = temporary.path() / "input.json";
  const fs::path output_path = temporary.path() / "output.json";
  const fs::path usage_path = temporary.path() / "usage.json";
  const json& payload = request["payload"];
  const std::string payload_json = canonical_json(payload);
  write_private(input_path, payload_json);
  const std::string prompt = render_prompt(payload);

  process::Spec spec;
  spec.argv = argv_with_files(profile, input_path, output_path, usage_path, prompt);
  spec.working_directory = temporary.path();
  spec.timeout = std::chrono::seconds(profile.timeout_seconds);
  if (profile.input_mode == InputMode::stdin_json) spec.stdin_data = payload_json;
  if (profile.input_mode == InputMode::stdin_text) spec.stdin_data = prompt;
  spec.sandbox = child_sandbox(profile, options, {temporary.path()});
  spec.environment = {"PATH=/usr/bin:/usr/local/bin:/bin", "LC_ALL=C.UTF-8", "LANG=C.UTF-8",
                      "HOME=" + home.string(), "NO_COLOR=1"};
  for (const auto& [name, value] : profile.environment)
    spec.environment.push_back(name + "=" + value);
  seed_state(profile, temporary.path(), spec);
  std::vector<std::string> secrets;
  for (const auto& [name, value] : project_credentials(profile, options.credentials_directory)) {
    spec.environment.push_back(name + "=" + value);
    secrets.push_back(value);
  }
  const auto& environment = environment_of(options);
  gateway::Budget budget;
  if (const auto bounds = request.find("model_budget"); bounds != request.end()) {
    budget = gateway::parse_budget(*bounds).value_or(gateway::Budget{});
  }
  const auto gateway = open_gateway(profile, options, budget,
                                    {{"request_id", request["request_id"]},
                                     {"task_id", request["task_id"]},
                                     {"runtime", runtime}},
                                    spec, secrets);

  // Keeping twice the limit at each end reproduces the seed's bounding of the whole stream for
  // any output up to four times the limit, at a bounded cost for a runaway child.
  StreamCapture out(2 * profile.max_output_bytes);
  StreamCapture err(2 * profile.max_output_bytes);
  spec.on_stdout = [&out](std::string_view chunk) { out.feed(chunk); };
  spec.on_stderr = [&err](std::string_view chunk) { err.feed(chunk); };

  if (options.before_spawn) options.before_spawn();
  environment.faults.point("executor_start_marked");
  process::Outcome outcome;
  try {
    outcome = environment.spawner.run(spec);
  } catch (const std::system_error& error) {
    throw Error(ErrorCode::EXTERNAL_AGENT_SPAWN_FAILED, error.what());
  }
  out.finish();
  err.finish();
  if (outcome.timed_out) throw Error(ErrorCode::EXTERNAL_AGENT_TIMEOUT);
  if (outcome.exceeded) {
    // In kBounds' order: memory, processes, disk.
    static constexpr std::array<ErrorCode, 3> kCodes = {ErrorCode::EXTERNAL_AGENT_MEMORY_LIMIT,
                                                        ErrorCode::EXTERNAL_AGENT_PROCESS_LIMIT,
                                                        ErrorCode::EXTERNAL_AGENT_DISK_LIMIT};
    throw Error(kCodes[static_cast<std::size_t>(*outcome.exceeded)]);
  }
  if (gateway && gateway->budget_exhausted()) {
    throw Error(ErrorCode::EXTERNAL_AGENT_MODEL_BUDGET_EXHAUSTED,
                canonical_json(gateway->usage().to_json()));
  }
  if (outcome.exit_code != 0) {
    const auto stderr_text = redact_values(utf8::decode_replace(err.text()), secrets);
    throw Error(ErrorCode::EXTERNAL_AGENT_PROCESS_FAILED,
                std::to_string(outcome.exit_code) + ":" + bounded_text(stderr_text, 2048));
  }
  // Exit 0 is not success for an agent that reports its run: Hermes answers a provider it
  // cannot reach with exit 0 and the error as its "answer".
  std::optional<gateway::Usage> reported;
  if (mentions(profile.argv, "{usage_json}")) {
    const auto report = read_usage_report(usage_path);
    if (report.failed) {
      const auto stdout_text = redact_values(utf8::decode_replace(out.text()), secrets);
      throw Error(ErrorCode::EXTERNAL_AGENT_REPORTED_FAILURE, bounded_text(stdout_text, 2048));
    }
    reported = report.usage;
  }

  const auto output = parse_output(profile, utf8::decode_replace(out.text()), output_path, secrets);
  json result = {
      {"schema", kResultSchema},
      {"request_id", request["request_id"]},
      {"request_sha256", digest(request)},
      {"runtime", runtime},
      {"task_id", request["task_id"]},
      {"execution_digest", request["execution_digest"]},
      {"exit_code", outcome.exit_code},
      {"duration_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(outcome.elapsed).count()},
      {"output_text", output.text},
      {"output_sha256", sha256_hex(output.text)},
      {"stderr_sha256", err.sha256()},
      {"credential_material_exposed", false},
      {"control_plane_access_granted", false},
  };
  if (output.json) result["output_json"] = *output.json;
  // The gateway's counts are what passed it; an agent's own report stands only without one.
  if (gateway) {
    result["model_usage"] = gateway->usage().to_json();
  } else if (reported) {
    result["model_usage"] = reported->to_json();
  }
  result["result_sha256"] = digest(result);
  return result;
}

}  // namespace

json run_request(const fs::path& request_path, const ExecuteOptions& options) {
  const json request = read_request(request_path);
  environment_of(options).faults.point("executor_request_accepted");
  const RuntimeProfile profile = load_profile(request["runtime"].get<std::string>(),
                                              options.profile_root, options.executable_roots);
  // The request is never the child's to see (serve mode hides the whole exchange root besides).
  ExecuteOptions confined = options;
  confined.hidden.push_back(fs::absolute(request_path));
  return run_agent(request, profile, confined);
}

json execute_request(const fs::path& request_path, const fs::path& result_path,
                     const ExecuteOptions& options) {
  ExecuteOptions confined = options;
  confined.hidden.push_back(fs::absolute(result_path));
  const json result = run_request(request_path, confined);
  write_result(result_path, result, nullptr, environment_of(options).faults);
  return result;
}

const Environment& environment_of(const ExecuteOptions& options) {
  if (options.environment == nullptr) {
    throw Error(ErrorCode::INTERNAL_ERROR, "ExecuteOptions without an environment");
  }
  return *options.environment;
}

void write_result(const fs::path& result_path, const json& result, const ExchangeKey* key,
                  const FaultPlan& faults) {
  try {
    const fs::path target = fs::absolute(result_path);
    fs::create_directories(target.parent_path());
    const std::string content = canonical_json(result) + "\n";
    if (key != nullptr) {
      write_answer(target, content, *key);
    } else {
      files::write_atomic(target, content);
    }
  } catch (const std::exception& error) {
    throw Error(ErrorCode::EXTERNAL_AGENT_RESULT_WRITE_FAILED, error.what());
  }
  faults.point("executor_outcome_written");
}

}  // namespace aios::executor
