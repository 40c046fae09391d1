// The sandbox of process::run, child by child: what a confined program sees, which processes
// outlive it (none), which addresses it reaches (exactly its destinations) and how far it can
// grow. The child is /usr/bin/python3 with a script that reports what it could do as JSON.
#include "process/sandbox.hpp"

#include <arpa/inet.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "aios/process.hpp"
#include "support/daemon.hpp"
#include "support/witness.hpp"

namespace aios::process {
namespace {

namespace fs = std::filesystem;
using aios::test::processes_with;
using nlohmann::json;

// The helpers every script starts with: try(name, f) records "ok: <value>" or the error type.
constexpr std::string_view kPrelude = R"(import json, os, socket, sys, time
report = {}
def attempt(name, f):
    try:
        report[name] = "ok:" + str(f())
    except BaseException as error:
        report[name] = "refused:" + type(error).__name__ + ":" + str(getattr(error, "errno", ""))
def connect(host, port, send=None):
    with socket.create_connection((host, port), timeout=5) as s:
        if send is None:
            return "connected"
        s.sendall(send)
        s.shutdown(socket.SHUT_WR)
        return s.recv(100).decode()
)";

struct Ran {
  Outcome outcome;
  json report;
  std::string err;
};

// Runs `argv` (a program that prints its report as JSON) in `sandbox`.
Ran run_program(std::vector<std::string> argv, Sandbox sandbox, const fs::path& cwd,
                std::chrono::milliseconds timeout = std::chrono::seconds(30),
                std::vector<std::string> environment = {"LC_ALL=C.UTF-8", "ONLY=this"}) {
  Spec spec;
  spec.argv = std::move(argv);
  spec.environment = std::move(environment);
  spec.working_directory = cwd;
  spec.timeout = timeout;
  spec.sandbox = std::move(sandbox);
  std::string out;
  Ran ran;
  spec.on_stdout = [&](std::string_view chunk) { out.append(chunk); };
  spec.on_stderr = [&](std::string_view chunk) { ran.err.append(chunk); };
  ran.outcome = run(spec);
  ran.report = json::parse(out.empty() ? "null" : out, nullptr, false);
  return ran;
}

Ran run_script(const std::string& body, Sandbox sandbox, const fs::path& cwd,
               std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  return run_program(
      {"/usr/bin/python3", "-c", std::string(kPrelude) + body + "\nprint(json.dumps(report))\n"},
      std::move(sandbox), cwd, timeout);
}

// Whether the run was ended as past `bound`.
::testing::AssertionResult ended_past(const Ran& ran, Bound bound) {
  if (!ran.outcome.exceeded) {
    return ::testing::AssertionFailure()
           << "not ended by a bound (exit " << ran.outcome.exit_code << "): " << ran.err;
  }
  if (*ran.outcome.exceeded != bound) {
    return ::testing::AssertionFailure() << "ended past " << bound_name(*ran.outcome.exceeded);
  }
  return ::testing::AssertionSuccess();
}

bool refused(const json& report, const char* name) {
  return report.value(name, "").rfind("refused:", 0) == 0;
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "run");
    fs::create_directories(dir_ / "secret");
    fs::create_directories(dir_ / "config" / "hidden");
    aios::test::write_text_file(dir_ / "secret" / "key", "SECRET-KEY");
    // Readable by others: a sandbox started by root (as the tests are) runs as nobody.
    aios::test::write_text_file(dir_ / "config" / "settings", "visible",
                                fs::perms::owner_read | fs::perms::owner_write |
                                    fs::perms::group_read | fs::perms::others_read);
    aios::test::write_text_file(dir_ / "config" / "hidden" / "key", "HIDDEN-KEY");
  }
  Sandbox basic() const {
    Sandbox sandbox;
    sandbox.writable = {dir_ / "run"};
    return sandbox;
  }
  aios::test::ScopedTempDir dir_{"aios-sandbox"};
};

