#pragma once
// posix_spawn of one child with its three standard descriptors given, nothing else inherited.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace aios::process {

struct StandardFds {
  int in = -1;  // -1: /dev/null
  int out = -1;
  int err = -1;
};

// Pointers to the items' characters, null-terminated, as exec and posix_spawn take them (which
// never write through them).
std::vector<char*> pointers(const std::vector<std::string>& items);

// Starts argv[0] (absolute) as the leader of a new process group with `environment` as its
// whole environment, `working_directory` as its cwd, an empty signal mask, default signal
// dispositions and every descriptor above 2 closed. Throws std::system_error on failure
// (including exec failures, which glibc's posix_spawn reports synchronously).
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
            const std::filesystem::path& working_directory, StandardFds fds);

}  // namespace aios::process
