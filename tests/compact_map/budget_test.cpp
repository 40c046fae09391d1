// Trimming the map to its byte budget.
#include <gtest/gtest.h>

#include <string>

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
// A worktree whose full map is far over a small budget: many files, each with many symbols
// that hit the terms.
void write_large_repo(const Worktree& tree) {
  for (int f = 0; f < 20; ++f) {
    std::string content;
    for (int s = 0; s < 40; ++s) {
      content += "def scheduler_lease_" + std::to_string(f) + "_" + std::to_string(s) +
                 "():\n    return 'checkpoint heartbeat " + std::string(40, 'z') + "'\n";
    }
    tree.write("app/fleet_scheduler_" + std::to_string(f) + ".py", content);
  }
}

std::size_t size_without_result_bytes(json map) {
  map.erase("result_bytes");
  return canonical_json(map).size();
}

// Given a map under its budget, nothing should be trimmed and result_bytes should be the
// canonical size of the map without that field.
TEST(CompactMapBudget, SmallMapIsNotTrimmed) {
  const Worktree tree;
  tree.write("app/scheduler.py", "def schedule():\n    pass\n");
  const json map = build_compact_interface_map(tree.root(), {"scheduler"}, kCommit);
  EXPECT_FALSE(map["trimmed_to_budget"]);
  EXPECT_EQ(map["result_bytes"], size_without_result_bytes(map));
}

// Given a large repository, the map should fit each budget exactly as measured, dropping
// excerpts before symbols and symbols before modules.
TEST(CompactMapBudget, LargeMapIsTrimmedToEachBudget) {
  const Worktree tree;
  write_large_repo(tree);
  const std::vector<std::string> signals = {"fleet scheduler lease checkpoint heartbeat"};
  for (const std::size_t budget : {std::size_t{8 * 1024}, std::size_t{16 * 1024},
                                   std::size_t{48 * 1024}, kDefaultBudgetBytes}) {
    const json map = build_compact_interface_map(tree.root(), signals, kCommit,
                                                 Options{std::nullopt, budget, {}});
    EXPECT_TRUE(map["trimmed_to_budget"]) << budget;
    EXPECT_LE(canonical_json(map).size(), budget) << budget;
    EXPECT_EQ(map["result_bytes"], size_without_result_bytes(map)) << budget;
    const json& implementation = map["implementation_map"];
    if (!implementation["functions"].empty()) {
      EXPECT_TRUE(map["bounded_excerpts"].empty()) << budget;
    }
    if (!implementation["functions"].empty()) {
      EXPECT_EQ(implementation["modules"].size(), 20U) << budget;
    }
    if (budget == 48 * 1024) {
      EXPECT_FALSE(implementation["functions"].empty());
    }
    EXPECT_EQ(map["contracts"].size(), 8U) << budget;
    EXPECT_EQ(map["gap_evidence"]["invariants"].size(), 4U) << budget;
  }
}

// Given a budget outside the allowed range, the map should be refused before any reading.
TEST(CompactMapBudget, BudgetOutsideTheRangeIsRefused) {
  const Worktree tree;
  tree.write("app/scheduler.py", "def schedule():\n    pass\n");
  for (const std::size_t budget : {kMinBudgetBytes - 1, kMaxResultBytes + 1}) {
    EXPECT_EQ(code_of([&] {
                build_compact_interface_map(tree.root(), {"scheduler"}, kCommit,
                                            Options{std::nullopt, budget, {}});
              }),
              "INTERFACE_MAP_BUDGET_INVALID")
        << budget;
  }
}

// Given reuse points (never trimmed) whose paths alone outgrow the smallest budget, the map
// should be refused rather than returned over budget.
TEST(CompactMapBudget, UntrimmablePartOverBudgetIsRefused) {
  const Worktree tree;
  std::string deep;
  for (int i = 0; i < 5; ++i) deep += std::string(250, static_cast<char>('a' + i)) + "/";
  tree.write(deep + "worker.py",
             "def checkpoint():\n    pass\ndef message():\n    pass\ndef trace():\n    pass\n"
             "def scope():\n    pass\ndef lease():\n    pass\ndef heartbeat():\n    pass\n"
             "def idempotent():\n    pass\n");
  EXPECT_EQ(code_of([&] {
              build_compact_interface_map(tree.root(), {"worker"}, kCommit,
                                          Options{std::string("fleet"), kMinBudgetBytes, {}});
            }),
            "INTERFACE_MAP_BUDGET_EXCEEDED");
}

}  // namespace
}  // namespace aios::compact_map
