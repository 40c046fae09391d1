// The engineering worktree: a repository holding a copy of the base commit's history, detached
// at it, and the comparison of its files with the base the worker checks the backend's work by.
#include <git2.h>

#include <memory>
#include <string_view>
#include <vector>

#include "aios/error.hpp"
#include "aios/git.hpp"
#include "git/internal.hpp"

namespace aios::git {
std::vector<std::string> remove_ref_locks(const std::filesystem::path& git_dir) {
  constexpr std::string_view kLock = ".lock";
  std::vector<std::string> refs;
  std::error_code error;
  const auto root = git_dir / "refs";
  for (std::filesystem::recursive_directory_iterator it(root, error), end; !error && it != end;
       it.increment(error)) {
    const auto name = it->path().filename().string();
    if (it->symlink_status().type() != std::filesystem::file_type::regular ||
        name.size() <= kLock.size() || !name.ends_with(kLock)) {
      continue;
    }
    std::error_code removed;
    if (std::filesystem::remove(it->path(), removed)) {
      const auto ref = std::filesystem::relative(it->path(), git_dir).string();
      refs.push_back(ref.substr(0, ref.size() - kLock.size()));
    }
  }
  return refs;
}

std::string create_repository(const std::filesystem::path& git_dir,
                              const std::vector<FileChange>& files, const std::string& message,
                              const Signature& author) {
  keep_libgit2();
  git_repository* raw = nullptr;
  check(git_repository_init(&raw, git_dir.c_str(), 1), "init");
  const RepoHandle repo(raw);
  git_index* raw_index = nullptr;
  check(git_index_new(&raw_index), "index");
  const IndexHandle index(raw_index);
  for (const auto& file : files) {
    git_index_entry entry{};
    check(git_blob_create_from_buffer(&entry.id, repo.get(), file.content.data(),
                                      file.content.size()),
          "blob");
    entry.mode = GIT_FILEMODE_BLOB;
    entry.path = file.path.c_str();
    check(git_index_add(index.get(), &entry), "index add");
  }
  git_oid tree_id;
  check(git_index_write_tree_to(&tree_id, index.get(), repo.get()), "tree");
  git_tree* raw_tree = nullptr;
  check(git_tree_lookup(&raw_tree, repo.get(), &tree_id), "tree lookup");
  const TreeHandle tree(raw_tree);
  git_signature* raw_signature = nullptr;
  check(git_signature_new(&raw_signature, author.name.c_str(), author.email.c_str(),
                          author.epoch_seconds, 0),
        "signature");
  const SignatureHandle signature(raw_signature);
  git_oid commit_id;
  check(git_commit_create(&commit_id, repo.get(), "refs/heads/main", signature.get(),
                          signature.get(), "UTF-8", message.c_str(), tree.get(), 0, nullptr),
        "commit");
  check(git_repository_set_head(repo.get(), "refs/heads/main"), "HEAD");
  return text_of(commit_id);
}

// Not git_clone: libgit2 1.5 leaks a regex match (some 20 KiB) on every config lookup that does
// not match, and a clone and its remote's removal make dozens, per task in a long-lived worker.
// A pack of exactly the base's history, written into a fresh repository, copies no more and
// leaves no remote or remote-tracking ref behind to remove.
void create_worktree(const std::filesystem::path& authority_git_dir, const std::string& oid,
                     const std::filesystem::path& directory) {
  keep_libgit2();
  const git_oid id = oid_of(oid);
  git_repository* raw_authority = nullptr;
  check(git_repository_open_bare(&raw_authority, authority_git_dir.c_str()), "open authority");
  const RepoHandle authority(raw_authority);
  const auto builder = history_pack(authority.get(), id, {});
  git_repository* raw = nullptr;
  check(git_repository_init(&raw, directory.c_str(), 0), "init worktree");
  const RepoHandle repo(raw);
  const auto packs = directory / ".git" / "objects" / "pack";
  check(git_packbuilder_write(builder.get(), packs.c_str(), 0, nullptr, nullptr), "write pack");
  check(git_repository_set_head_detached(repo.get(), &id), "detach HEAD");
  git_checkout_options checkout{};
  check(git_checkout_options_init(&checkout, GIT_CHECKOUT_OPTIONS_VERSION), "checkout options");
  checkout.checkout_strategy = GIT_CHECKOUT_FORCE;
  check(git_checkout_head(repo.get(), &checkout), "checkout");
}

// The authority opened with the worktree as its working directory (in this handle only, nothing
// is written): the diff reads the worktree's files and nothing of its .git.
std::vector<WorktreeChange> worktree_changes(const std::filesystem::path& authority_git_dir,
                                             const std::string& base,
                                             const std::filesystem::path& worktree) {
  keep_libgit2();
  const git_oid id = oid_of(base);
  git_repository* raw = nullptr;
  check(git_repository_open_bare(&raw, authority_git_dir.c_str()), "open authority");
  const RepoHandle repo(raw);
  check(git_repository_set_workdir(repo.get(), worktree.c_str(), 0), "set workdir");
  git_commit* raw_commit = nullptr;
  check(git_commit_lookup(&raw_commit, repo.get(), &id), "base commit");
  const CommitHandle commit(raw_commit);
  git_tree* raw_tree = nullptr;
  check(git_commit_tree(&raw_tree, commit.get()), "base tree");
  const TreeHandle tree(raw_tree);
  git_diff_options options{};
  check(git_diff_options_init(&options, GIT_DIFF_OPTIONS_VERSION), "diff options");
  options.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
                  GIT_DIFF_INCLUDE_TYPECHANGE | GIT_DIFF_DISABLE_PATHSPEC_MATCH;
  git_diff* raw_diff = nullptr;
  check(git_diff_tree_to_workdir(&raw_diff, repo.get(), tree.get(), &options), "diff");
  const DiffHandle diff(raw_diff);
  std::vector<WorktreeChange> changes;
  const auto count = git_diff_num_deltas(diff.get());
  for (std::size_t i = 0; i < count; ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff.get(), i);
    if (delta->status == GIT_DELTA_UNMODIFIED || delta->status == GIT_DELTA_IGNORED) continue;
    const bool removed = delta->status == GIT_DELTA_DELETED;
    changes.push_back({removed ? delta->old_file.path : delta->new_file.path, removed});
  }
  return changes;
}

}  // namespace aios::git
