// Port of the seed's test_online_agent_compact_interface_map_profiles.py, plus the profile
// selection, gap evidence and result rules around it.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/compact_map.hpp"
#include "aios/envelope.hpp"
#include "compact_map/worktree.hpp"
#include "support/code_of.hpp"

namespace aios::compact_map {
namespace {

using nlohmann::json;
using test::code_of;
using test::Worktree;

const std::vector<std::string> kModelSignals = {
    "model provider registry routing budget token cost fallback",
    "evaluation approval version pinning tenant project credential trace",
};

std::set<std::string> keys(const json& object) {
  std::set<std::string> out;
  for (const auto& [key, value] : object.items()) out.insert(key);
  return out;
}

// The envelope the seed's _envelope stands for: a projected source_capture envelope at `base`.
json source_capture_envelope(const std::string& base) {
  const GovernedBinding binding = GovernedBinding::from_mapping({
      {"task_id", "r42-model-governance-interface-map-20260818"},
      {"job_id", "job-model-governance"},
      {"repository", "aios/aios"},
      {"base_oid", base},
      {"expected_branch_oid", base},
      {"target_branch", "agent/model-governance-map"},
      {"branch_mode", "CREATE_NEW"},
      {"generation", 1},
      {"idempotency_key", "model-governance-map-v1"},
  });
  return project_execution_envelope(binding, {{"action", "source_capture"},
                                              {"adapter", "compact_interface_map"},
                                              {"capability_scope", {"git.read", "git.test"}},
                                              {"source_signals", kModelSignals}});
}

// The seed's minimal interface map for the worker tests.
json seed_interface_map(const std::string& profile, const std::string& classification) {
  return {{"schema", "aios.engineering.interface-map.v1"},
          {"profile", profile},
          {"classification", classification},
          {"source_commit", std::string(40, 'c')},
          {"implementation_map",
           {{"modules", json::array()},
            {"classes", json::array()},
            {"functions", json::array()},
            {"tests", json::array()}}},
          {"bounded_excerpts", json::array()},
          {"contracts",
           {{"MODEL_PROVIDER_REGISTRY", {{"status", "GAP"}, {"surfaces", json::array()}}}}},
          {"result_bytes", 512}};
}

// Given model/provider/routing signals, the map should take the model_governance profile, its
// classification and exactly its ten contracts (seed test).
TEST(CompactMapProfiles, ModelGovernanceProfileContractsAndClassification) {
  const Worktree tree;
  test::write_seed_repo(tree);
  const json value = build_compact_interface_map(tree.root(), kModelSignals, std::string(40, 'a'));
  EXPECT_EQ(value["profile"], "model_governance");
  EXPECT_EQ(value["classification"], "MODEL_GOVERNANCE_INTERFACE_MAP_CAPTURED");
  EXPECT_EQ(keys(value["contracts"]),
            (std::set<std::string>{"MODEL_PROVIDER_REGISTRY", "MODEL_SELECTION_POLICY",
                                   "MODEL_VERSION_PINNING", "MODEL_BUDGET_ACCOUNTING",
                                   "MODEL_FALLBACK_POLICY", "MODEL_SCOPE_ISOLATION",
                                   "MODEL_CREDENTIAL_BOUNDARY", "MODEL_TRACE_AUDIT",
                                   "MODEL_EVALUATION_GATE", "MODEL_ROUTING_RESILIENCE"}));
  EXPECT_FALSE(value["contracts"].contains("FLEET_FAIRNESS"));
  EXPECT_EQ(value["schema"], "aios.engineering.interface-map.v1");
  EXPECT_EQ(value["source_commit"], std::string(40, 'a'));
}

// Given fleet signals, the map should keep the fleet profile, P2 classification and FLEET_*
// contracts (seed test).
TEST(CompactMapProfiles, FleetProfileIsBackwardCompatible) {
  const Worktree tree;
  test::write_seed_repo(tree);
  const json value = build_compact_interface_map(
      tree.root(), {"agent fleet scheduler worker capacity fairness"}, std::string(40, 'b'));
  EXPECT_EQ(value["profile"], "fleet");
  EXPECT_EQ(value["classification"], "P2_INTERFACE_MAP_CAPTURED");
  EXPECT_TRUE(value["contracts"].contains("FLEET_AGENT_REGISTRATION"));
  for (const auto& [contract, entry] : value["contracts"].items()) {
    EXPECT_EQ(contract.rfind("FLEET_", 0), 0U) << contract;
  }
}

// Given a model_governance map with its own classification, the worker's result should carry
// both and stay read-only (seed test).
TEST(CompactMapProfiles, WorkerBindsModelProfileToModelClassification) {
  const json envelope = source_capture_envelope(std::string(40, 'c'));
  const json result = build_compact_interface_map_result(
      "r42-model-governance-interface-map-20260818", envelope,
      {{"interface_map",
        seed_interface_map("model_governance", "MODEL_GOVERNANCE_INTERFACE_MAP_CAPTURED")}});
  EXPECT_EQ(result["classification"], "MODEL_GOVERNANCE_INTERFACE_MAP_CAPTURED");
  EXPECT_EQ(result["interface_map_profile"], "model_governance");
  EXPECT_EQ(result["writer_lease"], "NONE");
  EXPECT_EQ(result["status"], "SUCCEEDED");
  EXPECT_EQ(result["execution_mode"], "compact_interface_map");
  EXPECT_EQ(result["changed_files"], json::array());
  EXPECT_EQ(result["credential_material_exposed"], false);
  EXPECT_EQ(result["execution_digest"], envelope["execution_digest"]);
  EXPECT_EQ(result["job_id"], "job-model-governance");
  json without_size = result;
  without_size.erase("result_bytes");
  EXPECT_EQ(result["result_bytes"], canonical_json(without_size).size());
}

// Given a model_governance map that claims the fleet classification, the worker should refuse
// it before any result exists (seed test).
TEST(CompactMapProfiles, WorkerRejectsProfileClassificationMismatch) {
  const json envelope = source_capture_envelope(std::string(40, 'c'));
  EXPECT_EQ(code_of([&] {
              build_compact_interface_map_result(
                  "r42-model-governance-interface-map-20260818", envelope,
                  {{"interface_map",
                    seed_interface_map("model_governance", "P2_INTERFACE_MAP_CAPTURED")}});
            }),
            "COMPACT_INTERFACE_MAP_PROFILE_BINDING_INVALID");
}

// Given each malformed pairing or map, the result builder should refuse with its code; a map
// without a profile is a fleet map, as in the seed.
TEST(CompactMapProfiles, ResultRefusalsTable) {
  const json envelope = source_capture_envelope(std::string(40, 'c'));
  const auto build = [&](const json& map) {
    return code_of([&] {
      build_compact_interface_map_result("task-1", envelope, {{"interface_map", map}});
    });
  };
  json no_profile = seed_interface_map("fleet", "P2_INTERFACE_MAP_CAPTURED");
  no_profile.erase("profile");
  EXPECT_EQ(build(no_profile), "OK");
  EXPECT_EQ(build(seed_interface_map("fleet", "MODEL_GOVERNANCE_INTERFACE_MAP_CAPTURED")),
            "COMPACT_INTERFACE_MAP_PROFILE_BINDING_INVALID");
  EXPECT_EQ(build(seed_interface_map("security", "P2_INTERFACE_MAP_CAPTURED")),
            "COMPACT_INTERFACE_MAP_PROFILE_BINDING_INVALID");
  json no_classification = seed_interface_map("fleet", "");
  no_classification.erase("classification");
  EXPECT_EQ(build(no_classification), "COMPACT_INTERFACE_MAP_PROFILE_BINDING_INVALID");
  json numeric = seed_interface_map("fleet", "P2_INTERFACE_MAP_CAPTURED");
  numeric["profile"] = 7;
  EXPECT_EQ(build(numeric), "COMPACT_INTERFACE_MAP_PROFILE_BINDING_INVALID");
  for (const char* field : {"implementation_map", "bounded_excerpts", "contracts"}) {
    json broken = seed_interface_map("fleet", "P2_INTERFACE_MAP_CAPTURED");
    broken.erase(field);
    EXPECT_EQ(build(broken), "COMPACT_INTERFACE_MAP_RESULT_INVALID") << field;
  }
  json other_commit = seed_interface_map("fleet", "P2_INTERFACE_MAP_CAPTURED");
  other_commit["source_commit"] = std::string(40, 'd');
  EXPECT_EQ(build(other_commit), "COMPACT_INTERFACE_MAP_SOURCE_COMMIT_MISMATCH");
  json huge = seed_interface_map("fleet", "P2_INTERFACE_MAP_CAPTURED");
  huge["bounded_excerpts"].push_back({{"text", std::string(kMaxResultBytes, 'x')}});
  EXPECT_EQ(build(huge), "COMPACT_INTERFACE_MAP_RESULT_TOO_LARGE");
  EXPECT_EQ(code_of([&] { build_compact_interface_map_result("task-1", envelope, json::array()); }),
            "COMPACT_INTERFACE_MAP_RESULT_INVALID");
}

// Given signal sets, the profile should be model_governance exactly when two distinct model
// markers appear as whole tokens (the seed's _profile).
TEST(CompactMapProfiles, ProfileSelectionTable) {
  const struct {
    std::vector<std::string> signals;
    std::string profile;
  } cases[] = {
      {{}, "fleet"},
      {{"agent fleet scheduler"}, "fleet"},
      {{"model only"}, "fleet"},
      {{"model model model"}, "fleet"},
      {{"MODEL", "Provider"}, "model_governance"},
      {{"llm routing"}, "model_governance"},
      {{"model-governance provider-registry"}, "fleet"},  // joined tokens are not markers
      {{"token cost"}, "model_governance"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(select_profile(c.signals), c.profile) << ::testing::PrintToString(c.signals);
  }
  EXPECT_EQ(classification_for("fleet"), "P2_INTERFACE_MAP_CAPTURED");
  EXPECT_EQ(classification_for("model_governance"), "MODEL_GOVERNANCE_INTERFACE_MAP_CAPTURED");
  EXPECT_EQ(code_of([] { classification_for("security"); }), "INTERFACE_MAP_PROFILE_INVALID");
}

// Given an explicit profile, the map should use it whatever the signals say; an unknown one is
// refused.
TEST(CompactMapProfiles, ExplicitProfileOverridesSignals) {
  const Worktree tree;
  test::write_seed_repo(tree);
  Options options;
  options.profile = "fleet";
  const json value =
      build_compact_interface_map(tree.root(), kModelSignals, std::string(40, 'a'), options);
  EXPECT_EQ(value["profile"], "fleet");
  EXPECT_EQ(value["classification"], "P2_INTERFACE_MAP_CAPTURED");
  options.profile = "security";
  EXPECT_EQ(code_of([&] {
              build_compact_interface_map(tree.root(), kModelSignals, std::string(40, 'a'),
                                          options);
            }),
            "INTERFACE_MAP_PROFILE_INVALID");
}

// Given a source commit that is not 40 lower-case hex, the map should be refused first.
TEST(CompactMapProfiles, SourceCommitMustBeFortyLowerHex) {
  const Worktree tree;
  test::write_seed_repo(tree);
  for (const std::string& commit :
       {std::string(39, 'a'), std::string(64, 'a'), std::string(40, 'A'), std::string(40, 'g')}) {
    EXPECT_EQ(code_of([&] { build_compact_interface_map(tree.root(), kModelSignals, commit); }),
              "INTERFACE_MAP_SOURCE_COMMIT_INVALID")
        << commit;
  }
}

// Given the seed's repository, the model profile should find every surface it looks for (no
// failure window), map the provider registry onto its symbols and state its four invariants.
TEST(CompactMapProfiles, ModelGovernanceGapEvidenceOnTheSeedRepository) {
  const Worktree tree;
  test::write_seed_repo(tree);
  const json value = build_compact_interface_map(tree.root(), kModelSignals, std::string(40, 'a'));
  const json& evidence = value["gap_evidence"];
  EXPECT_EQ(evidence["failure_windows"], json::array());
  ASSERT_EQ(evidence["invariants"].size(), 4U);
  EXPECT_EQ(evidence["invariants"][1],
            "Provider/model credentials remain outside uncredentialed planner/executor "
            "processes.");
  const json& registry = value["contracts"]["MODEL_PROVIDER_REGISTRY"];
  EXPECT_EQ(registry["status"], "MAPPED");
  EXPECT_EQ(registry["surfaces"][0], "active-runtime/app/model_router.py:ProviderRegistry");
  EXPECT_EQ(registry["surfaces"][1],
            "active-runtime/app/model_router.py:ProviderRegistry.register_provider");
  EXPECT_EQ(value["contracts"]["MODEL_EVALUATION_GATE"]["surfaces"],
            json::array({"active-runtime/app/model_router.py:evaluate_model_version"}));
}

// Given a repository with none of the surfaces, each profile should report every failure
// window the seed lists, a GAP for unmatched contracts and the reuse points it does find.
TEST(CompactMapProfiles, FailureWindowsAndReusePointsFollowTheSymbols) {
  const Worktree tree;
  tree.write("app/worker.py",
             "def save_checkpoint(task_id):\n    return task_id\n\n"
             "def renew_lease(task_id):\n    return task_id\n");
  const json fleet =
      build_compact_interface_map(tree.root(), {"worker checkpoint"}, std::string(40, 'a'));
  EXPECT_EQ(fleet["gap_evidence"]["failure_windows"].size(), 5U);
  EXPECT_EQ(fleet["gap_evidence"]["failure_windows"][0],
            "No first-class durable fleet scheduler symbol detected; worker-local polling may "
            "still be the scheduling mechanism.");
  EXPECT_EQ(fleet["gap_evidence"]["reuse_points"],
            json::array({"P1 durable checkpoint/resume: app/worker.py:save_checkpoint",
                         "claim/WriterLease ownership: app/worker.py:renew_lease"}));
  EXPECT_EQ(fleet["contracts"]["FLEET_FAIRNESS"]["status"], "GAP");

  Options options;
  options.profile = "model_governance";
  const json model = build_compact_interface_map(tree.root(), {"worker checkpoint"},
                                                 std::string(40, 'a'), options);
  EXPECT_EQ(model["gap_evidence"]["failure_windows"].size(), 5U);
  EXPECT_EQ(model["gap_evidence"]["reuse_points"],
            json::array({"P1 durable execution recovery: app/worker.py:save_checkpoint"}));
  EXPECT_EQ(model["contracts"]["MODEL_PROVIDER_REGISTRY"]["status"], "GAP");
}

// Given a worktree where no file holds a term, the map should be refused rather than empty.
TEST(CompactMapProfiles, NoCandidateFileIsRefused) {
  const Worktree tree;
  tree.write("src/zzz.py", "def qqq():\n    return 1\n");
  EXPECT_EQ(code_of([&] {
              build_compact_interface_map(tree.root(), {"xylophone"}, std::string(40, 'a'));
            }),
            "INTERFACE_MAP_CANDIDATES_EMPTY");
}

}  // namespace
}  // namespace aios::compact_map
