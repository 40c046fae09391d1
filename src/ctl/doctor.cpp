// aiosctl doctor: what an operator gets wrong on a host of the suite, each finding with its fix.
// The services answering, the owner's token, the store's integrity and schema, the units (under
// systemd), the credentials the units load, free disk under the state directories, the agent
// profiles (root-owned, valid) and each profile's CLI answering its version probe with the
// version the profile was validated against.
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "aios/ctl.hpp"
#include "aios/executor.hpp"
#include "aios/process.hpp"
#include "aios/store.hpp"
#include "ctl/commands.hpp"
#include "ctl/render.hpp"

namespace aios::ctl {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr std::uintmax_t kWarnFreeBytes = 1ULL << 30;
constexpr std::uintmax_t kFailFreeBytes = 100ULL << 20;

struct DoctorOptions {
  std::string profile_root = executor::kDefaultProfileRoot.string();
  std::vector<std::string> executable_roots;
  std::vector<std::string> state_dirs = {"/var/lib/aios-agent-task",
                                         "/var/lib/aios-online-agent-worker",
                                         "/var/lib/aios-external-agent-executor"};
  std::vector<std::string> unit_dirs = {"/etc/systemd/system", "/usr/lib/systemd/system",
                                        "/lib/systemd/system"};
};

// skip: the check found nothing of its kind here to look at; its fix says what makes it run.
enum class State { ok, skip, warn, fail };

struct Finding {
  std::string check;
  State state;
  std::string found;
  std::string fix;
};

class Doctor {
 public:
  Doctor(Context& context, const DoctorOptions& options) : c_(context), o_(options) {}

  std::vector<Finding> run() {
    services();
    control_token();
    store();
    units();
    credentials();
    disk();
    profiles();
    return findings_;
  }

 private:
  void add(std::string check, State state, std::string found, std::string fix = {}) {
    findings_.push_back({std::move(check), state, std::move(found), std::move(fix)});
  }

  void services() {
    const struct {
      Service service;
      const char* name;
      const char* unit;
    } kServices[] = {{Service::kApi, "Task API", "aios-agent-task-api"},
                     {Service::kBridge, "Bridge", "aios-agent-task-api"},
                     {Service::kRebind, "rebind service", "aios-agent-task-execution-rebind"}};
    for (const auto& s : kServices) {
      if (c_.client.healthy(s.service)) {
        add(std::string("service: ") + s.name, State::ok, "answers /health");
      } else {
        add(std::string("service: ") + s.name, State::fail, "does not answer /health",
            std::string("systemctl status ") + s.unit + "; journalctl -u " + s.unit +
                " (or the URL: --api, --bridge, --rebind)");
      }
    }
  }

