// The authority repository through libgit2 (src/git/): the commit builder, the ref's
// compare-and-swap, checkouts, and the disposable worktree the worker inspects after a backend.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "aios/git.hpp"
#include "support/code_of.hpp"
#include "support/daemon.hpp"

namespace aios::git {
namespace {

using aios::test::code_of;
using aios::test::read_text_file;
using aios::test::ScopedTempDir;
using aios::test::write_text_file;

const Signature kAuthor{"AIOS Test", "test@example.invalid", 1'800'000'000};

class RepositoryTest : public ::testing::Test {
 protected:
  RepositoryTest()
      : base_(create_repository(git_dir(), {{"a.md", false, "a\n"}, {"dir/b.md", false, "b\n"}},
                                "base", kAuthor)),
        repo_(git_dir()) {}
  std::filesystem::path git_dir() const { return dir_.path() / "authority.git"; }

  ScopedTempDir dir_{"aios-git"};
  std::string base_;
  Repository repo_;
};

// Given a new repository, main should point at its one commit, and nothing else should exist.
TEST_F(RepositoryTest, ANewRepositoryHoldsItsRootCommitOnMain) {
  EXPECT_EQ(repo_.branch_oid("main"), base_);
  EXPECT_EQ(repo_.branch_oid("agent/none"), std::nullopt);
  EXPECT_TRUE(repo_.has_commit(base_));
  EXPECT_FALSE(repo_.has_commit(std::string(40, 'f')));
}

// Given changes, the commit should carry exactly the parent's tree with them applied, and no
// ref should move until the compare-and-swap does.
TEST_F(RepositoryTest, ABuiltCommitAppliesItsChangesAndMovesNoRef) {
  const auto commit =
      repo_.build_commit(base_, {{"dir/c.md", false, "c\n"}, {"a.md", true, ""}}, "m", kAuthor);
  EXPECT_NE(commit, base_);
  EXPECT_EQ(repo_.branch_oid("main"), base_);
  const auto out = dir_.path() / "checkout";
  repo_.checkout(commit, out);
  EXPECT_FALSE(std::filesystem::exists(out / "a.md"));
  EXPECT_EQ(read_text_file(out / "dir/b.md"), "b\n");
  EXPECT_EQ(read_text_file(out / "dir/c.md"), "c\n");
  EXPECT_FALSE(std::filesystem::exists(out / ".git"));
}

// Given a write beneath a file, over a directory, or a delete of what is not a file, we should
// refuse the change set with GOVERNED_COMMIT_CHANGE_CONFLICT.
TEST_F(RepositoryTest, ChangesThatDoNotFitTheTreeAreConflicts) {
  for (const std::vector<FileChange>& changes : {std::vector<FileChange>{{"a.md/x", false, "x"}},
                                                 std::vector<FileChange>{{"dir", false, "x"}},
                                                 std::vector<FileChange>{{"missing.md", true, ""}},
                                                 std::vector<FileChange>{{"dir", true, ""}}}) {
    EXPECT_EQ(code_of([&] { repo_.build_commit(base_, changes, "m", kAuthor); }),
              "GOVERNED_COMMIT_CHANGE_CONFLICT")
        << changes.front().path;
  }
}

// Given a branch elsewhere than expected (or one that exists when it should not), the update
// should be refused and the ref left as it was; never forced.
TEST_F(RepositoryTest, TheBranchMovesOnlyFromTheOidItWasExpectedAt) {
  const auto next = repo_.build_commit(base_, {{"n.md", false, "n"}}, "n", kAuthor);
  EXPECT_FALSE(repo_.update_branch("main", next, std::string(40, 'e'), "stale"));
  EXPECT_EQ(repo_.branch_oid("main"), base_);
  EXPECT_FALSE(repo_.update_branch("main", next, std::nullopt, "create over existing"));
  EXPECT_TRUE(repo_.update_branch("main", next, base_, "advance"));
  EXPECT_EQ(repo_.branch_oid("main"), next);
  EXPECT_TRUE(repo_.update_branch("agent/t-1", next, std::nullopt, "create"));
  EXPECT_EQ(repo_.branch_oid("agent/t-1"), next);
  EXPECT_FALSE(repo_.update_branch("main", base_, base_, "backwards from a stale oid"));
}

// Given a worktree made at the base, its HEAD should be the base with no ref leading back, and
// every modification, addition and removal should be reported in path order.
TEST_F(RepositoryTest, AWorktreeReportsEveryChangeAgainstItsBase) {
  const auto tree = dir_.path() / "tree";
  Worktree::create(git_dir(), base_, tree);
  Worktree worktree(tree);
  EXPECT_EQ(worktree.head(), base_);
  EXPECT_TRUE(worktree.has_object(base_));
  EXPECT_TRUE(worktree.references().empty());
  EXPECT_TRUE(worktree.changes(base_).empty());
  write_text_file(tree / "a.md", "changed\n");
  write_text_file(tree / "new.md", "added\n");
  std::filesystem::remove(tree / "dir/b.md");
  const auto changes = worktree.changes(base_);
  ASSERT_EQ(changes.size(), 3U);
  EXPECT_EQ(changes[0].path, "a.md");
  EXPECT_FALSE(changes[0].removed);
  EXPECT_EQ(changes[1].path, "dir/b.md");
  EXPECT_TRUE(changes[1].removed);
  EXPECT_EQ(changes[2].path, "new.md");
  // An unknown object, and a commit that no ref of the authority reaches, are both missing.
  EXPECT_EQ(code_of([&] { Worktree::create(git_dir(), std::string(40, 'f'), dir_.path() / "x"); }),
            "GOVERNED_COMMIT_BASE_MISSING");
  const auto dangling = repo_.build_commit(base_, {{"d.md", false, "d"}}, "d", kAuthor);
  EXPECT_EQ(code_of([&] { Worktree::create(git_dir(), dangling, dir_.path() / "y"); }),
            "GOVERNED_COMMIT_BASE_MISSING");
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "y"));
}

// Given a base behind its branch, the worktree should hold the base's history and nothing the
// branch gained after it.
TEST_F(RepositoryTest, AWorktreeAtAnAncestorCopiesOnlyItsHistory) {
  const auto next = repo_.build_commit(base_, {{"n.md", false, "n"}}, "n", kAuthor);
  ASSERT_TRUE(repo_.update_branch("main", next, base_, "advance"));
  const auto tree = dir_.path() / "tree";
  Worktree::create(git_dir(), base_, tree);
  Worktree worktree(tree);
  EXPECT_EQ(worktree.head(), base_);
  EXPECT_TRUE(worktree.has_object(base_));
  EXPECT_FALSE(worktree.has_object(next));
  EXPECT_FALSE(std::filesystem::exists(tree / "n.md"));
  EXPECT_EQ(read_text_file(tree / "a.md"), "a\n");
}

}  // namespace
}  // namespace aios::git
