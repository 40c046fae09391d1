// The syscall filter of every sandbox (agent, backend, verification), built with libseccomp and
// handed to bubblewrap, which installs it on the sandbox's first process just before it executes
// it: bubblewrap itself still needs unshare and mount, so nothing earlier can install it. The
// policy and why each line: docs/security.md, "The syscall filter".
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <string>
#include <system_error>

#include "process/sandbox.hpp"

namespace aios::process {
namespace {

struct Refused {
  int syscall;
  int error;
};

// Whatever a process without capabilities could still reach of the kernel's larger surfaces.
// EPERM, as a kernel that forbids the call answers; ENOSYS for clone3, whose flags sit in memory
// a filter cannot read, so that glibc falls back to clone, whose flags it can.
const Refused kRefused[] = {
    // New namespaces give back every capability bubblewrap dropped, inside them.
    {SCMP_SYS(unshare), EPERM},
    {SCMP_SYS(setns), EPERM},
    {SCMP_SYS(clone3), ENOSYS},
    // The kernel keyring is shared beyond the sandbox and parses what a caller hands it.
    {SCMP_SYS(add_key), EPERM},
    {SCMP_SYS(request_key), EPERM},
    {SCMP_SYS(keyctl), EPERM},
    // Large kernel surfaces nothing a sandboxed program needs: asynchronous I/O rings, eBPF,
    // performance counters, user-handled page faults.
    {SCMP_SYS(io_uring_setup), EPERM},
    {SCMP_SYS(io_uring_enter), EPERM},
    {SCMP_SYS(io_uring_register), EPERM},
    {SCMP_SYS(bpf), EPERM},
    {SCMP_SYS(perf_event_open), EPERM},
    {SCMP_SYS(userfaultfd), EPERM},
    // No process reads or steers another's memory, inside the sandbox or out.
    {SCMP_SYS(ptrace), EPERM},
    {SCMP_SYS(process_vm_readv), EPERM},
    {SCMP_SYS(process_vm_writev), EPERM},
    // The mount family: the view bubblewrap built is the view.
    {SCMP_SYS(mount), EPERM},
    {SCMP_SYS(umount2), EPERM},
    {SCMP_SYS(pivot_root), EPERM},
    {SCMP_SYS(chroot), EPERM},
    {SCMP_SYS(open_tree), EPERM},
    {SCMP_SYS(move_mount), EPERM},
    {SCMP_SYS(fsopen), EPERM},
    {SCMP_SYS(fsconfig), EPERM},
    {SCMP_SYS(fsmount), EPERM},
    {SCMP_SYS(fspick), EPERM},
    {SCMP_SYS(mount_setattr), EPERM},
    // A file handle opens a file by inode, past every path the view hides.
    {SCMP_SYS(open_by_handle_at), EPERM},
    // The machine itself: modules, kexec, reboot, swap, accounting, the kernel log.
    {SCMP_SYS(init_module), EPERM},
    {SCMP_SYS(finit_module), EPERM},
    {SCMP_SYS(delete_module), EPERM},
    {SCMP_SYS(kexec_load), EPERM},
    {SCMP_SYS(kexec_file_load), EPERM},
    {SCMP_SYS(reboot), EPERM},
    {SCMP_SYS(swapon), EPERM},
    {SCMP_SYS(swapoff), EPERM},
    {SCMP_SYS(acct), EPERM},
    {SCMP_SYS(syslog), EPERM},
};

// clone's namespace flags, each its own rule (a rule compares one masked value).
constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
                                             CLONE_NEWIPC, CLONE_NEWUSER,   CLONE_NEWPID,
                                             CLONE_NEWNET};

// Raw netlink reaches the kernel's routing, firewall (nf_tables) and audit interfaces; packet
// sockets, the link layer. EAFNOSUPPORT: glibc then takes a host without them (getaddrinfo
// assumes both address families).
constexpr int kRefusedFamilies[] = {AF_NETLINK, AF_PACKET};

[[noreturn]] void filter_failed(int error, const char* what) {
  throw std::system_error(error < 0 ? -error : error, std::generic_category(),
                          std::string("sandbox: syscall filter: ") + what);
}

void filter_check(int result, const char* what) {
  if (result != 0) filter_failed(result, what);
}

std::string build() {
  const std::unique_ptr<void, void (*)(scmp_filter_ctx)> filter(seccomp_init(SCMP_ACT_ALLOW),
                                                                seccomp_release);
  if (!filter) filter_failed(ENOMEM, "seccomp_init");
  // A call of another architecture's ABI (x86's int 0x80, x32) would pass a filter written for
  // this one: the thread is killed instead (libseccomp's default for a foreign architecture).
  for (const auto& refused : kRefused) {
    // A call this architecture does not have (libseccomp's negative pseudo-numbers) is skipped.
    if (refused.syscall < 0) continue;
    filter_check(
        seccomp_rule_add(filter.get(), SCMP_ACT_ERRNO(static_cast<std::uint32_t>(refused.error)),
                         refused.syscall, 0),
        "rule");
  }
  // The comparisons are spelled out: libseccomp's SCMP_A0 macros are C compound literals.
  for (const auto flag : kNamespaceFlags) {
    const scmp_arg_cmp any_of_flag{
        .arg = 0, .op = SCMP_CMP_MASKED_EQ, .datum_a = flag, .datum_b = flag};
    filter_check(
        seccomp_rule_add(filter.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, any_of_flag),
        "clone rule");
  }
  for (const auto family : kRefusedFamilies) {
    const scmp_arg_cmp is_family{
        .arg = 0, .op = SCMP_CMP_EQ, .datum_a = static_cast<scmp_datum_t>(family), .datum_b = 0};
    filter_check(seccomp_rule_add(filter.get(), SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                                  is_family),
                 "socket rule");
  }
  // libseccomp 2.5 exports to a descriptor only.
  const int fd = ::memfd_create("aios-syscall-filter", MFD_CLOEXEC);
  if (fd < 0) filter_failed(errno, "memfd_create");
  const auto close_fd = std::unique_ptr<const int, void (*)(const int*)>(
      &fd, [](const int* owned) { ::close(*owned); });
  filter_check(seccomp_export_bpf(filter.get(), fd), "export");
  std::string program(static_cast<std::size_t>(::lseek(fd, 0, SEEK_END)), '\0');
  if (::pread(fd, program.data(), program.size(), 0) != static_cast<ssize_t>(program.size())) {
    filter_failed(errno, "read back");
  }
  return program;
}

}  // namespace

std::string_view syscall_filter_program() {
  static std::once_flag once;
  static std::string program;
  std::call_once(once, [] { program = build(); });
  return program;
}

}  // namespace aios::process
