// aios-external-agent-executor: runs external agent CLIs from root-owned profiles.
#include <string>

#include "../common/daemon_cli.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "The AIOS external agent executor: runs Hermes/OpenClaw from root-owned runtime\n"
      "profiles with only the provider credential. With --request and --result it\n"
      "runs one request; otherwise it serves the exchange directory.",
      "aios-external-agent-executor"};
  aios::daemon::add_version_flag(app);
  std::string root = "/var/lib/aios-external-agent-executor";
  std::string profile_root = "/etc/aios/external-agent-runtime.d";
  std::string request;
  std::string result;
  app.add_option("--root", root, "Exchange directory (requests/, results/, failed/)");
  app.add_option("--profile-root", profile_root, "Root-owned runtime profile directory");
  auto* request_option = app.add_option("--request", request, "Run this one request file");
  auto* result_option = app.add_option("--result", result, "Write the one request's result here");
  request_option->needs(result_option);
  result_option->needs(request_option);
  CLI11_PARSE(app, argc, argv);
  return aios::daemon::not_yet_available(app, "the executor");
}
