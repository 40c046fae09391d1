// Request validation and the prompt text, byte for byte as the seed renders it.
#include "executor/fixture.hpp"
#include "support/code_of.hpp"

namespace aios::executor::test {
namespace {

using aios::test::code_of;

// Given one change each to a valid request, validation should refuse with the seed's code.
TEST(RequestRules, EachRuleHasItsCode) {
  struct Case {
    const char* name;
    json patch;
    const char* code;
  };
  const std::vector<Case> cases = {
      {"valid", json::object(), "OK"},
      {"schema", {{"schema", "v2"}}, "EXTERNAL_AGENT_REQUEST_SCHEMA_INVALID"},
      {"id short", {{"request_id", "short-id"}}, "EXTERNAL_AGENT_REQUEST_ID_INVALID"},
      {"id slash",
       {{"request_id", "external/hermes-0123456789"}},
       "EXTERNAL_AGENT_REQUEST_ID_INVALID"},
      {"id number", {{"request_id", 12345678901234567}}, "EXTERNAL_AGENT_REQUEST_ID_INVALID"},
      {"runtime", {{"runtime", "codex"}}, "EXTERNAL_AGENT_RUNTIME_UNSUPPORTED"},
      {"runtime case", {{"runtime", " Hermes "}}, "OK"},
      {"task id", {{"task_id", "-x"}}, "EXTERNAL_AGENT_TASK_ID_INVALID"},
      {"digest",
       {{"execution_digest", std::string(64, 'D')}},
       "EXTERNAL_AGENT_EXECUTION_DIGEST_INVALID"},
      {"payload", {{"payload", "text"}}, "EXTERNAL_AGENT_PAYLOAD_INVALID"},
      {"payload size",
       {{"payload", {{"goal", std::string(kMaxRequestBytes, 'g')}}}},
       "EXTERNAL_AGENT_PAYLOAD_TOO_LARGE"},
      {"goal missing", {{"payload", {{"goal", nullptr}}}}, "EXTERNAL_AGENT_GOAL_REQUIRED"},
      {"goal blank", {{"payload", {{"goal", " \n\t"}}}}, "EXTERNAL_AGENT_GOAL_REQUIRED"},
      {"goal type", {{"payload", {{"goal", 1}}}}, "EXTERNAL_AGENT_GOAL_REQUIRED"},
      {"instructions",
       {{"payload", {{"instructions", json::array()}}}},
       "EXTERNAL_AGENT_INSTRUCTIONS_INVALID"},
  };
  for (const auto& c : cases) {
    json request = request_value("hermes");
    request.merge_patch(c.patch);
    EXPECT_EQ(code_of([&] { validate_request(request); }), c.code) << c.name;
  }
  EXPECT_EQ(code_of([] { validate_request(json::array()); }),
            "EXTERNAL_AGENT_REQUEST_SCHEMA_INVALID");
}

// Given a request with extra fields and a mixed-case runtime, the normalized request should
// hold exactly the six fields, the runtime lower-cased.
TEST(RequestRules, NormalizesToTheSixFields) {
  json request = request_value("hermes");
  request["runtime"] = "HERMES";
  request["extra"] = true;
  const auto normalized = validate_request(request);
  EXPECT_EQ(normalized.size(), 6U);
  EXPECT_EQ(normalized["runtime"], "hermes");
  EXPECT_FALSE(normalized.contains("extra"));
}

// Given the seed's task payload, the prompt should be the seed's text exactly (the expected
// string is what the seed's render_prompt returns for it).
TEST(Prompt, MatchesTheSeedByteForByte) {
  const json payload = {
      {"goal", "  Summarize the requested operation.\n"},
      {"instructions", "Return a concise result."},
      {"success_criteria", {{{"id", "done"}, {"description", "A result is returned."}}}},
      {"constraints", {{"network", "runtime-managed"}, {"limits", {{"max", 1.5}, {"ok", true}}}}}};
  EXPECT_EQ(render_prompt(payload),
            "AIOS Online Agent Task\n"
            "\n"
            "Goal:\n"
            "Summarize the requested operation.\n"
            "\n"
            "Instructions:\n"
            "Return a concise result.\n"
            "\n"
            "Success criteria:\n"
            "[{\"description\": \"A result is returned.\", \"id\": \"done\"}]\n"
            "\n"
            "Constraints:\n"
            "{\"limits\": {\"max\": 1.5, \"ok\": true}, \"network\": \"runtime-managed\"}\n"
            "\n"
            "Return the final task result only. Do not claim repository, production, "
            "credential, or control-plane side effects unless they are explicitly represented "
            "in the task payload.");
  // Empty sections are left out, and text inside strings keeps its own ", " and ": ".
  EXPECT_EQ(render_prompt({{"goal", "G"}, {"instructions", ""}, {"constraints", json::object()}}),
            "AIOS Online Agent Task\n\nGoal:\nG\n\nReturn the final task result only. Do not "
            "claim repository, production, credential, or control-plane side effects unless "
            "they are explicitly represented in the task payload.");
  EXPECT_EQ(python_json_dumps({{"a,b", "c:d"}, {"e", {1, "\"x\",y"}}}),
            "{\"a,b\": \"c:d\", \"e\": [1, \"\\\"x\\\",y\"]}");
}

}  // namespace
}  // namespace aios::executor::test
