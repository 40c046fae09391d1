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
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aios/process.hpp"

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

// Removes the ref lock files (`refs/**/<name>.lock`, regular files only) in the repository at
// `git_dir` and returns the refs they locked. Only for a writer that knows no other writer is
// alive (the Bridge on taking the lead): a lock a writer killed mid-update left would otherwise
// refuse every update of its ref for good.
std::vector<std::string> remove_ref_locks(const std::filesystem::path& git_dir);

// Creates a bare repository at `git_dir` holding one root commit with `files` on
// refs/heads/main (HEAD points there) and returns the commit's id: the broker's self-test
// builds its disposable repository with it. GIT_OPERATION_FAILED.
std::string create_repository(const std::filesystem::path& git_dir,
                              const std::vector<FileChange>& files, const std::string& message,
                              const Signature& author);

// The history of commit `want` in the bare repository `git_dir` as the bytes of one git pack,
// without what the commits in `haves` reach (those it does not have are passed over): what the
// Bridge serves a worker on another host. GIT_REPOSITORY_UNAVAILABLE, GOVERNED_COMMIT_BASE_MISSING
// when `want` is not a commit reachable from a ref, GIT_OPERATION_FAILED.
std::string pack_history(const std::filesystem::path& git_dir, const std::string& want,
                         const std::vector<std::string>& haves);

// A worker's read-only copy of the authority repository, filled through the Bridge: a bare
// repository (made when missing) holding the whole history of each base it fetched, each kept
// by a ref refs/bases/<oid>, so Repository::checkout and create_worktree read it as they read
// the authority. Not thread-safe; one at a time per directory.
class Mirror {
 public:
  explicit Mirror(const std::filesystem::path& git_dir);
  ~Mirror();
  Mirror(const Mirror&) = delete;
  Mirror& operator=(const Mirror&) = delete;

  bool has_commit(const std::string& oid);
  // The newest `limit` bases it holds, to name as haves in a fetch.
  std::vector<std::string> bases(std::size_t limit);
  // Indexes `pack` (each object checked against its id) and records `want` as a base.
  // GIT_OPERATION_FAILED when the pack does not index or lacks `want`.
  void add(std::string_view pack, const std::string& want);

 private:
  git_repository* repo_ = nullptr;
};

// One path whose content differs between a commit's tree and a worktree's files.
struct WorktreeChange {
  std::string path;
  bool removed = false;  // present in the tree, gone from the worktree
};

// Makes `directory` (which must not exist) a disposable repository for a backend to edit: a pack
// of exactly the history of `oid` copied from `authority_git_dir` (no hardlinks into the
// authority), HEAD detached at `oid`, its tree checked out, and no ref, remote or configuration
// leading back to the authority. GIT_OPERATION_FAILED, or GOVERNED_COMMIT_BASE_MISSING when
// `oid` is not a commit reachable from a ref of the authority.
void create_worktree(const std::filesystem::path& authority_git_dir, const std::string& oid,
                     const std::filesystem::path& directory);

// Paths whose content in `worktree` differs from commit `base`'s tree: modified, added (ignored
// files not) or removed, in path order; type changes count. Read from the authority's side: its
// objects, its info/exclude and the worktree's .gitignore files, never the worktree's own .git
// (which a backend wrote; an entry named .git anywhere is passed over), so nothing the backend
// put into repository metadata is parsed in this process. FIFOs, sockets and devices are passed
// over too. GIT_OPERATION_FAILED.
std::vector<WorktreeChange> worktree_changes(const std::filesystem::path& authority_git_dir,
                                             const std::string& base,
                                             const std::filesystem::path& worktree);

// HEAD and the refs of a repository a backend wrote, as /usr/bin/git show-ref reported them from
// inside a sandbox. `unreadable` says why they could not be read in full (a broken or dangling
// ref, metadata git refuses, a sandbox that failed); what was read before is kept.
struct BackendRefs {
  std::optional<std::string> head;
  std::map<std::string, std::string> refs;  // name -> object id, HEAD excepted
  std::string unreadable;
};

// Runs one sandboxed child as the caller runs its own (directly, or through the sandbox service).
using SandboxRunner = std::function<process::Outcome(const process::Spec&)>;

// Reads `git_dir` (which must be a real directory, not a link) with /usr/bin/git in a sandbox
// with no network and nothing writable: `sandbox` brings the caller's hidden paths (one that
// contains `git_dir` is dropped), and no configuration but the repository's own is read, no hook
// or fsmonitor runs. Whatever the repository holds runs, if at all, inside that sandbox; its
// report is only ever compared with what the caller expects.
BackendRefs read_backend_refs(const std::filesystem::path& git_dir, process::Sandbox sandbox,
                              const SandboxRunner& run);

}  // namespace aios::git
