// aios-online-agent-worker: polls, claims, executes through an adapter and submits results.
#include <string>

#include "../common/daemon_cli.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "The AIOS online agent worker: polls the Task API for tasks its capabilities\n"
      "allow, claims under a lease, heartbeats, checkpoints, runs the adapter and\n"
      "submits the result. Each option also reads the environment variable shown.",
      "aios-online-agent-worker"};
  aios::daemon::add_version_flag(app);
  std::string api_url = "http://127.0.0.1:18940";
  std::string bridge_url = "http://127.0.0.1:18892";
  std::string agent_id;
  std::string capabilities;
  std::string adapters = "deterministic,source_capture,compact_interface_map,codex";
  std::string state_root = "/var/lib/aios-online-agent-worker";
  bool once = false;
  app.add_option("--api-url", api_url, "Task API base URL")->envname("AIOS_AGENT_TASK_API_URL");
  app.add_option("--bridge-url", bridge_url, "Governed Bridge base URL")
      ->envname("AIOS_GOVERNED_WRITE_API_URL");
  app.add_option("--agent-id", agent_id, "Agent id")->envname("AIOS_AGENT_ID");
  app.add_option("--capabilities", capabilities, "Comma-separated worker capabilities")
      ->envname("AIOS_WORKER_CAPABILITIES");
  app.add_option("--allowed-adapters", adapters, "Comma-separated adapters this worker runs")
      ->envname("AIOS_WORKER_ALLOWED_ADAPTERS");
  app.add_option("--state-root", state_root, "Worker state directory")
      ->envname("AIOS_WORKER_STATE_ROOT");
  app.add_flag("--once", once, "Take at most one task, then exit");
  CLI11_PARSE(app, argc, argv);
  return aios::daemon::not_yet_available(app, "the worker loop");
}
