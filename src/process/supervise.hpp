#pragma once
// The whole-run bounds of a sandbox, enforced from outside it: memory (the anonymous memory
// resident in all of its processes plus what its /tmp and /dev/shm hold), processes and threads
// together, and the bytes in its writable paths. Sampled at least every kSampleInterval (the
// walk of the writable paths at most a tenth of the time); works on every host, with or without
// a delegated cgroup, because it needs nothing but /proc and the paths themselves.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "aios/process.hpp"

namespace aios::process {

inline constexpr std::chrono::milliseconds kSampleInterval{100};

class RunSupervisor {
 public:
  using Clock = std::chrono::steady_clock;

  RunSupervisor(const Limits& limits, std::vector<std::filesystem::path> writable);

  // The sandbox's first process, whose PID namespace holds every process of the run.
  void watch(pid_t first);

  // When the next sample is due.
  Clock::time_point next_due() const { return next_; }

  // Samples what is due at `now`: the bound passed, if any.
  std::optional<Bound> check(Clock::time_point now);

 private:
  std::optional<Bound> sample_processes();
  std::uint64_t disk_bytes();

  Limits limits_;
  std::vector<std::filesystem::path> writable_;
  pid_t first_ = -1;
  std::string namespace_;       // the readlink of /proc/<first>/ns/pid
  std::uint64_t baseline_ = 0;  // the writable paths' bytes before the run
  Clock::time_point next_;
  Clock::time_point next_walk_;
};

}  // namespace aios::process
