// HEAD and the refs of a backend-written repository, read by git in a sandbox: a repository is a
// parser's whole input (packs, index, config, reftables), and the process that would parse it
// holds the agent token, the lease and the exchange key.
#include <sys/stat.h>

#include <algorithm>

#include "aios/canonical.hpp"
#include "aios/git.hpp"

namespace aios::git {
namespace {

namespace fs = std::filesystem;

// More output than this is no repository a worker left (it has no ref at all).
constexpr std::size_t kMaxOutput = 1 << 20;
constexpr std::size_t kMaxDetail = 200;

bool is_object_id(std::string_view text) {
  return text.size() == 40 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool contains(const fs::path& root, const fs::path& path) {
  const auto relative = path.lexically_normal().lexically_relative(root.lexically_normal());
  return !relative.empty() && *relative.begin() != "..";
}

// show-ref's lines are "<id> <name>"; anything else (git's own complaint, a line cut short) means
// the refs were not read in full.
void parse(std::string_view output, BackendRefs& read) {
  while (!output.empty()) {
    const auto end = output.find('\n');
    const auto line = output.substr(0, end);
    output = end == std::string_view::npos ? std::string_view() : output.substr(end + 1);
    if (line.empty()) continue;
    const auto space = line.find(' ');
    const auto name = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    if (space != 40 || !is_object_id(line.substr(0, 40)) || name.empty() ||
        name.find(' ') != std::string_view::npos) {
      if (read.unreadable.empty()) read.unreadable = bounded_text(line, kMaxDetail);
      continue;
    }
    if (name == "HEAD") {
      read.head = std::string(line.substr(0, 40));
    } else {
      read.refs.emplace(std::string(name), std::string(line.substr(0, 40)));
    }
  }
}

}  // namespace

BackendRefs read_backend_refs(const fs::path& git_dir, process::Sandbox sandbox,
                              const SandboxRunner& run) {
  BackendRefs read;
  struct stat info {};
  if (::lstat(git_dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    read.unreadable = ".git is not a directory";
    return read;
  }
  std::erase_if(sandbox.hidden, [&](const fs::path& hidden) {
    return hidden.lexically_normal() == git_dir.lexically_normal() || contains(hidden, git_dir);
  });
  sandbox.read_only = {git_dir};
  sandbox.writable.clear();
  sandbox.network.clear();
  sandbox.limits = process::Limits{};
  sandbox.limits.memory_bytes = 1ULL << 30;
  sandbox.limits.processes = 16;
  sandbox.limits.cpu_seconds = 30;
  sandbox.limits.file_size_bytes = 1 << 20;
  sandbox.limits.tmp_bytes = 1 << 20;
  sandbox.limits.disk_bytes = 0;

  process::Spec spec;
  // safe.directory: inside the sandbox the files of another user belong to nobody, and git
  // would refuse them; the repository is read, never trusted, so that check buys nothing here.
  spec.argv = {"/usr/bin/git",
               "--git-dir=" + git_dir.string(),
               "--no-optional-locks",
               "-c",
               "safe.directory=*",
               "-c",
               "core.fsmonitor=false",
               "-c",
               "core.hooksPath=/dev/null",
               "show-ref",
               "--head"};
  spec.environment = {"PATH=/usr/bin:/bin",
                      "HOME=/",
                      "LC_ALL=C",
                      "GIT_CONFIG_NOSYSTEM=1",
                      "GIT_CONFIG_GLOBAL=/dev/null",
                      "GIT_TERMINAL_PROMPT=0"};
  spec.working_directory = "/";
  spec.timeout = std::chrono::seconds(30);
  std::string output;
  bool too_long = false;
  // stdout and stderr together, as the sandbox service returns them: a complaint is a line too.
  const auto keep = [&](std::string_view chunk) {
    if (output.size() + chunk.size() > kMaxOutput) too_long = true;
    if (!too_long) output.append(chunk);
  };
  spec.on_stdout = keep;
  spec.on_stderr = keep;
  spec.sandbox = std::move(sandbox);
  process::Outcome outcome;
  try {
    outcome = run(spec);
  } catch (const std::system_error& error) {
    read.unreadable = bounded_text(error.what(), kMaxDetail);
    return read;
  }
  parse(output, read);
  if (too_long) {
    read.unreadable = "more refs than any worktree holds";
  } else if (outcome.timed_out || outcome.exceeded) {
    read.unreadable = "git did not finish reading the refs";
  } else if (outcome.exit_code != 0 && outcome.exit_code != 1 && read.unreadable.empty()) {
    read.unreadable = "git exited with " + std::to_string(outcome.exit_code);
  }
  return read;
}

}  // namespace aios::git
