// The disposable worktree a backend edits (src/git/worktree.cpp, backend_refs.cpp): how it is
// made, how its files are compared with the base without its .git, and how its refs are read by
// git in a sandbox.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "aios/git.hpp"
#include "support/code_of.hpp"
#include "support/daemon.hpp"

namespace aios::git {
namespace {

namespace fs = std::filesystem;
using aios::test::code_of;
using aios::test::read_text_file;
using aios::test::ScopedTempDir;
using aios::test::write_text_file;

const Signature kBaseAuthor{"AIOS Test", "test@example.invalid", 1'800'000'000};

class WorktreeTest : public ::testing::Test {
 protected:
  WorktreeTest()
      : base_(create_repository(authority(), {{"a.md", false, "a\n"}, {"dir/b.md", false, "b\n"}},
                                "base", kBaseAuthor)) {
    create_worktree(authority(), base_, tree());
  }
  fs::path authority() const { return dir_.path() / "authority.git"; }
  fs::path tree() const { return dir_.path() / "tree"; }

  // git as the backend would run it in its worktree (trusted here: the test plays the backend).
  std::string backend_git(const std::string& arguments) const {
    const std::string command = "cd '" + tree().string() +
                                "' && git -c user.name=b -c user.email=b@b.invalid " + arguments +
                                " 2>/dev/null";
    std::string output;
    FILE* pipe = ::popen(command.c_str(), "r");
    char buffer[256];
    while (pipe != nullptr && std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    if (pipe != nullptr) ::pclose(pipe);
    while (!output.empty() && output.back() == '\n') output.pop_back();
    return output;
  }

  BackendRefs refs() const {
    return read_backend_refs(tree() / ".git", process::Sandbox{},
                             [](const process::Spec& spec) { return process::run(spec); });
  }

  std::vector<std::string> changed() const {
    std::vector<std::string> paths;
    for (const auto& change : worktree_changes(authority(), base_, tree())) {
      paths.push_back((change.removed ? "-" : "+") + change.path);
    }
    return paths;
  }

  ScopedTempDir dir_{"aios-worktree"};
  std::string base_;
};

// Given a new worktree, HEAD should be detached at the base with no ref, its files the base's,
// and an unknown commit or one no ref of the authority reaches should be refused.
TEST_F(WorktreeTest, AWorktreeStartsDetachedAtItsBaseWithNoRef) {
  const auto read = refs();
  EXPECT_EQ(read.unreadable, "");
  EXPECT_EQ(read.head, base_);
  EXPECT_TRUE(read.refs.empty());
  EXPECT_TRUE(changed().empty());
  EXPECT_EQ(read_text_file(tree() / "dir/b.md"), "b\n");
  EXPECT_EQ(code_of([&] { create_worktree(authority(), std::string(40, 'f'), dir_.path() / "x"); }),
            "GOVERNED_COMMIT_BASE_MISSING");
  Repository repo(authority());
  const auto dangling = repo.build_commit(base_, {{"d.md", false, "d"}}, "d", kBaseAuthor);
  EXPECT_EQ(code_of([&] { create_worktree(authority(), dangling, dir_.path() / "y"); }),
            "GOVERNED_COMMIT_BASE_MISSING");
  EXPECT_FALSE(fs::exists(dir_.path() / "y"));
}

// Given a base behind its branch, the worktree should hold the base's history and nothing the
// branch gained after it.
TEST_F(WorktreeTest, AWorktreeAtAnAncestorCopiesOnlyItsHistory) {
  Repository repo(authority());
  const auto next = repo.build_commit(base_, {{"n.md", false, "n"}}, "n", kBaseAuthor);
  ASSERT_TRUE(repo.update_branch("main", next, base_, "advance"));
  create_worktree(authority(), base_, dir_.path() / "behind");
  EXPECT_EQ(read_text_file(dir_.path() / "behind/.git/HEAD"), base_ + "\n");
  EXPECT_FALSE(fs::exists(dir_.path() / "behind/n.md"));
  EXPECT_EQ(read_text_file(dir_.path() / "behind/a.md"), "a\n");
  const std::string cat =
      "git --git-dir='" + (dir_.path() / "behind/.git").string() + "' cat-file -e ";
  EXPECT_EQ(std::system((cat + base_).c_str()), 0);
  EXPECT_NE(std::system((cat + next + " 2>/dev/null").c_str()), 0);
}

// Given edits, additions and removals, each should be reported in path order; ignored files not;
// and nothing the backend wrote into its .git (an exclude list, a core.worktree pointing
// elsewhere, an index) should change what the files say.
TEST_F(WorktreeTest, ChangesAreTheFilesAgainstTheBaseWhateverTheGitDirectorySays) {
  write_text_file(tree() / "a.md", "changed\n");
  write_text_file(tree() / "new.md", "added\n");
  fs::remove(tree() / "dir/b.md");
  write_text_file(tree() / ".git/info/exclude", "hidden.txt\n");
  write_text_file(tree() / "hidden.txt", "excluded only by the backend's own .git\n");
  fs::create_directories(dir_.path() / "elsewhere");
  backend_git("config core.worktree " + (dir_.path() / "elsewhere").string());
  EXPECT_EQ(changed(), (std::vector<std::string>{"+a.md", "-dir/b.md", "+hidden.txt", "+new.md"}));
}

// Given a backend that committed, tagged, left a broken ref or replaced its .git, the read should
// say so: HEAD at the new commit, the tag, or why the refs could not be read in full.
TEST_F(WorktreeTest, TheRefsSayWhatTheBackendDidToThem) {
  write_text_file(tree() / "a.md", "committed\n");
  backend_git("commit -qam by-the-backend");
  const auto commit = backend_git("rev-parse HEAD");
  ASSERT_EQ(commit.size(), 40U);
  backend_git("tag v1");
  auto read = refs();
  EXPECT_EQ(read.unreadable, "");
  EXPECT_EQ(read.head, commit);
  EXPECT_EQ(read.refs, (std::map<std::string, std::string>{{"refs/tags/v1", commit}}));

  write_text_file(tree() / ".git/refs/heads/broken", "not an object id\n");
  read = refs();
  EXPECT_NE(read.unreadable, "");
  EXPECT_EQ(read.head, commit);  // what was read before the complaint is kept

  fs::remove_all(tree() / ".git");
  write_text_file(tree() / ".git", "gitdir: " + authority().string() + "\n");
  EXPECT_EQ(refs().unreadable, ".git is not a directory");
}

// Given a ref that links to a file outside the repository, git should not reach it: the read
// runs in a sandbox that sees the repository and the system only.
TEST_F(WorktreeTest, GitReadsTheRefsInsideASandboxThatSeesOnlyTheRepository) {
  const auto outside = dir_.path() / "outside";
  write_text_file(outside, base_ + "\n");
  fs::create_symlink(outside, tree() / ".git/refs/heads/outside");
  // Outside a sandbox git follows the link and reads the id.
  EXPECT_EQ(backend_git("show-ref refs/heads/outside"), base_ + " refs/heads/outside");
  const auto read = refs();
  EXPECT_FALSE(read.refs.contains("refs/heads/outside"));
  EXPECT_EQ(read.head, base_);
}

// Given a nested repository and a FIFO in the worktree, the comparison should report the nested
// repository as one directory (which the worker refuses as a change it cannot carry), never read
// its .git, and pass over the FIFO (reading one would block).
TEST_F(WorktreeTest, ChangesPassOverNestedGitDirectoriesAndSpecialFiles) {
  fs::create_directories(tree() / "sub/.git");
  write_text_file(tree() / "sub/.git/config", "[core]\n\tworktree = /\n");
  write_text_file(tree() / "sub/x.md", "x\n");
  ASSERT_EQ(::mkfifo((tree() / "fifo").c_str(), 0600), 0);
  write_text_file(tree() / ".gitignore", "*.log\n");
  write_text_file(tree() / "debug.log", "ignored\n");
  EXPECT_EQ(changed(), (std::vector<std::string>{"+.gitignore", "+sub/"}));
}

}  // namespace
}  // namespace aios::git
