// Histories as packs (src/git/mirror.cpp): what the Bridge sends a worker on another host, and
// the worker's mirror that indexes it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "aios/git.hpp"
#include "support/code_of.hpp"
#include "support/daemon.hpp"

namespace aios::git {
namespace {

using aios::test::code_of;
using aios::test::read_text_file;
using aios::test::ScopedTempDir;

const Signature kCommitter{"AIOS Test", "test@example.invalid", 1'800'000'000};

class MirrorTest : public ::testing::Test {
 protected:
  MirrorTest()
      : base_(create_repository(authority(), {{"a.md", false, "a\n"}}, "base", kCommitter)),
        repo_(authority()) {}
  std::filesystem::path authority() const { return dir_.path() / "authority.git"; }
  std::filesystem::path mirror() const { return dir_.path() / "mirror.git"; }

  // A commit on main after the current tip, a second later.
  std::string advance(const std::string& name) {
    const auto tip = *repo_.branch_oid("main");
    auto when = kCommitter;
    when.epoch_seconds += ++commits_;
    const auto next = repo_.build_commit(tip, {{name, false, name + "\n"}}, name, when);
    EXPECT_TRUE(repo_.update_branch("main", next, tip, name));
    return next;
  }

  ScopedTempDir dir_{"aios-mirror"};
  int commits_ = 0;
  std::string base_;
  Repository repo_;
};

// Given a base's pack, the mirror should hold the base and its history, record it as a base, and
// let a checkout and a worktree read it as they read the authority.
TEST_F(MirrorTest, AMirrorFilledFromPacksReadsLikeTheAuthority) {
  const auto second = advance("b.md");
  Mirror mirror(this->mirror());
  EXPECT_FALSE(mirror.has_commit(second));
  mirror.add(pack_history(authority(), second, {}), second);
  EXPECT_TRUE(mirror.has_commit(second));
  EXPECT_TRUE(mirror.has_commit(base_));  // the whole history came along
  EXPECT_EQ(mirror.bases(8), std::vector<std::string>{second});
  Repository(this->mirror()).checkout(second, dir_.path() / "out");
  EXPECT_EQ(read_text_file(dir_.path() / "out" / "b.md"), "b.md\n");
  create_worktree(this->mirror(), second, dir_.path() / "tree");
  EXPECT_EQ(read_text_file(dir_.path() / "tree" / ".git" / "HEAD"), second + "\n");
}

// Given the bases a mirror holds as haves, the next pack should carry only what is new; haves
// the authority never had are passed over.
TEST_F(MirrorTest, HavesCutThePackToWhatIsNew) {
  for (int i = 0; i < 20; ++i) advance("f" + std::to_string(i) + ".md");
  const auto middle = *repo_.branch_oid("main");
  const auto latest = advance("g.md");
  Mirror mirror(this->mirror());
  mirror.add(pack_history(authority(), middle, {}), middle);
  const auto whole = pack_history(authority(), latest, {std::string(40, 'e')});
  const auto incremental = pack_history(authority(), latest, mirror.bases(8));
  EXPECT_LT(incremental.size() * 4, whole.size());
  mirror.add(incremental, latest);
  EXPECT_TRUE(mirror.has_commit(latest));
  EXPECT_EQ(mirror.bases(8).front(), latest);
  EXPECT_EQ(mirror.bases(1).size(), 1u);
}

// Given a commit no ref reaches, or a pack that does not hold what it was asked for, we should
// refuse with their codes and record no base.
TEST_F(MirrorTest, RefusesUnpublishedCommitsAndShortPacks) {
  const auto dangling = repo_.build_commit(base_, {{"x.md", false, "x"}}, "x", kCommitter);
  EXPECT_EQ(code_of([&] { pack_history(authority(), dangling, {}); }),
            "GOVERNED_COMMIT_BASE_MISSING");
  const auto next = advance("n.md");
  Mirror mirror(this->mirror());
  EXPECT_EQ(code_of([&] { mirror.add(pack_history(authority(), base_, {}), next); }),
            "GIT_OPERATION_FAILED");
  EXPECT_EQ(code_of([&] { mirror.add("PACK not really a pack", next); }), "GIT_OPERATION_FAILED");
  EXPECT_TRUE(mirror.bases(8).empty());
  EXPECT_EQ(code_of([&] { pack_history(dir_.path() / "none.git", base_, {}); }),
            "GIT_REPOSITORY_UNAVAILABLE");
}

}  // namespace
}  // namespace aios::git
