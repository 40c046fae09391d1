// GovernedBinding::from_mapping and to_public: the nine binding fields and their BINDING_* codes.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aios/envelope.hpp"
#include "test_fixtures.hpp"

namespace aios::envelope_test {
namespace {

// Marks a table row whose field is removed instead of replaced.

struct FieldCase {
  std::string field;
  Json value;
  std::string expected;
};

std::string run_case(const FieldCase& c) {
  Json mapping = rebind_binding_mapping();
  if (c.value == kAbsent) {
    mapping.erase(c.field);
  } else {
    mapping[c.field] = c.value;
  }
  return code_of([&] { GovernedBinding::from_mapping(mapping); });
}

TEST(BindingTest, SeedBindingIsAccepted) {
  // Given the seed's rebind-test binding, we should read every field verbatim.
  const GovernedBinding binding = GovernedBinding::from_mapping(rebind_binding_mapping());
  EXPECT_EQ(binding.task_id, "task-rebind-a");
  EXPECT_EQ(binding.job_id, "job-rebind-a");
  EXPECT_EQ(binding.repository, "aios/aios");
  EXPECT_EQ(binding.base_oid, std::string(40, 'a'));
  EXPECT_EQ(binding.expected_branch_oid, std::string(40, 'a'));
  EXPECT_EQ(binding.target_branch, "agent/task-rebind-a");
  EXPECT_EQ(binding.branch_mode, "CREATE_NEW");
  EXPECT_EQ(binding.generation, 1);
  EXPECT_EQ(binding.idempotency_key, "task-rebind-a-binding-v1");
}

TEST(BindingTest, ToPublicRoundTrips) {
  // Given a binding, we should publish exactly its nine fields and read them back unchanged.
  const GovernedBinding binding = rebind_binding();
  const Json published = binding.to_public();
  EXPECT_EQ(published, rebind_binding_mapping());
  EXPECT_EQ(published.size(), 9U);
  EXPECT_EQ(GovernedBinding::from_mapping(published), binding);
}

TEST(BindingTest, OtherSeedBindingsAreAccepted) {
  // Given the runtime and replay tests' bindings, we should accept them as the seed does.
  EXPECT_EQ(runtime_binding("task-hermes-runtime").target_branch, "agent/task-hermes-runtime");
  EXPECT_EQ(runtime_binding("task-openclaw-runtime").job_id, "job-task-openclaw-runtime");
  EXPECT_EQ(replay_binding().task_id, "r42-source-capture-replay-test-20260818");
}

TEST(BindingTest, NonObjectIsRefused) {
  // Given a mapping that is not a JSON object, we should refuse it with BINDING_INVALID.
  for (const Json& value :
       {Json(), Json("task"), Json::array({rebind_binding_mapping()}), Json(1)}) {
    SCOPED_TRACE(value.dump());
    EXPECT_EQ(code_of([&] { GovernedBinding::from_mapping(value); }), "BINDING_INVALID");
  }
}

TEST(BindingTest, EveryFieldRuleHasItsCode) {
  // Given one field missing or malformed, we should refuse the binding with that field's code.
  const std::string task_max(180, 't');
  const std::string key_max(160, 'k');
  const std::vector<FieldCase> cases = {
      {"task_id", kAbsent, "BINDING_TASK_ID_INVALID"},
      {"task_id", Json(), "BINDING_TASK_ID_INVALID"},
      {"task_id", 12345, "BINDING_TASK_ID_INVALID"},
      {"task_id", "ab", "BINDING_TASK_ID_INVALID"},
      {"task_id", "-task", "BINDING_TASK_ID_INVALID"},
      {"task_id", "task a", "BINDING_TASK_ID_INVALID"},
      {"task_id", "task/a", "BINDING_TASK_ID_INVALID"},
      {"task_id", task_max + "t", "BINDING_TASK_ID_INVALID"},
      {"task_id", task_max, std::string(kOk)},
      {"task_id", "a.b:c_d-e", std::string(kOk)},
      {"job_id", kAbsent, "BINDING_JOB_ID_INVALID"},
      {"job_id", Json::array(), "BINDING_JOB_ID_INVALID"},
      {"job_id", "jo", "BINDING_JOB_ID_INVALID"},
      {"job_id", ".job", "BINDING_JOB_ID_INVALID"},
      {"job_id", "job\xC3\xA9", "BINDING_JOB_ID_INVALID"},
      {"repository", kAbsent, "BINDING_REPOSITORY_INVALID"},
      {"repository", "aios", "BINDING_REPOSITORY_INVALID"},
      {"repository", "aios/", "BINDING_REPOSITORY_INVALID"},
      {"repository", "/aios", "BINDING_REPOSITORY_INVALID"},
      {"repository", "a/b/c", "BINDING_REPOSITORY_INVALID"},
      {"repository", "-a/b", "BINDING_REPOSITORY_INVALID"},
      {"repository", "a/b c", "BINDING_REPOSITORY_INVALID"},
      {"repository", std::string(101, 'o') + "/n", "BINDING_REPOSITORY_INVALID"},
      {"repository", std::string(100, 'o') + "/n.x_y-z", std::string(kOk)},
      {"base_oid", kAbsent, "BINDING_BASE_OID_INVALID"},
      {"base_oid", std::string(40, 'A'), "BINDING_BASE_OID_INVALID"},
      {"base_oid", std::string(39, 'a'), "BINDING_BASE_OID_INVALID"},
      {"base_oid", std::string(41, 'a'), "BINDING_BASE_OID_INVALID"},
      {"base_oid", std::string(40, 'g'), "BINDING_BASE_OID_INVALID"},
      {"base_oid", 0, "BINDING_BASE_OID_INVALID"},
      {"expected_branch_oid", kAbsent, "BINDING_EXPECTED_BRANCH_OID_INVALID"},
      {"expected_branch_oid", std::string(40, 'Z'), "BINDING_EXPECTED_BRANCH_OID_INVALID"},
      {"expected_branch_oid", std::string(64, 'a'), "BINDING_EXPECTED_BRANCH_OID_INVALID"},
      {"expected_branch_oid", Json(), "BINDING_EXPECTED_BRANCH_OID_INVALID"},
      {"target_branch", kAbsent, "BINDING_TARGET_BRANCH_INVALID"},
      {"target_branch", 7, "BINDING_TARGET_BRANCH_INVALID"},
      {"target_branch", "feature/x", "BINDING_TARGET_BRANCH_INVALID"},
      {"target_branch", "agent/ab", "BINDING_TARGET_BRANCH_INVALID"},
      {"target_branch", "agent/" + std::string(181, 'b'), "BINDING_TARGET_BRANCH_INVALID"},
      {"target_branch", "agent/" + std::string(180, 'b'), std::string(kOk)},
      {"target_branch", "main", "BINDING_TARGET_BRANCH_PROTECTED"},
      {"branch_mode", kAbsent, "BINDING_BRANCH_MODE_INVALID"},
      {"branch_mode", "create_new", "BINDING_BRANCH_MODE_INVALID"},
      {"branch_mode", "", "BINDING_BRANCH_MODE_INVALID"},
      {"branch_mode", 1, "BINDING_BRANCH_MODE_INVALID"},
      {"generation", kAbsent, "BINDING_GENERATION_INVALID"},
      {"generation", 0, "BINDING_GENERATION_INVALID"},
      {"generation", -1, "BINDING_GENERATION_INVALID"},
      {"generation", true, "BINDING_GENERATION_INVALID"},
      {"generation", 1.0, "BINDING_GENERATION_INVALID"},
      {"generation", 1.5, "BINDING_GENERATION_INVALID"},
      {"generation", "1", "BINDING_GENERATION_INVALID"},
      {"generation", 2147483648LL, "BINDING_GENERATION_INVALID"},
      {"generation", 18446744073709551615ULL, "BINDING_GENERATION_INVALID"},
      {"generation", 2147483647, std::string(kOk)},
      {"idempotency_key", kAbsent, "BINDING_IDEMPOTENCY_KEY_INVALID"},
      {"idempotency_key", "short-k", "BINDING_IDEMPOTENCY_KEY_INVALID"},
      {"idempotency_key", "_key-binding-v1", "BINDING_IDEMPOTENCY_KEY_INVALID"},
      {"idempotency_key", "key binding v1", "BINDING_IDEMPOTENCY_KEY_INVALID"},
      {"idempotency_key", key_max + "k", "BINDING_IDEMPOTENCY_KEY_INVALID"},
      {"idempotency_key", key_max, std::string(kOk)},
      {"idempotency_key", "shortk-8", std::string(kOk)},
  };
  for (const FieldCase& c : cases) {
    SCOPED_TRACE(c.field + " = " + c.value.dump());
    EXPECT_EQ(run_case(c), c.expected);
  }
}

TEST(BindingTest, ProtectedTargetBranchesAreRefused) {
  // Given a target branch naming a protected ref, we should refuse it as protected.
  for (const char* branch : {"main", "master", "mainline", "refs/heads/agent/x", "tags/v1",
                             "tag/v1", "release/1.0", "baseline/x", "production/x"}) {
    SCOPED_TRACE(branch);
    EXPECT_EQ(run_case({"target_branch", branch, ""}), "BINDING_TARGET_BRANCH_PROTECTED");
  }
}

TEST(BindingTest, AgentBranchNamedLikeProtectedRefIsAccepted) {
  // Given an agent/ branch whose last part reads "main", we should accept it: only prefixes
  // of the whole ref are protected.
  EXPECT_EQ(run_case({"target_branch", "agent/main", ""}), kOk);
  EXPECT_EQ(run_case({"target_branch", "agent/release/1.0", ""}), kOk);
}

TEST(BindingTest, GitInvalidAgentBranchesAreRefused) {
  // Given an agent/ branch git would refuse as a ref name, we should refuse it too.
  for (const char* branch : {"agent/a..b",  "agent/x.lock",   "agent/abc.lock/x",  "agent/abc/",
                             "agent//x",    "agent/abc//def", "agent/abc/.hidden", "agent/abc.",
                             "agent/ab c",  "agent/ab~c",     "agent/ab^c",        "agent/ab:c",
                             "agent/ab?c",  "agent/ab*c",     "agent/ab[c",        "agent/ab@{c",
                             "agent/ab\\c", "agent/ab\x01z",  "agent/.abc",        "agent/-abc",
                             "agent/",      "agent"}) {
    SCOPED_TRACE(branch);
    EXPECT_EQ(run_case({"target_branch", branch, ""}), "BINDING_TARGET_BRANCH_INVALID");
  }
}

TEST(BindingTest, WellFormedAgentBranchesAreAccepted) {
  // Given agent/ branches with the allowed characters, we should accept them.
  for (const char* branch :
       {"agent/abc", "agent/task-1/sub.part_x", "agent/a.b-c_d/e", "agent/x.lockfile"}) {
    SCOPED_TRACE(branch);
    EXPECT_EQ(run_case({"target_branch", branch, ""}), kOk);
  }
}

TEST(BindingTest, CreateNewMustStartAtTheBase) {
  // Given CREATE_NEW with an expected branch oid other than the base, we should refuse it: a
  // new branch has no other tip.
  Json mapping = rebind_binding_mapping();
  mapping["expected_branch_oid"] = std::string(40, 'b');
  EXPECT_EQ(code_of([&] { GovernedBinding::from_mapping(mapping); }),
            "BINDING_EXPECTED_BRANCH_OID_INVALID");
}

TEST(BindingTest, UpdateExistingMayExpectAnotherTip) {
  // Given UPDATE_EXISTING with an expected branch oid other than the base, we should accept it.
  Json mapping = rebind_binding_mapping();
  mapping["branch_mode"] = "UPDATE_EXISTING";
  mapping["expected_branch_oid"] = std::string(40, 'b');
  const GovernedBinding binding = GovernedBinding::from_mapping(mapping);
  EXPECT_EQ(binding.branch_mode, "UPDATE_EXISTING");
  EXPECT_EQ(binding.expected_branch_oid, std::string(40, 'b'));
  EXPECT_EQ(binding.base_oid, std::string(40, 'a'));
}

TEST(BindingTest, ObjectIdsMustBeOfOneKind) {
  // Given SHA-256 object ids, we should accept them when both are 64 digits and refuse a mix.
  Json mapping = rebind_binding_mapping();
  mapping["base_oid"] = std::string(64, 'c');
  mapping["expected_branch_oid"] = std::string(64, 'c');
  EXPECT_EQ(GovernedBinding::from_mapping(mapping).base_oid, std::string(64, 'c'));
  mapping["branch_mode"] = "UPDATE_EXISTING";
  mapping["expected_branch_oid"] = std::string(40, 'c');
  EXPECT_EQ(code_of([&] { GovernedBinding::from_mapping(mapping); }),
            "BINDING_EXPECTED_BRANCH_OID_INVALID");
}

TEST(BindingTest, ExtraKeysAreIgnored) {
  // Given a mapping with other keys (a task view, an envelope), we should read only the nine
  // binding fields.
  Json mapping = rebind_binding_mapping();
  mapping["goal"] = "anything";
  mapping["metadata"] = {{"execution", {{"x", 1}}}};
  EXPECT_EQ(GovernedBinding::from_mapping(mapping), rebind_binding());
  EXPECT_EQ(GovernedBinding::from_mapping(new_envelope()), rebind_binding());
  EXPECT_EQ(GovernedBinding::from_mapping(projected("hermes")),
            runtime_binding("task-hermes-runtime"));
}

TEST(BindingTest, EqualityComparesEveryField) {
  // Given two bindings that differ in one field, we should see them as different.
  const GovernedBinding base = rebind_binding();
  for (const char* field :
       {"task_id", "job_id", "repository", "target_branch", "idempotency_key"}) {
    SCOPED_TRACE(field);
    Json mapping = rebind_binding_mapping();
    mapping[field] = mapping[field].get<std::string>() + "-x";
    EXPECT_NE(GovernedBinding::from_mapping(mapping), base);
  }
  Json mapping = rebind_binding_mapping();
  mapping["generation"] = 2;
  EXPECT_NE(GovernedBinding::from_mapping(mapping), base);
}

}  // namespace
}  // namespace aios::envelope_test
