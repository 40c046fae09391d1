#pragma once
// How a sandboxed child is built: the bubblewrap command line, the sandbox's /etc/hosts, the
// listeners made inside its network namespace, and the fork that makes the namespaces.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aios/process.hpp"
#include "process/sandbox_fds.hpp"
#include "process/spawn.hpp"

namespace aios::process {

inline constexpr const char* kBubblewrap = "/usr/bin/bwrap";
// More destinations than a profile needs would only widen what a child reaches.
inline constexpr std::size_t kMaxDestinations = 16;
inline constexpr std::size_t kMaxSources = 64;
// Started by root, the child binds each source here first (in a mount namespace of its own),
// as /tmp/aios-sandbox-stage/<i>, so that bubblewrap, running as nobody, can reach sources
// below directories only root may enter.
inline constexpr const char* kStage = "/tmp/aios-sandbox-stage";

// A listener inside the sandbox's network namespace and where its connections are relayed.
struct Listener {
  std::string address;  // IPv4, inside the sandbox
  Destination destination;
};

struct Plan {
  std::vector<std::string> argv;  // bwrap, its options, "--", the child's argv
  std::string hosts;              // the sandbox's /etc/hosts (bwrap reads it from fd 3)
  // The paths bound into the view (read-only and writable), in argv order; with `staged`,
  // argv names them by their place under kStage.
  std::vector<std::string> sources;
  bool staged = false;
  std::vector<Listener> listeners;
  // Non-loopback IPv4 destinations, added to the sandbox's loopback so the child's own
  // connect() to them lands on a listener.
  std::vector<std::string> loopback_aliases;
};

// Throws std::system_error (EINVAL) for more than kMaxDestinations destinations or
// kMaxSources paths. Read-only paths that do not exist are left out. With
// `own_procfs` the sandbox gets its own /proc (its processes only); without, an empty one.
// `staged`: the child is started by root (see kStage).
Plan plan_sandbox(const Spec& spec, bool own_procfs, bool staged);

// Whether a sandbox may mount its own /proc here, tried once per process. The kernel refuses
// it where the /proc we see is not fully visible, as under a unit with ProtectKernelTunables=,
// ProtectKernelLogs= or ProcSubset=pid; the sandbox then has an empty /proc instead, and never
// the host's.
bool procfs_mountable();

// fork, then in the child: standard descriptors, default signals, a new process group, a user
// and network namespace (uid and gid mapped to themselves, loopback up, the aliases and
// listeners), the limits, and exec of plan.argv. The listening sockets come back in
// `listeners`, in plan order. Throws std::system_error when any step fails, naming the step.
// Gives `root` and everything below it to uid:gid (a sandbox started by root runs as nobody;
// what it wrote goes back to us afterwards). Throws std::system_error.
void hand_tree(const std::filesystem::path& root, uid_t uid, gid_t gid);

inline constexpr uid_t kNobody = 65534;

// A started sandbox: bubblewrap's pid, the listening sockets (in plan order), and the read
// ends (non-blocking) of bubblewrap's status pipe and of aios-sandbox-exec's exec report.
struct Spawned {
  pid_t pid = -1;
  std::vector<Fd> listeners;
  Fd status;
  Fd exec_report;
};
Spawned spawn_sandboxed(const Plan& plan, const Spec& spec, StandardFds fds);

// The errno aios-sandbox-exec reported for a child it could not execute, if it did.
std::optional<int> exec_failure(const Fd& exec_report);

// The syscall filter every sandbox runs under, compiled once a process (syscall_filter.cpp).
// Throws std::system_error when libseccomp cannot build it.
std::string_view syscall_filter_program();

// The aios-sandbox-exec program, as the build embedded it.
std::string_view sandbox_exec_program();

}  // namespace aios::process
