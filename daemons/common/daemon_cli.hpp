#pragma once
// The command-line conventions every daemon shares: CLI11 with --version, options that also
// read their environment variable, and exit codes from sysexits.h.

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>

#include "aios/sys.hpp"
#include "aios/version.hpp"

namespace aios::daemon {

inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE

inline void add_version_flag(CLI::App& app) {
  app.set_version_flag("--version", app.get_name() + " " + kVersion);
}

// The seed's default for AIOS_AGENT_TASK_CONTROL_TOKEN_FILE.
inline std::string default_control_token_file() {
  return aios::credential_file("agent_task_control_token");
}

}  // namespace aios::daemon
