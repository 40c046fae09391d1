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
#include "aios/process.hpp"

extern "C" {
extern char** environ;
}

namespace {

std::vector<std::string> own_environment() {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) entries.emplace_back(*entry);
  return entries;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread: what a unit granted for building sandboxes goes nowhere else.
  aios::process::confine_capabilities();
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
  const executor::CommandLine command_line(app, aios::system_environment());
  CLI11_PARSE(app, argc, argv);

  using Mode = executor::CommandLine::Mode;
  if (command_line.mode() != Mode::serve) {
    try {
      executor::assert_no_secret_environment(own_environment());
      if (command_line.mode() == Mode::self_test) {
        const auto report =
            aios::broker::self_test(command_line.self_test_backend(), command_line.broker_options(),
                                    command_line.execute_options());
        std::printf("%s\n", aios::canonical_json(report).c_str());
      } else if (command_line.broker()) {
        aios::broker::execute_request(command_line.request(), command_line.result(),
                                      command_line.broker_options(),
                                      command_line.execute_options());
      } else {
        executor::execute_request(command_line.request(), command_line.result(),
                                  command_line.execute_options());
      }
      return 0;
    } catch (const aios::Error& error) {
      // The self-test's detail says which of its steps failed; a request's stays in its result.
      std::fprintf(stderr, "%s%s\n", executor::failure_text(error).c_str(),
                   command_line.mode() == Mode::self_test ? (" " + error.detail()).c_str() : "");
      return 1;
    }
  }

  const aios::daemon::TerminationSignals signals;
  try {
    executor::assert_no_secret_environment(own_environment());
    executor::Server server(command_line.serve_options());
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
    aios::service_manager::notify_ready("watching " + command_line.root().string() + "/requests");
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
