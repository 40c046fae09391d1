// aios-envelope is the operator's way to compute digests; it must agree with the library.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "support/run_command.hpp"

namespace aios {
namespace {

const nlohmann::json kBinding = {{"task_id", "tool-task-1"},
                                 {"job_id", "job-tool-1"},
                                 {"repository", "aios/demo"},
                                 {"base_oid", std::string(40, 'a')},
                                 {"expected_branch_oid", std::string(40, 'a')},
                                 {"target_branch", "agent/tool-task-1"},
                                 {"branch_mode", "CREATE_NEW"},
                                 {"generation", 1},
                                 {"idempotency_key", "tool-task-1-binding-v1"}};

class AiosEnvelopeTool : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/aios-envelope-test-XXXXXX";
    const int fd = mkstemp(name);
    ASSERT_GE(fd, 0);
    close(fd);
    input_ = name;
  }
  void TearDown() override { std::remove(input_.c_str()); }

  test::CommandResult run(const std::string& subcommand, const std::string& stdin_text) {
    std::ofstream(input_) << stdin_text;
    return test::run_command(std::string(AIOS_BINARY_DIR) + "/tools/aios-envelope " + subcommand +
                             " < " + input_);
  }

  std::string input_;
};

// Given a task request, the tool should print the same projection as the library.
TEST_F(AiosEnvelopeTool, ProjectTaskMatchesTheLibrary) {
  const nlohmann::json task = {{"goal", "Summarize."},
                               {"required_capabilities", {"agent.runtime.openclaw"}}};
  const nlohmann::json execution = {{"action", "agent_runtime"}, {"adapter", "openclaw"}};
  const nlohmann::json request = {{"binding", kBinding}, {"task", task}, {"execution", execution}};
  const auto result = run("project-task", request.dump());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto expected =
      project_online_task(GovernedBinding::from_mapping(kBinding), task, execution);
  EXPECT_EQ(result.output, canonical_json(expected) + "\n");
}

// Given any JSON, digest should print its canonical SHA-256.
TEST_F(AiosEnvelopeTool, DigestIsTheCanonicalDigest) {
  const nlohmann::json value = {{"decision", "NEEDS_REWORK"}, {"reason", "caf\u00e9"}};
  const auto result = run("digest", value.dump());
  ASSERT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output, digest(value) + "\n");
}

// Given integers past 64 bits, digest should print the hash Python's json computes over them
// (json.loads keeps them exact; the expected value is hashlib's over Python's json.dumps).
TEST_F(AiosEnvelopeTool, DigestKeepsIntegersPast64BitsAsPythonDoes) {
  const auto result = run("digest", R"({"n": 18446744073709551616, "m": [-9223372036854775809]})");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output, "2750005d667af6f110c9b73324eaf52c5dd377a743016ce23e63063b50dea32e\n");
}

// Given a refused envelope or broken JSON, the tool should print the code and exit 1.
TEST_F(AiosEnvelopeTool, RefusalsPrintTheirCode) {
  auto result = run("validate", R"({"envelope": {"schema": "x"}})");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.output, "EXECUTION_ENVELOPE_FIELDS_INVALID\n");
  result = run("digest", "{not json");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.output, "REQUEST_INVALID\n");
}

}  // namespace
}  // namespace aios
