// files::copy_tree (src/files/copy_tree.cpp): a profile's state template copied into a run,
// following no link and bounded in entries and bytes.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "aios/files.hpp"
#include "support/daemon.hpp"

namespace aios::files {
namespace {

namespace fs = std::filesystem;
using aios::test::read_text_file;
using aios::test::ScopedTempDir;
using aios::test::write_text_file;

// Given a tree of directories and files, the copy should hold the same names and bytes, with
// the owner's modes only, and leave the template as it was.
TEST(CopyTree, CopiesDirectoriesAndFilesWithTheOwnersModes) {
  const ScopedTempDir dir("aios-copy");
  const auto from = dir.path() / "template";
  fs::create_directories(from / "cron" / "jobs");
  write_text_file(from / "config.yaml", "model: demo\n");
  write_text_file(from / "cron" / "jobs" / "empty", "");
  write_text_file(from / "run.sh", "#!/bin/sh\n");
  fs::permissions(from / "run.sh", fs::perms::owner_all | fs::perms::others_read);
  ASSERT_EQ(copy_tree(from, dir.path() / "copy", 16, 1024), CopyStatus::ok);
  EXPECT_EQ(read_text_file(dir.path() / "copy" / "config.yaml"), "model: demo\n");
  EXPECT_TRUE(fs::is_regular_file(dir.path() / "copy" / "cron" / "jobs" / "empty"));
  struct stat info {};
  ASSERT_EQ(::stat((dir.path() / "copy" / "run.sh").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0700U);
  ASSERT_EQ(::stat((dir.path() / "copy" / "config.yaml").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0600U);
  write_text_file(dir.path() / "copy" / "config.yaml", "changed by the run\n");
  EXPECT_EQ(read_text_file(from / "config.yaml"), "model: demo\n");
}

// Given a link (to a file or a directory) or a FIFO anywhere in the template, or a template
// that is itself a link, the copy should be refused; past the bounds it is too large.
TEST(CopyTree, RefusesLinksAndSpecialFilesAndKeepsItsBounds) {
  const ScopedTempDir dir("aios-copy");
  const auto from = dir.path() / "template";
  fs::create_directories(from / "deep");
  write_text_file(from / "a", "0123456789");
  fs::create_symlink("/etc/passwd", from / "deep" / "passwd");
  EXPECT_EQ(copy_tree(from, dir.path() / "c1", 16, 1024), CopyStatus::refused);
  fs::remove(from / "deep" / "passwd");
  ASSERT_EQ(::mkfifo((from / "deep" / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(copy_tree(from, dir.path() / "c2", 16, 1024), CopyStatus::refused);
  fs::remove(from / "deep" / "fifo");
  fs::create_directory_symlink(from, dir.path() / "linked");
  EXPECT_EQ(copy_tree(dir.path() / "linked", dir.path() / "c3", 16, 1024), CopyStatus::refused);
  EXPECT_EQ(copy_tree(from, dir.path() / "c4", 16, 9), CopyStatus::too_large);
  EXPECT_EQ(copy_tree(from, dir.path() / "c5", 1, 1024), CopyStatus::too_large);
  EXPECT_EQ(copy_tree(from, dir.path() / "c6", 16, 1024), CopyStatus::ok);
}

}  // namespace
}  // namespace aios::files
