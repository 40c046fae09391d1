// The fork that builds a sandboxed child's namespaces before bubblewrap runs in them. Between
// fork and exec only system calls run (the parent may have other threads, so no allocation,
// no locks): everything the child needs is prepared here, before the fork.
#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <system_error>

#include "process/sandbox.hpp"
#include "process/sandbox_exec/embedded.hpp"

namespace aios::process {
namespace {

namespace fs = std::filesystem;

// The steps a child can fail at, reported back with their errno.
enum Step : int {
  kStdio = 1,
  kSignals,
  kNamespaces,
  kIdentity,
  kLoopback,
  kListen,
  kHandOver,
  kLimits,
  kExec,
  kStaging,
  kGroups,
};

const char* step_name(int step) {
  switch (step) {
    case kStdio:
      return "sandbox: standard descriptors";
    case kSignals:
      return "sandbox: signals";
    case kNamespaces:
      return "sandbox: user and network namespace (unshare)";
    case kIdentity:
      return "sandbox: uid and gid map";
    case kLoopback:
      return "sandbox: loopback";
    case kListen:
      return "sandbox: destination listener";
    case kHandOver:
      return "sandbox: listener hand-over";
    case kLimits:
      return "sandbox: resource limits";
    case kExec:
      return "sandbox: exec of /usr/bin/bwrap";
    case kStaging:
      return "sandbox: staging the bound paths (started by root)";
    case kGroups:
      return "sandbox: dropping the supplementary groups or the capabilities";
    default:
      return "sandbox";
  }
}

struct Report {
  int step = 0;
  int error = 0;
};

// Everything the child uses, built before the fork.
struct Prepared {
  bool drop_root = false;  // run by root: the child becomes kNobody before anything else
  std::vector<char*> argv;
  std::string uid_map;
  std::string gid_map;
  std::vector<sockaddr_in> listen;
  std::vector<sockaddr_in> aliases;
  std::vector<std::array<char, IFNAMSIZ>> alias_names;
  std::vector<std::pair<int, rlim_t>> limits;
  // Started by root: each source, its place under kStage, and whether it is a directory.
  std::vector<std::string> sources;
  std::vector<std::string> staged_paths;
  std::vector<bool> source_is_directory;
};

sockaddr_in ipv4(const std::string& address, std::uint16_t port) {
  sockaddr_in out{};
  out.sin_family = AF_INET;
  out.sin_port = htons(port);
  if (::inet_pton(AF_INET, address.c_str(), &out.sin_addr) != 1) {
    throw std::system_error(EINVAL, std::generic_category(), "sandbox: address " + address);
  }
  return out;
}

// CAP_SETGID into the effective set, if it is permitted.
bool raise_setgid() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, 2> data{};
  if (::syscall(SYS_capget, &header, data.data()) != 0) return false;
  constexpr auto kSetgid = 1U << CAP_SETGID;
  if ((data[0].permitted & kSetgid) == 0) return false;
  data[0].effective |= kSetgid;
  return ::syscall(SYS_capset, &header, data.data()) == 0;
}

bool drop_capabilities() {
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return false;
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, 2> none{};
  return ::syscall(SYS_capset, &header, none.data()) == 0;
}

[[noreturn]] void fail(int channel, int step) {
  const Report report{step, errno};
  (void)!::write(channel, &report, sizeof report);
  ::_exit(127);
}

bool write_file(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

bool interface_up(int sock, const char* name) {
  ifreq request{};
  std::strncpy(request.ifr_name, name, IFNAMSIZ - 1);
  if (::ioctl(sock, SIOCGIFFLAGS, &request) != 0) return false;
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
  return ::ioctl(sock, SIOCSIFFLAGS, &request) == 0;
}

bool add_alias(int sock, const std::array<char, IFNAMSIZ>& name, const sockaddr_in& address) {
  ifreq request{};
  std::memcpy(request.ifr_name, name.data(), IFNAMSIZ);
  std::memcpy(&request.ifr_addr, &address, sizeof address);
  if (::ioctl(sock, SIOCSIFADDR, &request) != 0) return false;
  sockaddr_in mask{};
  mask.sin_family = AF_INET;
  mask.sin_addr.s_addr = 0xffffffffU;
  std::memcpy(&request.ifr_netmask, &mask, sizeof mask);
  return ::ioctl(sock, SIOCSIFNETMASK, &request) == 0 && interface_up(sock, name.data());
}

// Sends the listening sockets to the parent in one message.
bool hand_over(int channel, const int* fds, std::size_t count) {
  char tag = 'L';
  iovec data{&tag, 1};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kMaxDestinations)> control{};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int) * count);
  std::memcpy(CMSG_DATA(header), fds, sizeof(int) * count);
  return ::sendmsg(channel, &message, MSG_NOSIGNAL) == 1;
}

