#pragma once
// The descriptors a sandboxed child hands bubblewrap, and where the first step inside the
// sandbox (aios-sandbox-exec) lives there: shared by the library and that step's own program.

namespace aios::process {

// 3 the hosts file, 4 our report channel, 5 where bubblewrap reports (--json-status-fd) the
// pid of the sandbox's first process and, only once the child was executed, its exit code,
// 6 the bytes of aios-sandbox-exec (bubblewrap copies them to kSandboxExecPath), 7 where
// aios-sandbox-exec reports the errno of an exec that failed, 8 the syscall filter (a compiled
// BPF program, --seccomp).
inline constexpr int kHostsFd = 3;
inline constexpr int kChannelFd = 4;
inline constexpr int kStatusFd = 5;
inline constexpr int kExecFd = 6;
inline constexpr int kExecReportFd = 7;
inline constexpr int kSyscallFilterFd = 8;
inline constexpr const char* kSandboxExecPath = "/run/aios/sandbox-exec";

}  // namespace aios::process
