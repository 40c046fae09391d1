// RuntimeProfile.load of the seed: the root-owned profile decides executable, argv, modes,
// limits, environment and credential mapping; nothing here comes from a task.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/executor.hpp"
#include "aios/files.hpp"
#include "executor/profile_rules.hpp"
#include "executor/rules.hpp"

namespace aios::executor {
namespace {

namespace fs = std::filesystem;
// Ordered, so environment and credential_env entries are checked in document order as the
// seed's dict iteration checks them, and the first bad entry's code wins.
using Document = nlohmann::ordered_json;

using envelope::fail;

bool under_roots(const fs::path& resolved, const std::vector<fs::path>& roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const fs::path& root) {
    auto relative = resolved.lexically_relative(root);
    return !relative.empty() && *relative.begin() != "..";
  });
}

struct PathCodes {
  ErrorCode absolute_required;
  ErrorCode invalid;
  ErrorCode root_deny;
};

// The seed's _safe_executable / _safe_profile_script: absolute, resolves (symlinks followed,
// strictly) to a regular file (executable, for the executable) under an allowed root.
std::string safe_path(const Document& value, const std::vector<fs::path>& roots, PathCodes codes,
                      bool must_execute) {
  if (!value.is_string()) fail(codes.absolute_required);
  const auto& text = value.get_ref<const std::string&>();
  if (text.empty() || text.front() != '/') fail(codes.absolute_required);
  std::error_code error;
  const fs::path resolved = fs::canonical(text, error);
  if (error || !fs::is_regular_file(resolved, error) || error) fail(codes.invalid);
  if (must_execute && ::access(resolved.c_str(), X_OK) != 0) fail(codes.invalid);
  if (!under_roots(resolved, roots)) fail(codes.root_deny);
  return resolved.string();
}

// Python's int() of a profile number: integers as they are, floats truncated, numeric strings
// parsed; false, 0, "" and null mean "use the default".
std::optional<long long> integer_field(const Document& value, long long fallback) {
  if (!envelope::python_truthy(value)) return fallback;
  if (value.is_boolean()) return 1;
  if (value.is_number_integer()) return value.get<long long>();
  if (value.is_number_unsigned()) return std::nullopt;
  if (value.is_number_float()) {
    const double number = std::trunc(value.get<double>());
    if (!std::isfinite(number) || std::abs(number) > 1e15) return std::nullopt;
    return static_cast<long long>(number);
  }
  if (value.is_string()) return python_int(value.get_ref<const std::string&>());
  return std::nullopt;
}

// str(value or default) for a mode field: a non-string can never name a mode.
std::optional<std::string> mode_field(const Document& value, std::string_view fallback) {
  if (!envelope::python_truthy(value)) return std::string(fallback);
  if (!value.is_string()) return std::nullopt;
  return value.get<std::string>();
}

bool is_shell(const fs::path& executable) {
  static constexpr std::array<std::string_view, 9> kShells = {
      "sh", "bash", "dash", "ksh", "zsh", "csh", "tcsh", "fish", "busybox"};
  const auto name = executable.filename().string();
  return std::find(kShells.begin(), kShells.end(), name) != kShells.end();
}