// "/proc/self/fd/<fd>" without allocating.
void format_fd_path(int fd, std::array<char, 32>& out) {
  constexpr std::string_view kPrefix = "/proc/self/fd/";
  std::memcpy(out.data(), kPrefix.data(), kPrefix.size());
  std::array<char, 12> digits{};
  std::size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + fd % 10);
    fd /= 10;
  } while (fd > 0 && n < digits.size());
  for (std::size_t i = 0; i < n; ++i) out[kPrefix.size() + i] = digits[n - 1 - i];
  out[kPrefix.size() + n] = '\0';
}

// Started by root: a mount namespace of the child's own, each source bound under kStage (a
// fresh tmpfs over /tmp there), so bubblewrap reaches them as nobody.
bool stage_sources(const Prepared& p) {
  if (::unshare(CLONE_NEWNS) != 0 ||
      ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return false;
  }
  // Opened before /tmp is covered: a source may lie below it.
  std::array<int, kMaxSources> opened{};
  for (std::size_t i = 0; i < p.sources.size(); ++i) {
    opened[i] = ::open(p.sources[i].c_str(), O_PATH | O_CLOEXEC);
    if (opened[i] < 0) return false;
  }
  if (::mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=65536") != 0 ||
      ::mkdir(kStage, 0755) != 0) {
    return false;
  }
  for (std::size_t i = 0; i < p.sources.size(); ++i) {
    const char* target = p.staged_paths[i].c_str();
    const int made = p.source_is_directory[i] ? ::mkdir(target, 0755)
                                              : ::close(::open(target, O_CREAT | O_WRONLY, 0644));
    // The descriptor, not the path: what was opened is what is bound.
    std::array<char, 32> fd_path{};
    format_fd_path(opened[i], fd_path);
    if (made != 0 || ::mount(fd_path.data(), target, nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return false;
    }
    ::close(opened[i]);
  }
  return true;
}

// The descriptors bubblewrap and aios-sandbox-exec take over, as the parent holds them.
struct Handed {
  int hosts;
  int status;
  int exec_program;
  int exec_report;
  int syscall_filter;
  int environment;
};

[[noreturn]] void child(const Prepared& p, StandardFds fds, Handed handed, int channel_in) {
  // Standard descriptors first: their sources are all above 2.
  const int in = fds.in >= 0 ? fds.in : ::open("/dev/null", O_RDONLY);
  if (in < 0 || ::dup2(in, 0) < 0 || ::dup2(fds.out, 1) < 0 || ::dup2(fds.err, 2) < 0) {
    fail(channel_in, kStdio);
  }
  // Then the hosts file, the status pipe, aios-sandbox-exec and its report pipe, the syscall
  // filter and the environment, each at its place from a copy above them all (a source may sit
  // at another's place), and our report channel (closed by exec); nothing else.
  const std::array<std::pair<int, int>, 6> places = {{{handed.hosts, kHostsFd},
                                                      {handed.status, kStatusFd},
                                                      {handed.exec_program, kExecFd},
                                                      {handed.exec_report, kExecReportFd},
                                                      {handed.syscall_filter, kSyscallFilterFd},
                                                      {handed.environment, kEnvironmentFd}}};
  std::array<int, places.size()> high{};
  for (std::size_t i = 0; i < places.size(); ++i) {
    high[i] = ::fcntl(places[i].first, F_DUPFD, 10);
    if (high[i] < 0) fail(channel_in, kStdio);
  }
  const int high_channel = ::fcntl(channel_in, F_DUPFD_CLOEXEC, 10);
  if (high_channel < 0) fail(channel_in, kStdio);
  for (std::size_t i = 0; i < places.size(); ++i) {
    if (::dup2(high[i], places[i].second) < 0) fail(channel_in, kStdio);
  }
  if (::dup3(high_channel, kChannelFd, O_CLOEXEC) < 0) fail(channel_in, kStdio);
  const int channel = kChannelFd;
  ::close_range(kEnvironmentFd + 1, ~0U, 0);
  if (p.drop_root && !stage_sources(p)) fail(channel, kStaging);

  sigset_t none;
  sigemptyset(&none);
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &defaults, nullptr);
  if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0 || ::setpgid(0, 0) != 0) {
    fail(channel, kSignals);
  }

  // Root is exempt from RLIMIT_NPROC and owns every root-owned file it can see: a sandbox
  // started by root runs as nobody instead.
  if (p.drop_root &&
      (::setgroups(0, nullptr) != 0 || ::setresgid(kNobody, kNobody, kNobody) != 0 ||
       ::setresuid(kNobody, kNobody, kNobody) != 0 ||
       // Changing the uid made us undumpable, which would leave /proc/self/uid_map root's.
       ::prctl(PR_SET_DUMPABLE, 1) != 0)) {
    fail(channel, kIdentity);
  }
  // A supplementary group would keep granting, inside, whatever it grants outside (the user
  // namespace's setgroups "deny" below keeps them as they are). Root dropped them above; anyone
  // else needs CAP_SETGID (the executor's and the broker's units grant it), raised for this call
  // only. Without it they stay (docs/security.md says where).
  if (!p.drop_root && ::getgroups(0, nullptr) > 0 && raise_setgid() &&
      ::setgroups(0, nullptr) != 0) {
    fail(channel, kGroups);
  }
  // No capability of ours reaches bubblewrap or the child: ambient ones would pass its exec.
  if (!drop_capabilities()) fail(channel, kGroups);
  // The new user namespace's process bound is taken from RLIMIT_NPROC as it is now: raise it
  // to the hard limit first, so that only the bound set below, counted inside, applies.
  rlimit nproc{};
  ::getrlimit(RLIMIT_NPROC, &nproc);
  nproc.rlim_cur = nproc.rlim_max;
  ::setrlimit(RLIMIT_NPROC, &nproc);
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) fail(channel, kNamespaces);
  if (!write_file("/proc/self/setgroups", "deny") || !write_file("/proc/self/uid_map", p.uid_map) ||
      !write_file("/proc/self/gid_map", p.gid_map)) {
    fail(channel, kIdentity);
  }
  const int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0 || !interface_up(sock, "lo")) fail(channel, kLoopback);
  for (std::size_t i = 0; i < p.aliases.size(); ++i) {
    if (!add_alias(sock, p.alias_names[i], p.aliases[i])) fail(channel, kLoopback);
  }
  ::close(sock);

  std::array<int, kMaxDestinations> listening{};
  const std::size_t count = p.listen.size();
  for (std::size_t i = 0; i < count; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int on = 1;
    if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
        ::bind(fd, reinterpret_cast<const sockaddr*>(&p.listen[i]), sizeof p.listen[i]) != 0 ||
        ::listen(fd, 64) != 0) {
      fail(channel, kListen);
    }
    listening[i] = fd;
  }
  if (count > 0) {
    if (!hand_over(channel, listening.data(), count)) fail(channel, kHandOver);
    for (std::size_t i = 0; i < count; ++i) ::close(listening[i]);
  }

  for (const auto& [resource, value] : p.limits) {
    const rlimit limit{value, value};
    if (::setrlimit(resource, &limit) != 0) fail(channel, kLimits);
  }
  // bubblewrap gets no environment: the child's comes through kEnvironmentFd.
  char* const no_environment[] = {nullptr};
  ::execve(p.argv.front(), p.argv.data(), no_environment);
  fail(channel, kExec);
}

}  // namespace

