#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <string_view>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"

namespace aios::envelope {
namespace {

constexpr std::size_t kMaxArgv = 64;
constexpr std::size_t kMaxArgBytes = 4096;
constexpr std::size_t kMaxLabelCodePoints = 120;

// A shell anywhere in argv turns it back into a script; a launcher runs whatever its arguments
// say, so it could start one.
constexpr std::array<std::string_view, 14> kShells = {"sh",   "bash", "rbash", "dash",   "zsh",
                                                      "ksh",  "mksh", "pdksh", "csh",    "tcsh",
                                                      "fish", "ash",  "yash",  "busybox"};
constexpr std::array<std::string_view, 24> kLaunchers = {
    "env",     "sudo",   "su",     "doas",  "xargs",   "timeout", "nice",    "ionice",
    "setsid",  "nohup",  "stdbuf", "chrt",  "taskset", "unshare", "nsenter", "chroot",
    "runuser", "script", "flock",  "watch", "strace",  "ltrace",  "gdb",     "find"};
// Programs whose first operand is program text.
constexpr std::array<std::string_view, 6> kTextInterpreters = {"awk",  "gawk", "mawk",
                                                               "nawk", "sed",  "ssed"};

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_git_component(std::string_view part) {
  if (part.size() != 4) return false;
  std::string lowered(part);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; });
  return lowered == ".git";
}

bool touches_git_dir(std::string_view path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    if (is_git_component(path.substr(start, end - start))) return true;
    start = end + 1;
  }
  return false;
}

