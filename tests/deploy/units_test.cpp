// The shipped unit files carry the security properties the seed's tests assert for its units.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "support/run_command.hpp"

namespace {

std::string read_file(const std::string& relative) {
  std::ifstream file(std::string(AIOS_SOURCE_DIR) + "/" + relative);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

// Given the Task API unit, it should run unprivileged, take the control token as a credential
// and reach nothing but loopback.
TEST(Units, TaskApiIsUnprivilegedLoopbackAndCredentialBound) {
  const auto unit = read_file("deploy/systemd/aios-agent-task-api.service");
  ASSERT_FALSE(unit.empty());
  for (const char* line :
       {"User=aios-agent-task", "Group=aios-agent-task",
        "LoadCredential=agent_task_control_token:/etc/aios-gitops/agent-task-control.token",
        "Environment=AIOS_AGENT_TASK_CONTROL_TOKEN_FILE=%d/agent_task_control_token",
        "Environment=AIOS_AGENT_TASK_DB=/var/lib/aios-agent-task/state.sqlite3",
        "ExecStart=/usr/bin/aios-task-scheduler", "NoNewPrivileges=true", "ProtectSystem=strict",
        "IPAddressDeny=any", "IPAddressAllow=localhost", "CapabilityBoundingSet=", "UMask=0027"}) {
    EXPECT_TRUE(has_line(unit, line)) << line;
  }
  EXPECT_EQ(unit.find("User=root"), std::string::npos);
  // No token value may sit in the unit's environment.
  EXPECT_EQ(unit.find("TOKEN="), std::string::npos);
}

// The seed's test_execution_rebind_unit_is_unprivileged_and_owner_credential_bound, plus the
// lines that make it run our binary on the seed's configuration.
TEST(Units, ExecutionRebindIsUnprivilegedAndOwnerCredentialBound) {
  const auto unit = read_file("deploy/systemd/aios-agent-task-execution-rebind.service");
  ASSERT_FALSE(unit.empty());
  for (const char* line :
       {"User=aios-agent-task", "Group=aios-agent-task",
        "LoadCredential=agent_task_control_token:/etc/aios-gitops/agent-task-control.token",
        "EnvironmentFile=/etc/aios-gitops/agent-task-execution-rebind.env",
        "Environment=AIOS_AGENT_TASK_CONTROL_TOKEN_FILE=%d/agent_task_control_token",
        "Environment=AIOS_AGENT_TASK_DB=/var/lib/aios-agent-task/state.sqlite3",
        "Environment=AIOS_GOVERNED_WRITE_API_URL=http://127.0.0.1:18892",
        "Environment=AIOS_TASK_EXECUTION_REBIND_HOST=127.0.0.1",
        "Environment=AIOS_TASK_EXECUTION_REBIND_PORT=18942",
        "ExecStart=/usr/bin/aios-agent-task-execution-rebind", "NoNewPrivileges=true",
        "ProtectSystem=strict", "RestrictAddressFamilies=AF_UNIX AF_INET",
        "ReadWritePaths=/var/lib/aios-agent-task", "UMask=0077"}) {
    EXPECT_TRUE(has_line(unit, line)) << line;
  }
  EXPECT_EQ(unit.find("User=root"), std::string::npos);
  // The authorization id comes from the EnvironmentFile; no token value sits in the unit.
  EXPECT_EQ(unit.find("TOKEN="), std::string::npos);
}

// Given the executor unit, it should hold only the provider credential, never the control
// plane's credentials or repositories, and reach no loopback service (seed:
// test_external_executor_systemd_has_no_control_credentials_or_repository_access).
TEST(Units, ExecutorHasNoControlCredentialsOrRepositoryAccess) {
  const auto unit = read_file("deploy/systemd/aios-external-agent-executor.service");
  ASSERT_FALSE(unit.empty());
  for (const char* line :
       {"User=aios-engineering-executor",
        "LoadCredential=aios-external-agent-oneapi-env:/data/agent/secrets/oneapi-model-ready.env",
        "InaccessiblePaths=/etc/aios-gitops", "InaccessiblePaths=/data/aios-gitops",
        "InaccessiblePaths=/data/agent/secrets", "IPAddressDeny=127.0.0.0/8",
        "IPAddressDeny=::1/128", "IPAddressAllow=172.18.0.2/32",
        "ExecStart=/usr/bin/aios-external-agent-executor --root "
        "/var/lib/aios-external-agent-executor "
        "--profile-root /etc/aios/external-agent-runtime.d",
        "NoNewPrivileges=true", "ProtectSystem=strict",
        "ReadWritePaths=/var/lib/aios-external-agent-executor"}) {
    EXPECT_TRUE(has_line(unit, line)) << line;
  }
  EXPECT_EQ(unit.find("LoadCredentialEncrypted"), std::string::npos);
  EXPECT_EQ(unit.find("InaccessiblePaths=/run/credentials"), std::string::npos);
  EXPECT_EQ(unit.find("agent_token"), std::string::npos);
  EXPECT_EQ(unit.find("agent_task_control_token"), std::string::npos);
}

// Given the executor's tmpfiles entry, the exchange should be shared with the worker's group
// only, and the start markers private to the executor.
TEST(Units, ExecutorExchangeDirectories) {
  const auto conf = "\n" + read_file("deploy/tmpfiles.d/aios-external-agent-runtime.conf");
  for (const char* line :
       {"d /var/lib/aios-external-agent-executor 2770 aios-engineering-executor "
        "aios-executor-exchange -",
        "d /var/lib/aios-external-agent-executor/requests 2770 aios-engineering-worker "
        "aios-executor-exchange -",
        "d /var/lib/aios-external-agent-executor/results 2770 aios-engineering-executor "
        "aios-executor-exchange -",
        "d /var/lib/aios-external-agent-executor/failed 2770 aios-engineering-executor "
        "aios-executor-exchange -",
        "d /var/lib/aios-external-agent-executor/started 0750 aios-engineering-executor "
        "aios-executor-exchange -",
        "d /etc/aios/external-agent-runtime.d 0755 root root -"}) {
    EXPECT_TRUE(has_line(conf, line)) << line;
  }
}

// Given the tmpfiles entry, the state directory should belong to the service user only.
TEST(Units, TaskStateDirectoryIsPrivate) {
  const auto conf = read_file("deploy/tmpfiles.d/aios-agent-task.conf");
  EXPECT_TRUE(
      has_line("\n" + conf, "d /var/lib/aios-agent-task 0750 aios-agent-task aios-agent-task -"));
}

// The seed's test_dedicated_worker_units_are_capability_and_adapter_scoped, for both external
// runtimes, plus the generic worker: each runs our binary with only its own capability and
// adapter, its own state root, and the agent token as an encrypted credential.
TEST(Units, WorkerUnitsAreCapabilityAndAdapterScoped) {
  struct Case {
    const char* unit;
    const char* capabilities;
    const char* adapters;
    const char* state_root;
  };
  for (const Case& c : {Case{"aios-hermes-online-agent-worker.service", "agent.runtime.hermes",
                             "hermes", "/var/lib/aios-online-agent-hermes"},
                        Case{"aios-openclaw-online-agent-worker.service", "agent.runtime.openclaw",
                             "openclaw", "/var/lib/aios-online-agent-openclaw"},
                        Case{"aios-online-agent-worker.service",
                             "git.read,git.test,governed.write.branch,governed.write.file",
                             "deterministic,source_capture,compact_interface_map",
                             "/var/lib/aios-online-agent-worker"}}) {
    const auto unit = read_file(std::string("deploy/systemd/") + c.unit);
    ASSERT_FALSE(unit.empty()) << c.unit;
    for (const std::string& line :
         {std::string("Environment=AIOS_WORKER_CAPABILITIES=") + c.capabilities,
          std::string("Environment=AIOS_WORKER_ALLOWED_ADAPTERS=") + c.adapters,
          std::string("Environment=AIOS_WORKER_STATE_ROOT=") + c.state_root,
          std::string("Environment=AIOS_GOVERNED_WRITE_API_URL=http://127.0.0.1:18892"),
          std::string("ExecStart=/usr/bin/aios-online-agent-worker"),
          std::string("ReadOnlyPaths=/data/aios-gitops/repo.git"),
          std::string("NoNewPrivileges=true"), std::string("ProtectSystem=strict")}) {
      EXPECT_TRUE(has_line(unit, line)) << c.unit << ": " << line;
    }
    EXPECT_NE(unit.find("\nLoadCredentialEncrypted=agent_token:"), std::string::npos) << c.unit;
    EXPECT_EQ(unit.find("User=root"), std::string::npos) << c.unit;
    EXPECT_EQ(unit.find("TOKEN="), std::string::npos) << c.unit;
  }
}

// Given the units on either side of an exchange (the executor, the broker, the three workers),
// each should load the one root-provisioned exchange key the package's postinst makes, and no
// control-plane unit should.
TEST(Units, ExchangePartiesShareTheRootProvisionedExchangeKey) {
  const std::string line =
      "LoadCredential=exchange_result_key:/etc/credstore/aios-exchange-result.key";
  for (const char* unit :
       {"aios-external-agent-executor.service", "aios-agent-runtime-broker.service",
        "aios-online-agent-worker.service", "aios-hermes-online-agent-worker.service",
        "aios-openclaw-online-agent-worker.service"}) {
    EXPECT_TRUE(has_line(read_file(std::string("deploy/systemd/") + unit), line)) << unit;
  }
  for (const char* unit :
       {"aios-agent-task-api.service", "aios-agent-task-execution-rebind.service"}) {
    EXPECT_EQ(read_file(std::string("deploy/systemd/") + unit).find("exchange_result_key"),
              std::string::npos)
        << unit;
  }
  const auto postinst = read_file("deploy/debian/postinst");
  EXPECT_NE(postinst.find("/etc/credstore/aios-exchange-result.key"), std::string::npos);
}

// Every daemon's unit, with the exposure budget `systemd-analyze security --offline=true` must
// keep it within: the two control-plane daemons at most 1.0, the workers at most 1.5. The two
// units that build sandboxes for hostile agents (the executor, the broker) at most 2.4: the
// user, mount, PID, network and IPC namespaces and bubblewrap's mount and three @privileged calls
// cost 0.8 to 0.9, and CAP_SETGID, which drops the agent child's supplementary groups, 0.3
// (docs/security.md, "What the units allow the sandbox"). The verification sandbox service below.
struct UnitBudget {
  const char* unit;
  double max_exposure;
};
constexpr UnitBudget kUnitBudgets[] = {
    {"aios-agent-task-api.service", 1.0},
    {"aios-agent-task-execution-rebind.service", 1.0},
    {"aios-external-agent-executor.service", 2.4},
    {"aios-agent-runtime-broker.service", 2.4},
    {"aios-online-agent-worker.service", 1.5},
    {"aios-hermes-online-agent-worker.service", 1.5},
    {"aios-openclaw-online-agent-worker.service", 1.5},
};
constexpr const char* kSandboxService = "aios-verification-sandbox@.service";

double exposure_of(const std::string& unit) {
  const auto path = std::string(AIOS_SOURCE_DIR) + "/deploy/systemd/" + unit;
  const auto result =
      aios::test::run_command("systemd-analyze security --no-pager --offline=true " + path);
  std::smatch match;
  static const std::regex kOverall(R"(Overall exposure level for \S+: ([0-9]+\.[0-9]))");
  if (!std::regex_search(result.output, match, kOverall)) {
    ADD_FAILURE() << unit << ": no exposure in\n" << result.output;
    return 10.0;
  }
  return std::stod(match[1].str());
}

TEST(Units, ExposureWithinBudget) {
  for (const auto& budget : kUnitBudgets) {
    EXPECT_LE(exposure_of(budget.unit), budget.max_exposure) << budget.unit;
  }
  // The verification sandbox builds sandboxes too (0.9) and holds CAP_SETGID (0.3, and 0.2 for
  // the PrivateUsers= it cannot have), but has no network and no credential.
  EXPECT_LE(exposure_of(kSandboxService), 2.0);
}

// Given the units that build sandboxes for hostile children (agents, backends, verification),
// CAP_SETGID should be the one capability they hold (to drop the child's supplementary groups),
// and every other unit should hold none.
TEST(Units, OnlyTheSandboxBuildersHoldCapSetgid) {
  for (const auto& budget : kUnitBudgets) {
    const auto unit = read_file(std::string("deploy/systemd/") + budget.unit);
    const std::string name = budget.unit;
    const bool builder = name == "aios-external-agent-executor.service" ||
                         name == "aios-agent-runtime-broker.service";
    EXPECT_TRUE(
        has_line(unit, builder ? "CapabilityBoundingSet=CAP_SETGID" : "CapabilityBoundingSet="))
        << name;
    EXPECT_TRUE(has_line(unit, builder ? "AmbientCapabilities=CAP_SETGID" : "AmbientCapabilities="))
        << name;
  }
  const auto service = read_file(std::string("deploy/systemd/") + kSandboxService);
  EXPECT_TRUE(has_line(service, "CapabilityBoundingSet=CAP_SETGID"));
  EXPECT_TRUE(has_line(service, "AmbientCapabilities=CAP_SETGID"));
  // Its user namespace would deny the setgroups call that drops them.
  EXPECT_FALSE(has_line(service, "PrivateUsers=true"));
}

// Given the generic worker, its verification commands should run in the socket-activated sandbox
// service, so its own unit denies every namespace, mount and @privileged call; the service
// should have no network, no credential and write only the workspaces, and only the worker's
// user may connect to its socket.
TEST(Units, VerificationRunsInTheSandboxServiceNotTheWorkerUnit) {
  const auto worker = read_file("deploy/systemd/aios-online-agent-worker.service");
  for (const char* line :
       {"Requires=aios-verification-sandbox.socket",
        "Environment=AIOS_VERIFICATION_SOCKET=/run/aios-verification/sandbox.sock",
        "RestrictNamespaces=true", "SystemCallFilter=~@privileged @resources",
        "MemoryDenyWriteExecute=true"}) {
    EXPECT_TRUE(has_line(worker, line)) << line;
  }
  EXPECT_EQ(worker.find("@mount"), std::string::npos);
  const auto socket = read_file("deploy/systemd/aios-verification-sandbox.socket");
  for (const char* line : {"ListenStream=/run/aios-verification/sandbox.sock", "Accept=yes",
                           "SocketUser=aios-engineering-worker", "SocketMode=0600"}) {
    EXPECT_TRUE(has_line(socket, line)) << line;
  }
  const auto service = read_file(std::string("deploy/systemd/") + kSandboxService);
  for (const char* line :
       {"ExecStart=/usr/bin/aios-online-agent-worker --serve-verification", "StandardInput=socket",
        "StandardOutput=socket", "User=aios-engineering-worker", "PrivateNetwork=true",
        "IPAddressDeny=any", "ReadWritePaths=/var/lib/aios-online-agent-worker/workspaces"}) {
    EXPECT_TRUE(has_line(service, line)) << line;
  }
  EXPECT_EQ(service.find("Credential"), std::string::npos);
  EXPECT_EQ(service.find("AF_INET6"), std::string::npos);
}

// systemd orders dependants on READY=1 and restarts a daemon whose watchdog pings stop; only
// the main process may notify (an agent child cannot claim readiness or feed the watchdog).
TEST(Units, EveryUnitNotifiesAndHasAWatchdog) {
  for (const auto& budget : kUnitBudgets) {
    const auto unit = read_file(std::string("deploy/systemd/") + budget.unit);
    for (const char* line : {"Type=notify", "NotifyAccess=main"}) {
      EXPECT_TRUE(has_line(unit, line)) << budget.unit << ": " << line;
    }
    EXPECT_NE(unit.find("\nWatchdogSec="), std::string::npos) << budget.unit;
  }
}

// A connection flood or a runaway child is bounded by its unit: every unit caps memory, tasks
// and open files, and the listeners' units allow more descriptors than their connection caps.
TEST(Units, EveryUnitBoundsMemoryTasksAndDescriptors) {
  const std::regex memory(R"(\nMemoryMax=[0-9]+[KMG]\n)");
  const std::regex tasks(R"(\nTasksMax=([0-9]+)\n)");
  const std::regex files(R"(\nLimitNOFILE=([0-9]+)\n)");
  for (const auto& budget : kUnitBudgets) {
    const auto unit = read_file(std::string("deploy/systemd/") + budget.unit);
    std::smatch match;
    EXPECT_TRUE(std::regex_search(unit, memory)) << budget.unit;
    ASSERT_TRUE(std::regex_search(unit, match, tasks)) << budget.unit;
    EXPECT_GE(std::stoi(match[1]), 64) << budget.unit;
    ASSERT_TRUE(std::regex_search(unit, match, files)) << budget.unit;
    // One listener holds up to 1,024 connections (http::ServerOptions::max_connections).
    EXPECT_GE(std::stoi(match[1]), 4096) << budget.unit;
  }
  const auto sandbox = read_file(std::string("deploy/systemd/") + kSandboxService);
  EXPECT_TRUE(std::regex_search(sandbox, memory));
  EXPECT_TRUE(std::regex_search(sandbox, tasks));
  const auto scheduler = read_file("deploy/systemd/aios-agent-task-api.service");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(scheduler, match, files));
  EXPECT_GE(std::stoi(match[1]), 8192) << "the Task API and the Bridge listen in one process";
}

}  // namespace
