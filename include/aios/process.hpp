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
//
// With a Sandbox, the child is confined (docs/security.md, "The sandbox"): it starts in a new
// user and network namespace made for it (its uid mapped to itself, loopback up, nothing else),
// with the resource limits set, and runs under bubblewrap (/usr/bin/bwrap) in its own mount,
// PID and IPC namespaces and session. Its mount view holds the system (/usr, /etc) and the
// `read_only` paths read-only, the `writable` paths read-write, a private size-bounded /tmp, its
// own /proc and a minimal /dev; `hidden` paths are masked wherever a visible path contains
// them, and a read-only path inside a hidden one is left out. When its first process exits or the
// deadline passes, every process of it is gone. The only network it has is a listener inside its
// namespace for each allowed destination, relayed by this process to the real host:port. Started by
// root, the child runs as nobody (65534), and the writable paths are handed to nobody first (chown,
// recursively) and back to us after. bubblewrap runs without an environment; the child is
// executed by aios-sandbox-exec inside the sandbox, which takes `environment` from a pipe, so the
// child's environment is exactly `environment` and no process outside the sandbox holds it. Every
// process of the sandbox runs under its syscall filter (process/syscall_filter.cpp).
// bubblewrap reports a child killed by signal N as exit status 128 + N, so in a sandbox an
// exit status of 129 to 192 reads as -1 to -64 (as a shell's $? would).

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aios::process {

// An owned file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership (to an object that closes it itself).
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// One host:port a sandboxed child may reach. `host` is an IPv4 address or a DNS name; inside
// the sandbox a name resolves (its /etc/hosts) to an address of 127.254.0.0/16.
struct Destination {
  std::string host;
  std::uint16_t port = 0;
  friend bool operator==(const Destination&, const Destination&) = default;
};

// "host:port" with a port 1..65535 and a host that is an IPv4 address or a DNS name (letters,
// digits, '-', '.'; 1..253 characters); nullopt for anything else (IPv6 included).
std::optional<Destination> parse_destination(std::string_view text);

// Per process of the sandbox (setrlimit), and over the whole run: `memory_bytes` also bounds
// the anonymous memory resident in all of its processes together plus what its /tmp and
// /dev/shm hold, `processes` all of its processes and threads together (RLIMIT_NPROC counted in
// its own user namespace, and the whole-run count), and `disk_bytes` what the run adds to its
// writable paths together; a run that passes a whole-run bound is ended at once (Outcome::
// exceeded; process/supervise.hpp samples it). `tmp_bytes` is the size of its /tmp.
struct Limits {
  // RLIMIT_DATA per process and the whole run's resident bound. V8 maps large writable ranges it
  // never touches (an OpenClaw backend with its worker threads fails to start under 4 GiB).
  std::uint64_t memory_bytes = 32ULL << 30;
  std::uint64_t file_size_bytes = 1ULL << 30;
  std::uint64_t open_files = 1024;
  std::uint64_t cpu_seconds = 3600;
  std::uint64_t processes = 512;
  std::uint64_t tmp_bytes = 256ULL << 20;
  std::uint64_t disk_bytes = 8ULL << 30;
};

// A whole-run bound of Limits a sandboxed run passed.
enum class Bound { memory, processes, disk };
inline constexpr std::array<Bound, 3> kBounds = {Bound::memory, Bound::processes, Bound::disk};
// "memory", "processes", "disk".
std::string_view bound_name(Bound bound);

// A destination whose connections the caller serves itself instead of relaying them (the
// executor's provider gateway): the listener made for it inside the sandbox's network namespace
// is handed to `listen` once the sandbox has started.
struct Served {
  Destination destination;
  std::function<void(Fd listener)> listen;
};

struct Sandbox {
  std::vector<std::filesystem::path> read_only;
  std::vector<std::filesystem::path> writable;
  std::vector<std::filesystem::path> hidden;
  std::vector<Destination> network;  // empty (and no `served`): no network at all
  std::vector<Served> served;
  Limits limits;
};

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
  // Confines the child; nullopt runs it as it is (trusted helpers such as git).
  std::optional<Sandbox> sandbox;
};

struct Outcome {
  bool timed_out = false;  // the deadline passed and the process group was killed
  // subprocess.returncode: the exit status, or minus the signal that ended the child.
  int exit_code = 0;
  std::chrono::steady_clock::duration elapsed{};
  // Set: the sandboxed run passed this whole-run bound and was ended (exit_code is then the
  // signal's, -9).
  std::optional<Bound> exceeded;
};

// Runs `spec` to completion. Throws std::system_error when the child cannot be started (the
// executable is missing or not executable, posix_spawn or pipe creation failed, the sandbox
// could not be built, or bubblewrap could not exec the child); once it has
// started, every outcome (exit, signal, timeout) is returned, never thrown, and the child has
// been reaped.
Outcome run(const Spec& spec);

// The sandbox service (docs/security.md, "The verification sandbox service"): a unit of its
// own that may build sandboxes, so the unit that asks for one need not. run_through() hands a
// sandboxed `spec` (one without network; anything else is SANDBOX_REQUEST_INVALID) to the
// service listening on the Unix socket `socket`, waits for it and returns its outcome as run()
// would, with one difference: the output arrives once, at the end, through on_stdout, as the
// last kRemoteOutputBytes of stdout and stderr interleaved. It throws std::system_error when
// the service could not start the child, SANDBOX_SERVICE_UNAVAILABLE when the service cannot be
// reached or does not answer within the spec's timeout and a minute, and the service's own
// code when it refused the spec.
inline constexpr std::size_t kRemoteOutputBytes = 64 * 1024;
Outcome run_through(const std::filesystem::path& socket, const Spec& spec);

// The seam through which the library starts children (the executor's agents, the broker's
// backends, the worker's verification commands): part of the environment bundle
// (environment.hpp), so tests give a recording fake. Any thread may call.
class Spawner {
 public:
  virtual ~Spawner() = default;
  virtual Outcome run(const Spec& spec) = 0;  // as process::run
  virtual Outcome run_through(const std::filesystem::path& socket,
                              const Spec& spec) = 0;  // as process::run_through
};

class SystemSpawner final : public Spawner {
 public:
  Outcome run(const Spec& spec) override { return process::run(spec); }
  Outcome run_through(const std::filesystem::path& socket, const Spec& spec) override {
    return process::run_through(socket, spec);
  }
};

// For a daemon that builds sandboxes, first thing in main (capabilities are per thread, and
// threads started later copy them): of the capabilities it was started with (a unit's
// AmbientCapabilities=CAP_SETGID), keeps CAP_SETGID permitted only, neither effective nor
// ambient, so that no child inherits it; the sandbox step raises it just long enough to drop
// the child's supplementary groups. Without it, a sandbox started by a user with supplementary
// groups keeps them. Root (whose sandboxes run as nobody, its groups dropped) is left as it is.
void confine_capabilities();

// The service's side of one connection (a socket-activated instance: `in` and `out` are its
// socket): reads one spec (at most 1 MiB, within 30 s, exactly the fields run_through sends,
// always with a sandbox), runs it with run() and writes the answer.
void serve_connection(int in, int out);

}  // namespace aios::process
