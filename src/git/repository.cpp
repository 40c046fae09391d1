#include <git2.h>

#include <memory>
#include <string_view>

#include "aios/error.hpp"
#include "aios/git.hpp"
#include "git/internal.hpp"

namespace aios::git {
namespace {

std::string ref_of(const std::string& branch) {
  return "refs/heads/" + branch;
}

[[noreturn]] void conflict(const std::string& path, std::string_view why) {
  throw Error(ErrorCode::GOVERNED_COMMIT_CHANGE_CONFLICT, path + ": " + std::string(why));
}

// A file may not sit inside another file's path, nor replace a directory.
void check_write_fits(git_index* index, const std::string& path) {
  for (auto slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    if (git_index_get_bypath(index, path.substr(0, slash).c_str(), 0) != nullptr) {
      conflict(path, "a parent is a file");
    }
  }
  std::size_t at = 0;
  if (git_index_find_prefix(&at, index, (path + "/").c_str()) == 0) {
    conflict(path, "is a directory");
  }
}

void apply(git_repository* repo, git_index* index, const FileChange& change) {
  if (change.remove) {
    if (git_index_get_bypath(index, change.path.c_str(), 0) == nullptr) {
      conflict(change.path, "no such file to delete");
    }
    check(git_index_remove(index, change.path.c_str(), 0), "index remove");
    return;
  }
  check_write_fits(index, change.path);
  git_index_entry entry{};
  check(git_blob_create_from_buffer(&entry.id, repo, change.content.data(), change.content.size()),
        "blob write");
  entry.mode = GIT_FILEMODE_BLOB;
  entry.path = change.path.c_str();
  check(git_index_add(index, &entry), "index add");
}

}  // namespace

Repository::Repository(const std::filesystem::path& git_dir) {
  git_libgit2_init();
  // Objects, the index and refs are fsync'd before libgit2 renames them into place, so a
  // governed commit the Bridge records as made survives a power loss.
  git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, 1);
  if (git_repository_open_bare(&repo_, git_dir.c_str()) < 0) {
    const git_error* error = git_error_last();
    const std::string detail = git_dir.string() + ": " + (error ? error->message : "unknown");
    git_libgit2_shutdown();
    throw Error(ErrorCode::GIT_REPOSITORY_UNAVAILABLE, detail);
  }
}

Repository::~Repository() {
  git_repository_free(repo_);
  git_libgit2_shutdown();
}

std::optional<std::string> Repository::branch_oid(const std::string& branch) {
  git_oid oid;
  const int rc = git_reference_name_to_id(&oid, repo_, ref_of(branch).c_str());
  if (rc == GIT_ENOTFOUND) return std::nullopt;
  check(rc, "ref lookup");
  return text_of(oid);
}

bool Repository::has_commit(const std::string& oid) {
  const git_oid id = oid_of(oid);
  git_commit* commit = nullptr;
  if (git_commit_lookup(&commit, repo_, &id) < 0) return false;
  git_commit_free(commit);
  return true;
}

std::string Repository::build_commit(const std::string& parent,
                                     const std::vector<FileChange>& changes,
                                     const std::string& message, const Signature& author) {
  const git_oid parent_id = oid_of(parent);
  git_commit* raw_parent = nullptr;
  if (git_commit_lookup(&raw_parent, repo_, &parent_id) < 0) {
    throw Error(ErrorCode::GOVERNED_COMMIT_BASE_MISSING, parent);
  }
  const CommitHandle parent_commit(raw_parent);
  git_tree* raw_tree = nullptr;
  check(git_commit_tree(&raw_tree, parent_commit.get()), "parent tree");
  const TreeHandle parent_tree(raw_tree);

  git_index* raw_index = nullptr;
  check(git_index_new(&raw_index), "index");
  const IndexHandle index(raw_index);
  check(git_index_read_tree(index.get(), parent_tree.get()), "index read");
  for (const auto& change : changes) apply(repo_, index.get(), change);

  git_oid tree_id;
  check(git_index_write_tree_to(&tree_id, index.get(), repo_), "tree write");
  check(git_tree_lookup(&raw_tree, repo_, &tree_id), "tree lookup");
  const TreeHandle tree(raw_tree);

  git_signature* raw_signature = nullptr;
  check(git_signature_new(&raw_signature, author.name.c_str(), author.email.c_str(),
                          author.epoch_seconds, 0),
        "signature");
  const SignatureHandle signature(raw_signature);
  const git_commit* parents[] = {parent_commit.get()};
  git_oid commit_id;
  check(git_commit_create(&commit_id, repo_, nullptr, signature.get(), signature.get(), "UTF-8",
                          message.c_str(), tree.get(), 1, parents),
        "commit write");
  return text_of(commit_id);
}

void Repository::checkout(const std::string& oid, const std::filesystem::path& directory) {
  const git_oid id = oid_of(oid);
  git_commit* raw_commit = nullptr;
  if (git_commit_lookup(&raw_commit, repo_, &id) < 0) {
    throw Error(ErrorCode::GOVERNED_COMMIT_BASE_MISSING, oid);
  }
  const CommitHandle commit(raw_commit);
  std::filesystem::create_directory(directory);
  const std::string target = directory.string();
  git_checkout_options options{};
  check(git_checkout_options_init(&options, GIT_CHECKOUT_OPTIONS_VERSION), "checkout options");
  options.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DONT_UPDATE_INDEX;
  options.target_directory = target.c_str();
  check(git_checkout_tree(repo_, reinterpret_cast<const git_object*>(commit.get()), &options),
        "checkout");
}

bool Repository::update_branch(const std::string& branch, const std::string& new_oid,
                               const std::optional<std::string>& old_oid,
                               const std::string& log_message) {
  const git_oid target = oid_of(new_oid);
  git_reference* raw = nullptr;
  int rc = 0;
  if (old_oid) {
    const git_oid expected = oid_of(*old_oid);
    // libgit2's "force" only allows replacing an existing ref; `expected` keeps it a CAS.
    rc = git_reference_create_matching(&raw, repo_, ref_of(branch).c_str(), &target, 1, &expected,
                                       log_message.c_str());
  } else {
    rc = git_reference_create(&raw, repo_, ref_of(branch).c_str(), &target, 0, log_message.c_str());
  }
  const RefHandle ref(raw);
  if (rc == GIT_EMODIFIED || rc == GIT_EEXISTS || rc == GIT_ENOTFOUND || rc == GIT_ELOCKED) {
    return false;
  }
  check(rc, "ref update");
  return true;
}

}  // namespace aios::git