// Symlinks themselves, never their targets.
void hand_tree(const fs::path& root, uid_t uid, gid_t gid) {
  std::error_code error;
  if (::lchown(root.c_str(), uid, gid) != 0) {
    throw std::system_error(errno, std::generic_category(), "sandbox: chown " + root.string());
  }
  for (fs::recursive_directory_iterator it(root, fs::directory_options::none, error), end;
       !error && it != end; it.increment(error)) {
    if (::lchown(it->path().c_str(), uid, gid) != 0) {
      throw std::system_error(errno, std::generic_category(),
                              "sandbox: chown " + it->path().string());
    }
  }
}

namespace {

Prepared prepare(const Plan& plan, const Spec& spec) {
  Prepared p;
  p.drop_root = plan.staged;
  if (p.drop_root) {
    for (const auto& path : spec.sandbox->writable) hand_tree(path, kNobody, kNobody);
    for (std::size_t i = 0; i < plan.sources.size(); ++i) {
      p.sources.push_back(plan.sources[i]);
      p.staged_paths.push_back(std::string(kStage) + "/" + std::to_string(i));
      std::error_code error;
      p.source_is_directory.push_back(fs::is_directory(plan.sources[i], error));
    }
  }
  p.argv = pointers(plan.argv);
  const auto uid = std::to_string(p.drop_root ? kNobody : ::getuid());
  const auto gid = std::to_string(p.drop_root ? kNobody : ::getgid());
  p.uid_map = uid + " " + uid + " 1";
  p.gid_map = gid + " " + gid + " 1";
  for (const auto& listener : plan.listeners) {
    p.listen.push_back(ipv4(listener.address, listener.destination.port));
  }
  for (std::size_t i = 0; i < plan.loopback_aliases.size(); ++i) {
    p.aliases.push_back(ipv4(plan.loopback_aliases[i], 0));
    std::array<char, IFNAMSIZ> name{};
    const auto text = "lo:" + std::to_string(i + 1);
    std::memcpy(name.data(), text.c_str(), text.size());
    p.alias_names.push_back(name);
  }
  const Limits& limits = spec.sandbox->limits;
  p.limits = {{RLIMIT_DATA, limits.memory_bytes},
              {RLIMIT_FSIZE, limits.file_size_bytes},
              {RLIMIT_NOFILE, limits.open_files},
              {RLIMIT_CPU, limits.cpu_seconds},
              {RLIMIT_NPROC, limits.processes},
              {RLIMIT_CORE, 0},
              {RLIMIT_MEMLOCK, 0}};
  return p;
}

// A file bubblewrap copies into the sandbox (--ro-bind-data), read from its start.
Fd data_file(const char* name, std::string_view content) {
  Fd fd(::memfd_create(name, MFD_CLOEXEC));
  if (!fd.valid() ||
      ::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size()) ||
      ::lseek(fd.get(), 0, SEEK_SET) != 0) {
    throw std::system_error(errno, std::generic_category(), std::string("sandbox: ") + name);
  }
  return fd;
}

