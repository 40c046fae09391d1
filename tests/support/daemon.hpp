#pragma once
// Runs daemon executables for integration tests: a scoped temporary directory, a child process
// started with fork/exec (argv and environment given, never a shell) whose stderr goes to a file
// in that directory, a bounded wait for its "listening" JSON log line and the port in it, and a
// stop by SIGTERM (graceful) or SIGKILL (crash). The destructor kills and reaps a child that is
// still running, so a failing test never leaves a daemon behind; a child also gets SIGKILL when
// the thread that started it dies (PR_SET_PDEATHSIG), so start daemons from the test's own
// thread, not from a short-lived helper thread.
//
// Failures (a binary that cannot run, a daemon that exits or stays silent before it is ready, a
// stop that does not finish in time) throw std::runtime_error with the daemon's log attached;
// GoogleTest reports an escaping exception as a failure of the test.
//
// Header-only so that every integration suite (the scheduler, the rebind daemon, the worker)
// can include it without adding a source file to its target.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "support/postgres.hpp"

extern "C" {
extern char** environ;
}

namespace aios::test {

inline constexpr unsigned kCloseRangeCloexec = 1U << 2;  // CLOSE_RANGE_CLOEXEC, linux/close_range.h

// --- Files -------------------------------------------------------------------------------------

// The whole content of `path`, or "" when it cannot be read.
inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// A /proc/<pid>/ file of a process that may be exiting; "" once it is gone or unreadable. A
// process that exits between the open and the read fails the read (ESRCH), which
// read_text_file's ifstream would throw.
inline std::string read_proc_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string content;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) {
    content.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return n < 0 ? std::string() : content;
}

// Writes `content` to `path` (created or truncated) with permission bits `mode`.
inline void write_text_file(const std::filesystem::path& path, std::string_view content,
                            std::filesystem::perms mode = std::filesystem::perms::owner_read |
                                                          std::filesystem::perms::owner_write) {
  {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!file) throw std::runtime_error("cannot write " + path.string());
  }
  std::filesystem::permissions(path, mode);
}

// `length` random lower-case hex characters.
inline std::string random_token(std::size_t length) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device device;
  std::string out;
  out.reserve(length);
  for (std::size_t i = 0; i < length; ++i) out.push_back(kHex[device() % 16]);
  return out;
}

// Writes a fresh random token of `length` characters (a credential file: mode 0600) and returns
// it. Daemons refuse control tokens shorter than 32 characters.
inline std::string write_token_file(const std::filesystem::path& path, std::size_t length = 48) {
  std::string token = random_token(length);
  write_text_file(path, token + "\n");
  return token;
}

// The exchange key the executor seals its answers with and the worker checks them with
// (--exchange-key-file of both): `<dir>/exchange_result_key`, made once per directory.
inline std::filesystem::path exchange_key_file(const std::filesystem::path& dir) {
  const auto path = dir / "exchange_result_key";
  if (!std::filesystem::exists(path)) write_token_file(path, 64);
  return path;
}

// A directory under $AIOS_TEST_TMPDIR, else $TMPDIR, else /tmp, removed with its content on
// destruction (kept when AIOS_TEST_KEEP_TMP is set, for a post-mortem).
class ScopedTempDir {
 public:
  explicit ScopedTempDir(std::string_view prefix = "aios-test") {
    std::filesystem::path base = "/tmp";
    for (const char* name : {"AIOS_TEST_TMPDIR", "TMPDIR"}) {
      if (const char* value = std::getenv(name); value != nullptr && *value != '\0') {
        base = value;
        break;
      }
    }
    std::string pattern = (base / (std::string(prefix) + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
    }
    path_ = pattern;
  }
  ~ScopedTempDir() {
    if (std::getenv("AIOS_TEST_KEEP_TMP") != nullptr) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// --- Processes ---------------------------------------------------------------------------------

// Processes on this host, other than the caller, whose command line holds `marker` (and, when
// given, whose argv[0] starts with `program`, e.g. "/usr/bin/python3" for the interpreter a
// profile resolves to /usr/bin/python3.11): what a sandboxed child left running, if anything.
inline int processes_with(const std::string& marker, const std::string& program = "") {
  int found = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::stoi(name) == ::getpid()) continue;
    const auto cmdline = read_proc_file((entry.path() / "cmdline").string());
    if (!program.empty() && cmdline.compare(0, program.size(), program) != 0) continue;
    if (cmdline.find(marker) != std::string::npos) ++found;
  }
  return found;
}

// How a child ended.
struct ExitStatus {
  bool exited = false;  // true: exit code in `code`; false: killed by `signal`
  int code = -1;
  int signal = 0;

