#pragma once
// Owning handles for libgit2 objects: each frees its object with the matching git_*_free.
#include <git2.h>

#include <memory>

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

}  // namespace aios::git
