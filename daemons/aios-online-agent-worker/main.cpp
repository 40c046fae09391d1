// aios-online-agent-worker: polls, claims, executes through an adapter and submits results.
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "../common/daemon_cli.hpp"
#include "../common/lifecycle.hpp"
#include "../common/signals.hpp"
#include "aios/log.hpp"
#include "aios/process.hpp"
#include "aios/worker.hpp"

int main(int argc, char** argv) {
  // Before any thread: what a unit granted for building sandboxes goes nowhere else.
  aios::process::confine_capabilities();
  CLI::App app{
      "The AIOS online agent worker: registers with the Task API, polls for tasks its\n"
      "capabilities allow, resolves each envelope through the governed Bridge, claims under a\n"
      "lease, heartbeats, checkpoints every phase, runs the adapter (deterministic through the\n"
      "governed commit; hermes/openclaw through the external agent executor) and submits an\n"
      "idempotent result. A restart resumes from the checkpoints and never runs an agent,\n"
      "commits or submits twice. On another host than the scheduler it speaks https:// with a\n"
      "client certificate and reads the authority repository through the Bridge.\n"
      "Each option also reads the environment variable shown.",
      "aios-online-agent-worker"};
  aios::daemon::add_version_flag(app);
  const aios::WorkerCommandLine command_line(app);
  CLI11_PARSE(app, argc, argv);
  if (command_line.serve_verification()) {
    try {
      aios::process::serve_connection(STDIN_FILENO, STDOUT_FILENO);
      return 0;
    } catch (const std::exception& error) {
      aios::log::error("SANDBOX_SERVICE_ANSWER_FAILED", {{"detail", error.what()}});
      return 1;
    }
  }

  const aios::daemon::TerminationSignals signals;
  try {
    const aios::WorkerConfig config = command_line.config();
    std::filesystem::create_directories(config.workspace_root);
    // One keep-alive transport for every call to the Task API and the Bridge, over TLS with the
    // worker's certificate when the URLs are https://.
    aios::http::SystemTransport transport(
        config.tls.empty() ? nullptr
                           : std::make_shared<aios::http::TlsClientCredentials>(config.tls));
    const auto& system = aios::system_environment();
    const aios::Environment environment{system.clock, system.spawner, transport, system.random,
                                        system.faults};
    aios::Worker worker(config, environment);
    worker.start();
    aios::log::info("WORKER_READY",
                    {{"worker_id", config.agent_id}, {"once", command_line.once()}});
    if (command_line.once()) {
      const auto outcome = worker.run_once();
      aios::log::info("WORKER_ONCE_DONE", {{"task_id", outcome ? outcome->task_id : ""},
                                           {"outcome", outcome ? outcome->outcome : "IDLE"}});
      return 0;
    }
    std::atomic<bool> stop{false};
    std::atomic<bool> looping{true};
    std::thread loop([&] {
      worker.run(stop);
      looping = false;
    });
    aios::service_manager::notify_ready("worker " + config.agent_id + " polling");
    const aios::service_manager::Watchdog watchdog([&looping] { return looping.load(); });
    const int signal = signals.wait();
    aios::log::info("SHUTDOWN_REQUESTED", {{"signal", signal}});
    aios::service_manager::notify_stopping("finishing the current task");
    stop = true;
    loop.join();
    return 0;
  } catch (const aios::Error& error) {
    aios::log::error("START_FAILED", {{"error", error.code()}, {"detail", error.detail()}});
    return aios::daemon::kExitUnavailable;
  }
}
