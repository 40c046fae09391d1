#pragma once
// The authority repository, written only through git's object model (libgit2): blobs, a tree
// from an in-memory index, a commit object, and a compare-and-swap update of one branch ref.
// No worktree, no hooks, no shell, never a forced ref update.
//
// Not thread-safe: one Repository per thread, and callers serialize writes to a branch.
// Failures throw aios::Error: GIT_REPOSITORY_UNAVAILABLE (cannot open), GIT_OPERATION_FAILED
// (libgit2 refused an object write), GOVERNED_COMMIT_CHANGE_CONFLICT (a change does not fit the
// parent tree).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

struct git_repository;

namespace aios::git {

struct FileChange {
  std::string path;  // relative, validated by the envelope rules
  bool remove = false;
  std::string content;  // for a write
};

struct Signature {
  std::string name;
  std::string email;
  std::int64_t epoch_seconds = 0;
};

class Repository {
 public:
  explicit Repository(const std::filesystem::path& git_dir);
  ~Repository();
  Repository(const Repository&) = delete;
  Repository& operator=(const Repository&) = delete;

  // The commit `refs/heads/<branch>` points at, or nullopt when the branch does not exist.
  std::optional<std::string> branch_oid(const std::string& branch);

  // True when `oid` names a commit in the repository.
  bool has_commit(const std::string& oid);

  // Writes a commit whose tree is `parent`'s tree with `changes` applied in order, and returns
  // its id. Moves no ref. A write whose path is under an existing file (or over an existing
  // directory) and a delete of a path that is not a file are GOVERNED_COMMIT_CHANGE_CONFLICT.
  std::string build_commit(const std::string& parent, const std::vector<FileChange>& changes,
                           const std::string& message, const Signature& author);

  // Writes the tree of commit `oid` into `directory` (created; it must not exist yet): a
  // disposable worktree with no .git of its own. Reads the repository only.
  void checkout(const std::string& oid, const std::filesystem::path& directory);

  // Points `refs/heads/<branch>` at `new_oid` only if it now points at `old_oid` (or, with
  // nullopt, only if it does not exist). False when the ref is elsewhere; never forces.
  bool update_branch(const std::string& branch, const std::string& new_oid,
                     const std::optional<std::string>& old_oid, const std::string& log_message);

 private:
  git_repository* repo_ = nullptr;
};

}  // namespace aios::git
