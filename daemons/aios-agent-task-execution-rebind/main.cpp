// aios-agent-task-execution-rebind: the owner-controlled CAS execution-rebind service.
#include <string>

#include "../common/daemon_cli.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "The AIOS execution-rebind service: lets the owner replace a returned task's\n"
      "source-capture envelope with its registered deterministic plan, under CAS.\n"
      "Each option also reads the environment variable shown.",
      "aios-agent-task-execution-rebind"};
  aios::daemon::add_version_flag(app);
  std::string db = "/var/lib/aios-agent-task/state.sqlite3";
  std::string token_file;
  std::string bridge_url = "http://127.0.0.1:18892";
  std::string host = "127.0.0.1";
  int port = 18942;
  std::string authorization_id;
  app.add_option("--db", db, "SQLite task database (shared with the scheduler)")
      ->envname("AIOS_AGENT_TASK_DB");
  app.add_option(
         "--control-token-file", token_file,
         "Owner control token file (default $CREDENTIALS_DIRECTORY/agent_task_control_token)")
      ->envname("AIOS_AGENT_TASK_CONTROL_TOKEN_FILE");
  app.add_option("--bridge-url", bridge_url, "Governed Bridge base URL")
      ->envname("AIOS_GOVERNED_WRITE_API_URL");
  app.add_option("--host", host, "Listen address")->envname("AIOS_TASK_EXECUTION_REBIND_HOST");
  app.add_option("--port", port, "Listen port")->envname("AIOS_TASK_EXECUTION_REBIND_PORT");
  app.add_option("--authorization-id", authorization_id, "The owner's rebind authorization id")
      ->envname("AIOS_AGENT_TASK_EXECUTION_REBIND_AUTHORIZATION_ID");
  CLI11_PARSE(app, argc, argv);
  return aios::daemon::not_yet_available(app, "the rebind service");
}
