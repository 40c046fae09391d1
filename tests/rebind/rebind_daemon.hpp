#pragma once
// aios-agent-task-execution-rebind for integration tests, configured only through the seed's
// environment variables (so the tests also prove that configuration path), on an ephemeral
// loopback port, next to a database and control token it is given (normally the real
// scheduler's). Not started by the constructor: call start().

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "support/closed_port.hpp"
#include "support/daemon.hpp"

namespace aios::rebind_test {

inline constexpr std::string_view kDaemonAuthorization = "owner-execution-rebind-20260818";

inline std::filesystem::path rebind_binary() {
  return test::daemon_binary("aios-agent-task-execution-rebind");
}

struct RebindConfig {
  std::string store;  // AIOS_AGENT_TASK_DB: the scheduler's SchedulerDaemon::store_location()
  std::filesystem::path token_file;
  std::string bridge_url;
  std::string authorization_id = std::string(kDaemonAuthorization);
};

// The owner's rebind request for task view `view`, read off it as docs/api.md shows.
inline nlohmann::json owner_rebind_request(
    const nlohmann::json& view, const std::string& new_digest, const std::string& key,
    const std::string& reason = "projection-before-plan race recovery") {
  return {{"expected_status", view.at("status")},
          {"expected_revision", view.at("revision")},
          {"expected_attempt", view.at("attempt")},
          {"previous_verification_sha256", digest(view.at("verification"))},
          {"expected_old_execution_digest", view.at("execution_digest")},
          {"expected_new_execution_digest", new_digest},
          {"authorization_id", kDaemonAuthorization},
          {"idempotency_key", key},
          {"reason", reason}};
}

inline test::DaemonOptions rebind_options(const RebindConfig& config) {
  test::DaemonOptions options;
  options.binary = rebind_binary();
  options.env = {"AIOS_AGENT_TASK_DB=" + config.store,
                 "AIOS_AGENT_TASK_CONTROL_TOKEN_FILE=" + config.token_file.string(),
                 "AIOS_GOVERNED_WRITE_API_URL=" + config.bridge_url,
                 "AIOS_TASK_EXECUTION_REBIND_HOST=127.0.0.1", "AIOS_TASK_EXECUTION_REBIND_PORT=0"};
  if (!config.authorization_id.empty()) {
    options.env.push_back("AIOS_AGENT_TASK_EXECUTION_REBIND_AUTHORIZATION_ID=" +
                          config.authorization_id);
  }
  options.ready_event = "TASK_EXECUTION_REBIND_LISTENING";
  return options;
}

using test::closed_loopback_url;

}  // namespace aios::rebind_test