// Given a sandbox with one writable directory, the child should see the system read-only, its
// directory writable, and nothing else of the host: no other directory, no hidden path inside a
// visible one, no process of the host, only the environment it was given.
TEST_F(SandboxTest, SeesOnlyWhatItIsGiven) {
  auto sandbox = basic();
  // Naming a file inside a hidden directory does not make it visible.
  sandbox.read_only = {dir_ / "config", dir_ / "config" / "hidden" / "key"};
  sandbox.hidden = {dir_ / "config" / "hidden"};
  const std::string d = dir_.path().string();
  const auto ran = run_script(
      "attempt('secret', lambda: open('" + d +
          "/secret/key').read())\n"
          "attempt('hidden', lambda: open('" +
          d +
          "/config/hidden/key').read())\n"
          "attempt('config', lambda: open('" +
          d +
          "/config/settings').read())\n"
          "attempt('write_config', lambda: open('" +
          d +
          "/config/new', 'w').write('x'))\n"
          "attempt('write_run', lambda: open('" +
          d +
          "/run/out', 'w').write('x'))\n"
          "attempt('write_usr', lambda: open('/usr/aios-escape', 'w').write('x'))\n"
          "attempt('host_pid', lambda: open('/proc/" +
          std::to_string(::getpid()) +
          "/environ').read())\n"
          "attempt('pids', lambda: sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
          "attempt('environment', lambda: sorted(os.environ))\n",
      sandbox, dir_ / "run");
  ASSERT_EQ(ran.outcome.exit_code, 0) << ran.err;
  const auto& report = ran.report;
  EXPECT_TRUE(refused(report, "secret")) << report;
  EXPECT_TRUE(refused(report, "hidden")) << report;
  EXPECT_EQ(report["config"], "ok:visible");
  EXPECT_TRUE(refused(report, "write_config")) << report;
  EXPECT_EQ(report["write_run"], "ok:1");
  EXPECT_TRUE(refused(report, "write_usr")) << report;
  EXPECT_TRUE(refused(report, "host_pid")) << report;
  // bubblewrap's reaper and the script: nothing of the host's process table.
  EXPECT_EQ(report["pids"], "ok:[1, 2]");
  // Exactly the spec's: not the PWD bubblewrap sets after it changes directory.
  EXPECT_EQ(report["environment"], "ok:['LC_ALL', 'ONLY']");
  EXPECT_TRUE(fs::exists(dir_ / "run" / "out"));
  EXPECT_FALSE(fs::exists(dir_ / "config" / "new"));
}

// Given a child that daemonises (fork, setsid, fork) and exits, nothing it started should be
// running once the run has returned.
TEST_F(SandboxTest, NothingOutlivesTheRun) {
  const std::string marker = "aios-survivor-" + std::to_string(::getpid());
  const auto ran = run_script(
      "import subprocess\n"
      "if os.fork() == 0:\n"
      "    os.setsid()\n"
      "    if os.fork() == 0:\n"
      "        os.execv('/usr/bin/python3', ['python3', '-c', 'import time; time.sleep(60)', '" +
          marker +
          "'])\n"
          "    os._exit(0)\n"
          "time.sleep(0.5)\n"
          "attempt('started', lambda: 1)\n",
      basic(), dir_ / "run");
  ASSERT_EQ(ran.outcome.exit_code, 0) << ran.err;
  EXPECT_EQ(processes_with(marker), 0);
}

