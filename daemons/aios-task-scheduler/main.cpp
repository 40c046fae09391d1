// aios-task-scheduler: the Task API (leases, fleet scheduling) and the governed Bridge.
#include <chrono>
#include <string>
#include <vector>

#include "../common/daemon_cli.hpp"
#include "../common/lifecycle.hpp"
#include "../common/signals.hpp"
#include "../common/tls.hpp"
#include "aios/log.hpp"
#include "aios/scheduler.hpp"
#include "aios/sys.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "The AIOS task scheduler: serves the Task API (tasks, leases, fleet scheduling) and\n"
      "the governed Bridge (plans, execution envelopes, writer leases, governed commits into\n"
      "the authority repository) on loopback over an embedded SQLite database\n"
      "(WAL, synchronous=FULL), or PostgreSQL. With a TLS certificate the listeners may take\n"
      "network addresses for workers on other hosts (SIGHUP reloads the TLS files).\n"
      "Each option also reads the environment variable shown.",
      "aios-task-scheduler"};
  aios::daemon::add_version_flag(app);
  aios::SchedulerOptions options;
  std::string db_path = options.db.string();
  std::string authority = options.bridge.authority_git_dir.string();
  std::string token_file = aios::daemon::default_control_token_file();
  int lease_seconds = static_cast<int>(options.lease.count());
  int sweep_ms = static_cast<int>(options.sweep_interval.count());
  int leader_check_ms = static_cast<int>(options.leader_check.count());
  int claim_recheck_ms = static_cast<int>(options.claim_recheck.count());
  std::vector<std::string> verification_executables(options.verification_executables.begin(),
                                                    options.verification_executables.end());
  app.add_option(
         "--db", db_path,
         "Task database: a path or sqlite:///path (SQLite), or a postgresql:// URL without a "
         "password (the password from the aios-task-db-password credential or libpq's passfile)")
      ->envname("AIOS_AGENT_TASK_DB");
  app.add_option(
         "--control-token-file", token_file,
         "Owner control token file (default $CREDENTIALS_DIRECTORY/agent_task_control_token)")
      ->envname("AIOS_AGENT_TASK_CONTROL_TOKEN_FILE");
  app.add_option("--api-host", options.api_host,
                 "Task API addresses, comma-separated, on one port (loopback without TLS)")
      ->envname("AIOS_AGENT_TASK_API_HOST");
  app.add_option("--api-port", options.api_port, "Task API port (0: any free port)")
      ->envname("AIOS_AGENT_TASK_API_PORT");
  app.add_option("--bridge-host", options.bridge_host,
                 "Governed Bridge addresses, comma-separated, on one port (loopback without TLS)")
      ->envname("AIOS_GOVERNED_WRITE_API_HOST");
  app.add_option("--bridge-port", options.bridge_port, "Governed Bridge port (0: any free port)")
      ->envname("AIOS_GOVERNED_WRITE_API_PORT");
  app.add_option("--authority-git-dir", authority,
                 "Authority bare repository; only this daemon writes it")
      ->envname("AIOS_AUTHORITY_GIT_DIR");
  app.add_option("--verification-executables", verification_executables,
                 "Absolute executables a plan's verification commands may start")
      ->envname("AIOS_VERIFICATION_EXECUTABLES")
      ->delimiter(',');
  app.add_option("--lease-seconds", lease_seconds, "Task lease length")
      ->envname("AIOS_TASK_LEASE_SECONDS")
      ->check(CLI::Range(1, 86400));
  app.add_option("--sweep-interval-ms", sweep_ms, "How often expired leases are returned")
      ->envname("AIOS_TASK_LEASE_SWEEP_MS")
      ->check(CLI::Range(10, 60000));
  app.add_option("--leader-check-ms", leader_check_ms,
                 "Replicas on one PostgreSQL store: how often this one checks or takes the lead "
                 "of governed commits (a dead leader's lead moves within about this long)")
      ->envname("AIOS_SCHEDULER_LEADER_CHECK_MS")
      ->check(CLI::Range(50, 60000));
  app.add_option("--claim-recheck-ms", claim_recheck_ms,
                 "0 (default): a waiting claim-next wakes only when a task may have become "
                 "claimable for it (a transition here or announced by another process, its "
                 "worker's cooldown or task quarantine ending); above 0: it also retries this "
                 "often, a safety net for a writer that announces nothing")
      ->envname("AIOS_CLAIM_RECHECK_MS")
      ->check(CLI::Range(0, 600000));
  app.add_option("--threads", options.threads, "HTTP worker threads")
      ->envname("AIOS_AGENT_TASK_API_THREADS")
      ->check(CLI::Range(1, 64));
  aios::daemon::TlsListenerFlags tls;
  tls.add_to(app);
  aios::daemon::add_remote_owner_flag(app, options.remote_owner);
  CLI11_PARSE(app, argc, argv);

  options.db = db_path;
  options.bridge.authority_git_dir = authority;
  options.verification_executables = {verification_executables.begin(),
                                      verification_executables.end()};
  options.lease = std::chrono::seconds(lease_seconds);
  options.sweep_interval = std::chrono::milliseconds(sweep_ms);
  options.leader_check = std::chrono::milliseconds(leader_check_ms);
  options.claim_recheck = std::chrono::milliseconds(claim_recheck_ms);

  const aios::daemon::TerminationSignals signals(true);
  try {
    options.tls = tls.load();
    options.allowed_hosts = tls.allowed_hosts;
    aios::Scheduler scheduler(
        options,
        aios::read_secret_file(token_file, 32, aios::ErrorCode::CONTROL_CREDENTIAL_UNAVAILABLE,
                               aios::ErrorCode::CONTROL_CREDENTIAL_INVALID),
        aios::system_environment());
    scheduler.start();
    const auto api_port = scheduler.api_port();
    const auto bridge_port = scheduler.bridge_port();
    // One ready line carries both ports, so a supervisor or a test waits for one event.
    aios::log::info("TASK_API_LISTENING",
                    {{"host", options.api_host},
                     {"port", api_port},
                     {"bridge_host", options.bridge_host},
                     {"bridge_port", bridge_port},
                     {"authority_git_dir", authority},
                     {"db", db_path},
                     {"schema_version", scheduler.schema_version()},
                     {"tls", options.tls != nullptr},
                     {"mutual_tls", options.tls && options.tls->verifies_clients()},
                     {"version", aios::kVersion}});
    aios::service_manager::notify_ready("serving the Task API on " + options.api_host + ":" +
                                        std::to_string(api_port) + " and the Bridge on " +
                                        options.bridge_host + ":" + std::to_string(bridge_port));
    const aios::service_manager::Watchdog watchdog([&] {
      return scheduler.sweeping_within(3 * options.sweep_interval + std::chrono::seconds(10)) &&
             aios::daemon::answers_health(options.api_host, api_port, tls.certificate) &&
             aios::daemon::answers_health(options.bridge_host, bridge_port, tls.certificate);
    });
    const int signal = aios::daemon::wait_reloading(signals, options.tls.get());
    aios::log::info("SHUTDOWN_REQUESTED",
                    {{"signal", signal}, {"in_flight", scheduler.in_flight()}});
    aios::service_manager::notify_stopping("draining in-flight requests");
    scheduler.stop();
    aios::log::info("STOPPED");
    return 0;
  } catch (const aios::Error& error) {
    aios::log::error("START_FAILED", {{"error", error.code()}, {"detail", error.detail()}});
    return aios::daemon::kExitUnavailable;
  }
}
