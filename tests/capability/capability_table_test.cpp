// The alias tables, wildcard and unknown-name rules of aios_capability_contract.py, as tables.
#include <gtest/gtest.h>

#include "aios/capability.hpp"
#include "aios/error.hpp"

namespace aios {
namespace {

using nlohmann::json;

struct RequiredCase {
  json input;
  std::set<std::string> expected;
};

// Given task-facing names, we should map them to the semantic vocabulary the seed defines.
TEST(CapabilityTable, RequiredNamesNormalizeLikeTheSeed) {
  const std::vector<RequiredCase> cases = {
      {json::array({"repository_read"}), {"repo.read"}},
      {json::array({"git.read", "repo.read"}), {"repo.read"}},
      {json::array({"test_execution", "git.test"}), {"test.execute"}},
      {json::array({"governed_git_write"}),
       {"governed.git.write.branch", "governed.git.write.file"}},
      {json::array({"governed.git.write"}),
       {"governed.git.write.branch", "governed.git.write.file"}},
      {json::array({"governed.write.branch"}), {"governed.git.write.branch"}},
      {json::array({"shell", "git", "python"}), {"runtime.shell", "runtime.git", "runtime.python"}},
      {json::array({"code.read"}), {"legacy.code.read"}},
      {json::array({"gpu.train"}), {"legacy.gpu.train"}},
      {json::array({"  Git.Read\t"}), {"repo.read"}},
      {json::array({"deploy.*"}), {"exact:deploy.*"}},
      {json::array({"made.up"}), {"exact:made.up"}},
      // The worker-only spelling is unknown to the task vocabulary.
      {json::array({"governed.git.write.branch"}), {"exact:governed.git.write.branch"}},
      {json::array(), {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.input.dump());
    EXPECT_EQ(normalize_required_capabilities(c.input), c.expected);
  }
}

// Given worker names, we should grant only known names, never wildcards, and derive the pair.
TEST(CapabilityTable, WorkerNamesNormalizeLikeTheSeed) {
  EXPECT_EQ(normalize_worker_capabilities(json::array({"*", "repo.*", "made.up"})),
            std::set<std::string>{});
  EXPECT_EQ(normalize_worker_capabilities(json::array({"governed.write.branch"})),
            std::set<std::string>{"governed.git.write.branch"});
  EXPECT_EQ(
      normalize_worker_capabilities(json::array({"governed.write.branch", "governed.write.file"})),
      (std::set<std::string>{"governed.git.write", "governed.git.write.branch",
                             "governed.git.write.file"}));
  // governed_git_write is a task alias only; a worker cannot claim the pair through it.
  EXPECT_EQ(normalize_worker_capabilities(json::array({"governed_git_write"})),
            std::set<std::string>{});
}

struct EligibilityCase {
  json worker;
  json required;
  bool eligible;
};

// Given a worker and a task, we should decide eligibility exactly as the seed does.
TEST(CapabilityTable, EligibilityDecisions) {
  const std::vector<EligibilityCase> cases = {
      {json::array({"git.read"}), json::array({"repository_read"}), true},
      {json::array({"git.read"}), json::array({"repo.read", "test.execute"}), false},
      {json::array({"governed.git.write.branch", "governed.git.write.file"}),
       json::array({"governed.git.write"}), true},
      {json::array({"governed.git.write.branch"}), json::array({"governed.git.write"}), false},
      {json::array({"*"}), json::array({"repo.read"}), false},
      {json::array({"repo.read"}), json::array({"repo.*"}), false},
      {json::array({"made.up"}), json::array({"made.up"}), false},
      {json::array({"repo.read"}), json::array(), true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.worker.dump() + " vs " + c.required.dump());
    EXPECT_EQ(has_capabilities(c.worker, c.required), c.eligible);
  }
}

// Given delegation constraints, an unknown name on either side should deny containment.
TEST(CapabilityTable, RequiredSubsetIsSemanticAndFailClosed) {
  EXPECT_TRUE(required_capabilities_subset(json::array({"git.read", "git.test"}),
                                           json::array({"repository_read"})));
  EXPECT_TRUE(required_capabilities_subset(json::array({"governed_git_write"}),
                                           json::array({"governed.write.file"})));
  EXPECT_FALSE(
      required_capabilities_subset(json::array({"git.read"}), json::array({"test.execute"})));
  EXPECT_FALSE(required_capabilities_subset(json::array({"git.read", "made.up"}),
                                            json::array({"git.read"})));
  EXPECT_FALSE(required_capabilities_subset(json::array({"git.read"}), json::array({"repo.*"})));
}

// Given the diagnostics call, we should expose sorted non-secret evidence.
TEST(CapabilityTable, MatrixIsSortedEvidence) {
  const auto matrix = normalized_capability_matrix(json::array({"git.test", "git.read", "*"}),
                                                   json::array({"repo.read", "made.up"}));
  EXPECT_EQ(matrix["worker_effective"], json::array({"repo.read", "test.execute"}));
  EXPECT_EQ(matrix["task_required"], json::array({"exact:made.up", "repo.read"}));
  EXPECT_EQ(matrix["eligible"], false);
}

// Given a malformed list, we should refuse with CAPABILITY_INVALID and not guess.
TEST(CapabilityTable, MalformedInputIsCapabilityInvalid) {
  const std::vector<json> bad = {json::array({1}),
                                 json::array({nullptr}),
                                 json::array({""}),
                                 json::array({" \u3000"}),
                                 json::array({json::array()}),
                                 json("git.read"),
                                 json::object()};
  for (const auto& input : bad) {
    SCOPED_TRACE(input.dump());
    for (const auto& call : {+[](const json& v) { normalize_required_capabilities(v); },
                             +[](const json& v) { normalize_worker_capabilities(v); }}) {
      try {
        call(input);
        ADD_FAILURE() << "accepted";
      } catch (const Error& error) {
        EXPECT_EQ(error.code(), "CAPABILITY_INVALID");
        EXPECT_EQ(error.http_status(), 400);
      }
    }
  }
}

}  // namespace
}  // namespace aios
