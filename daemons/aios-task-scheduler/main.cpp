// aios-task-scheduler: the Task API (leases, fleet scheduling) and the governed Bridge.
#include <string>

#include "../common/daemon_cli.hpp"

int main(int argc, char** argv) {
  CLI::App app{"The AIOS task scheduler: serves the Task API (tasks, leases, fleet scheduling)\n"
               "and the governed Bridge (plans, execution envelopes, writer leases, governed\n"
               "commits) on loopback. Each option also reads the environment variable shown.",
               "aios-task-scheduler"};
  aios::daemon::add_version_flag(app);
  std::string db = "/var/lib/aios-agent-task/state.sqlite3";
  std::string token_file;
  std::string api_host = "127.0.0.1";
  int api_port = 18940;
  std::string bridge_host = "127.0.0.1";
  int bridge_port = 18892;
  std::string authority = "/data/aios-gitops/repo.git";
  int lease_seconds = 120;
  app.add_option("--db", db, "SQLite task database")->envname("AIOS_AGENT_TASK_DB");
  app.add_option("--control-token-file", token_file,
                 "Owner control token file (default $CREDENTIALS_DIRECTORY/agent_task_control_token)")
      ->envname("AIOS_AGENT_TASK_CONTROL_TOKEN_FILE");
  app.add_option("--api-host", api_host, "Task API address")->envname("AIOS_AGENT_TASK_API_HOST");
  app.add_option("--api-port", api_port, "Task API port")->envname("AIOS_AGENT_TASK_API_PORT");
  app.add_option("--bridge-host", bridge_host, "Bridge address")
      ->envname("AIOS_GOVERNED_WRITE_API_HOST");
  app.add_option("--bridge-port", bridge_port, "Bridge port")
      ->envname("AIOS_GOVERNED_WRITE_API_PORT");
  app.add_option("--authority-git-dir", authority, "Authority bare repository")
      ->envname("AIOS_AUTHORITY_GIT_DIR");
  app.add_option("--lease-seconds", lease_seconds, "Task lease length")
      ->envname("AIOS_TASK_LEASE_SECONDS");
  CLI11_PARSE(app, argc, argv);
  return aios::daemon::not_yet_available(app, "the Task API and Bridge service");
}
