#pragma once
// The command-line conventions every daemon shares: CLI11 with --version, options that also
// read their environment variable, and exit codes from sysexits.h.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "aios/version.hpp"

namespace aios::daemon {

inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE

inline void add_version_flag(CLI::App& app) {
  app.set_version_flag("--version", app.get_name() + " " + kVersion);
}

// The seed's default for AIOS_AGENT_TASK_CONTROL_TOKEN_FILE:
// $CREDENTIALS_DIRECTORY/agent_task_control_token, under /run/credentials when systemd set none.
inline std::string default_control_token_file() {
  const char* directory = std::getenv("CREDENTIALS_DIRECTORY");
  return std::string(directory != nullptr ? directory : "/run/credentials") +
         "/agent_task_control_token";
}

// The service loop of this daemon is not part of this build; say so instead of pretending.
inline int not_yet_available(const CLI::App& app, const char* what) {
  std::fprintf(stderr, "%s %s: %s is not part of this build yet; only --help and --version work\n",
               app.get_name().c_str(), kVersion, what);
  return kExitUnavailable;
}

}  // namespace aios::daemon