std::vector<std::string> profile_argv(const Document& argv, const std::vector<fs::path>& roots) {
  const bool shaped = argv.is_array() && !argv.empty() &&
                      std::all_of(argv.begin(), argv.end(), [](const Document& item) {
                        return item.is_string() && !item.get_ref<const std::string&>().empty() &&
                               item.get_ref<const std::string&>().find('\0') == std::string::npos;
                      });
  if (!shaped) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_ARGV_INVALID);
  std::vector<std::string> normalized;
  normalized.push_back(safe_path(argv.front(), roots,
                                 {ErrorCode::EXTERNAL_AGENT_EXECUTABLE_ABSOLUTE_REQUIRED,
                                  ErrorCode::EXTERNAL_AGENT_EXECUTABLE_INVALID,
                                  ErrorCode::EXTERNAL_AGENT_EXECUTABLE_ROOT_DENY},
                                 true));
  for (std::size_t i = 1; i < argv.size(); ++i) normalized.push_back(argv[i].get<std::string>());

  const auto any_of_args = [&](std::initializer_list<std::string_view> words) {
    return std::any_of(normalized.begin() + 1, normalized.end(), [&](const std::string& item) {
      return std::find(words.begin(), words.end(), item) != words.end();
    });
  };
  // The seed refuses shell words among the arguments; a shell as the executable is refused
  // too, since "never a shell" must not depend on how its script is passed.
  if (any_of_args({"sh", "bash", "-c", "--command"}) || is_shell(normalized.front())) {
    fail(ErrorCode::EXTERNAL_AGENT_SHELL_MODE_DENY);
  }
  std::string joined;
  for (const auto& item : normalized) joined += (joined.empty() ? "" : " ") + item;
  if (rules::has_secret_assignment(joined)) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_SECRET_ARG_DENY);

  const auto name = fs::path(normalized.front()).filename();
  if (name == "node" || name == "nodejs") {
    if (normalized.size() < 2 || normalized[1].front() == '-') {
      fail(ErrorCode::EXTERNAL_AGENT_NODE_SCRIPT_REQUIRED);
    }
    normalized[1] = safe_path(
        normalized[1], roots,
        {ErrorCode::EXTERNAL_AGENT_SCRIPT_ABSOLUTE_REQUIRED,
         ErrorCode::EXTERNAL_AGENT_SCRIPT_INVALID, ErrorCode::EXTERNAL_AGENT_SCRIPT_ROOT_DENY},
        false);
    if (any_of_args({"-e", "--eval", "-p", "--print", "-r", "--require"})) {
      fail(ErrorCode::EXTERNAL_AGENT_NODE_CODE_MODE_DENY);
    }
  }
  return normalized;
}

std::vector<std::pair<std::string, std::string>> profile_environment(const Document& value) {
  std::vector<std::pair<std::string, std::string>> result;
  if (value.is_null()) return result;
  if (!value.is_object()) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_ENVIRONMENT_INVALID);
  static constexpr std::array<std::string_view, 12> kFixed = {
      "PATH",       "HOME",         "NO_COLOR", "LC_ALL", "LANG", "LD_PRELOAD", "LD_LIBRARY_PATH",
      "PYTHONPATH", "NODE_OPTIONS", "BASH_ENV", "SHELL",  "IFS"};
  for (const auto& [name, item] : value.items()) {
    if (!rules::is_env_name(name)) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_ENVIRONMENT_NAME_INVALID);
    if (std::find(kFixed.begin(), kFixed.end(), name) != kFixed.end()) {
      fail(ErrorCode::EXTERNAL_AGENT_PROFILE_ENVIRONMENT_NAME_DENY);
    }
    if (rules::has_secret_marker(name)) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_SECRET_ENV_DENY);
    if (!item.is_string() || item.get_ref<const std::string&>().find_first_of(
                                 std::string_view("\0\n\r", 3)) != std::string::npos) {
      fail(ErrorCode::EXTERNAL_AGENT_PROFILE_ENVIRONMENT_VALUE_INVALID);
    }
    if (count_code_points(item.get_ref<const std::string&>()) > kMaxProfileEnvironmentValue) {
      fail(ErrorCode::EXTERNAL_AGENT_PROFILE_ENVIRONMENT_VALUE_TOO_LARGE);
    }
    result.emplace_back(name, item.get<std::string>());
  }
  std::sort(result.begin(), result.end());
  return result;
}

// One credential_env entry's spec (also a provider's credential) by the seed's rules.
CredentialBinding credential_binding(std::string env_name, const Document& spec) {
  if (!spec.is_object()) fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_SPEC_INVALID);
  const Document credential = spec.value("credential", Document());
  const Document key = spec.value("key", Document());
  if (!credential.is_string() || !rules::is_credential_name(credential.get<std::string>())) {
    fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_NAME_INVALID);
  }
  const auto format = mode_field(spec.value("format", Document()), "dotenv");
  if (!format || (*format != "dotenv" && *format != "raw")) {
    fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_FORMAT_INVALID);
  }
  if (*format == "dotenv") {
    if (!key.is_string() || !rules::is_env_name(key.get<std::string>())) {
      fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_KEY_INVALID);
    }
  } else if (!key.is_null()) {
    fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_KEY_UNEXPECTED);
  }
  return {std::move(env_name), credential.get<std::string>(), *format,
          key.is_string() ? key.get<std::string>() : std::string()};
}

