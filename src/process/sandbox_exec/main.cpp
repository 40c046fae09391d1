// aios-sandbox-exec: the first program bubblewrap runs inside every sandbox, and the last step
// before the child's own executable. bubblewrap sets PWD after it changes directory, even
// with --unsetenv PWD, so the child would see one variable its spec never named; this step
// removes it and executes the child (PATH searched, as bubblewrap's execvp does).
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

#include "process/sandbox_fds.hpp"

int main(int argc, char** argv) {
  if (argc < 2) return 127;
  ::unsetenv("PWD");
  const int report = aios::process::kExecReportFd;
  const bool reporting = ::fcntl(report, F_SETFD, FD_CLOEXEC) == 0;
  ::execvp(argv[1], argv + 1);
  const int error = errno;
  if (reporting) (void)!::write(report, &error, sizeof error);
  return 127;
}