  static ExitStatus from_wait_status(int status) {
    ExitStatus result;
    if (WIFEXITED(status)) {
      result.exited = true;
      result.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      result.signal = WTERMSIG(status);
    }
    return result;
  }
  bool exited_with(int expected) const { return exited && code == expected; }
  bool killed_by(int expected) const { return !exited && signal == expected; }
  std::string describe() const {
    return exited ? "exit code " + std::to_string(code) : "signal " + std::to_string(signal);
  }
};

// TLS trust and proxy settings: a machine that reaches its registries through an intercepting
// proxy names its CA and proxy here, and a child that drops them fails where the caller would not.
inline constexpr std::string_view kTrustAndProxyVariables[] = {
    "SSL_CERT_FILE",  "SSL_CERT_DIR",       "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO", "REQUESTS_CA_BUNDLE", "npm_config_cafile",   "NPM_CONFIG_CAFILE",
    "HTTPS_PROXY",    "https_proxy",        "HTTP_PROXY",          "http_proxy",
    "NO_PROXY",       "no_proxy",           "npm_config_proxy",    "npm_config_https_proxy"};

// NAME=value of each of `names` that the test's own environment sets, then of each trust and
// proxy variable it sets.
inline std::vector<std::string> inherited_environment(std::span<const std::string_view> names) {
  std::vector<std::string> env;
  const auto inherit = [&env](std::string_view name) {
    const std::string key(name);
    if (const char* value = std::getenv(key.c_str())) env.push_back(key + "=" + value);
  };
  for (const auto name : names) inherit(name);
  for (const auto name : kTrustAndProxyVariables) inherit(name);
  return env;
}

struct DaemonOptions {
  std::filesystem::path binary;
  std::vector<std::string> args;  // argv[1..]
  // NAME=value entries for the child, on top of a small inherited base (PATH, locale, time
  // zone, TMPDIR, the sanitizer options, TLS trust and proxies). Nothing else of the test's
  // environment leaks in, so a stray AIOS_* variable on the test machine cannot change a daemon's
  // configuration.
  std::vector<std::string> env;
  std::string ready_event = "TASK_API_LISTENING";  // "event" of the JSON log line that means ready
  std::string port_field = "port";                 // the field of that line holding the port
  std::chrono::milliseconds ready_timeout{10000};
  std::chrono::milliseconds stop_timeout{15000};
};

// One daemon executable, run any number of times in a row (a restart reuses the arguments, so
// the same database). Each run's stderr goes to `<log_dir>/<name>.<run>.stderr.log` and stdout
// to `.stdout.log`; stdin is /dev/null. Not thread-safe: drive it from the test's thread.
class Daemon {
 public:
  Daemon(DaemonOptions options, std::filesystem::path log_dir, std::string name)
      : options_(std::move(options)), log_dir_(std::move(log_dir)), name_(std::move(name)) {}
  ~Daemon() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Starts the process, without waiting for it to be ready. Throws when it is still running
  // or the executable cannot be run.
  void spawn() {
    if (running()) throw std::runtime_error(name_ + ": spawn while still running");
    ++runs_;
    port_ = 0;
    const auto err_path = log_path();
    const auto out_path = log_dir_ / (name_ + "." + std::to_string(runs_) + ".stdout.log");

    // Everything the child needs is prepared here: after fork only async-signal-safe calls.
    std::vector<std::string> argv_text{options_.binary.string()};
    argv_text.insert(argv_text.end(), options_.args.begin(), options_.args.end());
    std::vector<std::string> env_text = child_environment();
    std::vector<char*> argv;
    for (auto& item : argv_text) argv.push_back(item.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& item : env_text) envp.push_back(item.data());
    envp.push_back(nullptr);

    const int in_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int exec_pipe[2] = {-1, -1};
    if (in_fd < 0 || out_fd < 0 || err_fd < 0 || ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
      const int error = errno;
      for (const int fd : {in_fd, out_fd, err_fd, exec_pipe[0], exec_pipe[1]}) {
        if (fd >= 0) ::close(fd);
      }
      throw std::system_error(error, std::generic_category(), name_ + ": cannot prepare files");
    }
    const pid_t parent = ::getpid();
    const pid_t child = ::fork();
    if (child == 0) {
      // The child: die with the spawning thread, clean signal state, redirect, exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      sigset_t none;
      ::sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      struct sigaction default_action {};
      default_action.sa_handler = SIG_DFL;
      for (const int sig : {SIGTERM, SIGINT, SIGPIPE, SIGHUP}) {
        ::sigaction(sig, &default_action, nullptr);
      }
      if (::dup2(in_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) {
        report_exec_failure(exec_pipe[1]);
      }
      // No other descriptor of the test (a client socket, a fake server's listening socket)
      // survives the exec. Best effort: kernels before 5.11 lack the flag.
      ::close_range(3, ~0U, kCloseRangeCloexec);
      ::execve(argv[0], argv.data(), envp.data());
      report_exec_failure(exec_pipe[1]);
    }
    const int fork_error = errno;
    for (const int fd : {in_fd, out_fd, err_fd, exec_pipe[1]}) ::close(fd);
    if (child < 0) {
      ::close(exec_pipe[0]);
      throw std::system_error(fork_error, std::generic_category(), name_ + ": fork");
    }
    pid_ = child;
    // The pipe closes on a successful exec (O_CLOEXEC) and carries errno otherwise.
    int child_errno = 0;
    ssize_t n = 0;
    do {
      n = ::read(exec_pipe[0], &child_errno, sizeof child_errno);
    } while (n < 0 && errno == EINTR);
    ::close(exec_pipe[0]);
    if (n > 0) {
      reap_blocking();
      throw std::system_error(child_errno, std::generic_category(),
                              name_ + ": cannot execute " + options_.binary.string());
    }
  }

  // Waits (bounded by ready_timeout) for the ready line and returns its port (0 when
  // port_field is empty: a daemon that serves nothing). Throws, with the log, when the daemon
  // exits first or stays silent.
  std::uint16_t wait_ready() {
    const auto line = wait_for_event(options_.ready_event, options_.ready_timeout);
    if (!line) {
      throw std::runtime_error(
          name_ + ": no " + options_.ready_event + " line (" +
          (running() ? std::string("still running after ") +
                           std::to_string(options_.ready_timeout.count()) + " ms"
                     : "ended with " + (last_exit_ ? last_exit_->describe() : "no process")) +
          ")\n" + log());
    }
    if (options_.port_field.empty()) return port_ = 0;
    const auto it = line->find(options_.port_field);
    if (it == line->end() || !it->is_number_unsigned() || *it == 0 || *it > 65535) {
      throw std::runtime_error(name_ + ": ready line without a valid port\n" + log());
    }
    port_ = it->get<std::uint16_t>();
    return port_;
  }

  // Waits for a log line of the current run whose "event" is `event`, up to `timeout` or
  // until the process exits; nullopt when none came.
  std::optional<nlohmann::json> wait_for_event(std::string_view event,
                                               std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (auto line = find_event(event)) return line;
      if (!running() || try_reap()) return find_event(event);  // a last line before the exit
      if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  // spawn() then wait_ready().
  std::uint16_t start() {
    spawn();
    return wait_ready();
  }

  // Waits for the process to end on its own, up to `timeout`; nullopt when it is still running
  // then (it is left running).
  std::optional<ExitStatus> wait_exit(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return last_exit_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (auto status = try_reap()) return status;
      if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  // SIGTERM, then a bounded wait for the exit; a daemon that does not stop in stop_timeout is
  // killed and the call throws. Returns how it ended (a graceful stop is exit code 0).
  ExitStatus stop() {
    if (!running()) throw std::runtime_error(name_ + ": stop while not running");
    ::kill(pid_, SIGTERM);
    if (auto status = wait_exit(options_.stop_timeout)) return *status;
    kill();
    throw std::runtime_error(name_ + ": did not stop within " +
                             std::to_string(options_.stop_timeout.count()) + " ms of SIGTERM\n" +
                             log());
  }

  // SIGKILL (a crash: nothing flushed, nothing drained) and reap.
  ExitStatus kill() {
    if (!running()) throw std::runtime_error(name_ + ": kill while not running");
    ::kill(pid_, SIGKILL);
    return reap_blocking();
  }

  // stop() when running (the stop must be graceful), then start() on the same arguments.
  std::uint16_t restart() {
    if (running()) {
      const auto status = stop();
      if (!status.exited_with(0)) {
        throw std::runtime_error(name_ + ": stop before restart ended with " + status.describe() +
                                 "\n" + log());
      }
    }
    return start();
  }

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  std::uint16_t port() const { return port_; }
  int runs() const { return runs_; }
  const std::optional<ExitStatus>& last_exit() const { return last_exit_; }
  DaemonOptions& options() { return options_; }

  // The stderr log of run `run` (default: the latest).
  std::filesystem::path log_path(int run = 0) const {
    return log_dir_ / (name_ + "." + std::to_string(run > 0 ? run : runs_) + ".stderr.log");
  }
  std::string log(int run = 0) const { return read_text_file(log_path(run)); }

  // The JSON objects among the log lines of a run, in order (other lines are skipped).
  std::vector<nlohmann::json> events(int run = 0) const {
    std::vector<nlohmann::json> out;
    std::istringstream lines(log(run));
    std::string line;
    while (std::getline(lines, line)) {
      auto value = nlohmann::json::parse(line, nullptr, false);
      if (value.is_object()) out.push_back(std::move(value));
    }
    return out;
  }

  // The first log line of a run whose "event" is `event`.
  std::optional<nlohmann::json> find_event(std::string_view event, int run = 0) const {
    for (auto& line : events(run)) {
      const auto it = line.find("event");
      if (it != line.end() && it->is_string() && it->get_ref<const std::string&>() == event) {
        return line;
      }
    }
    return std::nullopt;
  }

 private:
  [[noreturn]] static void report_exec_failure(int fd) {
    const int error = errno;
    [[maybe_unused]] const auto written = ::write(fd, &error, sizeof error);
    ::_exit(127);
  }

  std::vector<std::string> child_environment() const {
    static constexpr std::string_view kInherited[] = {
        "PATH",         "LANG",          "LC_ALL",       "TZ",          "TMPDIR",
        "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"};
    std::vector<std::string> env = inherited_environment(kInherited);
    for (const auto& entry : options_.env) {
      const auto equals = entry.find('=');
      if (equals == std::string::npos || equals == 0) {
        throw std::invalid_argument(name_ + ": environment entry is not NAME=value: " + entry);
      }
      const auto name = entry.substr(0, equals + 1);
      std::erase_if(env, [&name](const std::string& item) { return item.starts_with(name); });
      env.push_back(entry);
    }
    return env;
  }

  std::optional<ExitStatus> try_reap() {
    if (pid_ <= 0) return last_exit_;
    int status = 0;
    pid_t done = 0;
    do {
      done = ::waitpid(pid_, &status, WNOHANG);
    } while (done < 0 && errno == EINTR);
    if (done == 0) return std::nullopt;
    pid_ = -1;
    last_exit_ = done > 0 ? ExitStatus::from_wait_status(status) : ExitStatus{};
    return last_exit_;
  }

  ExitStatus reap_blocking() {
    int status = 0;
    pid_t done = 0;
    do {
      done = ::waitpid(pid_, &status, 0);
    } while (done < 0 && errno == EINTR);
    pid_ = -1;
    last_exit_ = done > 0 ? ExitStatus::from_wait_status(status) : ExitStatus{};
    return *last_exit_;
  }

  DaemonOptions options_;
  std::filesystem::path log_dir_;
  std::string name_;
  pid_t pid_ = -1;
  int runs_ = 0;
  std::uint16_t port_ = 0;
  std::optional<ExitStatus> last_exit_;
};

// --- The task scheduler ------------------------------------------------------------------------

#ifdef AIOS_BINARY_DIR
// The daemon executable `name` of this build.
inline std::filesystem::path daemon_binary(const std::string& name) {
  return std::filesystem::path(AIOS_BINARY_DIR) / "daemons" / name;
}

inline std::filesystem::path scheduler_binary() {
  return daemon_binary("aios-task-scheduler");
}

// aios-external-agent-executor serving `exchange` with the profiles of `profiles` and the
// exchange key of `key_dir` (exchange_key_file), ready once it serves; callers add env and args.
inline DaemonOptions executor_options(const std::filesystem::path& exchange,
                                      const std::filesystem::path& profiles,
                                      const std::filesystem::path& key_dir) {
  DaemonOptions options;
  options.binary = daemon_binary("aios-external-agent-executor");
  options.args = {"--root",          exchange.string(),     "--profile-root",
                  profiles.string(), "--exchange-key-file", exchange_key_file(key_dir).string()};
  options.ready_event = "EXTERNAL_AGENT_EXECUTOR_SERVING";
  options.port_field.clear();
  return options;
}
#endif

struct SchedulerConfig {
  int lease_seconds = 60;
  int sweep_interval_ms = 100;
  // The authority repository the Bridge writes; empty: authority.git in the daemon's directory
  // (not created: a test that commits makes it, e.g. with `git init --bare`).
  std::filesystem::path authority_git_dir;
  std::vector<std::string> extra_args;  // appended after the standard ones
  std::vector<std::string> env;         // NAME=value, see DaemonOptions::env
  // --db; empty: state.sqlite3 in the daemon's directory or, with AIOS_TEST_STORE=postgresql, a
  // fresh PostgreSQL database (test_store_is_postgres).
  std::string store;
};

// A --db value that names a PostgreSQL store (anything else is a SQLite path).
inline bool is_postgres_location(std::string_view location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

// The backend every SchedulerDaemon of this process runs on: AIOS_TEST_STORE=postgresql puts each
// on a fresh database of the tests' PostgreSQL server (AIOS_TEST_POSTGRES_URL), so a daemon test
// binary that tests/CMakeLists.txt registers a second time with that variable covers the
// PostgreSQL store through the real daemons; anything else (the default) is SQLite.
inline bool test_store_is_postgres() {
  const char* store = std::getenv("AIOS_TEST_STORE");
  if (store == nullptr || std::string_view(store) != "postgresql") return false;
  if (!postgres_admin_url()) {
    throw std::runtime_error("AIOS_TEST_STORE=postgresql without AIOS_TEST_POSTGRES_URL");
  }
  return true;
}

// aios-task-scheduler on an ephemeral loopback port with its own temporary directory, database
// (state.sqlite3, or a PostgreSQL database, see test_store_is_postgres) and control token file.
// Not started by the constructor: call start(). restart() / start() after kill() reuse the same
// database and token.
class SchedulerDaemon {
 public:
  explicit SchedulerDaemon(SchedulerConfig config = {})
      : dir_("aios-scheduler"),
        token_(write_token_file(dir_ / "control_token")),
        db_path_(dir_ / "state.sqlite3"),
        postgres_(config.store.empty() && test_store_is_postgres()
                      ? std::make_unique<ScopedPostgresDatabase>(*postgres_admin_url())
                      : nullptr),
        store_(!config.store.empty() ? config.store
               : postgres_           ? postgres_->url()
                                     : db_path_.string()),
        authority_(config.authority_git_dir.empty() ? dir_ / "authority.git"
                                                    : config.authority_git_dir),
        daemon_(make_options(config), dir_.path(), "aios-task-scheduler") {}

  std::uint16_t start() { return daemon_.start(); }
  ExitStatus stop() { return daemon_.stop(); }
  ExitStatus kill() { return daemon_.kill(); }
  std::uint16_t restart() { return daemon_.restart(); }

  std::uint16_t port() const { return daemon_.port(); }
  // The governed Bridge's port of the current run (from the same ready line), 0 before start.
  std::uint16_t bridge_port() {
    const auto line = daemon_.find_event("TASK_API_LISTENING");
    return line ? line->value("bridge_port", std::uint16_t{0}) : std::uint16_t{0};
  }
  const std::filesystem::path& authority_git_dir() const { return authority_; }
  const std::string& control_token() const { return token_; }
  // What --db names: the SQLite file or the PostgreSQL URL.
  const std::string& store_location() const { return store_; }
  bool on_postgres() const { return is_postgres_location(store_); }
  // The SQLite file (meaningful only when !on_postgres()).
  const std::filesystem::path& db_path() const { return db_path_; }
  const ScopedTempDir& dir() const { return dir_; }
  Daemon& process() { return daemon_; }

 private:
  DaemonOptions make_options(const SchedulerConfig& config) const {
    DaemonOptions options;
#ifdef AIOS_BINARY_DIR
    options.binary = scheduler_binary();
#endif
    options.args = {"--db",
                    store_location(),
                    "--control-token-file",
                    (dir_ / "control_token").string(),
                    "--api-port",
                    "0",
                    "--bridge-port",
                    "0",
                    "--authority-git-dir",
                    authority_.string(),
                    "--lease-seconds",
                    std::to_string(config.lease_seconds),
                    "--sweep-interval-ms",
                    std::to_string(config.sweep_interval_ms)};
    options.args.insert(options.args.end(), config.extra_args.begin(), config.extra_args.end());
    options.env = config.env;
    return options;
  }

  ScopedTempDir dir_;  // first: outlives the daemon and its log files
  std::string token_;
  std::filesystem::path db_path_;
  std::unique_ptr<ScopedPostgresDatabase> postgres_;  // dropped after the daemon stopped
  std::string store_;
  std::filesystem::path authority_;
  Daemon daemon_;
};

}  // namespace aios::test