std::vector<CredentialBinding> profile_credentials(const Document& value) {
  std::vector<CredentialBinding> result;
  if (value.is_null()) return result;
  if (!value.is_object()) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_CREDENTIAL_ENV_INVALID);
  for (const auto& [env_name, spec] : value.items()) {
    // Only the provider key may be projected; it also passes the environment-name pattern.
    if (env_name != "OPENAI_API_KEY") fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_ENV_NAME_DENY);
    result.push_back(credential_binding(env_name, spec));
  }
  std::sort(result.begin(), result.end(),
            [](const auto& a, const auto& b) { return a.env_name < b.env_name; });
  return result;
}

// model_budget {default?, ceiling?}, each a budget as a request's.
void provider_budgets(const Document& value, Provider& provider) {
  if (!value.is_object()) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID);
  for (const auto& [name, item] : value.items()) {
    const auto budget = gateway::parse_budget(nlohmann::json(item));
    if (!budget || (name != "default" && name != "ceiling")) {
      fail(ErrorCode::EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID);
    }
    (name == "default" ? provider.default_budget : provider.ceiling) = *budget;
  }
}

// {upstream, credential[, ca_file][, model_budget]}: nothing else, so a misspelt key is no
// silent default.
std::optional<Provider> profile_provider(const Document& value) {
  if (value.is_null()) return std::nullopt;
  if (!value.is_object()) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID);
  for (const auto& [name, item] : value.items()) {
    if (name != "upstream" && name != "credential" && name != "ca_file" && name != "model_budget") {
      fail(ErrorCode::EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID);
    }
  }
  const Document upstream = value.value("upstream", Document());
  auto parsed =
      upstream.is_string() ? gateway::parse_upstream(upstream.get<std::string>()) : std::nullopt;
  if (!parsed) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID);
  if (const auto ca = value.find("ca_file"); ca != value.end()) {
    std::error_code error;
    if (!ca->is_string() || !parsed->https || ca->get_ref<const std::string&>().empty() ||
        ca->get_ref<const std::string&>().front() != '/' ||
        !fs::is_regular_file(ca->get<std::string>(), error)) {
      fail(ErrorCode::EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID);
    }
    parsed->ca_file = ca->get<std::string>();
  }
  const auto credential = value.find("credential");
  if (credential == value.end()) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID);
  Provider provider{std::move(*parsed), credential_binding("", *credential), {}, {}};
  if (const auto budgets = value.find("model_budget"); budgets != value.end()) {
    provider_budgets(*budgets, provider);
  }
  return provider;
}

std::vector<process::Destination> profile_network(const Document& value) {
  std::vector<process::Destination> result;
  if (value.is_null()) return result;
  if (!value.is_array() || value.size() > 16)
    fail(ErrorCode::EXTERNAL_AGENT_PROFILE_NETWORK_INVALID);
  for (const auto& item : value) {
    const auto destination = item.is_string()
                                 ? process::parse_destination(item.get_ref<const std::string&>())
                                 : std::nullopt;
    if (!destination) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_NETWORK_INVALID);
    result.push_back(*destination);
  }
  return result;
}

// {from: an absolute real directory, env: a variable the profile does not set otherwise}.
std::optional<StateTemplate> profile_state_template(const Document& value,
                                                    const RuntimeProfile& profile) {
  if (value.is_null()) return std::nullopt;
  const auto invalid = [] { fail(ErrorCode::EXTERNAL_AGENT_PROFILE_STATE_TEMPLATE_INVALID); };
  if (!value.is_object() || value.size() != 2 || !value.contains("from") ||
      !value.contains("env") || !value["from"].is_string() || !value["env"].is_string()) {
    invalid();
  }
  const std::string from = value["from"].get<std::string>();
  const std::string env = value["env"].get<std::string>();
  if (from.empty() || from.front() != '/' || fs::path(from).lexically_normal() == "/" ||
      !files::is_real_directory(from) || !rules::is_env_name(env) ||
      rules::has_secret_marker(env) || env == "PATH" || env == "HOME" ||
      std::any_of(profile.environment.begin(), profile.environment.end(),
                  [&](const auto& entry) { return entry.first == env; })) {
    invalid();
  }
  return StateTemplate{from, env};
}