// Both ends close-on-exec in the parent, the read end non-blocking.
std::pair<Fd, Fd> nonblocking_pipe() {
  int ends[2] = {-1, -1};
  if (::pipe2(ends, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "sandbox: pipe2");
  }
  Fd read(ends[0]);
  Fd write(ends[1]);
  if (::fcntl(read.get(), F_SETFL, O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(), "sandbox: fcntl");
  }
  return {std::move(read), std::move(write)};
}

// Reads the child's reports until exec closes the channel: the listeners, or a failure.
Report receive(int channel, std::vector<Fd>& listeners) {
  for (;;) {
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kMaxDestinations)> control{};
    std::array<char, sizeof(Report)> data{};
    iovec vector{data.data(), data.size()};
    msghdr message{};
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    const ssize_t n = ::recvmsg(channel, &message, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
         header = CMSG_NXTHDR(&message, header)) {
      if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
      const auto count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
        listeners.emplace_back(fd);
      }
    }
    if (n == static_cast<ssize_t>(sizeof(Report))) {
      Report report;
      std::memcpy(&report, data.data(), sizeof report);
      return report;
    }
  }
}

// A pipe holding the child's environment whole ("NAME=value\0" entries), its write end closed:
// the read end, for aios-sandbox-exec.
Fd environment_pipe(const std::vector<std::string>& environment) {
  std::string block;
  for (const auto& entry : environment) block.append(entry).push_back('\0');
  if (block.size() > kMaxEnvironmentBytes) {
    throw std::system_error(E2BIG, std::generic_category(), "sandbox: environment");
  }
  int ends[2] = {-1, -1};
  if (::pipe2(ends, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "sandbox: pipe2");
  }
  Fd read(ends[0]);
  const Fd write(ends[1]);
  // A pipe takes 64 KiB by default; a larger environment needs a larger pipe (up to the
  // system's pipe-max-size, 1 MiB by default), or the write below would wait for a reader.
  if (block.size() >= 65536 &&
      ::fcntl(write.get(), F_SETPIPE_SZ, static_cast<int>(block.size() + 1)) < 0) {
    throw std::system_error(errno, std::generic_category(), "sandbox: environment pipe");
  }
  if (!block.empty() &&
      ::write(write.get(), block.data(), block.size()) != static_cast<ssize_t>(block.size())) {
    throw std::system_error(errno, std::generic_category(), "sandbox: environment pipe");
  }
  return read;
}

}  // namespace