// Given a child that keeps running past its deadline with a daemonised helper, the timeout
// should end both.
TEST_F(SandboxTest, TheDeadlineEndsEveryProcess) {
  const std::string marker = "aios-late-" + std::to_string(::getpid());
  const auto ran = run_script(
      "if os.fork() == 0:\n"
      "    os.setsid()\n"
      "    os.execv('/usr/bin/python3', ['python3', '-c', 'import time; time.sleep(60)', '" +
          marker +
          "'])\n"
          "time.sleep(60)\n",
      basic(), dir_ / "run", std::chrono::milliseconds(1500));
  EXPECT_TRUE(ran.outcome.timed_out);
  // The kernel tears the PID namespace down right after its first process is killed.
  for (int i = 0; i < 50 && processes_with(marker) > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(processes_with(marker), 0);
}

// Given no destinations, the child should have no network: the host's loopback services and
// every other address are out of reach.
TEST_F(SandboxTest, WithoutDestinationsThereIsNoNetwork) {
  const aios::test::Witness host;
  const auto port = std::to_string(host.port());
  const auto ran = run_script("attempt('host_loopback', lambda: connect('127.0.0.1', " + port +
                                  "))\n"
                                  "attempt('other', lambda: connect('10.255.255.1', 80))\n",
                              basic(), dir_ / "run");
  ASSERT_EQ(ran.outcome.exit_code, 0) << ran.err;
  EXPECT_TRUE(refused(ran.report, "host_loopback")) << ran.report;
  EXPECT_TRUE(refused(ran.report, "other")) << ran.report;
  EXPECT_EQ(host.size(), 0U);
}

// Given one destination on the host's loopback, the child should reach exactly it, under its
// own address, and no other port of the host.
TEST_F(SandboxTest, ReachesExactlyItsDestinations) {
  const aios::test::Witness allowed;
  const aios::test::Witness other;
  auto sandbox = basic();
  sandbox.network = {{"127.0.0.1", allowed.port()}};
  const auto ran = run_script("attempt('allowed', lambda: connect('127.0.0.1', " +
                                  std::to_string(allowed.port()) +
                                  ", b'hi'))\n"
                                  "attempt('other', lambda: connect('127.0.0.1', " +
                                  std::to_string(other.port()) + "))\n",
                              sandbox, dir_ / "run");
  ASSERT_EQ(ran.outcome.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.report["allowed"], "ok:ok") << ran.report;
  EXPECT_EQ(allowed.records(), std::vector<std::string>{"hi"});
  EXPECT_TRUE(refused(ran.report, "other")) << ran.report;
  EXPECT_EQ(other.size(), 0U);
}

// Given a named destination, the sandbox's /etc/hosts should map the name to the listener that
// relays to it, so a client that connects by name (TLS included) needs no proxy settings.
TEST_F(SandboxTest, NamedDestinationsResolveInside) {
  const aios::test::Witness allowed;
  auto sandbox = basic();
  sandbox.network = {{"localhost", allowed.port()}};
  const auto ran =
      run_script("attempt('named', lambda: connect('localhost', " + std::to_string(allowed.port()) +
                     ", b'hi'))\n"
                     "attempt('hosts', lambda: open('/etc/hosts').read())\n",
                 sandbox, dir_ / "run");
  ASSERT_EQ(ran.outcome.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.report["named"], "ok:ok") << ran.report;
  EXPECT_EQ(ran.report["hosts"], "ok:127.0.0.1\tlocalhost\n");
}

// Given limits, a fork bomb should stop at the process bound, a large file at the file size
// limit and /tmp at its size; the bound counts only the sandbox's own processes.
TEST_F(SandboxTest, LimitsBoundForksFilesAndTmp) {
  auto sandbox = basic();
  sandbox.limits.processes = 16;
  sandbox.limits.file_size_bytes = 1 << 20;
  sandbox.limits.tmp_bytes = 2 << 20;
  const auto ran = run_script(
      "children = []\n"
      "def bomb():\n"
      "    while len(children) < 200:\n"
      "        pid = os.fork()\n"
      "        if pid == 0:\n"
      "            time.sleep(30)\n"
      "            os._exit(0)\n"
      "        children.append(pid)\n"
      "attempt('bomb', bomb)\n"
      "report['forked'] = len(children)\n"
      "for pid in children: os.kill(pid, 9)\n"
      "attempt('big_file', lambda: open('big', 'wb').write(b'x' * (2 << 20)))\n"
      "attempt('fill_tmp', lambda: [open('/tmp/f%d' % i, 'wb').write(b'x' * (1 << 20))"
      " for i in range(4)])\n",
      sandbox, dir_ / "run");
  ASSERT_EQ(ran.outcome.exit_code, 0) << ran.err;
  EXPECT_TRUE(refused(ran.report, "bomb")) << ran.report;
  EXPECT_GT(ran.report["forked"].get<int>(), 0);
  EXPECT_LT(ran.report["forked"].get<int>(), 16);
  EXPECT_TRUE(refused(ran.report, "big_file")) << ran.report;
  EXPECT_TRUE(refused(ran.report, "fill_tmp")) << ran.report;
  EXPECT_LE(fs::file_size(dir_ / "run" / "big"), 1U << 20);
}

// Given a child that tries the kernel's larger surfaces by raw syscall (new namespaces by
// unshare, clone and setns, clone3, the keyring, io_uring, bpf, perf events, userfaultfd,
// ptrace, the mount family, modules, kexec, reboot, raw netlink and packet sockets), each should
// be answered by the syscall filter, and the filter should be on (Seccomp: 2).
TEST_F(SandboxTest, TheSyscallFilterRefusesTheKernelsLargerSurfaces) {
  const auto agent = fs::path(AIOS_SOURCE_DIR) / "tests" / "security" / "escape_agent.py";
  auto sandbox = basic();
  sandbox.read_only = {agent};
  const auto ran = run_program({"/usr/bin/python3", agent.string(), json{{"kernel", true}}.dump()},
                               std::move(sandbox), dir_ / "run");
  ASSERT_EQ(ran.outcome.exit_code, 0) << ran.err;
  const auto escapes = ran.report.value("escapes", json::object());
  int kernel = 0;
  for (const auto& [name, outcome] : escapes.items()) {
    if (name.rfind("kernel:", 0) != 0) continue;
    ++kernel;
    EXPECT_EQ(outcome.get<std::string>().rfind("refused:", 0), 0U) << name << " " << outcome;
  }
  EXPECT_GE(kernel, 26) << escapes;
  if (procfs_mountable()) {
    EXPECT_EQ(escapes["kernel:seccomp_status"], "refused:PermissionError:None") << escapes;
  }
}

// The command lines of the processes (other than ours) whose environment holds `marker`.
std::vector<std::string> environments_holding(const std::string& marker) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(name) == ::getpid()) {
      continue;
    }
    std::ifstream environ(entry.path() / "environ");
    const std::string text((std::istreambuf_iterator<char>(environ)),
                           std::istreambuf_iterator<char>());
    if (text.find(marker) == std::string::npos) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string argv0;
    std::getline(cmdline, argv0, '\0');
    found.push_back(argv0);
  }
  return found;
}