std::string_view basename(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Options that make an interpreter run code given on its own command line.
bool runs_inline_code(const nlohmann::json& argv) {
  const std::string_view name = basename(argv.front().get_ref<const std::string&>());
  const bool python = name.starts_with("python") || name.starts_with("pypy");
  const bool node = name == "node" || name == "nodejs" || name == "deno" || name == "bun";
  if (listed(kTextInterpreters, name)) return true;
  if ((name == "deno" || name == "bun") && argv.size() > 1 && argv[1] == "eval") return true;
  const bool other = name.starts_with("perl") || name.starts_with("ruby") ||
                     name.starts_with("php") || name.starts_with("lua");
  if (!python && !node && !other) return false;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string_view arg = argv[i].get_ref<const std::string&>();
    if (arg.size() < 2 || arg.front() != '-') return false;  // the script: interpreter opts end
    if (python) {
      if (arg == "-m") return false;  // the module's own arguments follow
      if (arg == "-W" || arg == "-X") {
        ++i;
        continue;
      }
      if (!arg.starts_with("--") && arg.find('c') != std::string_view::npos) return true;
    } else if (node) {
      for (const std::string_view flag :
           {"-e", "--eval", "-p", "--print", "-r", "--require", "--import", "--loader", "-pe"}) {
        if (arg == flag || arg.starts_with(std::string(flag) + "=")) return true;
      }
    } else if (!arg.starts_with("--") && arg.find_first_of("eErR") != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

void check_change(const nlohmann::json& change, std::set<std::string>& paths) {
  if (!change.is_object()) fail(ErrorCode::CHANGE_FIELDS_INVALID);
  const auto operation = change.find("operation");
  if (operation == change.end() || !operation->is_string()) {
    fail(ErrorCode::CHANGE_OPERATION_INVALID);
  }
  if (*operation == "write_file") {
    require_exact_keys(change, {"path", "operation", "content"}, ErrorCode::CHANGE_FIELDS_INVALID);
  } else if (*operation == "delete_file") {
    require_exact_keys(change, {"path", "operation"}, ErrorCode::CHANGE_FIELDS_INVALID);
  } else {
    fail(ErrorCode::CHANGE_OPERATION_INVALID);
  }
  const std::string& path = require_string(change["path"], ErrorCode::CHANGE_PATH_INVALID);
  if (!is_safe_relative_path(path, false)) fail(ErrorCode::CHANGE_PATH_INVALID);
  if (touches_git_dir(path)) fail(ErrorCode::CHANGE_PATH_GIT_DENY);
  if (change.contains("content")) {
    const std::string& content =
        require_string(change["content"], ErrorCode::CHANGE_CONTENT_INVALID);
    if (content.size() > kMaxChangeContentBytes) fail(ErrorCode::CHANGE_CONTENT_TOO_LARGE);
  }
  if (!paths.insert(path).second) fail(ErrorCode::CHANGE_PATH_DUPLICATE);
}

// "a" and "a/b" in one change set would need "a" to be a file and a directory at once.
void check_path_conflicts(const std::set<std::string>& paths) {
  for (const auto& path : paths) {
    const std::string directory = path + "/";
    const auto below = paths.lower_bound(directory);
    if (below != paths.end() && below->starts_with(directory)) {
      fail(ErrorCode::CHANGE_PATH_CONFLICT);
    }
  }
}

void check_command(const nlohmann::json& command) {
  require_exact_keys(command, {"label", "argv", "cwd", "timeout_seconds"},
                     ErrorCode::VERIFICATION_FIELDS_INVALID);
  const std::string label = require_text(command["label"], ErrorCode::VERIFICATION_LABEL_INVALID);
  if (count_code_points(label) > kMaxLabelCodePoints) fail(ErrorCode::VERIFICATION_LABEL_INVALID);
  const auto& argv = command["argv"];
  if (!argv.is_array() || argv.empty() || argv.size() > kMaxArgv) {
    fail(ErrorCode::VERIFICATION_ARGV_INVALID);
  }
  for (const auto& arg : argv) {
    const std::string& text = require_string(arg, ErrorCode::VERIFICATION_ARGV_INVALID);
    if (text.size() > kMaxArgBytes || text.find('\0') != std::string::npos) {
      fail(ErrorCode::VERIFICATION_ARGV_INVALID);
    }
  }
  const std::string& executable = argv.front().get_ref<const std::string&>();
  if (executable.size() < 2 || executable.front() != '/' ||
      !is_safe_relative_path(std::string_view(executable).substr(1), false)) {
    fail(ErrorCode::VERIFICATION_EXECUTABLE_INVALID);
  }
  if (listed(kLaunchers, basename(executable))) fail(ErrorCode::VERIFICATION_SHELL_DENY);
  for (const auto& arg : argv) {
    if (listed(kShells, basename(arg.get_ref<const std::string&>()))) {
      fail(ErrorCode::VERIFICATION_SHELL_DENY);
    }
  }
  if (runs_inline_code(argv)) fail(ErrorCode::VERIFICATION_INLINE_CODE_DENY);
  const std::string& cwd = require_string(command["cwd"], ErrorCode::VERIFICATION_CWD_INVALID);
  if (!is_safe_relative_path(cwd, true) || touches_git_dir(cwd)) {
    fail(ErrorCode::VERIFICATION_CWD_INVALID);
  }
  require_int(command["timeout_seconds"], 1, 3600, ErrorCode::VERIFICATION_TIMEOUT_INVALID);
}

}  // namespace

nlohmann::json normalize_change_set(const nlohmann::json& value) {
  if (!value.is_array()) fail(ErrorCode::CHANGE_SET_INVALID);
  if (value.size() > kMaxChangeEntries) fail(ErrorCode::CHANGE_SET_TOO_LARGE);
  std::set<std::string> paths;
  for (const auto& change : value) check_change(change, paths);
  check_path_conflicts(paths);
  return value;
}

nlohmann::json normalize_verification(const nlohmann::json& value) {
  if (!value.is_array() || value.size() > kMaxVerificationCommands) {
    fail(ErrorCode::VERIFICATION_INVALID);
  }
  for (const auto& command : value) check_command(command);
  return value;
}

}  // namespace aios::envelope
