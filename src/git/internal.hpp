#pragma once
// What the repository and worktree code share: owning libgit2 handles (each frees its object
// with the matching git_*_free), error mapping and object-id text.
#include <git2.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aios/error.hpp"

namespace aios::git {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
template <typename T, void (*Free)(T*)>
using Handle = std::unique_ptr<T, Deleter<T, Free>>;

using RepoHandle = Handle<git_repository, git_repository_free>;
using CommitHandle = Handle<git_commit, git_commit_free>;
using TreeHandle = Handle<git_tree, git_tree_free>;
using DiffHandle = Handle<git_diff, git_diff_free>;
using IndexHandle = Handle<git_index, git_index_free>;
using RefHandle = Handle<git_reference, git_reference_free>;
using SignatureHandle = Handle<git_signature, git_signature_free>;
using PackHandle = Handle<git_packbuilder, git_packbuilder_free>;

// Throws `code` with libgit2's last error message.
[[noreturn]] inline void fail_git(ErrorCode code, std::string_view what) {
  const git_error* error = git_error_last();
  throw Error(code, std::string(what) + ": " + (error != nullptr ? error->message : "unknown"));
}

inline void check(int rc, std::string_view what) {
  if (rc < 0) fail_git(ErrorCode::GIT_OPERATION_FAILED, what);
}

inline git_oid oid_of(const std::string& text) {
  git_oid oid;
  // libgit2 1.5 reads SHA-1 ids only; a 64-digit id cannot name an object here.
  if (text.size() != GIT_OID_HEXSZ || git_oid_fromstr(&oid, text.c_str()) < 0) {
    throw Error(ErrorCode::GOVERNED_COMMIT_BASE_MISSING, "object id is not a SHA-1 id");
  }
  return oid;
}

inline std::string text_of(const git_oid& oid) {
  char buffer[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buffer, sizeof buffer, &oid);
  return buffer;
}

// libgit2 keeps per-thread state (the last error) under a key it deletes when its last user
// shuts it down; a thread that touched git after that would leak it. Repositories are read from
// worker and io threads over the whole life of a process, so it holds one reference for good.
inline void keep_libgit2() {
  static const int initialised = git_libgit2_init();
  (void)initialised;
}

// A pack of the history of commit `want` in `repo` without what the commits `haves` reach
// (those the repository does not have are passed over). `want` must be reachable from a ref
// of `repo`: GOVERNED_COMMIT_BASE_MISSING otherwise, so no object outside the published
// history leaves it.
PackHandle history_pack(git_repository* repo, const git_oid& want,
                        const std::vector<std::string>& haves);

}  // namespace aios::git
