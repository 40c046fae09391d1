// External agent executor: pickup latency and whole overhead, each beside the bare-spawn floor
// measured in the same run with the same child (/usr/bin/date +%s%N, which prints the moment it
// started running):
//   floor      posix_spawn of the child, read its stdout, waitpid: spawn-to-start, spawn-to-exit
//   sandboxed  the same child in the sandbox the executor gives it (bubblewrap), through
//              process::run: what containment alone costs per start
//   executor   a request renamed into requests/ of a serving executor (in process, concurrency
//              1): rename-to-child-start (pickup) and rename-to-result-visible (end to end, with
//              the durable start marker, the sealed result and both fsyncs)
//   seed       with --seed-python FILE (the seed's aios_external_agent_runtime.py, extracted by
//              scripts/bench): the same requests, profile and child through the seed's serve
//              loop, a python3 process of its own
// Medians over many runs. Prints one JSON object; scripts/bench turns it into
// docs/performance.md. Seconds, not assertions.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/environment.hpp"
#include "aios/executor.hpp"
#include "aios/files.hpp"
#include "aios/process.hpp"
#include "aios/sys.hpp"

extern "C" {
extern char** environ;
}

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* const kChild = "/usr/bin/date";

// Wall-clock nanoseconds, the clock the child reports with.
long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double median_ms(std::vector<long long> ns) {
  std::sort(ns.begin(), ns.end());
  return static_cast<double>(ns[ns.size() / 2]) / 1e6;
}

double p99_ms(std::vector<long long> ns) {
  std::sort(ns.begin(), ns.end());
  return static_cast<double>(ns[std::min(ns.size() - 1, ns.size() * 99 / 100)]) / 1e6;
}

fs::path temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "aios-bench-executor-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
  return pattern;
}

struct Sample {
  long long start_ns;  // until the child started
  long long end_ns;    // until the outcome was visible
};

