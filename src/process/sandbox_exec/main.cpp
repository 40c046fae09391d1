// aios-sandbox-exec: the first program bubblewrap runs inside every sandbox, and the last step
// before the child's own executable. bubblewrap runs without an environment (so no process
// outside the sandbox holds the child's secrets in /proc/<pid>/environ); this step reads the
// child's from the pipe at kEnvironmentFd, makes it its own (bubblewrap's PWD is not in it) and
// executes the child (PATH searched in the child's environment, as bubblewrap's execvp would).
//
//   aios-sandbox-exec PROGRAM [ARG...]
//
// Built without sanitizers or instrumentation (the sandbox may have no /proc) and embedded in
// the core library, which hands it to bubblewrap as a read-only file (process/sandbox.hpp). A
// failed exec is reported as its errno on the descriptor kExecReportFd, closed by a successful
// exec, so the parent can tell a child that never started from one that exited 127.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "process/sandbox_fds.hpp"

extern char** environ;

namespace {

// The child's environment, read whole from its pipe: false (errno set) when it cannot be.
bool read_environment(std::string& block, std::vector<char*>& entries) {
  const int fd = aios::process::kEnvironmentFd;
  char chunk[16384];
  for (;;) {
    const auto n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    block.append(chunk, static_cast<std::size_t>(n));
    if (block.size() > aios::process::kMaxEnvironmentBytes) {
      errno = E2BIG;
      return false;
    }
  }
  ::close(fd);
  for (std::size_t at = 0; at < block.size();) {
    entries.push_back(block.data() + at);
    at = block.find('\0', at);
    if (at == std::string::npos) break;
    ++at;
  }
  entries.push_back(nullptr);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 127;
  const int report = aios::process::kExecReportFd;
  const bool reporting = ::fcntl(report, F_SETFD, FD_CLOEXEC) == 0;
  std::string block;
  std::vector<char*> entries;
  if (read_environment(block, entries)) {
    environ = entries.data();
    ::execvp(argv[1], argv + 1);
  }
  const int error = errno;
  if (reporting) (void)!::write(report, &error, sizeof error);
  return 127;
}
