// aiosctl's entry: the global options, the parse, and each failure as its exit code.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>

#include "aios/canonical.hpp"
#include "aios/ctl.hpp"
#include "aios/version.hpp"
#include "ctl/commands.hpp"

namespace aios::ctl {
namespace {

// The owner's token where the package's units and docs keep it.
std::string default_token_file() {
  const char* named = std::getenv("AIOS_AGENT_TASK_CONTROL_TOKEN_FILE");
  return named != nullptr ? named : "/etc/aios-gitops/agent-task-control.token";
}

// The word of the command line that names no command where one is expected ("task shw"), with
// the command it was given to; empty when every command word is known. Options are passed over
// with their values, as the parse would.
std::pair<std::string, std::string> unknown_command(CLI::App& app, int argc,
                                                    const char* const* argv) {
  CLI::App* at = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.starts_with("-")) {
      if (word.find('=') != std::string::npos || word == "--") continue;
      for (CLI::App* scope = at; scope != nullptr; scope = scope->get_parent()) {
        const auto* option = scope->get_option_no_throw(word);
        if (option != nullptr) {
          if (option->get_type_size() > 0) ++i;  // its value
          break;
        }
      }
      continue;
    }
    const auto commands = at->get_subcommands([](CLI::App*) { return true; });
    if (commands.empty()) break;  // an argument of a command that has none below it
    const auto named = std::find_if(commands.begin(), commands.end(),
                                    [&](CLI::App* command) { return command->check_name(word); });
    if (named == commands.end()) return {word, at == &app ? "" : at->get_name()};
    at = *named;
  }
  return {};
}

}  // namespace

int exit_code_of(const Error& error) {
  if (error.is_any(
          {ErrorCode::CONTROL_CREDENTIAL_UNAVAILABLE, ErrorCode::CONTROL_CREDENTIAL_INVALID})) {
    return kNotAllowed;
  }
  switch (error.http_status()) {
    case 404:
      return kNotFound;
    case 401:
    case 403:
      return kNotAllowed;
    case 409:
      return kConflict;
    case 400:
    case 413:
      return kInvalid;
    case 502:
    case 503:
    case 504:
      return kUnavailable;
    default:
      return kFailed;
  }
}

long long seconds_of(const std::string& duration) {
  static constexpr std::pair<char, long long> kUnits[] = {
      {'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
  if (duration.empty()) throw UsageError("an empty duration");
  long long scale = 1;
  std::string digits = duration;
  for (const auto& [unit, seconds] : kUnits) {
    if (duration.back() == unit) {
      scale = seconds;
      digits.pop_back();
    }
  }
  if (digits.empty() || digits.size() > 12 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    throw UsageError("not a duration: " + duration);
  }
  return std::stoll(digits) * scale;
}

nlohmann::json read_json_argument(const std::string& file, bool list_allowed) {
  std::string text;
  if (file == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw UsageError("cannot read " + file);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto value = parse_json(text);
  if (list_allowed && value.is_array()) {
    if (value.empty()) throw UsageError(file + " is an empty list");
    return value;
  }
  if (value.is_discarded() || !value.is_object()) {
    throw UsageError(file + (list_allowed ? " is neither a JSON object nor a list of them"
                                          : " is not one JSON object"));
  }
  return value;
}

void Context::show(const nlohmann::json& answer, const std::function<std::string()>& human) const {
  if (json) {
    out << answer.dump() << '\n';
  } else {
    out << human();
  }
}

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "aiosctl: the operator's command line for a running AIOS suite. A client of the Task API,\n"
      "the governed Bridge and the rebind service, as the owner (the control token's file);\n"
      "human tables by default, the APIs' JSON with --json. Exit codes: 0 done, 1 failed,\n"
      "2 usage, 3 not found, 4 not allowed, 5 conflict, 6 invalid, 7 unavailable, 8 doctor\n"
      "findings.",
      "aiosctl"};
  app.set_version_flag("--version", std::string("aiosctl ") + kVersion);
  app.require_subcommand(1);
  // The global options may follow the command too (`aiosctl tasks --json`): every command
  // passes what it does not know to the one above it.
  app.fallthrough();
  // A later --api, --token-file, ... overrides an earlier one (a wrapper's defaults, then yours).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  Endpoints endpoints;
  endpoints.token_file = default_token_file();
  bool json = false;
  int timeout_ms = 30000;
  app.add_option("--api", endpoints.api, "Task API URL")
      ->envname("AIOS_AGENT_TASK_API_URL")
      ->capture_default_str();
  app.add_option("--bridge", endpoints.bridge, "Governed Bridge URL")
      ->envname("AIOS_GOVERNED_WRITE_API_URL")
      ->capture_default_str();
  app.add_option("--rebind", endpoints.rebind, "Execution-rebind service URL")
      ->envname("AIOS_TASK_EXECUTION_REBIND_URL")
      ->capture_default_str();
  app.add_option("--token-file", endpoints.token_file,
                 "The owner's control token (default $AIOS_AGENT_TASK_CONTROL_TOKEN_FILE, else "
                 "/etc/aios-gitops/agent-task-control.token)");
  app.add_option("--tls-ca-file", endpoints.ca_file,
                 "https:// URLs: the CA bundle the services' certificate chains to")
      ->envname("AIOS_TLS_CA_FILE");
  app.add_option("--timeout-ms", timeout_ms, "How long one call may take")
      ->check(CLI::Range(100, 600000))
      ->capture_default_str();
  app.add_flag("--json", json, "Print the APIs' JSON as it came, one document a line");
  Action action;
  add_task_commands(app, action);
  add_fleet_commands(app, action);
  add_watch_command(app, action);
  add_doctor_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (const auto [word, command] = unknown_command(app, argc, argv); !word.empty()) {
      err << "aiosctl: unknown command '" << word << "'"
          << (command.empty() ? "" : " of '" + command + "'") << "; see aiosctl "
          << (command.empty() ? "" : command + " ") << "--help\n";
      return kUsage;
    }
    const int code = app.exit(error, out, err);
    return code == 0 ? kDone : kUsage;
  }
  endpoints.timeout = std::chrono::milliseconds(timeout_ms);
  try {
    Client client(endpoints);
    Context context{client, out, err, json};
    return action(context);
  } catch (const Error& error) {
    err << "aiosctl: " << error.code();
    if (const auto* info = find_error(error.code())) err << ": " << info->text;
    if (!error.detail().empty()) err << " (" << error.detail() << ")";
    err << '\n';
    return exit_code_of(error);
  } catch (const UsageError& error) {
    err << "aiosctl: " << error.what() << '\n';
    return kUsage;
  }
}

}  // namespace aios::ctl
