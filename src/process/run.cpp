// The poll loop around one child: feed stdin, drain stdout and stderr, watch the child through
// a pidfd, and enforce the deadline on the whole process group.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>
#include <system_error>

#include "aios/process.hpp"
#include "process/relay.hpp"
#include "process/sandbox.hpp"
#include "process/spawn.hpp"
#include "process/supervise.hpp"

namespace aios::process {
namespace {

using Clock = std::chrono::steady_clock;

std::system_error os_error(const char* what) {
  return {errno, std::generic_category(), what};
}

struct Pipe {
  Fd read;
  Fd write;
};

// Both ends close-on-exec (the child gets its ends through dup2); our end is non-blocking.
Pipe make_pipe(bool parent_reads) {
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) != 0) throw os_error("pipe2");
  Pipe pipe{Fd(fds[0]), Fd(fds[1])};
  const int ours = parent_reads ? fds[0] : fds[1];
  if (::fcntl(ours, F_SETFL, O_NONBLOCK) != 0) throw os_error("fcntl");
  return pipe;
}

// SIGPIPE from writing to a child that closed its stdin is directed at this thread: block it
// here and consume it, so that neither the daemon nor a test binary dies of it.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~SigpipeGuard() {
    if (raised_) {
      const timespec zero{};
      while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;
  void raised() { raised_ = true; }

 private:
  sigset_t pipe_{};
  sigset_t previous_{};
  bool raised_ = false;
};

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return exit_code_of(status);
}

// Reads what is available; false at end of stream (or an error, which ends it too).
bool drain(Fd& fd, const std::function<void(std::string_view)>& sink) {
  std::array<char, 65536> buffer{};
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n > 0) {
      if (sink) sink(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    fd.reset();
    return false;
  }
}

