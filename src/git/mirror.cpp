// Histories as packs: the Bridge packs a base's history for a remote worker, and the worker's
// mirror indexes what it receives.
#include <git2.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "aios/git.hpp"
#include "git/internal.hpp"

namespace aios::git {
namespace {

using RevwalkHandle = Handle<git_revwalk, git_revwalk_free>;

// The commits every ref of `repo` finally points at (refs that do not peel to one are skipped).
std::vector<git_oid> ref_tips(git_repository* repo) {
  std::vector<git_oid> tips;
  git_reference_iterator* raw_iterator = nullptr;
  check(git_reference_iterator_new(&raw_iterator, repo), "list refs");
  const Handle<git_reference_iterator, git_reference_iterator_free> iterator(raw_iterator);
  git_reference* raw = nullptr;
  while (git_reference_next(&raw, iterator.get()) == 0) {
    const RefHandle ref(raw);
    git_object* peeled = nullptr;
    if (git_reference_peel(&peeled, ref.get(), GIT_OBJECT_COMMIT) == 0) {
      tips.push_back(*git_object_id(peeled));
      git_object_free(peeled);
    }
  }
  return tips;
}

std::optional<git_oid> commit_id(git_repository* repo, const std::string& text) {
  git_oid id;
  if (text.size() != GIT_OID_HEXSZ || git_oid_fromstr(&id, text.c_str()) < 0) return std::nullopt;
  git_commit* commit = nullptr;
  if (git_commit_lookup(&commit, repo, &id) != 0) return std::nullopt;
  git_commit_free(commit);
  return id;
}

}  // namespace

PackHandle history_pack(git_repository* repo, const git_oid& want,
                        const std::vector<std::string>& haves) {
  keep_libgit2();
  const auto tips = ref_tips(repo);
  // libgit2 counts a tip as reachable from itself, so a base at a branch head needs no check
  // of its own.
  const bool reachable = commit_id(repo, text_of(want)).has_value() &&
                         git_graph_reachable_from_any(repo, &want, tips.data(), tips.size()) == 1;
  if (!reachable) throw Error(ErrorCode::GOVERNED_COMMIT_BASE_MISSING, text_of(want));
  git_packbuilder* raw_builder = nullptr;
  check(git_packbuilder_new(&raw_builder, repo), "pack builder");
  PackHandle builder(raw_builder);
  git_revwalk* raw_walk = nullptr;
  check(git_revwalk_new(&raw_walk, repo), "revwalk");
  const RevwalkHandle walk(raw_walk);
  check(git_revwalk_push(walk.get(), &want), "revwalk push");
  for (const auto& have : haves) {
    if (const auto id = commit_id(repo, have)) check(git_revwalk_hide(walk.get(), &*id), "hide");
  }
  check(git_packbuilder_insert_walk(builder.get(), walk.get()), "pack history");
  return builder;
}

std::string pack_history(const std::filesystem::path& git_dir, const std::string& want,
                         const std::vector<std::string>& haves) {
  keep_libgit2();
  git_repository* raw = nullptr;
  if (git_repository_open_bare(&raw, git_dir.c_str()) < 0) {
    fail_git(ErrorCode::GIT_REPOSITORY_UNAVAILABLE, "open " + git_dir.string());
  }
  const RepoHandle repo(raw);
  const auto builder = history_pack(repo.get(), oid_of(want), haves);
  git_buf buffer = GIT_BUF_INIT;
  check(git_packbuilder_write_buf(&buffer, builder.get()), "write pack");
  std::string pack(buffer.ptr, buffer.size);
  git_buf_dispose(&buffer);
  return pack;
}

Mirror::Mirror(const std::filesystem::path& git_dir) {
  keep_libgit2();
  if (git_repository_open_bare(&repo_, git_dir.c_str()) < 0) {
    check(git_repository_init(&repo_, git_dir.c_str(), 1), "init mirror");
  }
}

Mirror::~Mirror() {
  git_repository_free(repo_);
}

bool Mirror::has_commit(const std::string& oid) {
  return commit_id(repo_, oid).has_value();
}

std::vector<std::string> Mirror::bases(std::size_t limit) {
  std::vector<std::pair<git_time_t, std::string>> found;
  git_reference_iterator* raw_iterator = nullptr;
  check(git_reference_iterator_glob_new(&raw_iterator, repo_, "refs/bases/*"), "list bases");
  const Handle<git_reference_iterator, git_reference_iterator_free> iterator(raw_iterator);
  git_reference* raw = nullptr;
  while (git_reference_next(&raw, iterator.get()) == 0) {
    const RefHandle ref(raw);
    const git_oid* target = git_reference_target(ref.get());
    git_commit* commit = nullptr;
    if (target == nullptr || git_commit_lookup(&commit, repo_, target) != 0) continue;
    found.emplace_back(git_commit_time(commit), text_of(*target));
    git_commit_free(commit);
  }
  std::sort(found.begin(), found.end(), std::greater<>());
  std::vector<std::string> newest;
  for (std::size_t i = 0; i < found.size() && i < limit; ++i) newest.push_back(found[i].second);
  return newest;
}

void Mirror::add(std::string_view pack, const std::string& want) {
  const git_oid id = oid_of(want);
  git_odb* raw_odb = nullptr;
  check(git_repository_odb(&raw_odb, repo_), "object store");
  const Handle<git_odb, git_odb_free> odb(raw_odb);
  const auto packs = std::filesystem::path(git_repository_path(repo_)) / "objects" / "pack";
  // The init function rather than GIT_INDEXER_OPTIONS_INIT, whose partial braces clang's
  // -Wmissing-field-initializers refuses.
  git_indexer_options options{};
  check(git_indexer_options_init(&options, GIT_INDEXER_OPTIONS_VERSION), "indexer options");
  git_indexer* raw_indexer = nullptr;
  check(git_indexer_new(&raw_indexer, packs.c_str(), 0, odb.get(), &options), "indexer");
  const Handle<git_indexer, git_indexer_free> indexer(raw_indexer);
  git_indexer_progress progress{};
  // The indexer hashes every object it reads, so a pack can only add what its ids name.
  check(git_indexer_append(indexer.get(), pack.data(), pack.size(), &progress), "index pack");
  check(git_indexer_commit(indexer.get(), &progress), "index pack");
  check(git_odb_refresh(odb.get()), "refresh object store");
  if (!has_commit(want)) throw Error(ErrorCode::GIT_OPERATION_FAILED, "the pack lacks " + want);
  git_reference* ref = nullptr;
  check(git_reference_create(&ref, repo_, ("refs/bases/" + want).c_str(), &id, 1,
                             "fetched through the Bridge"),
        "record base");
  git_reference_free(ref);
}

}  // namespace aios::git