  void control_token() {
    const auto& path = c_.client.endpoints().token_file;
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
      add("owner token", State::fail, path + " is missing, a symlink or not a file",
          "write a token of at least 32 characters there (root, 0600): docs/operations.md");
    } else if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0 || info.st_uid != 0) {
      add("owner token", State::fail, path + " is readable by others or not root's",
          "chown root:root " + path + " && chmod 600 " + path);
    } else {
      add("owner token", State::ok, path);
    }
  }

  void store() {
    Json status;
    try {
      status = c_.client.get(Service::kApi, "/v1/status");
    } catch (const Error& error) {
      add("store", State::fail, "GET /v1/status answered " + error.code(),
          "check the owner token and the Task API above");
      return;
    }
    const auto integrity = status.value("integrity", std::string());
    const auto version = status.value("schema_version", 0);
    if (integrity != "ok") {
      add("store", State::fail, "integrity check: " + integrity,
          "stop the scheduler, back the database up and restore the last good copy "
          "(docs/operations.md, Backup and restore)");
    } else if (version != store::kSchemaVersion) {
      add("store", State::fail,
          "schema " + std::to_string(version) + ", this aiosctl knows " +
              std::to_string(store::kSchemaVersion),
          version < store::kSchemaVersion ? "restart aios-agent-task-api to migrate"
                                          : "install the aiosctl of the scheduler's release");
    } else {
      add("store", State::ok,
          status.value("backend", std::string()) + " schema " + std::to_string(version) +
              ", integrity ok");
    }
  }

  // The suite's unit files, each with its drop-ins, as text.
  std::vector<std::pair<std::string, std::string>> unit_files() const {
    std::vector<std::pair<std::string, std::string>> units;
    std::set<std::string> seen;
    for (const auto& dir : o_.unit_dirs) {
      std::error_code ignored;
      for (const auto& entry : fs::directory_iterator(dir, ignored)) {
        const auto name = entry.path().filename().string();
        if (!name.starts_with("aios-") || !name.ends_with(".service") ||
            name.find('@') != name.npos || !seen.insert(name).second) {
          continue;
        }
        std::string text = read(entry.path());
        for (const auto& drop_dir : o_.unit_dirs) {
          for (const auto& drop :
               fs::directory_iterator(fs::path(drop_dir) / (name + ".d"), ignored)) {
            if (drop.path().extension() == ".conf") text += "\n" + read(drop.path());
          }
        }
        units.emplace_back(name, std::move(text));
      }
    }
    return units;
  }

  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // `systemctl <verb> <unit>`'s first line of output.
  static std::string systemctl(const std::string& verb, const std::string& unit) {
    std::string out;
    process::Spec spec;
    spec.argv = {"/usr/bin/systemctl", verb, unit};
    spec.environment = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
    spec.working_directory = "/";
    spec.timeout = std::chrono::seconds(10);
    spec.on_stdout = [&out](std::string_view chunk) {
      if (out.size() < 256) out.append(chunk);
    };
    try {
      process::run(spec);
    } catch (const std::exception&) {
      return "unknown";
    }
    return out.substr(0, out.find('\n'));
  }

  void units() {
    if (!fs::exists("/run/systemd/system")) {
      add("units", State::skip, "systemd is not the init system here",
          "run doctor on the host whose systemd runs the units");
      return;
    }
    const auto files = unit_files();
    if (files.empty()) {
      add("units", State::skip, "no aios unit files here",
          "--unit-dir DIR where the units are installed");
      return;
    }
    std::size_t checked = 0;
    for (const auto& [unit, text] : files) {
      const auto enabled = systemctl("is-enabled", unit);
      const auto active = systemctl("is-active", unit);
      if (active == "failed") {
        add("unit " + unit, State::fail, "failed",
            "systemctl status " + unit + "; journalctl -u " + unit);
      } else if (enabled == "enabled" && active != "active") {
        add("unit " + unit, State::fail, "enabled but " + active, "systemctl start " + unit);
      } else {
        ++checked;
      }
    }
    add("units", State::ok, std::to_string(checked) + " aios units not failed");
  }

  // Every file a unit loads as a credential must exist, and a plain one be root's alone.
  void credentials() {
    static const std::regex kLoad(R"(^\s*(LoadCredential|LoadCredentialEncrypted)=([^:\s]+):(\S+))",
                                  std::regex::multiline);
    const auto files = unit_files();
    if (files.empty()) {
      add("credentials", State::skip, "no unit files to read LoadCredential= from",
          "--unit-dir DIR where the units are installed");
      return;
    }
    std::size_t checked = 0;
    for (const auto& [unit, text] : files) {
      for (auto it = std::sregex_iterator(text.begin(), text.end(), kLoad);
           it != std::sregex_iterator(); ++it) {
        const std::string kind = (*it)[1], name = (*it)[2], path = (*it)[3];
        struct stat info {};
        if (::stat(path.c_str(), &info) != 0) {
          add("credential " + name, State::fail, unit + " loads " + path + ", which is missing",
              kind == "LoadCredentialEncrypted"
                  ? "systemd-creds encrypt --name=" + name + " - " + path
                  : "create " + path + " (root, 0600): docs/operations.md, Credentials");
        } else if (kind == "LoadCredential" && (info.st_mode & S_IRWXO) != 0) {
          add("credential " + name, State::fail, path + " is readable by every user",
              "chmod o-rwx " + path);
        } else {
          ++checked;
        }
      }
    }
    add("credentials", State::ok, std::to_string(checked) + " credential files in place");
  }

  void disk() {
    bool checked = false;
    for (const auto& dir : o_.state_dirs) {
      struct statvfs info {};
      if (::statvfs(dir.c_str(), &info) != 0) continue;  // not on this host
      checked = true;
      const auto free = static_cast<std::uintmax_t>(info.f_bavail) * info.f_frsize;
      const auto mib = std::to_string(free >> 20) + " MiB free under " + dir;
      if (free < kFailFreeBytes) {
        add("disk", State::fail, mib,
            "free space: a full disk stops every transition (STORE_FULL)");
      } else if (free < kWarnFreeBytes) {
        add("disk", State::warn, mib, "free space before it runs out");
      } else {
        add("disk", State::ok, mib);
      }
    }
    if (!checked) {
      add("disk", State::skip, "none of the state directories is on this host",
          "--state-dir DIR of the store and the exchanges");
    }
  }

  // The profile's executable (with a node script) run with `arguments`, in a sandbox of its own
  // (no network): its outcome and the first 4 KiB of what it printed.
  std::pair<process::Outcome, std::string> ask(const executor::RuntimeProfile& profile,
                                               const std::vector<std::string>& arguments) {
    std::vector<std::string> argv = {profile.argv.at(0)};
    const auto program = fs::path(profile.argv.at(0)).filename().string();
    if (program.starts_with("node") && profile.argv.size() > 1) argv.push_back(profile.argv[1]);
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    std::string answer;
    process::Spec spec;
    spec.argv = argv;
    spec.environment = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/tmp"};
    spec.working_directory = "/";
    spec.timeout = std::chrono::seconds(20);
    spec.on_stdout = spec.on_stderr = [&answer](std::string_view chunk) {
      if (answer.size() < 65536) answer.append(chunk);
    };
    process::Sandbox sandbox;
    sandbox.read_only = profile.read_only_paths;
    for (const auto& arg : argv) {
      if (arg.starts_with("/")) sandbox.read_only.push_back(fs::path(arg).parent_path());
    }
    spec.sandbox = sandbox;
    const auto outcome = process::run(spec);
    return {outcome, answer};
  }

  // The profile's executable answering --version with the version it was validated against.
  void probe(const executor::RuntimeProfile& profile) {
    const std::string check = "agent CLI " + profile.runtime;
    const auto& executable = profile.argv.at(0);
    std::pair<process::Outcome, std::string> asked;
    try {
      asked = ask(profile, {"--version"});
    } catch (const std::exception& error) {
      add(check, State::fail, executable + " did not start: " + error.what(),
          "install the CLI the profile names, or fix its argv");
      return;
    }
    const auto& [outcome, answer] = asked;
    const auto first_line = answer.substr(0, answer.find('\n'));
    if (outcome.timed_out || outcome.exit_code != 0) {
      add(check, State::fail, executable + " --version failed: " + first_line,
          "run it by hand as the executor's user and repair the install");
      return;
    }
    if (profile.validated_version.empty()) {
      add(check, State::warn, "answers " + first_line + "; the profile records no version",
          "add \"validated_version\" to the profile once you have validated this CLI");
    } else if (answer.find(profile.validated_version) == std::string::npos) {
      add(check, State::fail,
          "answers " + first_line + ", the profile was validated against " +
              profile.validated_version,
          "re-run the --help/version probes, then update the root-owned profile");
    } else {
      add(check, State::ok, "answers " + first_line);
    }
    if (profile.runtime == "hermes") probe_flags(profile);
  }

  // Hermes takes every flag of a one-shot run at its top level, and an unknown one is an
  // argparse error (exit 2) only at run time: each flag the profile passes must be in --help.
  void probe_flags(const executor::RuntimeProfile& profile) {
    std::vector<std::string> flags;
    for (std::size_t i = 1; i < profile.argv.size(); ++i) {
      const auto& item = profile.argv[i];
      if (item.starts_with("-") && item != "-") flags.push_back(item.substr(0, item.find('=')));
    }
    if (flags.empty()) return;  // a wrapper of the operator's, not the CLI itself
    const std::string check = "agent CLI hermes flags";
    std::pair<process::Outcome, std::string> asked;
    try {
      asked = ask(profile, {"--help"});
    } catch (const std::exception& error) {
      add(check, State::fail, std::string("--help did not start: ") + error.what(),
          "install the CLI the profile names, or fix its argv");
      return;
    }
    // Named, not bound: clang 14 cannot capture a structured binding in a lambda.
    const auto& outcome = asked.first;
    const auto& help = asked.second;
    // A flag is listed where it stands as a word of its own ("-t" is not in "--toolsets").
    const auto word = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
    };
    const auto listed = [&](const std::string& flag) {
      for (auto at = help.find(flag); at != std::string::npos; at = help.find(flag, at + 1)) {
        const auto end = at + flag.size();
        if ((at == 0 || !word(help[at - 1])) && (end == help.size() || !word(help[end]))) {
          return true;
        }
      }
      return false;
    };
    std::vector<std::string> unknown;
    for (const auto& flag : flags) {
      if (!listed(flag)) unknown.push_back(flag);
    }
    if (outcome.timed_out || outcome.exit_code != 0) {
      add(check, State::fail, "--help failed", "run it by hand and repair the install");
    } else if (!unknown.empty()) {
      std::string names;
      for (const auto& flag : unknown) names += (names.empty() ? "" : ", ") + flag;
      add(check, State::fail, "the profile passes " + names + ", which --help does not list",
          "update the profile's argv to the installed CLI (docs/executor.md, Hermes)");
    } else if (std::find(profile.argv.begin(), profile.argv.end(), "{usage_json}") ==
               profile.argv.end()) {
      add(check, State::warn, "the profile reads no --usage-file {usage_json}",
          "without it a run Hermes reports as failed (exit 0) counts as an answer");
    } else {
      add(check, State::ok, "every flag of the profile is in --help");
    }
  }

  void profiles() {
    const fs::path root = o_.profile_root;
    std::vector<fs::path> roots(o_.executable_roots.begin(), o_.executable_roots.end());
    if (roots.empty()) roots = executor::default_executable_roots();
    bool found = false;
    for (const char* runtime : {"hermes", "openclaw"}) {
      const auto file = root / (std::string(runtime) + ".json");
      struct stat info {};
      if (::lstat(file.c_str(), &info) != 0) continue;  // this host runs no such agent
      found = true;
      const std::string check = std::string("profile ") + runtime;
      if (!S_ISREG(info.st_mode) || info.st_uid != 0 || (info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        add(check, State::fail, file.string() + " is not a root-owned file only root writes",
            "chown root:root " + file.string() + " && chmod 644 " + file.string());
        continue;
      }
      try {
        const auto profile = executor::load_profile(runtime, root, roots);
        add(check, State::ok, file.string() + " valid");
        probe(profile);
      } catch (const Error& error) {
        add(check, State::fail, file.string() + ": " + error.code(),
            "docs/executor.md, Profiles: " +
                std::string(find_error(error.code()) ? find_error(error.code())->text : ""));
      }
    }
    if (!found) {
      add("profiles", State::skip, "no hermes.json or openclaw.json in " + root.string(),
          "--profile-root DIR of the executor's profiles");
    }
  }

  Context& c_;
  const DoctorOptions& o_;
  std::vector<Finding> findings_;
};

