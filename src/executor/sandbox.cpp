// What one agent child sees: the same rule for the executor's runtimes and the broker's backends.
#include "aios/executor.hpp"

namespace aios::executor {

namespace fs = std::filesystem;

namespace {

// A file or directory the root-owned profile names as it is written (never a placeholder, so
// never anything a task's text chose): a script, a configuration file.
bool names_a_path(const std::string& text) {
  std::error_code error;
  return !text.empty() && text.front() == '/' && text.find('{') == std::string::npos &&
         fs::exists(text, error);
}

}  // namespace

process::Sandbox child_sandbox(const RuntimeProfile& profile, const ExecuteOptions& options,
                               std::vector<fs::path> writable) {
  process::Sandbox sandbox;
  sandbox.read_only = options.executable_roots;
  sandbox.read_only.insert(sandbox.read_only.end(), profile.read_only_paths.begin(),
                           profile.read_only_paths.end());
  for (const auto& item : profile.argv) {
    if (names_a_path(item)) sandbox.read_only.emplace_back(item);
  }
  for (const auto& [name, value] : profile.environment) {
    if (names_a_path(value)) sandbox.read_only.emplace_back(value);
  }
  sandbox.writable = std::move(writable);
  // The host's credential stores too: systemd reads them as root, but a view of /etc must not
  // depend on their modes being right.
  sandbox.hidden = {options.temporary_root, "/etc/credstore", "/etc/credstore.encrypted",
                    "/etc/aios-gitops"};
  if (options.credentials_directory) sandbox.hidden.push_back(*options.credentials_directory);
  sandbox.hidden.insert(sandbox.hidden.end(), options.hidden.begin(), options.hidden.end());
  sandbox.network = profile.network;
  sandbox.limits = profile.limits;
  return sandbox;
}

}  // namespace aios::executor
