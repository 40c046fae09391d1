#pragma once
// Termination signals for daemons: block SIGTERM and SIGINT (and SIGHUP, for a daemon that
// reloads) before any thread starts (threads inherit the mask), then wait for one in main. No
// handler runs in signal context.

#include <pthread.h>
#include <signal.h>

namespace aios::daemon {

class TerminationSignals {
 public:
  explicit TerminationSignals(bool reload = false) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    if (reload) sigaddset(&set_, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }

  // Blocks until SIGTERM, SIGINT (or SIGHUP) arrives; returns the signal number.
  int wait() const {
    int signal = 0;
    sigwait(&set_, &signal);
    return signal;
  }

 private:
  sigset_t set_{};
};

}  // namespace aios::daemon
