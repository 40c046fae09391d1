#pragma once
// aiosctl's subcommands, each added to the CLI11 app with the action it runs once parsed.
// Internal to src/ctl.

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "ctl/client.hpp"

namespace aios::ctl {

// What every subcommand shares: the client, where to write, and whether to print JSON.
struct Context {
  Client& client;
  std::ostream& out;
  std::ostream& err;
  bool json = false;

  // The answer as the API gave it (--json), or its human view.
  void show(const nlohmann::json& answer, const std::function<std::string()>& human) const;
};

// The action the parsed subcommand runs; its exit code.
using Action = std::function<int(Context&)>;

// Each adds its subcommands to `app`; the one the command line names sets `action`.
void add_task_commands(CLI::App& app, Action& action);
void add_fleet_commands(CLI::App& app, Action& action);
void add_watch_command(CLI::App& app, Action& action);
void add_doctor_command(CLI::App& app, Action& action);

// What prune_files removed.
struct PrunedFiles {
  std::size_t answers = 0;     // exchange answers (with their seals and start markers)
  std::size_t workspaces = 0;  // left-over workspaces
};
// This host's exchange answers and left-over workspaces of tasks that ended (by the Task API),
// older than `age`; nothing of a task that has not ended or is unknown.
PrunedFiles prune_files(Client& client, const std::vector<std::string>& exchange_roots,
                        const std::vector<std::string>& workspace_roots, std::chrono::seconds age);

// The JSON object of FILE, or of standard input for "-" (or, when `list_allowed`, a non-empty
// JSON list); UsageError when it is not one.
nlohmann::json read_json_argument(const std::string& file, bool list_allowed = false);

}  // namespace aios::ctl
