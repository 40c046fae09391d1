// aios-envelope: project, validate and digest execution envelopes from the command line, so an
// operator can compute the digests a rebind or a claim needs without running a daemon.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/error.hpp"
#include "aios/version.hpp"

namespace {

// Read as the daemons read bodies: nesting bounded, integers past 64 bits exact.
nlohmann::json read_stdin() {
  const std::string text{std::istreambuf_iterator<char>(std::cin),
                         std::istreambuf_iterator<char>()};
  auto value = aios::parse_json(text);
  if (value.is_discarded()) throw aios::Error(aios::ErrorCode::REQUEST_INVALID);
  return value;
}

const nlohmann::json& member(const nlohmann::json& value, const char* key) {
  static const nlohmann::json kNull;
  const auto it = value.find(key);
  return it == value.end() ? kNull : *it;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Projects, validates and digests AIOS execution envelopes (JSON on stdin).\n"
      "Errors print their wire code on stderr and exit 1.",
      "aios-envelope"};
  app.set_version_flag("--version", std::string("aios-envelope ") + aios::kVersion);
  app.require_subcommand(1);
  auto* project = app.add_subcommand(
      "project-task", "stdin {binding, task, execution} -> the projected Online Task");
  auto* validate = app.add_subcommand(
      "validate", "stdin {envelope[, binding][, worker_capabilities]} -> the valid envelope");
  auto* digest = app.add_subcommand("digest", "stdin any JSON -> its canonical SHA-256");
  CLI11_PARSE(app, argc, argv);

  try {
    const auto input = read_stdin();
    nlohmann::json output;
    if (project->parsed()) {
      const auto binding = aios::GovernedBinding::from_mapping(member(input, "binding"));
      output =
          aios::project_online_task(binding, member(input, "task"), member(input, "execution"));
    } else if (validate->parsed()) {
      aios::EnvelopeChecks checks;
      aios::GovernedBinding binding;
      if (input.contains("binding")) {
        binding = aios::GovernedBinding::from_mapping(input["binding"]);
        checks.binding = &binding;
      }
      if (input.contains("worker_capabilities")) {
        checks.worker_capabilities = &input["worker_capabilities"];
      }
      output = aios::validate_execution_envelope(member(input, "envelope"), checks);
    } else if (digest->parsed()) {
      std::cout << aios::digest(input) << '\n';
      return 0;
    }
    // Canonical, so what is printed is exactly what the digests cover (big integers included).
    std::cout << aios::canonical_json(output) << '\n';
    return 0;
  } catch (const aios::Error& error) {
    std::fprintf(stderr, "%s\n", error.code().c_str());
  } catch (const nlohmann::json::exception&) {
    std::fprintf(stderr, "%s\n", aios::Error(aios::ErrorCode::REQUEST_INVALID).code().c_str());
  }
  return 1;
}