// Given a secret in the child's environment, no process outside the sandbox (bubblewrap
// included) should hold it in its environment while the child runs; the child should.
TEST_F(SandboxTest, OnlyTheChildHoldsItsEnvironment) {
  const std::string marker = "aios-canary-" + std::to_string(::getpid());
  std::atomic<bool> done{false};
  std::vector<std::string> holders;
  std::thread watch([&] {
    while (!done.load()) {
      for (auto& holder : environments_holding(marker)) holders.push_back(std::move(holder));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  const auto ran = run_program(
      {"/usr/bin/python3", "-c",
       std::string(kPrelude) + "time.sleep(1)\n"
                               "attempt('secret', lambda: os.environ['SECRET'])\n"
                               "attempt('pwd', lambda: os.environ['PWD'])\n"
                               "print(json.dumps(report))\n"},
      basic(), dir_ / "run", std::chrono::seconds(30), {"SECRET=" + marker, "PATH=/usr/bin"});
  done = true;
  watch.join();
  ASSERT_EQ(ran.outcome.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.report["secret"], "ok:" + marker);
  EXPECT_TRUE(refused(ran.report, "pwd")) << ran.report;
  EXPECT_FALSE(holders.empty());  // the child itself, seen from the host
  for (const auto& holder : holders) EXPECT_EQ(holder, "/usr/bin/python3") << holder;
}

// Given the filter, what ordinary programs do should still work: threads (glibc falls back from
// clone3 to clone), processes, IPv4 and Unix sockets, name resolution; and the filter's own
// descriptor should not reach the child.
TEST_F(SandboxTest, OrdinaryProgramsRunUnderTheSyscallFilter) {
  const auto ran = run_script(
      "import threading, subprocess\n"
      "def thread():\n"
      "    seen = []\n"
      "    t = threading.Thread(target=lambda: seen.append(1))\n"
      "    t.start(); t.join()\n"
      "    return len(seen)\n"
      "attempt('thread', thread)\n"
      "attempt('process', lambda: subprocess.run(['/usr/bin/true']).returncode)\n"
      "attempt('inet', lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())\n"
      "attempt('unix', lambda: len(socket.socketpair()))\n"
      "attempt('resolve', lambda: socket.getaddrinfo('localhost', 80)[0][4][0])\n"
      "attempt('fds', lambda: sorted(int(f) for f in os.listdir('/proc/self/fd'))[:4])\n",
      basic(), dir_ / "run");
  ASSERT_EQ(ran.outcome.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.report["thread"], "ok:1") << ran.report;
  EXPECT_EQ(ran.report["process"], "ok:0") << ran.report;
  EXPECT_EQ(ran.report["inet"], "ok:None") << ran.report;
  EXPECT_EQ(ran.report["unix"], "ok:2") << ran.report;
  EXPECT_EQ(ran.report["resolve"], "ok:127.0.0.1") << ran.report;
  if (procfs_mountable()) {
    EXPECT_EQ(ran.report["fds"], "ok:[0, 1, 2, 3]") << ran.report;
  }
}

// Given four processes each holding 100 MiB under a whole-run memory bound of 256 MiB (each
// within its own RLIMIT_DATA), the run should be ended as past its memory bound, not left to
// its deadline, and nothing of it should keep running.
TEST_F(SandboxTest, MemoryIsBoundedOverTheWholeRun) {
  const std::string marker = "aios-memory-" + std::to_string(::getpid());
  auto sandbox = basic();
  sandbox.limits.memory_bytes = 256ULL << 20;
  const auto ran = run_script(
      "held = b'x' * (100 << 20)\n"
      "for i in range(3):\n"
      "    if os.fork() == 0:\n"
      "        os.execv('/usr/bin/python3', ['python3', '-c',"
      " 'import time; h = bytes(100 << 20).replace(bytes(1), bytes([1])); time.sleep(60)', '" +
          marker +
          "'])\n"
          "time.sleep(60)\n",
      sandbox, dir_ / "run");
  EXPECT_TRUE(ended_past(ran, Bound::memory));
  EXPECT_FALSE(ran.outcome.timed_out);
  EXPECT_LT(ran.outcome.elapsed, std::chrono::seconds(20));
  EXPECT_EQ(processes_with(marker), 0);
}

// Given a run that fills its /tmp (a tmpfs, memory) past the memory bound, the same.
TEST_F(SandboxTest, WhatTmpHoldsCountsAsMemory) {
  auto sandbox = basic();
  sandbox.limits.memory_bytes = 128ULL << 20;
  sandbox.limits.tmp_bytes = 512ULL << 20;
  const auto ran = run_script(
      "for i in range(20):\n"
      "    open('/tmp/f%d' % i, 'wb').write(b'x' * (16 << 20))\n"
      "time.sleep(60)\n",
      sandbox, dir_ / "run");
  EXPECT_TRUE(ended_past(ran, Bound::memory));
}

// Given a run that writes twelve files of 8 MiB (each within its file size limit) under a
// bound of 32 MiB on what it adds to its writable paths, it should be ended as past its disk
// bound; what the directory held before the run does not count.
TEST_F(SandboxTest, DiskIsBoundedOverTheWholeRun) {
  aios::test::write_text_file(dir_ / "run" / "before.bin", std::string(48 << 20, 'b'));
  auto sandbox = basic();
  sandbox.limits.disk_bytes = 32ULL << 20;
  sandbox.limits.file_size_bytes = 16ULL << 20;
  const auto small = run_script(
      "attempt('write', lambda: open('small', 'wb').write(b'x' * 4096))\n", sandbox, dir_ / "run");
  EXPECT_FALSE(small.outcome.exceeded.has_value());
  EXPECT_EQ(small.report["write"], "ok:4096");
  const auto ran = run_script(
      "for i in range(12):\n"
      "    open('fill%d' % i, 'wb').write(b'x' * (8 << 20))\n"
      "time.sleep(60)\n",
      sandbox, dir_ / "run");
  EXPECT_TRUE(ended_past(ran, Bound::disk));
  EXPECT_LT(ran.outcome.elapsed, std::chrono::seconds(20));
}

// Given a run that writes its bytes into a directory nobody may list, or makes a tree deeper
// than the walk goes, it should be ended all the same.
TEST_F(SandboxTest, TheDiskBoundCannotBeHidden) {
  auto sandbox = basic();
  sandbox.limits.disk_bytes = 16ULL << 20;
  const auto hidden = run_script(
      "os.mkdir('hide', 0o300)\n"
      "for i in range(4):\n"
      "    open('hide/f%d' % i, 'wb').write(b'x' * (8 << 20))\n"
      "time.sleep(60)\n",
      sandbox, dir_ / "run");
  EXPECT_TRUE(ended_past(hidden, Bound::disk));
  const auto deep = run_script(
      "path = 'deep'\n"
      "for i in range(300):\n"
      "    os.mkdir(path)\n"
      "    os.chdir(path)\n"
      "time.sleep(60)\n",
      sandbox, dir_ / "run");
  EXPECT_TRUE(ended_past(deep, Bound::disk));
}

// Given a child that prints what bubblewrap prints when it cannot start one ("bwrap: ...") and
// exits 1, or exits 127 as the exec step does when it cannot start the child, the run should be
// the child's exit status, not a failed start that would carry the child's text as our own;
// given an executable that does not exist, or one that may not be executed, a failed start
// naming it with the errno of its exec.
TEST_F(SandboxTest, OnlyBubblewrapItselfReportsAFailedStart) {
  const auto ran = run_script(
      "sys.stderr.write('bwrap: execvp SECRET-TEXT: No such file\\n')\n"
      "sys.stderr.flush()\n"
      "os._exit(1)\n",
      basic(), dir_ / "run");
  EXPECT_EQ(ran.outcome.exit_code, 1);
  EXPECT_FALSE(ran.outcome.timed_out);
  EXPECT_NE(ran.err.find("SECRET-TEXT"), std::string::npos) << ran.err;
  EXPECT_EQ(run_script("os._exit(127)\n", basic(), dir_ / "run").outcome.exit_code, 127);

  const auto not_started = [&](const fs::path& executable, int expected) {
    Spec spec;
    spec.argv = {executable.string()};
    spec.working_directory = dir_ / "run";
    spec.timeout = std::chrono::seconds(10);
    spec.sandbox = basic();
    try {
      run(spec);
      ADD_FAILURE() << executable << " started";
    } catch (const std::system_error& error) {
      EXPECT_EQ(error.code().value(), expected) << error.what();
      EXPECT_EQ(std::string(error.what()).rfind("sandbox: execvp " + executable.string(), 0), 0U)
          << error.what();
    }
  };
  not_started(dir_ / "run" / "absent", ENOENT);
  std::ofstream(dir_ / "run" / "plain") << "not a program\n";
  not_started(dir_ / "run" / "plain", EACCES);
}

// Given a child (started by root, so run as nobody) whose daemonised helper keeps creating files
// in its writable directory when the deadline kills the run, everything in that directory
// should be ours again once run() returns, and nothing should appear after: the hand-back waits
// until the sandbox's PID namespace is empty.
TEST_F(SandboxTest, HandsTheWritablePathsBackOnlyOnceEveryProcessIsGone) {
  if (::geteuid() != 0) GTEST_SKIP() << "the hand-back happens only for a sandbox root starts";
  const auto ran = run_script(
      "if os.fork() == 0:\n"
      "    os.setsid()\n"
      "    i = 0\n"
      "    while True:\n"
      "        i += 1\n"
      "        open('f%d' % i, 'w').close()\n"
      "time.sleep(60)\n",
      basic(), dir_ / "run", std::chrono::milliseconds(800));
  ASSERT_TRUE(ran.outcome.timed_out) << ran.err;
  const auto owned_by_us = [this] {
    std::size_t count = 0;
    for (const auto& entry : fs::directory_iterator(dir_ / "run")) {
      struct stat info {};
      EXPECT_EQ(::lstat(entry.path().c_str(), &info), 0);
      EXPECT_EQ(info.st_uid, ::geteuid()) << entry.path();
      ++count;
    }
    return count;
  };
  const std::size_t files = owned_by_us();
  EXPECT_GT(files, 0U);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(owned_by_us(), files);
}

// Runs `body` (a sandbox script) from a child process that is nobody with the supplementary
// groups 4242 and 4243, holding CAP_SETGID permitted (as confine_capabilities leaves a unit's
// daemon): what the script reported, or "refused: <what>" when the sandbox did not start.
std::string run_as_grouped_nobody(const std::string& body, Sandbox sandbox, const fs::path& cwd) {
  int ends[2] = {-1, -1};
  if (::pipe(ends) != 0) return "pipe";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(ends[0]);
    const gid_t groups[] = {4242, 4243};
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    std::array<__user_cap_data_struct, 2> caps{};
    caps[0].permitted = 1U << CAP_SETGID;
    std::string answer;
    if (::setgroups(2, groups) != 0 || ::prctl(PR_SET_KEEPCAPS, 1) != 0 ||
        ::setresgid(kNobody, kNobody, kNobody) != 0 ||
        ::setresuid(kNobody, kNobody, kNobody) != 0 ||
        // As a daemon started as that user is (a change of uid made this process undumpable).
        ::prctl(PR_SET_DUMPABLE, 1) != 0 || ::syscall(SYS_capset, &header, caps.data()) != 0) {
      answer = "setup failed";
    } else {
      try {
        answer = run_script(body, std::move(sandbox), cwd).report.dump();
      } catch (const std::system_error& error) {
        answer = std::string("refused: ") + error.what();
      }
    }
    (void)!::write(ends[1], answer.data(), answer.size());
    ::_exit(0);
  }
  ::close(ends[1]);
  std::string answer;
  std::array<char, 4096> buffer{};
  for (ssize_t n; (n = ::read(ends[0], buffer.data(), buffer.size())) > 0;) {
    answer.append(buffer.data(), static_cast<std::size_t>(n));
  }
  ::close(ends[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return answer;
}

// Given a daemon user with supplementary groups, one of which may read a file in the sandbox's
// view, and CAP_SETGID permitted, the child should keep none of them (they are dropped as the
// sandbox is built) and so read nothing through them.
TEST_F(SandboxTest, NoSupplementaryGroupReachesTheChild) {
  if (::geteuid() != 0) GTEST_SKIP() << "the test makes a user with groups, which takes root";
  fs::permissions(dir_.path(), fs::perms::owner_all | fs::perms::group_exec |
                                   fs::perms::group_read | fs::perms::others_exec |
                                   fs::perms::others_read);
  ASSERT_EQ(::chown((dir_ / "run").c_str(), kNobody, kNobody), 0);
  const auto secret = dir_ / "config" / "group-secret";
  aios::test::write_text_file(
      secret, "GROUP-SECRET",
      fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  ASSERT_EQ(::chown(secret.c_str(), 0, 4242), 0);
  fs::permissions(dir_ / "config", fs::perms::owner_all | fs::perms::group_exec |
                                       fs::perms::group_read | fs::perms::others_exec |
                                       fs::perms::others_read);
  auto sandbox = basic();
  sandbox.read_only = {dir_ / "config"};
  const std::string body =
      "attempt('groups', lambda: os.getgroups())\n"
      "attempt('read', lambda: open('" +
      secret.string() + "').read())\n";
  const auto answer = run_as_grouped_nobody(body, sandbox, dir_ / "run");
  const auto kept = json::parse(answer, nullptr, false);
  ASSERT_TRUE(kept.is_object()) << answer;
  EXPECT_EQ(kept["groups"], "ok:[]") << kept;
  EXPECT_TRUE(refused(kept, "read")) << kept;
}

// Given destination texts from a profile, only IPv4 or DNS hosts with a port 1..65535 pass.
TEST(SandboxDestination, ParsesHostAndPort) {
  EXPECT_EQ(parse_destination("127.0.0.1:8080"), (Destination{"127.0.0.1", 8080}));
  EXPECT_EQ(parse_destination("api.openai.com:443"), (Destination{"api.openai.com", 443}));
  for (const char* bad : {"", "host", "host:", "host:0", "host:65536", "host:08", ":80", "[::1]:80",
                          "::1:80", "a..b:80", "-a:80", "a b:80", "host:80x"}) {
    EXPECT_EQ(parse_destination(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace aios::process