int poll_timeout_ms(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return static_cast<int>(std::min<long long>(left.count(), 60'000));
}

// The child as it runs: its descriptors and what is still owed to it.
class Session {
 public:
  Session(const Spec& spec, SigpipeGuard& sigpipe) : spec_(spec), sigpipe_(sigpipe) {
    on_stderr_ = [this](std::string_view chunk) {
      // The start of a sandbox's stderr: bubblewrap's message when it could not start the child.
      if (spec_.sandbox && err_head_.size() < 512) {
        err_head_.append(chunk.substr(0, 512 - err_head_.size()));
      }
      if (spec_.on_stderr) spec_.on_stderr(chunk);
    };
  }

  Outcome run() {
    const auto started = Clock::now();
    start();
    const auto deadline = started + spec_.timeout;
    Outcome outcome;
    while (!exited_ || out_.valid() || err_.valid()) {
      const auto now = Clock::now();
      if (now >= deadline) {
        if (!exited_) {
          kill_group();
          outcome.timed_out = true;
        }
        break;
      }
      const bool supervised = supervisor_ && !exited_;
      if (supervised) {
        if (const auto passed = supervisor_->check(now)) {
          kill_group();
          outcome.exceeded = passed;
          break;
        }
      }
      wait_once(supervised ? std::min(deadline, supervisor_->next_due()) : deadline);
    }
    // Whether it finished or timed out, nothing of the child's group may keep running.
    if (!exited_) kill_group();
    outcome.exit_code = reap(pid_);
    outcome.elapsed = Clock::now() - started;
    relay_.reset();
    if (spec_.sandbox) await_empty_sandbox();
    // What a sandbox started by root wrote as nobody is ours again (git, for one, refuses a
    // worktree another user owns). Every process of it is gone, so nothing races this.
    for (const auto& path : handed_back_) {
      try {
        hand_tree(path, ::geteuid(), ::getegid());
      } catch (const std::system_error&) {
        // The caller reads what it needs as root either way.
      }
    }
    if (spec_.sandbox) settle_sandbox(outcome);
    return outcome;
  }

 private:
  void start() {
    Pipe in;
    const bool feed = spec_.stdin_data.has_value();
    if (feed) in = make_pipe(false);
    Pipe out = make_pipe(true);
    Pipe err = make_pipe(true);
    const StandardFds fds{feed ? in.read.get() : -1, out.write.get(), err.write.get()};
    if (spec_.sandbox) {
      // Before the start: what the writable paths hold already is not the run's.
      supervisor_ = std::make_unique<RunSupervisor>(spec_.sandbox->limits, spec_.sandbox->writable);
      const Plan plan = plan_sandbox(spec_, procfs_mountable(), ::geteuid() == 0);
      if (plan.staged) handed_back_ = spec_.sandbox->writable;
      auto spawned = spawn_sandboxed(plan, spec_, fds);
      pid_ = spawned.pid;
      status_ = std::move(spawned.status);
      exec_report_ = std::move(spawned.exec_report);
      auto& listening = spawned.listeners;
      std::vector<std::pair<Fd, Destination>> relayed;
      for (std::size_t i = 0; i < listening.size(); ++i) {
        const auto& destination = plan.listeners[i].destination;
        const auto& served = spec_.sandbox->served;
        const auto own = std::find_if(served.begin(), served.end(), [&](const Served& s) {
          return s.destination == destination;
        });
        if (own != served.end()) {
          own->listen(std::move(listening[i]));
        } else {
          relayed.emplace_back(std::move(listening[i]), destination);
        }
      }
      if (!relayed.empty()) relay_ = std::make_unique<Relay>(std::move(relayed));
    } else {
      pid_ = spawn(spec_.argv, spec_.environment, spec_.working_directory, fds);
    }
    // The syscall itself: glibc 2.36's <sys/pidfd.h> lacks C linkage for C++.
    pidfd_ = Fd(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
    if (!pidfd_.valid()) {
      const auto error = os_error("pidfd_open");
      kill_group();
      reap(pid_);
      throw error;
    }
    in_ = std::move(in.write);
    out_ = std::move(out.read);
    err_ = std::move(err.read);
    if (feed && spec_.stdin_data->empty()) in_.reset();
  }

  void wait_once(Clock::time_point deadline) {
    std::array<pollfd, 5> fds{};
    nfds_t count = 0;
    // Closed descriptors stay in their slot as -1, which poll() skips.
    const auto add = [&](int fd, short events) {
      fds[count] = {fd, events, 0};
      ++count;
    };
    add(in_.get(), POLLOUT);
    add(out_.get(), POLLIN);
    add(err_.get(), POLLIN);
    add(exited_ ? -1 : pidfd_.get(), POLLIN);
    add(status_.get(), POLLIN);
    const int ready = ::poll(fds.data(), count, poll_timeout_ms(deadline));
    if (ready < 0) {
      if (errno == EINTR) return;
      throw os_error("poll");
    }
    if (fds[0].revents != 0) feed_stdin();
    if (fds[1].revents != 0) drain(out_, spec_.on_stdout);
    if (fds[2].revents != 0) drain(err_, on_stderr_);
    if (fds[3].revents != 0) {
      // The leader is now a zombie, so its group id cannot be reused yet: stop its helpers.
      exited_ = true;
      kill_group();
      in_.reset();
    }
    if (fds[4].revents != 0) read_status();
  }

  // bubblewrap's status records: the first names the sandbox's first process, which we watch
  // at once (bubblewrap, its parent, has not reaped it yet, so the pid is still its own).
  void read_status() {
    const auto keep = [this](std::string_view chunk) {
      status_text_.append(chunk.substr(0, 4096 - std::min<std::size_t>(status_text_.size(), 4096)));
    };
    drain(status_, keep);
    if (sandbox_init_.valid()) return;
    const auto at = status_text_.find("\"child-pid\":");
    if (at == std::string::npos) return;
    const long pid = std::strtol(status_text_.c_str() + at + 12, nullptr, 10);
    if (pid <= 0) return;
    sandbox_init_ = Fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (supervisor_) supervisor_->watch(static_cast<pid_t>(pid));
  }

  // bubblewrap has exited and its first process was killed with it (--die-with-parent); once
  // that process has exited, its PID namespace is empty: the kernel kills and reaps every other
  // process of it first. Waits for that, at most 10 s.
  void await_empty_sandbox() {
    if (status_.valid()) read_status();
    if (!sandbox_init_.valid()) return;
    pollfd gone{sandbox_init_.get(), POLLIN, 0};
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (::poll(&gone, 1, poll_timeout_ms(deadline)) < 0 && errno == EINTR) {
    }
  }

  void feed_stdin() {
    const std::string& data = *spec_.stdin_data;
    while (written_ < data.size()) {
      const ssize_t n = ::write(in_.get(), data.data() + written_, data.size() - written_);
      if (n > 0) {
        written_ += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      // EPIPE: the child stopped reading; what it did not read is its own choice.
      if (n < 0 && errno == EPIPE) sigpipe_.raised();
      break;
    }
    in_.reset();
  }

  void kill_group() const { ::kill(-pid_, SIGKILL); }

  // A failed start, as posix_spawn reports one: bubblewrap exits 1 when it could not build
  // the sandbox or exec aios-sandbox-exec, which reports an exec of the child that failed on
  // its own pipe. Only those two channels tell a failed start from a child that exited 1 or
  // 127 (bubblewrap reports the exit code only of a child it executed), never the child's own
  // stderr, which the child writes: what it wrote is then bubblewrap's message. bubblewrap
  // reports a child killed by signal N as 128 + N, which is turned back into subprocess's -N.
  void settle_sandbox(Outcome& outcome) const {
    if (const auto error = exec_failure(exec_report_)) {
      throw std::system_error(
          *error, std::generic_category(),
          "sandbox: execvp " + (spec_.argv.empty() ? std::string() : spec_.argv.front()));
    }
    const bool executed = status_text_.find("\"exit-code\"") != std::string::npos;
    if (!outcome.timed_out && outcome.exit_code == 1 && !executed) {
      throw std::system_error(ENOEXEC, std::generic_category(),
                              err_head_.empty() ? std::string("bwrap failed")
                                                : err_head_.substr(0, err_head_.find('\n')));
    }
    if (outcome.exit_code > 128 && outcome.exit_code <= 128 + 64) {
      outcome.exit_code = 128 - outcome.exit_code;
    }
  }

  const Spec& spec_;
  SigpipeGuard& sigpipe_;
  pid_t pid_ = -1;
  Fd pidfd_;
  Fd in_;
  Fd out_;
  Fd err_;
  std::size_t written_ = 0;
  bool exited_ = false;
  std::unique_ptr<Relay> relay_;  // a sandbox's network, for as long as it runs
  std::vector<std::filesystem::path> handed_back_;
  std::function<void(std::string_view)> on_stderr_;
  std::string err_head_;
  Fd status_;       // bubblewrap's status pipe
  Fd exec_report_;  // aios-sandbox-exec's report of a child it could not execute
  std::string status_text_;
  Fd sandbox_init_;                            // a pidfd of the sandbox's first process
  std::unique_ptr<RunSupervisor> supervisor_;  // a sandbox's whole-run bounds
};

}  // namespace

Outcome run(const Spec& spec) {
  SigpipeGuard sigpipe;
  Session session(spec, sigpipe);
  return session.run();
}

}  // namespace aios::process
