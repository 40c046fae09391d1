#include "process/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>

#include <system_error>

namespace aios::process {
namespace {

// Destroys the posix_spawn objects on every path out of spawn().
struct SpawnObjects {
  posix_spawn_file_actions_t actions{};
  posix_spawnattr_t attributes{};
  SpawnObjects() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
  }
  ~SpawnObjects() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  SpawnObjects(const SpawnObjects&) = delete;
  SpawnObjects& operator=(const SpawnObjects&) = delete;
};

void check(int error, const char* what) {
  if (error != 0) throw std::system_error(error, std::generic_category(), what);
}

}  // namespace

std::vector<char*> pointers(const std::vector<std::string>& items) {
  std::vector<char*> out;
  out.reserve(items.size() + 1);
  for (const auto& item : items) out.push_back(const_cast<char*>(item.c_str()));
  out.push_back(nullptr);
  return out;
}

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
            const std::filesystem::path& working_directory, StandardFds fds) {
  if (argv.empty() || argv.front().empty() || argv.front().front() != '/') {
    throw std::system_error(EINVAL, std::generic_category(), "argv[0] is not an absolute path");
  }
  SpawnObjects objects;
  auto* actions = &objects.actions;
  if (fds.in >= 0) {
    check(posix_spawn_file_actions_adddup2(actions, fds.in, 0), "dup2 stdin");
  } else {
    check(posix_spawn_file_actions_addopen(actions, 0, "/dev/null", O_RDONLY, 0), "open stdin");
  }
  check(posix_spawn_file_actions_adddup2(actions, fds.out, 1), "dup2 stdout");
  check(posix_spawn_file_actions_adddup2(actions, fds.err, 2), "dup2 stderr");
  check(posix_spawn_file_actions_addchdir_np(actions, working_directory.c_str()), "chdir");
  // Our descriptors are O_CLOEXEC already; this also covers any a library opened without it.
  check(posix_spawn_file_actions_addclosefrom_np(actions, 3), "closefrom");

  auto* attributes = &objects.attributes;
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  // Daemons block SIGTERM/SIGINT in every thread and may ignore SIGPIPE; the agent must not
  // inherit either, or it could not be stopped the ordinary way.
  check(posix_spawnattr_setsigmask(attributes, &none), "sigmask");
  check(posix_spawnattr_setsigdefault(attributes, &all), "sigdefault");
  check(posix_spawnattr_setpgroup(attributes, 0), "pgroup");
  check(posix_spawnattr_setflags(attributes,
                                 static_cast<short>(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                    POSIX_SPAWN_SETSIGDEF)),
        "flags");

  const auto args = pointers(argv);
  const auto env = pointers(environment);
  pid_t pid = -1;
  check(posix_spawn(&pid, argv.front().c_str(), actions, attributes, args.data(), env.data()),
        "posix_spawn");
  return pid;
}

}  // namespace aios::process
