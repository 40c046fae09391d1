// Reads and writes beneath a root (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a path
// with a symlink at any component, or one that leaves the root, is refused, and nothing outside
// the root is read or touched.
#include "aios/files.hpp"

#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <system_error>
#include <thread>

#include "support/daemon.hpp"

namespace aios::files {
namespace {

namespace fs = std::filesystem;
using aios::test::read_text_file;
using aios::test::write_text_file;

// Runs `body` on a thread whose seccomp filter answers openat2 with ENOSYS, as systemd 252's
// SystemCallFilter= does: the one-component-at-a-time walk must resolve exactly as openat2.
void without_openat2(const std::function<void()>& body) {
  std::thread thread([&] {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
    ASSERT_EQ(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    ASSERT_EQ(::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program), 0);
    ASSERT_EQ(::syscall(SYS_openat2, AT_FDCWD, ".", nullptr, 0), -1);
    ASSERT_EQ(errno, ENOSYS);
    body();
  });
  thread.join();
}

// Each case runs with openat2 and, through without_openat2, with the walk.
class BeneathTest : public ::testing::TestWithParam<bool> {
 protected:
  BeneathTest() {
    fs::create_directories(root() / "real" / "deeper");
    fs::create_directories(outside());
    write_text_file(root() / "real" / "deeper" / "file.txt", "inside");
    write_text_file(outside() / "secret.txt", "outside");
    fs::create_symlink(outside(), root() / "linked-dir");
    fs::create_symlink(outside() / "secret.txt", root() / "linked-file");
    fs::create_symlink("deeper/file.txt", root() / "real" / "relative-link");
  }
  fs::path root() const { return dir_.path() / "root"; }
  fs::path outside() const { return dir_.path() / "outside"; }

  // errno of a write or remove that must fail, 0 when it succeeded.
  static int error_of(const std::function<void()>& call) {
    try {
      call();
    } catch (const std::system_error& error) {
      return error.code().value();
    }
    return 0;
  }

  void run(const std::function<void()>& body) const {
    if (GetParam()) {
      body();
    } else {
      without_openat2(body);
    }
  }

  aios::test::ScopedTempDir dir_{"aios-beneath"};
};

// Given regular files and every kind of path that is not one beneath the root, we should read
// only the former.
TEST_P(BeneathTest, ReadsOnlyRegularFilesBeneathWithoutSymlinks) {
  run([&] {
    const auto ok = read_beneath(root(), "real/deeper/file.txt", 1024);
    ASSERT_EQ(ok.status, ReadStatus::ok);
    EXPECT_EQ(ok.content, "inside");
    EXPECT_EQ(read_beneath(root(), "real/deeper/file.txt", 3).status, ReadStatus::too_large);
    for (const char* path :
         {"linked-dir/secret.txt", "linked-file", "real/relative-link", "../outside/secret.txt",
          "real/../../outside/secret.txt", "missing.txt", "real"}) {
      const auto read = read_beneath(root(), path, 1024);
      EXPECT_EQ(read.status, ReadStatus::not_regular) << path;
      EXPECT_TRUE(read.content.empty()) << path;
    }
    // An absolute path is not beneath the root either, even when it names a file inside it.
    EXPECT_NE(read_beneath(root(), root() / "real" / "deeper" / "file.txt", 1024).status,
              ReadStatus::ok);
  });
}

// Given writes to new and existing paths, we should create what is missing and replace what is
// there; through a symlinked directory, a symlinked file or out of the root, we should refuse
// and leave the outside alone.
TEST_P(BeneathTest, WritesBeneathAndNeverThroughASymlink) {
  run([&] {
    write_beneath(root(), "new/nested/dir/file.txt", "created");
    EXPECT_EQ(read_text_file(root() / "new" / "nested" / "dir" / "file.txt"), "created");
    write_beneath(root(), "real/deeper/file.txt", "replaced");
    EXPECT_EQ(read_text_file(root() / "real" / "deeper" / "file.txt"), "replaced");

    EXPECT_EQ(error_of([&] { write_beneath(root(), "linked-dir/secret.txt", "x"); }), ELOOP);
    EXPECT_EQ(error_of([&] { write_beneath(root(), "linked-dir/new/file.txt", "x"); }), ELOOP);
    EXPECT_EQ(error_of([&] { write_beneath(root(), "linked-file", "x"); }), ELOOP);
    EXPECT_EQ(error_of([&] { write_beneath(root(), "../outside/new.txt", "x"); }), EXDEV);
    EXPECT_NE(error_of([&] { write_beneath(root(), "real/deeper/file.txt/under", "x"); }), 0);
    EXPECT_EQ(read_text_file(outside() / "secret.txt"), "outside");
    EXPECT_FALSE(fs::exists(outside() / "new.txt"));
    EXPECT_FALSE(fs::exists(outside() / "new"));
    EXPECT_TRUE(fs::is_symlink(root() / "linked-file"));
  });
}

// Given removals, we should unlink files beneath the root and refuse one through a symlinked
// directory, out of the root, or of something missing.
TEST_P(BeneathTest, RemovesBeneathAndNeverThroughASymlink) {
  run([&] {
    EXPECT_EQ(error_of([&] { remove_beneath(root(), "linked-dir/secret.txt"); }), ELOOP);
    EXPECT_EQ(error_of([&] { remove_beneath(root(), "../outside/secret.txt"); }), EXDEV);
    EXPECT_EQ(error_of([&] { remove_beneath(root(), "real/missing.txt"); }), ENOENT);
    EXPECT_TRUE(fs::exists(outside() / "secret.txt"));
    remove_beneath(root(), "real/deeper/file.txt");
    EXPECT_FALSE(fs::exists(root() / "real" / "deeper" / "file.txt"));
    // The link itself is a file of the tree: removing it removes the link, not its target.
    remove_beneath(root(), "linked-file");
    EXPECT_FALSE(fs::is_symlink(root() / "linked-file"));
    EXPECT_TRUE(fs::exists(outside() / "secret.txt"));
  });
}

INSTANTIATE_TEST_SUITE_P(Resolution, BeneathTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param_info) {
                           return param_info.param ? "openat2" : "walk";
                         });

}  // namespace
}  // namespace aios::files
