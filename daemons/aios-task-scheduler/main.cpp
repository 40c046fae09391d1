// aios-task-scheduler: the Task API (leases, fleet scheduling) and the governed Bridge.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "../common/daemon_cli.hpp"
#include "../common/lifecycle.hpp"
#include "../common/signals.hpp"
#include "aios/bridge.hpp"
#include "aios/fleet.hpp"
#include "aios/http.hpp"
#include "aios/log.hpp"
#include "aios/store.hpp"
#include "aios/sys.hpp"
#include "aios/taskapi.hpp"

namespace {

// Returns leases whose holders went silent to the queue, every `interval`; the last successful
// sweep's time is the daemon's liveness for the watchdog.
class LeaseSweeper {
 public:
  LeaseSweeper(aios::TaskPlane& plane, aios::TaskApiMetrics& metrics,
               std::chrono::milliseconds interval)
      : last_success_(std::chrono::steady_clock::now()),
        ticker_(interval, [this, &plane, &metrics] {
          try {
            const auto swept = plane.sweep_expired_leases();
            metrics.count_expired(swept);
            if (swept > 0) aios::log::info("LEASES_EXPIRED", {{"count", swept}});
            last_success_ = std::chrono::steady_clock::now();
          } catch (const aios::Error& error) {
            aios::log::warn("LEASE_SWEEP_FAILED", {{"error", error.code()}});
          }
        }) {}

  // The database answered a write transaction within `window`.
  bool recent(std::chrono::steady_clock::duration window) const {
    return std::chrono::steady_clock::now() - last_success_.load() < window;
  }

 private:
  std::atomic<std::chrono::steady_clock::time_point> last_success_;
  aios::PeriodicThread ticker_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "The AIOS task scheduler: serves the Task API (tasks, leases, fleet scheduling) and\n"
      "the governed Bridge (plans, execution envelopes, writer leases, governed commits into\n"
      "the authority repository) on loopback over an embedded SQLite database\n"
      "(WAL, synchronous=FULL).\n"
      "Each option also reads the environment variable shown.",
      "aios-task-scheduler"};
  aios::daemon::add_version_flag(app);
  std::string db_path = "/var/lib/aios-agent-task/state.sqlite3";
  std::string token_file = aios::daemon::default_control_token_file();
  std::string api_host = "127.0.0.1";
  std::uint16_t api_port = 18940;
  std::string bridge_host = "127.0.0.1";
  std::uint16_t bridge_port = 18892;
  std::string authority = "/data/aios-gitops/repo.git";
  int lease_seconds = 120;
  int sweep_ms = 1000;
  unsigned threads = 4;
  app.add_option("--db", db_path, "SQLite task database")->envname("AIOS_AGENT_TASK_DB");
  app.add_option(
         "--control-token-file", token_file,
         "Owner control token file (default $CREDENTIALS_DIRECTORY/agent_task_control_token)")
      ->envname("AIOS_AGENT_TASK_CONTROL_TOKEN_FILE");
  app.add_option("--api-host", api_host, "Task API address (loopback)")
      ->envname("AIOS_AGENT_TASK_API_HOST");
  app.add_option("--api-port", api_port, "Task API port (0: any free port)")
      ->envname("AIOS_AGENT_TASK_API_PORT");
  app.add_option("--bridge-host", bridge_host, "Governed Bridge address (loopback)")
      ->envname("AIOS_GOVERNED_WRITE_API_HOST");
  app.add_option("--bridge-port", bridge_port, "Governed Bridge port (0: any free port)")
      ->envname("AIOS_GOVERNED_WRITE_API_PORT");
  app.add_option("--authority-git-dir", authority,
                 "Authority bare repository; only this daemon writes it")
      ->envname("AIOS_AUTHORITY_GIT_DIR");
  const auto default_executables = aios::BridgeOptions{}.verification_executables;
  std::vector<std::string> verification_executables(default_executables.begin(),
                                                    default_executables.end());
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
  app.add_option("--threads", threads, "HTTP worker threads")
      ->envname("AIOS_AGENT_TASK_API_THREADS")
      ->check(CLI::Range(1, 64));
  CLI11_PARSE(app, argc, argv);

  const aios::daemon::TerminationSignals signals;
  try {
    const std::string token =
        aios::read_secret_file(token_file, 32, aios::ErrorCode::CONTROL_CREDENTIAL_UNAVAILABLE,
                               aios::ErrorCode::CONTROL_CREDENTIAL_INVALID);
    const aios::SystemClock clock;
    const auto store = aios::store::open_sqlite_store(
        {.path = db_path, .connections = static_cast<std::size_t>(threads) + 1}, clock);
    aios::TaskPlane plane(*store, {.lease = std::chrono::seconds(lease_seconds)});
    aios::TaskApiMetrics metrics;
    aios::TaskApi api(plane, token, metrics);
    aios::http::ServerOptions options;
    options.host = api_host;
    options.port = api_port;
    options.threads = threads;
    options.on_unhandled_exception = [](std::string_view what) {
      aios::log::error("HANDLER_EXCEPTION", {{"what", what}});
    };
    options.admits = [&api](const aios::http::Request& request) { return api.admits(request); };
    aios::http::Server server(
        options, [&api](const aios::http::Request& request) { return api.handle(request); });
    aios::Bridge bridge(*store, plane, token,
                        {.authority_git_dir = authority,
                         .verification_executables = {verification_executables.begin(),
                                                      verification_executables.end()}});
    aios::http::ServerOptions bridge_options = options;
    bridge_options.host = bridge_host;
    bridge_options.port = bridge_port;
    // A plan carries whole files; the envelope's own limit (16 MiB canonical) is the bound.
    bridge_options.max_body_bytes = 17 * 1024 * 1024;
    bridge_options.admits = [&bridge](const aios::http::Request& request) {
      return bridge.admits(request);
    };
    aios::http::Server bridge_server(bridge_options, [&bridge](const aios::http::Request& request) {
      return bridge.handle(request);
    });
    server.start();
    bridge_server.start();
    const LeaseSweeper sweeper(plane, metrics, std::chrono::milliseconds(sweep_ms));
    // One ready line carries both ports, so a supervisor or a test waits for one event.
    aios::log::info("TASK_API_LISTENING", {{"host", api_host},
                                           {"port", server.port()},
                                           {"bridge_host", bridge_host},
                                           {"bridge_port", bridge_server.port()},
                                           {"authority_git_dir", authority},
                                           {"db", db_path},
                                           {"schema_version", store->schema_version()},
                                           {"version", aios::kVersion}});
    aios::service_manager::notify_ready("serving the Task API on " + api_host + ":" +
                                        std::to_string(server.port()) + " and the Bridge on " +
                                        bridge_host + ":" + std::to_string(bridge_server.port()));
    const aios::service_manager::Watchdog watchdog([&] {
      return sweeper.recent(std::chrono::milliseconds(3 * sweep_ms) + std::chrono::seconds(10)) &&
             aios::daemon::answers_health(api_host, server.port()) &&
             aios::daemon::answers_health(bridge_host, bridge_server.port());
    });
    const int signal = signals.wait();
    aios::log::info("SHUTDOWN_REQUESTED", {{"signal", signal}, {"in_flight", server.in_flight()}});
    aios::service_manager::notify_stopping("draining in-flight requests");
    server.stop();
    bridge_server.stop();
    aios::log::info("STOPPED");
    return 0;
  } catch (const aios::Error& error) {
    aios::log::error("START_FAILED", {{"error", error.code()}, {"detail", error.detail()}});
    return aios::daemon::kExitUnavailable;
  }
}
