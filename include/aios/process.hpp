#pragma once
// Running one child process without a shell: an explicit argv and environment, stdin fed while
// stdout and stderr are read (one poll loop, so a child that fills a pipe never deadlocks us), a
// deadline after which the child's whole process group is killed, and nothing inherited but
// the three standard descriptors.
//
// The child is started with posix_spawn in a new process group, with an empty signal mask and
// default signal dispositions, in `working_directory`, with every descriptor above 2 closed.
// When the child exits, whatever it left running in its process group is killed too, so no
// helper outlives the run and keeps the working directory busy.
//
// Thread-safe: any number of threads may run children at once. SIGPIPE from a child that stops
// reading its stdin is blocked and consumed in the calling thread, so callers need not ignore it.

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aios::process {

struct Spec {
  // argv[0] is the absolute path executed (never looked up in PATH, never a shell).
  std::vector<std::string> argv;
  // The child's whole environment, "NAME=value" entries; nothing of ours is inherited.
  std::vector<std::string> environment;
  std::filesystem::path working_directory;
  // Written to the child's stdin, which is then closed; nullopt gives it /dev/null.
  std::optional<std::string> stdin_data;
  std::chrono::milliseconds timeout{0};
  // Receive the child's output as it arrives, in order; each sink bounds what it keeps.
  std::function<void(std::string_view)> on_stdout;
  std::function<void(std::string_view)> on_stderr;
};

struct Outcome {
  bool timed_out = false;  // the deadline passed and the process group was killed
  // subprocess.returncode: the exit status, or minus the signal that ended the child.
  int exit_code = 0;
  std::chrono::steady_clock::duration elapsed{};
};

// Runs `spec` to completion. Throws std::system_error when the child cannot be started (the
// executable is missing or not executable, posix_spawn or pipe creation failed); once it has
// started, every outcome (exit, signal, timeout) is returned, never thrown, and the child has
// been reaped.
Outcome run(const Spec& spec);

}  // namespace aios::process