std::vector<fs::path> profile_read_only_paths(const Document& value) {
  std::vector<fs::path> result;
  if (value.is_null()) return result;
  if (!value.is_array() || value.size() > 32) {
    fail(ErrorCode::EXTERNAL_AGENT_PROFILE_READ_ONLY_PATHS_INVALID);
  }
  for (const auto& item : value) {
    const bool shaped = item.is_string() && !item.get_ref<const std::string&>().empty() &&
                        item.get_ref<const std::string&>().front() == '/' &&
                        item.get_ref<const std::string&>().find('\0') == std::string::npos;
    if (!shaped || fs::path(item.get<std::string>()).lexically_normal() == "/") {
      fail(ErrorCode::EXTERNAL_AGENT_PROFILE_READ_ONLY_PATHS_INVALID);
    }
    result.emplace_back(item.get<std::string>());
  }
  return result;
}

// Each limit in its unit and range; absent ones keep process::Limits' defaults.
process::Limits profile_sandbox_limits(const Document& value) {
  process::Limits limits;
  if (value.is_null()) return limits;
  if (!value.is_object()) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_SANDBOX_LIMITS_INVALID);
  struct Field {
    std::string_view name;
    std::uint64_t low;
    std::uint64_t high;
    std::uint64_t scale;
    std::uint64_t process::Limits::*member;
  };
  static constexpr std::array<Field, 7> kFields = {{
      {"memory_mb", 64, 262144, 1ULL << 20, &process::Limits::memory_bytes},
      {"file_size_mb", 1, 65536, 1ULL << 20, &process::Limits::file_size_bytes},
      {"open_files", 16, 65536, 1, &process::Limits::open_files},
      {"cpu_seconds", 1, 86400, 1, &process::Limits::cpu_seconds},
      {"processes", 8, 4096, 1, &process::Limits::processes},
      {"tmp_mb", 1, 16384, 1ULL << 20, &process::Limits::tmp_bytes},
      {"disk_mb", 1, 1048576, 1ULL << 20, &process::Limits::disk_bytes},
  }};
  for (const auto& entry : value.items()) {
    const std::string& name = entry.key();
    const auto& item = entry.value();
    const auto field = std::find_if(kFields.begin(), kFields.end(),
                                    [&](const Field& f) { return f.name == name; });
    if (field == kFields.end() || !item.is_number_integer() || item.get<long long>() < 0) {
      fail(ErrorCode::EXTERNAL_AGENT_PROFILE_SANDBOX_LIMITS_INVALID);
    }
    const auto number = item.get<std::uint64_t>();
    if (number < field->low || number > field->high) {
      fail(ErrorCode::EXTERNAL_AGENT_PROFILE_SANDBOX_LIMITS_INVALID);
    }
    limits.*(field->member) = number * field->scale;
  }
  return limits;
}

}  // namespace

std::vector<fs::path> default_executable_roots() {
  return {"/usr/bin",
          "/usr/local/bin",
          "/opt/aios/bin",
          "/opt/hermes",
          "/opt/openclaw",
          "/opt/aios-hermes-agent",
          "/opt/aios/openclaw-engineering"};
}

void load_profile_argv(const Document& value, const std::vector<fs::path>& executable_roots,
                       RuntimeProfile& profile) {
  profile.argv = profile_argv(value.value("argv", Document()), executable_roots);
}