// The floor: what any launcher pays to start this child and collect its output.
Sample bare_spawn() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  char arg0[] = "/usr/bin/date";
  char arg1[] = "+%s%N";
  char* argv[] = {arg0, arg1, nullptr};
  const long long t0 = now_ns();
  pid_t pid = -1;
  if (posix_spawn(&pid, kChild, &actions, nullptr, argv, environ) != 0) {
    throw std::runtime_error("posix_spawn");
  }
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  char buffer[256];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) {
    out.append(buffer, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  const long long t1 = now_ns();
  return {std::stoll(out) - t0, t1 - t0};
}

// The sandboxed floor: the floor's child in `sandbox`, its stdout read as the executor reads it.
Sample sandboxed_spawn(const aios::process::Sandbox& sandbox, const fs::path& working) {
  aios::process::Spec spec;
  spec.argv = {kChild, "+%s%N"};
  spec.environment = {"PATH=/usr/bin:/bin"};
  spec.working_directory = working;
  spec.timeout = std::chrono::seconds(30);
  spec.sandbox = sandbox;
  std::string out;
  spec.on_stdout = [&out](std::string_view text) { out.append(text); };
  const long long t0 = now_ns();
  aios::process::run(spec);
  const long long t1 = now_ns();
  return {std::stoll(out) - t0, t1 - t0};
}

// A serving executor over its own exchange directory: ours in process, or the seed's Python
// serve loop as a child process when `seed_python` is set.
class ExecutorRig {
 public:
  explicit ExecutorRig(const fs::path& dir, const std::string& seed_python = "") : dir_(dir) {
    fs::create_directories(dir_ / "profiles");
    fs::create_directories(dir_ / "exchange");
    fs::create_directories(dir_ / "tmp");
    fs::create_directories(dir_ / "staging");
    // The agent is the floor's child with the floor's argv; the prompt it gets on stdin is
    // ignored.
    std::ofstream(dir_ / "profiles" / "hermes.json") << json{
        {"schema", aios::executor::kProfileSchema},
        {"runtime", "hermes"},
        {"argv", {kChild, "+%s%N"}},
        {"input_mode", "stdin_text"},
        {"output_mode", "stdout_text"}}.dump();

    if (seed_python.empty()) {
      aios::executor::ServeOptions options;
      options.root = dir_ / "exchange";
      options.execute.profile_root = dir_ / "profiles";
      options.execute.temporary_root = dir_ / "tmp";
      options.execute.environment = &aios::system_environment();
      std::ofstream(dir_ / "exchange_result_key") << aios::random_hex(32) << '\n';
      // A secret file others may read refuses the start (SECRET_FILE_MODE_INVALID).
      std::filesystem::permissions(
          dir_ / "exchange_result_key",
          std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
      options.key = aios::executor::ExchangeKey::from_file(dir_ / "exchange_result_key");
      server_ = std::make_unique<aios::executor::Server>(options);
      thread_ = std::thread([this] { server_->run(); });
    } else {
      for (const char* sub : {"requests", "results", "failed"}) {
        fs::create_directories(dir_ / "exchange" / sub);
      }
      const std::string root = (dir_ / "exchange").string();
      const std::string profiles = (dir_ / "profiles").string();
      std::vector<std::string> args = {"/usr/bin/python3", "-B",    seed_python, "--root", root,
                                       "--profile-root",   profiles};
      std::vector<char*> argv;
      for (auto& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      // The seed refuses to serve beside secret-looking variables: PATH only.
      std::string path = "PATH=/usr/bin:/bin";
      char* env[] = {path.data(), nullptr};
      if (posix_spawn(&seed_pid_, argv[0], nullptr, nullptr, argv.data(), env) != 0) {
        throw std::runtime_error("cannot start the seed executor");
      }
    }
    watch_.add(dir_ / "exchange" / "results", IN_MOVED_TO);
  }
  ~ExecutorRig() {
    if (server_) {
      server_->stop();
      thread_.join();
    } else {
      kill(seed_pid_, SIGTERM);
      int status = 0;
      waitpid(seed_pid_, &status, 0);
    }
  }

  // The sandbox the executor gives this rig's agent, writing only `writable`.
  aios::process::Sandbox sandbox(const fs::path& writable) const {
    aios::executor::ExecuteOptions execute;
    execute.profile_root = dir_ / "profiles";
    execute.temporary_root = dir_ / "tmp";
    const auto profile =
        aios::executor::load_profile("hermes", execute.profile_root, execute.executable_roots);
    return aios::executor::child_sandbox(profile, execute, {writable});
  }

  Sample run(int index) {
    const std::string name = "bench-request-" + std::to_string(1000000 + index) + ".json";
    const json request = {{"schema", aios::executor::kRequestSchema},
                          {"request_id", name.substr(0, name.size() - 5)},
                          {"runtime", "hermes"},
                          {"task_id", "task-bench"},
                          {"execution_digest", std::string(64, 'd')},
                          {"payload", {{"goal", "Print the time."}}}};
    const fs::path staged = dir_ / "staging" / name;
    std::ofstream(staged) << aios::canonical_json(request);
    const fs::path result = dir_ / "exchange" / "results" / name;
    const long long t0 = now_ns();
    fs::rename(staged, dir_ / "exchange" / "requests" / name);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!fs::exists(result)) {
      if (std::chrono::steady_clock::now() > deadline ||
          fs::exists(dir_ / "exchange" / "failed" / name)) {
        throw std::runtime_error("no result for " + name + " in " + dir_.string());
      }
      bool woken = false;
      watch_.wait(std::chrono::seconds(1), -1, woken);
    }
    const long long t1 = now_ns();
    const auto value = json::parse(std::ifstream(result));
    return {std::stoll(value["output_text"].get<std::string>()) - t0, t1 - t0};
  }

 private:
  fs::path dir_;
  std::unique_ptr<aios::executor::Server> server_;
  std::thread thread_;
  pid_t seed_pid_ = -1;
  aios::files::DirectoryWatch watch_;
};

}  // namespace

int main(int argc, char** argv) {
  // --smoke: a few runs, so CI keeps the driver working without measuring anything.
  const bool smoke = argc > 1 && std::string(argv[1]) == "--smoke";
  const int runs = smoke ? 3 : 300;
  const std::string seed_python =
      argc > 2 && std::string(argv[argc - 2]) == "--seed-python" ? argv[argc - 1] : "";
  const fs::path dir = temp_dir();
  std::vector<long long> floor_start, floor_end, pickup, end_to_end, seed_pickup, seed_end;
  std::vector<long long> sandboxed_start, sandboxed_end;
  {
    ExecutorRig rig(dir / "ours");
    const fs::path writable = dir / "sandboxed";
    fs::create_directories(writable);
    const auto sandbox = rig.sandbox(writable);
    // Interleaved, so that all see the same machine load.
    for (int i = 0; i < runs; ++i) {
      const auto bare = bare_spawn();
      floor_start.push_back(bare.start_ns);
      floor_end.push_back(bare.end_ns);
      const auto confined = sandboxed_spawn(sandbox, writable);
      sandboxed_start.push_back(confined.start_ns);
      sandboxed_end.push_back(confined.end_ns);
      const auto served = rig.run(i);
      pickup.push_back(served.start_ns);
      end_to_end.push_back(served.end_ns);
    }
  }
  // The seed's serve loop looks at requests/ every 0.25 s: fewer runs, spread over its period.
  const int seed_runs = smoke ? 2 : 60;
  if (!seed_python.empty()) {
    ExecutorRig rig(dir / "seed", seed_python);
    for (int i = 0; i < seed_runs; ++i) {
      const auto served = rig.run(i);
      seed_pickup.push_back(served.start_ns);
      seed_end.push_back(served.end_ns);
      std::this_thread::sleep_for(std::chrono::milliseconds(37 * (i % 7)));
    }
  }
  fs::remove_all(dir);
  json report = {{"runs", runs},
                 {"child", std::string(kChild) + " +%s%N"},
                 {"floor_spawn_to_start_ms", median_ms(floor_start)},
                 {"floor_spawn_to_exit_ms", median_ms(floor_end)},
                 {"sandboxed_spawn_to_start_ms", median_ms(sandboxed_start)},
                 {"sandboxed_spawn_to_exit_ms", median_ms(sandboxed_end)},
                 {"executor_pickup_ms", median_ms(pickup)},
                 {"executor_pickup_p99_ms", p99_ms(pickup)},
                 {"executor_end_to_end_ms", median_ms(end_to_end)}};
  if (!seed_python.empty()) {
    report["seed_runs"] = seed_runs;
    report["seed_pickup_ms"] = median_ms(seed_pickup);
    report["seed_pickup_p99_ms"] = p99_ms(seed_pickup);
    report["seed_end_to_end_ms"] = median_ms(seed_end);
  }
  std::cout << report.dump(2) << "\n";
  return 0;
}
