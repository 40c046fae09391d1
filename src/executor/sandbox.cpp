// What one agent child sees: the same rule for the executor's runtimes and the broker's backends.
#include "aios/executor.hpp"
#include "aios/files.hpp"

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

void seed_state(const RuntimeProfile& profile, const fs::path& private_directory,
                process::Spec& spec) {
  if (!profile.state_template) return;
  const auto& state = *profile.state_template;
  const fs::path copy = private_directory / "state";
  switch (files::copy_tree(state.from, copy, kMaxStateTemplateEntries, kMaxStateTemplateBytes)) {
    case files::CopyStatus::ok:
      break;
    case files::CopyStatus::refused:
      throw Error(ErrorCode::EXTERNAL_AGENT_STATE_TEMPLATE_INVALID,
                  "a link or a special file in " + state.from.string());
    case files::CopyStatus::too_large:
      throw Error(ErrorCode::EXTERNAL_AGENT_STATE_TEMPLATE_INVALID,
                  "more than 4096 entries or 64 MiB in " + state.from.string());
    case files::CopyStatus::failed:
      throw Error(ErrorCode::EXTERNAL_AGENT_STATE_TEMPLATE_INVALID,
                  "cannot read " + state.from.string());
  }
  spec.environment.push_back(state.env + "=" + copy.string());
}

}  // namespace aios::executor
