// The process runner on its own: no shell, exact argv and environment, concurrent pipes, the
// process group killed at the deadline, no descriptor inherited.
#include "aios/process.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "support/daemon.hpp"

namespace aios::process {
namespace {

struct Captured {
  Outcome outcome;
  std::string out;
  std::string err;
};

// A spec for `argv` with the defaults these tests share; `adjust` changes what a test needs.
Spec spec_of(std::vector<std::string> argv, const std::function<void(Spec&)>& adjust = {}) {
  Spec spec;
  spec.argv = std::move(argv);
  if (adjust) adjust(spec);
  return spec;
}

Captured run_captured(Spec spec) {
  Captured captured;
  spec.on_stdout = [&](std::string_view chunk) { captured.out.append(chunk); };
  spec.on_stderr = [&](std::string_view chunk) { captured.err.append(chunk); };
  if (spec.working_directory.empty()) spec.working_directory = "/";
  if (spec.timeout.count() == 0) spec.timeout = std::chrono::seconds(30);
  captured.outcome = run(spec);
  return captured;
}

// Given shell metacharacters in argv, they should reach the child verbatim (no shell ran).
TEST(ProcessRun, ArgvAndEnvironmentAreExact) {
  const auto result =
      run_captured(spec_of({"/usr/bin/python3", "-c",
                            "import os,sys; print(sys.argv[1:]); print(sorted(os.environ.items()))",
                            "$(id)", "a b;c|d", "*"},
                           [](Spec& spec) {
                             spec.environment = {"LC_ALL=C.UTF-8", "ONLY=this"};
                           }));
  EXPECT_EQ(result.outcome.exit_code, 0);
  EXPECT_EQ(result.out, "['$(id)', 'a b;c|d', '*']\n[('LC_ALL', 'C.UTF-8'), ('ONLY', 'this')]\n");
}

// Given 8 MiB each way at once, stdin feeding and output draining must not deadlock.
TEST(ProcessRun, LargeStdinAndOutputDoNotDeadlock) {
  const std::string input(8 << 20, 'i');
  const auto result = run_captured(spec_of({"/usr/bin/python3", "-c",
                                            "import sys\n"
                                            "d=sys.stdin.buffer.read()\n"
                                            "sys.stderr.buffer.write(b'e'*len(d))\n"
                                            "sys.stdout.buffer.write(d)\n"},
                                           [&](Spec& spec) { spec.stdin_data = input; }));
  EXPECT_EQ(result.outcome.exit_code, 0);
  EXPECT_EQ(result.out.size(), input.size());
  EXPECT_EQ(result.err.size(), input.size());
}

// Given a child that closes stdin early, the runner should neither block nor die of SIGPIPE.
TEST(ProcessRun, EarlyStdinCloseIsHarmless) {
  const auto result =
      run_captured(spec_of({"/usr/bin/python3", "-c", "import os; os.close(0); print('closed')"},
                           [](Spec& spec) { spec.stdin_data = std::string(4 << 20, 'x'); }));
  EXPECT_EQ(result.outcome.exit_code, 0);
  EXPECT_EQ(result.out, "closed\n");
}

// Given the deadline, the child and everything in its process group should be killed.
TEST(ProcessRun, TimeoutKillsTheGroup) {
  const auto start = std::chrono::steady_clock::now();
  const auto result =
      run_captured(spec_of({"/usr/bin/python3", "-c",
                            "import subprocess,time; subprocess.Popen(['/usr/bin/sleep','30']); "
                            "print('up', flush=True); time.sleep(30)"},
                           [](Spec& spec) { spec.timeout = std::chrono::milliseconds(500); }));
  EXPECT_TRUE(result.outcome.timed_out);
  EXPECT_EQ(result.outcome.exit_code, -9);
  EXPECT_EQ(result.out, "up\n");
  // The grandchild held stdout too; had it survived, EOF would have waited 30 s.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

// Given a child that exits while a helper it started keeps the pipes open, the helper is
// killed with the group and the run ends with the child's status.
TEST(ProcessRun, LeftoverHelpersAreKilledWhenTheChildExits) {
  const auto start = std::chrono::steady_clock::now();
  const auto result = run_captured(
      spec_of({"/usr/bin/python3", "-c",
               "import subprocess; subprocess.Popen(['/usr/bin/sleep','30']); exit(4)"}));
  EXPECT_FALSE(result.outcome.timed_out);
  EXPECT_EQ(result.outcome.exit_code, 4);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

// Given open descriptors in our process (even one without O_CLOEXEC) and blocked signals, the
// child should see only 0, 1 and 2, lead its own process group and have an empty signal mask.
TEST(ProcessRun, NothingIsInherited) {
  const int leaked = ::open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  ASSERT_GE(leaked, 0);
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  const auto result =
      run_captured(spec_of({"/usr/bin/python3", "-c",
                            "import os,signal\n"
                            "print(sorted(int(f) for f in os.listdir('/proc/self/fd')))\n"
                            "print(os.getpgrp()==os.getpid())\n"
                            "print(sorted(signal.pthread_sigmask(signal.SIG_BLOCK,[])))\n"}));
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::close(leaked);
  // fd 3 is the directory listing itself.
  EXPECT_EQ(result.out, "[0, 1, 2, 3]\nTrue\n[]\n");
}

// Given an executable that cannot be started, run() should throw instead of pretending.
TEST(ProcessRun, SpawnFailureThrows) {
  EXPECT_THROW(run_captured(spec_of({"/nonexistent/agent"})), std::system_error);
  EXPECT_THROW(run_captured(spec_of({"relative/agent"})), std::system_error);
}

// Given several threads running children at once, each should get exactly its own output.
TEST(ProcessRun, ConcurrentRunsKeepTheirOwnPipes) {
  std::vector<std::thread> threads;
  std::vector<std::string> outputs(8);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    threads.emplace_back([&outputs, i] {
      outputs[i] = run_captured(spec_of({"/usr/bin/python3", "-c",
                                         "import sys,time; time.sleep(0.2); print(sys.argv[1])",
                                         std::to_string(i)}))
                       .out;
    });
  }
  for (auto& thread : threads) thread.join();
  for (std::size_t i = 0; i < outputs.size(); ++i) EXPECT_EQ(outputs[i], std::to_string(i) + "\n");
}

}  // namespace
}  // namespace aios::process