const char* name_of(State state) {
  switch (state) {
    case State::ok:
      return "ok";
    case State::skip:
      return "skip";
    case State::warn:
      return "warn";
    case State::fail:
      break;
  }
  return "FAIL";
}

int doctor(Context& c, const DoctorOptions& o) {
  const auto findings = Doctor(c, o).run();
  bool failed = false;
  Json answer = Json::array();
  std::vector<std::vector<std::string>> rows;
  for (const auto& f : findings) {
    failed = failed || f.state == State::fail;
    answer.push_back(
        {{"check", f.check}, {"state", name_of(f.state)}, {"found", f.found}, {"fix", f.fix}});
    rows.push_back({f.check, name_of(f.state), f.found, f.fix.empty() ? "-" : f.fix});
  }
  c.show(answer, [&] { return table({"CHECK", "STATE", "FOUND", "FIX"}, rows, 120); });
  return failed ? kFindings : kDone;
}

}  // namespace

void add_doctor_command(CLI::App& app, Action& action) {
  const auto o = std::make_shared<DoctorOptions>();
  auto* command = app.add_subcommand(
      "doctor",
      "Check this host's suite: services, token, store, units, credentials, disk, "
      "agent profiles and their CLIs; each finding with its fix (exit 8 on a FAIL)");
  command->add_option("--profile-root", o->profile_root, "The executor's profiles")
      ->capture_default_str();
  command->add_option("--executable-root", o->executable_roots,
                      "Where an agent executable may live (repeat; default the executor's)");
  command->add_option("--state-dir", o->state_dirs, "A state directory to check for free disk")
      ->capture_default_str();
  command->add_option("--unit-dir", o->unit_dirs, "Where unit files are looked for")
      ->capture_default_str();
  command->callback([&action, o] { action = [o](Context& c) { return doctor(c, *o); }; });
}

}  // namespace aios::ctl
