// aios-agent-task-execution-rebind: the owner-controlled CAS execution-rebind service.
#include <string>

#include "../common/daemon_cli.hpp"
#include "../common/lifecycle.hpp"
#include "../common/signals.hpp"
#include "../common/tls.hpp"
#include "aios/http.hpp"
#include "aios/log.hpp"
#include "aios/rebind.hpp"
#include "aios/store.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "The AIOS execution-rebind service: lets the owner replace a returned task's\n"
      "source-capture envelope with its registered deterministic plan, under CAS.\n"
      "With a TLS certificate it may listen on a network address (SIGHUP reloads the files).\n"
      "Each option also reads the environment variable shown.",
      "aios-agent-task-execution-rebind"};
  aios::daemon::add_version_flag(app);
  std::string db_path = "/var/lib/aios-agent-task/state.sqlite3";
  std::string token_file = aios::daemon::default_control_token_file();
  std::string bridge_url = "http://127.0.0.1:18892";
  std::string host = "127.0.0.1";
  std::uint16_t port = 18942;
  std::string authorization_id;
  app.add_option(
         "--db", db_path,
         "Task database shared with the scheduler: a path, sqlite:///path or postgresql:// URL")
      ->envname("AIOS_AGENT_TASK_DB");
  app.add_option(
         "--control-token-file", token_file,
         "Owner control token file (default $CREDENTIALS_DIRECTORY/agent_task_control_token)")
      ->envname("AIOS_AGENT_TASK_CONTROL_TOKEN_FILE");
  app.add_option("--bridge-url", bridge_url,
                 "Governed Bridge base URL (POST <url>/v2/execution-envelope)")
      ->envname("AIOS_GOVERNED_WRITE_API_URL");
  app.add_option("--host", host, "Listen addresses, comma-separated (loopback without TLS)")
      ->envname("AIOS_TASK_EXECUTION_REBIND_HOST");
  app.add_option("--port", port, "Listen port (0: any free port)")
      ->envname("AIOS_TASK_EXECUTION_REBIND_PORT");
  app.add_option("--authorization-id", authorization_id,
                 "The owner's rebind authorization id (required)")
      ->envname("AIOS_AGENT_TASK_EXECUTION_REBIND_AUTHORIZATION_ID");
  aios::daemon::TlsListenerFlags tls;
  tls.add_to(app);
  bool remote_owner = false;
  aios::daemon::add_remote_owner_flag(app, remote_owner);
  std::string bridge_ca;
  app.add_option("--tls-ca-file", bridge_ca,
                 "An https:// Bridge URL: the CA bundle (PEM) its certificate must chain to "
                 "(default: the system's)")
      ->envname("AIOS_TLS_CA_FILE");
  CLI11_PARSE(app, argc, argv);

  const aios::daemon::TerminationSignals signals(true);
  try {
    // The seed's order: the authorization id, then the credential.
    const std::string authorization =
        aios::require_execution_rebind_authorization_id(authorization_id);
    const std::string token = aios::read_secret_file(
        token_file, 32, aios::ErrorCode::TASK_EXECUTION_REBIND_CONTROL_CREDENTIAL_UNAVAILABLE,
        aios::ErrorCode::TASK_EXECUTION_REBIND_CONTROL_CREDENTIAL_INVALID);
    const auto& environment = aios::system_environment();
    aios::http::SystemTransport bridge_transport(
        bridge_ca.empty() ? nullptr
                          : std::make_shared<aios::http::TlsClientCredentials>(
                                aios::http::TlsClientFiles{bridge_ca}));
    auto resolver = aios::make_bridge_execution_resolver(bridge_url, token, bridge_transport);
    aios::http::ServerOptions options;
    options.host = host;
    options.port = port;
    options.tls = tls.load();
    options.allowed_hosts = tls.allowed_hosts;
    options.max_body_bytes = aios::ExecutionRebindApi::kServerBodyLimit;
    options.on_unhandled_exception = [](std::string_view what) {
      aios::log::error("HANDLER_EXCEPTION", {{"what", what}});
    };
    // The scheduler owns the schema: this process never migrates it.
    const auto task_store = aios::store::open_store(
        {.url = db_path, .connections = options.threads + 1, .migrate = false}, environment.clock);
    aios::ExecutionRebindStore store(*task_store, std::move(resolver), authorization,
                                     environment.faults);
    aios::ExecutionRebindApi api(store, {token, remote_owner});
    options.admits = [&api](const aios::http::Request& request) { return api.admits(request); };
    aios::http::Server server(
        options, [&api](const aios::http::Request& request) { return api.handle(request); });
    server.start();
    aios::log::info("TASK_EXECUTION_REBIND_LISTENING", {{"host", host},
                                                        {"port", server.port()},
                                                        {"db", db_path},
                                                        {"bridge_url", bridge_url},
                                                        {"tls", options.tls != nullptr},
                                                        {"version", aios::kVersion}});
    aios::service_manager::notify_ready("serving execution rebind on " + host + ":" +
                                        std::to_string(server.port()));
    const aios::service_manager::Watchdog watchdog(
        [&] { return aios::daemon::answers_health(host, server.port(), tls.certificate); });
    const int signal = aios::daemon::wait_reloading(signals, options.tls.get());
    aios::log::info("SHUTDOWN_REQUESTED", {{"signal", signal}, {"in_flight", server.in_flight()}});
    aios::service_manager::notify_stopping("draining in-flight requests");
    server.stop();
    aios::log::info("STOPPED");
    return 0;
  } catch (const aios::Error& error) {
    aios::log::error("START_FAILED", {{"error", error.code()}, {"detail", error.detail()}});
    return aios::daemon::kExitUnavailable;
  }
}
