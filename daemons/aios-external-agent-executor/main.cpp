// aios-external-agent-executor: runs external agent CLIs from root-owned profiles.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "../common/daemon_cli.hpp"
#include "../common/lifecycle.hpp"
#include "../common/signals.hpp"
#include "aios/canonical.hpp"
#include "aios/executor.hpp"
#include "aios/log.hpp"

extern "C" {
extern char** environ;
}

namespace {

std::vector<std::string> own_environment() {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) entries.emplace_back(*entry);
  return entries;
}

std::optional<std::filesystem::path> env_path(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::filesystem::path(value);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "The AIOS external agent executor: runs Hermes/OpenClaw from root-owned runtime\n"
      "profiles (<profile-root>/<runtime>.json) with only the provider credential\n"
      "($CREDENTIALS_DIRECTORY), never through a shell. With --request and --result it runs\n"
      "one request (exit 1 and the error code on stderr when it fails); otherwise it serves\n"
      "the exchange directory: requests/ in, results/ or failed/ out.\n"
      "It refuses to start when its own environment holds secret-looking variables.\n"
      "Serve mode seals every answer under the exchange key (--exchange-key-file) that the\n"
      "worker checks, so an answer anyone else writes into the exchange is refused.\n"
      "Environment: CREDENTIALS_DIRECTORY (systemd LoadCredential=) holds the provider\n"
      "credentials the profiles name and exchange_result_key; TMPDIR is where per-request\n"
      "private directories go.",
      "aios-external-agent-executor"};
  aios::daemon::add_version_flag(app);
  namespace executor = aios::executor;
  std::string root = executor::kDefaultExchangeRoot.string();
  std::string profile_root = executor::kDefaultProfileRoot.string();
  std::string request;
  std::string result;
  unsigned concurrency = 1;
  std::vector<std::string> executable_roots;
  app.add_option("--root", root, "Exchange directory (requests/, results/, failed/, started/)")
      ->capture_default_str();
  app.add_option("--profile-root", profile_root, "Root-owned runtime profile directory")
      ->capture_default_str();
  auto* request_option = app.add_option("--request", request, "Run this one request file");
  auto* result_option = app.add_option("--result", result, "Write the one request's result here");
  request_option->needs(result_option);
  result_option->needs(request_option);
  app.add_option("--concurrency", concurrency, "Serve mode: requests run at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  std::string key_file = aios::daemon::credential_file("exchange_result_key");
  app.add_option("--exchange-key-file", key_file,
                 "Serve mode: the exchange key (at least 32 bytes, root-provisioned, shared\n"
                 "with the worker; default $CREDENTIALS_DIRECTORY/exchange_result_key)");
  bool broker = false;
  std::string config_root = aios::broker::kDefaultConfigRoot.string();
  std::string worktree_root = aios::broker::kDefaultWorktreeRoot.string();
  std::string self_test;
  app.add_flag("--broker", broker,
               "Engineering runtime broker mode (aios-agent-runtime-broker.service):\n"
               "runtime-request.v1 in, the backend of <config-root>/agent-runtime-\n"
               "<backend>.conf run in the request's worktree, runtime-result.v1 out;\n"
               "--root defaults to /var/lib/aios-agent-runtime-broker");
  app.add_option("--config-root", config_root, "Broker: root-owned backend configuration directory")
      ->capture_default_str();
  app.add_option("--worktree-root", worktree_root,
                 "Broker: directory a request's worktree must lie under")
      ->capture_default_str();
  app.add_option("--self-test", self_test,
                 "Broker: run the disposable self-test against this backend, print its\n"
                 "report and exit (0 when the backend changed the worktree and HEAD\n"
                 "stayed at the base commit)");
  app.add_option("--executable-root", executable_roots,
                 "Directory a profile's executable and node script must resolve\n"
                 "under; repeat for several. Replaces the built-in list: /usr/bin,\n"
                 "/usr/local/bin, /opt/aios/bin, /opt/hermes, /opt/openclaw,\n"
                 "/opt/aios-hermes-agent, /opt/aios/openclaw-engineering");
  CLI11_PARSE(app, argc, argv);

  executor::ExecuteOptions execute;
  execute.profile_root = profile_root;
  if (!executable_roots.empty()) {
    execute.executable_roots.assign(executable_roots.begin(), executable_roots.end());
  }
  execute.credentials_directory = env_path("CREDENTIALS_DIRECTORY");
  execute.temporary_root = env_path("TMPDIR").value_or("/tmp");
  const aios::broker::BrokerOptions broker_options{
      .config_root = config_root,
      .executable_roots = execute.executable_roots,
      .credentials_directory = execute.credentials_directory,
      .temporary_root = execute.temporary_root,
      .worktree_root = worktree_root};
  if (broker && app.count("--root") == 0) root = aios::broker::kDefaultExchangeRoot.string();

  if (!self_test.empty()) {
    try {
      executor::assert_no_secret_environment(own_environment());
      const auto report = aios::broker::self_test(self_test, broker_options);
      std::printf("%s\n", aios::canonical_json(report).c_str());
      return 0;
    } catch (const aios::Error& error) {
      std::fprintf(stderr, "%s %s\n", executor::failure_text(error).c_str(),
                   error.detail().c_str());
      return 1;
    }
  }

  if (!request.empty()) {
    try {
      executor::assert_no_secret_environment(own_environment());
      if (broker) {
        aios::broker::execute_request(request, result, broker_options);
      } else {
        executor::execute_request(request, result, execute);
      }
      return 0;
    } catch (const aios::Error& error) {
      std::fprintf(stderr, "%s\n", executor::failure_text(error).c_str());
      return 1;
    }
  }

  const aios::daemon::TerminationSignals signals;
  try {
    executor::assert_no_secret_environment(own_environment());
    auto key = executor::ExchangeKey::from_file(key_file);
    executor::Server server(
        broker ? aios::broker::serve_options(root, broker_options, concurrency, std::move(key))
               : executor::ServeOptions{.root = root,
                                        .execute = execute,
                                        .concurrency = concurrency,
                                        .key = std::move(key)});
    std::atomic<bool> failed = false;
    std::thread serving([&server, &failed] {
      try {
        server.run();
      } catch (const std::exception& error) {
        aios::log::error("EXTERNAL_AGENT_EXECUTOR_SERVE_FAILED", {{"what", error.what()}});
        failed = true;
        ::kill(::getpid(), SIGTERM);  // wakes the signal wait below
      }
    });
    // The inotify watch is up once the server exists: a request renamed in from now on is seen.
    aios::service_manager::notify_ready("watching " + root + "/requests");
    const aios::service_manager::Watchdog watchdog([&failed] { return !failed.load(); });
    const int signal = signals.wait();
    aios::log::info("EXTERNAL_AGENT_EXECUTOR_DRAINING", {{"signal", signal}});
    aios::service_manager::notify_stopping("draining running agents");
    server.stop();
    serving.join();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
  } catch (const aios::Error& error) {
    aios::log::error("EXTERNAL_AGENT_EXECUTOR_START_FAILED",
                     {{"error", executor::failure_text(error)}, {"detail", error.detail()}});
    std::fprintf(stderr, "%s\n", executor::failure_text(error).c_str());
    return aios::daemon::kExitUnavailable;
  }
}
