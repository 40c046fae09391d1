#pragma once
// The engineering adapter's own checks (seed 004): what the backend did is read back from git
// and the file system, never taken from the backend's result.

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aios/git.hpp"
#include "worker/internal.hpp"

namespace aios::worker {

inline constexpr std::size_t kMaxEngineeringFiles = 128;
inline constexpr std::size_t kMaxEngineeringFileBytes = 2 * 1024 * 1024;
inline constexpr std::size_t kMaxEngineeringChangeBytes = 16 * 1024 * 1024;

// The name of the first secret pattern `content` matches (a private key block, an OpenAI,
// AWS, GitHub or Slack token shape, or one of `known_secrets` verbatim), or nullopt.
std::optional<std::string> secret_pattern(std::string_view content,
                                          const std::vector<std::string>& known_secrets);

struct InspectedChanges {
  nlohmann::json change_set;     // [{path, operation: write_file, content} | {path, delete_file}]
  nlohmann::json changed_files;  // [{path, operation, bytes, sha256}] for the result
};

// Reads the backend's work. First its repository's refs, as git::read_backend_refs() reported
// them (the worker left HEAD detached at `base_oid` and no ref): ENGINEERING_COMMIT_CREATED when
// HEAD or a ref names a commit the authority does not have, ENGINEERING_REFS_CHANGED when a ref
// exists or the refs could not be read, ENGINEERING_HEAD_MOVED. Then the worktree's files
// against the base tree (git::worktree_changes), per changed path ENGINEERING_SYMLINK_ESCAPE,
// _CHANGE_UNSUPPORTED, _FILE_TOO_LARGE, _SECRET_DETECTED, and ENGINEERING_CHANGE_SET_TOO_LARGE;
// ENGINEERING_WORKTREE_FAILED when the comparison fails.
InspectedChanges inspect_worktree(const std::filesystem::path& worktree,
                                  const std::string& base_oid, const git::BackendRefs& refs,
                                  const std::filesystem::path& authority_git_dir,
                                  const std::vector<std::string>& known_secrets);

// The verification commands to run: every backend request whose argv is the argv of an
// allowlisted command (the envelope's verification list, which the Bridge checked against its
// executable allowlist) runs as that command, then the allowlisted commands nobody asked for.
// A request off the list is ENGINEERING_VERIFICATION_NOT_ALLOWED, before anything runs.
nlohmann::json verification_plan(const nlohmann::json& allowlist, const nlohmann::json& requests);

nlohmann::json run_engineering(RunContext& run);

}  // namespace aios::worker
