// The authority repository through libgit2 (src/git/): the commit builder, the ref's
// compare-and-swap and checkouts.
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

}  // namespace
}  // namespace aios::git
