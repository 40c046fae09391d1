// Reading the worktree: symlinks, .git, binary and oversize files, limits, redaction and
// determinism, through the public build_compact_interface_map.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/compact_map.hpp"
#include "compact_map/worktree.hpp"
#include "support/code_of.hpp"

namespace aios::compact_map {
namespace {

using nlohmann::json;
using test::code_of;
using test::Worktree;

using test::kCommit;
std::vector<std::string> module_paths(const json& map) {
  std::vector<std::string> paths;
  for (const json& module : map["implementation_map"]["modules"]) paths.push_back(module["path"]);
  return paths;
}

// Given symlinks to a file and a directory outside the worktree (and one inside it), the map
// should read none of them: nothing outside reaches the map, not even its path.
TEST(CompactMapTree, SymlinksAreNeverFollowed) {
  const Worktree tree;
  tree.write("app/scheduler.py", "def schedule():\n    pass\n");
  test::write_text_file(tree.outside() / "outside_scheduler.py",
                        "def leaked_scheduler():\n    pass\n");
  std::filesystem::create_directories(tree.outside() / "outside_dir");
  test::write_text_file(tree.outside() / "outside_dir" / "scheduler.py",
                        "def leaked_from_dir():\n    pass\n");
  std::filesystem::create_symlink(tree.outside() / "outside_scheduler.py",
                                  tree.root() / "app" / "link_scheduler.py");
  std::filesystem::create_directory_symlink(tree.outside() / "outside_dir",
                                            tree.root() / "linked_dir");
  std::filesystem::create_symlink(tree.root() / "app" / "scheduler.py",
                                  tree.root() / "inner_link_scheduler.py");
  const json map = build_compact_interface_map(tree.root(), {"scheduler"}, kCommit);
  EXPECT_EQ(module_paths(map), std::vector<std::string>{"app/scheduler.py"});
  const std::string text = canonical_json(map);
  EXPECT_EQ(text.find("leaked"), std::string::npos);
  EXPECT_EQ(text.find("linked_dir"), std::string::npos);
}

// Given a worktree path that is itself a symlink, or not a directory, the map should refuse it.
TEST(CompactMapTree, RootMustBeARealDirectory) {
  const Worktree tree;
  tree.write("app/scheduler.py", "def schedule():\n    pass\n");
  const std::filesystem::path link = tree.outside() / "root-link";
  std::filesystem::create_directory_symlink(tree.root(), link);
  EXPECT_EQ(code_of([&] { build_compact_interface_map(link, {"scheduler"}, kCommit); }),
            "INTERFACE_MAP_ROOT_INVALID");
  EXPECT_EQ(code_of([&] {
              build_compact_interface_map(tree.root() / "app" / "scheduler.py", {"scheduler"},
                                          kCommit);
            }),
            "INTERFACE_MAP_ROOT_INVALID");
  EXPECT_EQ(
      code_of([&] { build_compact_interface_map(tree.outside() / "missing", {"x"}, kCommit); }),
      "INTERFACE_MAP_ROOT_INVALID");
}

// Given .git content, a binary file, a non-UTF-8 file, an oversize file and a file of an
// unknown type that all hold the term, only the ordinary source file should be read.
TEST(CompactMapTree, GitBinaryForeignAndOversizeFilesAreSkipped) {
  const Worktree tree;
  tree.write("app/scheduler.py", "def schedule():\n    pass\n");
  tree.write(".git/hooks/scheduler.py", "def git_scheduler():\n    pass\n");
  tree.write("node_modules/pkg/scheduler.js", "function vendored_scheduler() {}\n");
  tree.write("app/binary_scheduler.py", std::string("def scheduler():\n\0\x01\x02", 20));
  tree.write("app/latin1_scheduler.py", "def scheduler():\n    return '\xe9'\n");
  Options options;
  options.limits.max_file_bytes = 1024;
  tree.write("app/big_scheduler.py", "def scheduler():\n" + std::string(2048, '#') + "\n");
  tree.write("app/notes_scheduler.txt", "scheduler\n");
  const json map = build_compact_interface_map(tree.root(), {"scheduler"}, kCommit, options);
  EXPECT_EQ(module_paths(map), std::vector<std::string>{"app/scheduler.py"});
  EXPECT_FALSE(map["tree_scan_truncated"]);
}

// Given more entries than the entry limit, the walk should stop in name order and say so.
TEST(CompactMapTree, EntryLimitStopsTheWalkAndIsReported) {
  const Worktree tree;
  for (int i = 0; i < 9; ++i) {
    tree.write("app/m" + std::to_string(i) + "_scheduler.py", "def schedule():\n    pass\n");
  }
  Options options;
  options.limits.max_entries = 5;  // "app" and four files
  const json map = build_compact_interface_map(tree.root(), {"scheduler"}, kCommit, options);
  EXPECT_TRUE(map["tree_scan_truncated"]);
  EXPECT_EQ(module_paths(map),
            (std::vector<std::string>{"app/m0_scheduler.py", "app/m1_scheduler.py",
                                      "app/m2_scheduler.py", "app/m3_scheduler.py"}));
}

// Given secrets in the lines around a mapped symbol, the excerpt should carry [REDACTED] and
// no secret value should appear anywhere in the map.
TEST(CompactMapTree, ExcerptsRedactSecrets) {
  const Worktree tree;
  tree.write("app/provider_client.py",
             "def call_provider(request):\n"
             "    headers = {'Authorization: Bearer sk-live-bearer-0001'}\n"
             "    api_key = 'sk-live-apikey-0002'\n"
             "    password: hunter2-0003\n"
             "    return request\n");
  const json map = build_compact_interface_map(tree.root(), {"provider"}, kCommit);
  ASSERT_EQ(map["bounded_excerpts"].size(), 1U);
  const json& excerpt = map["bounded_excerpts"][0];
  EXPECT_EQ(excerpt["path"], "app/provider_client.py");
  EXPECT_EQ(excerpt["symbol"], "call_provider");
  EXPECT_EQ(excerpt["line_start"], 1);
  EXPECT_EQ(excerpt["line_end"], 5);
  const std::string text = excerpt["text"];
  EXPECT_NE(text.find("[REDACTED]"), std::string::npos);
  EXPECT_NE(text.find("return request"), std::string::npos);
  const std::string all = canonical_json(map);
  for (const char* secret : {"sk-live-bearer-0001", "sk-live-apikey-0002", "hunter2-0003"}) {
    EXPECT_EQ(all.find(secret), std::string::npos) << secret;
  }
}

// Given long symbol bodies, an excerpt should stop at the next symbol or the line cap, and its
// text should be bounded.
TEST(CompactMapTree, ExcerptsAreBoundedByLinesAndBytes) {
  const Worktree tree;
  std::string body = "def scheduler_first():\n";
  for (int i = 0; i < 100; ++i) body += "    x = " + std::string(60, 'y') + "\n";
  body += "def scheduler_second():\n    pass\n";
  tree.write("app/scheduler.py", body);
  const json map = build_compact_interface_map(tree.root(), {"scheduler"}, kCommit);
  ASSERT_EQ(map["bounded_excerpts"].size(), 2U);
  const json& first = map["bounded_excerpts"][0];
  EXPECT_EQ(first["line_start"], 1);
  EXPECT_EQ(first["line_end"], 40);
  EXPECT_NE(first["text"].get<std::string>().find(kTruncationMarker), std::string::npos);
  EXPECT_LE(first["text"].get<std::string>().size(), Limits{}.max_excerpt_bytes);
  EXPECT_EQ(map["bounded_excerpts"][1]["line_start"], 102);
  EXPECT_EQ(map["bounded_excerpts"][1]["line_end"], 103);
}

// Given files that hit more terms or hit them in their path, ranking should put them first,
// with ties in path order; symbols should be sorted into classes, functions and tests.
TEST(CompactMapTree, CandidatesRankedAndSymbolsClassified) {
  const Worktree tree;
  tree.write("b/lease.py", "class Lease:\n    def renew(self):\n        pass\n");
  tree.write("a/other.py", "def renew_lease_and_heartbeat():\n    pass\n");
  tree.write("a/same.py", "def renew_lease_and_heartbeat():\n    pass\n");
  tree.write("tests/test_lease.py", "def test_renew():\n    pass\n");
  const json map = build_compact_interface_map(tree.root(), {"lease heartbeat"}, kCommit);
  EXPECT_EQ(module_paths(map), (std::vector<std::string>{"b/lease.py", "tests/test_lease.py",
                                                         "a/other.py", "a/same.py"}));
  const json& modules = map["implementation_map"]["modules"];
  EXPECT_EQ(modules[0]["score"], 4);  // "lease" in the path (3) and the text (1)
  EXPECT_EQ(modules[0]["hits"], json::array({"lease"}));
  EXPECT_EQ(modules[1]["score"], 3);  // in the path only
  EXPECT_EQ(modules[2]["score"], 2);  // two terms in the text
  EXPECT_EQ(modules[2]["hits"], json::array({"heartbeat", "lease"}));
  const json& implementation = map["implementation_map"];
  EXPECT_EQ(implementation["classes"][0]["name"], "Lease");
  EXPECT_EQ(implementation["tests"][0]["name"], "test_renew");
  EXPECT_EQ(implementation["tests"][0]["line"], 1);
  EXPECT_EQ(implementation["functions"][0]["name"], "Lease.renew");
  EXPECT_EQ(implementation["functions"][0]["kind"], "method");
}

// Given the same tree built twice, and a copy written in another order, the canonical maps
// should be byte-identical.
TEST(CompactMapTree, SameInputGivesByteIdenticalMaps) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"src/fleet/scheduler.cpp", "int Scheduler::claim(int slot) {\n  return slot;\n}\n"},
      {"src/fleet/queue.go", "package fleet\nfunc Dispatch() {}\n"},
      {"web/lease.ts", "export class LeaseClient {\n  renew() {\n  }\n}\n"},
      {"app/checkpoint.py", "def save_checkpoint():\n    token = 'abc'\n"},
      {"tests/test_scheduler.py", "def test_claim():\n    pass\n"},
  };
  const Worktree first;
  for (const auto& [path, content] : files) first.write(path, content);
  const Worktree second;
  for (auto it = files.rbegin(); it != files.rend(); ++it) second.write(it->first, it->second);
  const std::vector<std::string> signals = {"fleet scheduler lease", "checkpoint dispatch"};
  const std::string a = canonical_json(build_compact_interface_map(first.root(), signals, kCommit));
  const std::string b = canonical_json(build_compact_interface_map(first.root(), signals, kCommit));
  const std::string c =
      canonical_json(build_compact_interface_map(second.root(), signals, kCommit));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  EXPECT_EQ(a.find("'abc'"), std::string::npos);
}

}  // namespace
}  // namespace aios::compact_map