void load_profile_limits(const Document& value, RuntimeProfile& profile) {
  const auto timeout = integer_field(value.value("timeout_seconds", Document()), 900);
  const auto max_output = integer_field(value.value("max_output_bytes", Document()),
                                        static_cast<long long>(kMaxOutputBytes));
  if (!timeout || *timeout < 1 || *timeout > 3600) fail(ErrorCode::EXTERNAL_AGENT_TIMEOUT_INVALID);
  if (!max_output || *max_output < 1024 || *max_output > static_cast<long long>(kMaxOutputBytes)) {
    fail(ErrorCode::EXTERNAL_AGENT_OUTPUT_LIMIT_INVALID);
  }
  profile.timeout_seconds = static_cast<int>(*timeout);
  profile.max_output_bytes = static_cast<std::size_t>(*max_output);
  profile.environment = profile_environment(value.value("environment", Document()));
  profile.credential_env = profile_credentials(value.value("credential_env", Document()));
  profile.network = profile_network(value.value("network", Document()));
  profile.provider = profile_provider(value.value("provider", Document()));
  if (profile.provider) {
    const process::Destination upstream{profile.provider->upstream.host,
                                        profile.provider->upstream.port};
    // The gateway sets the base URL and the placeholder key; nothing else may.
    const bool sets_base_url =
        std::any_of(profile.environment.begin(), profile.environment.end(),
                    [](const auto& entry) { return entry.first == "OPENAI_BASE_URL"; });
    const bool relayed = std::find(profile.network.begin(), profile.network.end(), upstream) !=
                         profile.network.end();
    if (!profile.credential_env.empty() || sets_base_url || relayed) {
      fail(ErrorCode::EXTERNAL_AGENT_PROFILE_PROVIDER_INVALID);
    }
  }
  profile.read_only_paths = profile_read_only_paths(value.value("read_only_paths", Document()));
  profile.limits = profile_sandbox_limits(value.value("limits", Document()));
  profile.state_template =
      profile_state_template(value.value("state_template", Document()), profile);
}

RuntimeProfile load_profile(std::string_view runtime_name, const fs::path& profile_root,
                            const std::vector<fs::path>& executable_roots) {
  const std::string runtime = rules::safe_runtime(Document(runtime_name));
  if (files::is_symlink(profile_root)) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_ROOT_SYMLINK_DENY);
  const auto read = files::read_file(profile_root / (runtime + ".json"), kMaxProfileBytes);
  if (read.status != files::ReadStatus::ok) fail(ErrorCode::EXTERNAL_AGENT_PROFILE_UNAVAILABLE);
  const Document value = parse_json_ordered(read.content);
  if (!value.is_object() || value.value("schema", Document()) != Document(kProfileSchema)) {
    fail(ErrorCode::EXTERNAL_AGENT_PROFILE_INVALID);
  }
  if (rules::safe_runtime(value.value("runtime", Document())) != runtime) {
    fail(ErrorCode::EXTERNAL_AGENT_PROFILE_RUNTIME_MISMATCH);
  }
  RuntimeProfile profile;
  profile.runtime = runtime;
  load_profile_argv(value, executable_roots, profile);

  const auto input = mode_field(value.value("input_mode", Document()), "stdin_text");
  const auto output = mode_field(value.value("output_mode", Document()), "stdout_text");
  if (input == "stdin_text") {
    profile.input_mode = InputMode::stdin_text;
  } else if (input == "stdin_json") {
    profile.input_mode = InputMode::stdin_json;
  } else if (input == "file_json") {
    profile.input_mode = InputMode::file_json;
  } else {
    fail(ErrorCode::EXTERNAL_AGENT_INPUT_MODE_INVALID);
  }
  if (output == "stdout_text") {
    profile.output_mode = OutputMode::stdout_text;
  } else if (output == "stdout_json") {
    profile.output_mode = OutputMode::stdout_json;
  } else if (output == "file_json") {
    profile.output_mode = OutputMode::file_json;
  } else {
    fail(ErrorCode::EXTERNAL_AGENT_OUTPUT_MODE_INVALID);
  }

  load_profile_limits(value, profile);
  if (const auto found = value.find("validated_version"); found != value.end()) {
    const auto version = found->is_string() ? found->get<std::string>() : std::string();
    const bool visible =
        std::all_of(version.begin(), version.end(), [](char c) { return c > 0x20 && c < 0x7F; });
    if (version.empty() || version.size() > 64 || !visible) {
      fail(ErrorCode::EXTERNAL_AGENT_PROFILE_INVALID);
    }
    profile.validated_version = version;
  }
  return profile;
}

}  // namespace aios::executor