Spawned spawn_sandboxed(const Plan& plan, const Spec& spec, StandardFds fds) {
  const Prepared prepared = prepare(plan, spec);
  const Fd environment = environment_pipe(spec.environment);
  const Fd hosts = data_file("aios-sandbox-hosts", plan.hosts);
  const Fd program = data_file("aios-sandbox-exec", sandbox_exec_program());
  const Fd filter = data_file("aios-syscall-filter", syscall_filter_program());
  auto [status_read, status_write] = nonblocking_pipe();
  auto [report_read, report_write] = nonblocking_pipe();
  int pair[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    throw std::system_error(errno, std::generic_category(), "sandbox: socketpair");
  }
  Fd ours(pair[0]);
  Fd theirs(pair[1]);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "sandbox: fork");
  if (pid == 0) {
    child(prepared, fds,
          {hosts.get(), status_write.get(), program.get(), report_write.get(), filter.get(),
           environment.get()},
          theirs.get());
  }
  theirs.reset();
  Spawned spawned;
  spawned.pid = pid;
  auto& listeners = spawned.listeners;
  const Report report = receive(ours.get(), listeners);
  if (report.step != 0) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    listeners.clear();
    throw std::system_error(report.error, std::generic_category(), step_name(report.step));
  }
  if (listeners.size() != plan.listeners.size()) {
    ::kill(-pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw std::system_error(EPROTO, std::generic_category(), step_name(kHandOver));
  }
  spawned.status = std::move(status_read);
  spawned.exec_report = std::move(report_read);
  return spawned;
}

void confine_capabilities() {
  // Root builds its sandboxes with root's powers (the child becomes nobody): nothing to confine.
  if (::geteuid() == 0) return;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, 2> data{};
  if (::syscall(SYS_capget, &header, data.data()) != 0) return;
  constexpr auto kSetgid = 1U << CAP_SETGID;
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  const auto kept = data[0].permitted & kSetgid;
  data = {};
  data[0].permitted = kept;
  ::syscall(SYS_capset, &header, data.data());
}

std::string_view sandbox_exec_program() {
  return sandbox_exec::embedded_files().front().content;
}

std::optional<int> exec_failure(const Fd& exec_report) {
  int error = 0;
  if (!exec_report.valid() || ::read(exec_report.get(), &error, sizeof error) != sizeof error) {
    return std::nullopt;
  }
  return error;
}

}  // namespace aios::process

namespace aios::process {

bool procfs_mountable() {
  static std::once_flag once;
  static bool mountable = false;
  std::call_once(once, [] {
    Spec spec;
    spec.argv = {"/usr/bin/true"};
    spec.working_directory = "/";
    spec.sandbox = Sandbox{};
    try {
      const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      const Fd sink(null);
      const auto spawned = spawn_sandboxed(plan_sandbox(spec, true, ::geteuid() == 0), spec,
                                           {-1, sink.get(), sink.get()});
      int status = 0;
      while (::waitpid(spawned.pid, &status, 0) < 0 && errno == EINTR) {
      }
      mountable = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    } catch (const std::system_error&) {
      mountable = false;
    }
  });
  return mountable;
}

}  // namespace aios::process
