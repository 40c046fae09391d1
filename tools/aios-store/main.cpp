// aios-store: operator commands over the task store. `migrate` moves a SQLite store into
// PostgreSQL (store.hpp migrate_sqlite_to_postgres) and prints what it copied and checked.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "aios/error.hpp"
#include "aios/store.hpp"
#include "aios/version.hpp"

namespace {

// Copied, and the source changed after the snapshot: those changes are not in PostgreSQL.
constexpr int kChangedAfterSnapshot = 3;

nlohmann::json report_json(const aios::store::MigrationReport& report) {
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& table : report.tables) {
    tables.push_back({{"table", table.table},
                      {"rows", table.rows},
                      {"sha256", table.sha256},
                      {"changed_after_snapshot", table.changed_after_snapshot}});
  }
  return {{"status",
           report.changed_after_snapshot() ? "COPIED_SOURCE_CHANGED_AFTER_SNAPSHOT" : "COPIED"},
          {"tables", tables}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Operator commands over the AIOS task store.\n"
      "Errors print their wire code and a reason on stderr and exit 1.",
      "aios-store"};
  app.set_version_flag("--version", std::string("aios-store ") + aios::kVersion);
  app.require_subcommand(1);

  std::string from;
  std::string to;
  std::filesystem::path snapshot_dir;
  std::filesystem::path password_file;
  auto* migrate = app.add_subcommand(
      "migrate", "Copy a SQLite task store into an empty PostgreSQL one (docs/operations.md)");
  migrate->footer(
      "From a consistent snapshot (SQLite's online backup: the scheduler may keep running), in "
      "one transaction that commits only when every table's row count and SHA-256 read back "
      "equal. Prints a JSON report on stdout.\n"
      "Exit 0: copied, and the source did not change after the snapshot.\n"
      "Exit 3: copied, but the tables marked changed_after_snapshot changed meanwhile (stop the "
      "scheduler, recreate the database, copy again).\n"
      "Exit 1: refused or failed (the last stderr line is CODE: reason); no row was copied.");
  migrate->add_option("--from", from, "the SQLite store: a path or sqlite:///absolute/path")
      ->required();
  migrate
      ->add_option("--to", to,
                   "the PostgreSQL store: postgresql://user@host:port/db?sslmode=…, without a "
                   "password (from --password-file, $CREDENTIALS_DIRECTORY/aios-task-db-password "
                   "or libpq's passfile)")
      ->required();
  migrate->add_option("--snapshot-dir", snapshot_dir,
                      "where the snapshot is written while the copy runs (removed after); "
                      "default: the source's directory (it needs room for one copy of the source)");
  migrate->add_option("--password-file", password_file,
                      "a file holding the PostgreSQL password (a systemd credential)");
  CLI11_PARSE(app, argc, argv);

  try {
    const auto report = aios::store::migrate_sqlite_to_postgres(
        {.url = from, .connections = 1, .migrate = false},
        {.url = to, .connections = 1, .password_file = password_file}, snapshot_dir);
    std::cout << report_json(report).dump(2) << '\n';
    return report.changed_after_snapshot() ? kChangedAfterSnapshot : 0;
  } catch (const aios::Error& error) {
    const auto* info = aios::find_error(error.code());
    std::string reason = error.detail().empty() && info ? std::string(info->text) : error.detail();
    // One line, as the help promises (libpq's messages run over several).
    std::replace_if(
        reason.begin(), reason.end(), [](char c) { return c == '\n' || c == '\t'; }, ' ');
    std::fprintf(stderr, "%s: %s\n", error.code().c_str(), reason.c_str());
  }
  return 1;
}
