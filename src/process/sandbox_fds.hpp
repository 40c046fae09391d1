#pragma once
// The descriptors a sandboxed child hands bubblewrap, and where the first step inside the
// sandbox (aios-sandbox-exec) lives there: shared by the library and that step's own program.

namespace aios::process {

// 3 the hosts file, 4 our report channel, 5 where bubblewrap reports (--json-status-fd) the
// pid of the sandbox's first process and, only once the child was executed, its exit code,
// 6 the bytes of aios-sandbox-exec (bubblewrap copies them to kSandboxExecPath), 7 where
// aios-sandbox-exec reports the errno of an exec that failed, 8 the syscall filter (a compiled
// BPF program, --seccomp), 9 the read end of a pipe holding the child's environment
// ("NAME=value\0" entries): bubblewrap runs with none, so no process outside the sandbox
// holds the child's secrets in its environment (/proc/<pid>/environ), and a host process that
// opens the pipe after aios-sandbox-exec has read it finds it empty.
inline constexpr int kHostsFd = 3;
inline constexpr int kChannelFd = 4;
inline constexpr int kStatusFd = 5;
inline constexpr int kExecFd = 6;
inline constexpr int kExecReportFd = 7;
inline constexpr int kSyscallFilterFd = 8;
inline constexpr int kEnvironmentFd = 9;
// What one environment may hold at most (the pipe is sized to take it whole before the fork).
inline constexpr unsigned kMaxEnvironmentBytes = 1024 * 1024;
inline constexpr const char* kSandboxExecPath = "/run/aios/sandbox-exec";

}  // namespace aios::process
