// The rebind request's validation: every field's rule, the seed's order between them, and the
// values kept (stripped) for the receipt's request digest.
#include <functional>

#include "rebind/seed_fixture.hpp"

namespace aios::rebind_test {
namespace {

struct Case {
  const char* name;
  std::function<void(Json&)> mutate;
  const char* code;
};

const std::string kHexA(64, 'a');

TEST(RebindRequest, EveryRuleHasItsCode) {
  // Given one fault at a time, we should refuse with that field's code (kOk for the controls).
  const std::vector<Case> cases = {
      {"the seed's request", [](Json&) {}, "OK"},
      {"a field missing", [](Json& b) { b.erase("reason"); }, "EXECUTION_REBIND_FIELDS_INVALID"},
      {"a field added", [](Json& b) { b["metadata"] = Json::object(); },
       "EXECUTION_REBIND_FIELDS_INVALID"},
      {"status CLAIMED", [](Json& b) { b["expected_status"] = "CLAIMED"; },
       "EXPECTED_STATUS_INVALID"},
      {"status lower-case", [](Json& b) { b["expected_status"] = "queued"; },
       "EXPECTED_STATUS_INVALID"},
      {"status blank", [](Json& b) { b["expected_status"] = "  "; }, "EXPECTED_STATUS_INVALID"},
      {"status not a string", [](Json& b) { b["expected_status"] = 1; }, "EXPECTED_STATUS_INVALID"},
      {"status padded", [](Json& b) { b["expected_status"] = " QUEUED\n"; }, "OK"},
      {"revision negative", [](Json& b) { b["expected_revision"] = -1; },
       "EXECUTION_REBIND_INTEGER_INVALID"},
      {"revision zero", [](Json& b) { b["expected_revision"] = 0; }, "OK"},
      {"revision a float", [](Json& b) { b["expected_revision"] = 5.0; },
       "EXECUTION_REBIND_INTEGER_INVALID"},
      {"revision a bool", [](Json& b) { b["expected_revision"] = true; },
       "EXECUTION_REBIND_INTEGER_INVALID"},
      {"revision a string", [](Json& b) { b["expected_revision"] = "5"; },
       "EXECUTION_REBIND_INTEGER_INVALID"},
      {"attempt zero", [](Json& b) { b["expected_attempt"] = 0; },
       "EXECUTION_REBIND_INTEGER_INVALID"},
      {"attempt null", [](Json& b) { b["expected_attempt"] = nullptr; },
       "EXECUTION_REBIND_INTEGER_INVALID"},
      {"verification upper-case hex",
       [](Json& b) { b["previous_verification_sha256"] = std::string(64, 'A'); },
       "VERIFICATION_SHA256_INVALID"},
      {"verification short", [](Json& b) { b["previous_verification_sha256"] = "abc"; },
       "VERIFICATION_SHA256_INVALID"},
      {"old digest not a string", [](Json& b) { b["expected_old_execution_digest"] = 1; },
       "OLD_EXECUTION_DIGEST_INVALID"},
      {"old digest 63 hex", [](Json& b) { b["expected_old_execution_digest"] = kHexA.substr(1); },
       "OLD_EXECUTION_DIGEST_INVALID"},
      {"new digest blank", [](Json& b) { b["expected_new_execution_digest"] = ""; },
       "NEW_EXECUTION_DIGEST_INVALID"},
      {"new digest not hex",
       [](Json& b) { b["expected_new_execution_digest"] = std::string(64, 'g'); },
       "NEW_EXECUTION_DIGEST_INVALID"},
      {"old digest == new digest",
       [](Json& b) { b["expected_new_execution_digest"] = b["expected_old_execution_digest"]; },
       "EXECUTION_REBIND_DIGEST_UNCHANGED"},
      {"authorization too short", [](Json& b) { b["authorization_id"] = "owner-1"; },
       "AUTHORIZATION_ID_INVALID"},
      {"authorization with a slash", [](Json& b) { b["authorization_id"] = "owner/rebind-1"; },
       "AUTHORIZATION_ID_INVALID"},
      {"key with a space", [](Json& b) { b["idempotency_key"] = "rebind task a"; },
       "IDEMPOTENCY_KEY_INVALID"},
      {"key 161 characters", [](Json& b) { b["idempotency_key"] = std::string(161, 'k'); },
       "IDEMPOTENCY_KEY_INVALID"},
      {"reason blank", [](Json& b) { b["reason"] = " \t"; }, "EXECUTION_REBIND_REASON_INVALID"},
      {"reason 513 characters", [](Json& b) { b["reason"] = std::string(513, 'r'); },
       "EXECUTION_REBIND_REASON_INVALID"},
      // 512 code points of two bytes each: the limit counts characters, as Python's len().
      {"reason 512 non-ASCII characters",
       [](Json& b) { b["reason"] = envelope_test::repeat("\xC3\xA9", 512); }, "OK"},
  };
  for (const auto& item : cases) {
    SCOPED_TRACE(item.name);
    Json body = request_body();
    item.mutate(body);
    EXPECT_EQ(code_of([&] { ExecutionRebindRequest::from_mapping(body); }), item.code);
  }
}

TEST(RebindRequest, FaultsAreReportedInTheSeedsOrder) {
  // Given several faults at once, we should report the one the seed checks first.
  Json body = request_body();
  body["expected_status"] = "CLAIMED";
  body["expected_revision"] = -1;
  body["reason"] = "";
  EXPECT_EQ(code_of([&] { ExecutionRebindRequest::from_mapping(body); }),
            "EXPECTED_STATUS_INVALID");
  body["expected_status"] = "QUEUED";
  EXPECT_EQ(code_of([&] { ExecutionRebindRequest::from_mapping(body); }),
            "EXECUTION_REBIND_INTEGER_INVALID");
  body["expected_revision"] = 5;
  // Every digest must be a string before any is checked for its shape.
  body["previous_verification_sha256"] = "short";
  body["expected_new_execution_digest"] = 7;
  EXPECT_EQ(code_of([&] { ExecutionRebindRequest::from_mapping(body); }),
            "NEW_EXECUTION_DIGEST_INVALID");
  body["expected_new_execution_digest"] = kHexA;
  EXPECT_EQ(code_of([&] { ExecutionRebindRequest::from_mapping(body); }),
            "VERIFICATION_SHA256_INVALID");
}

TEST(RebindRequest, PublicFormIsTheStrippedRequest) {
  // Given padded strings, we should keep them stripped, so that a padded retry of the same
  // request has the same digest and replays instead of conflicting.
  Json padded = request_body();
  padded["reason"] = "  projection-before-plan race recovery\n";
  padded["idempotency_key"] = " rebind-task-a-v1 ";
  const auto request = ExecutionRebindRequest::from_mapping(padded);
  EXPECT_EQ(request.to_public(), request_body());
  EXPECT_EQ(digest(request.to_public()), digest(request_body()));
}

TEST(RebindRequest, ConfiguredAuthorizationIdIsRequiredAndShaped) {
  // Given the daemon's configuration, we should refuse a blank or malformed id at start-up.
  EXPECT_EQ(code_of([] { require_execution_rebind_authorization_id(""); }),
            "TASK_EXECUTION_REBIND_AUTHORIZATION_ID_MISSING");
  EXPECT_EQ(code_of([] { require_execution_rebind_authorization_id(" \n"); }),
            "TASK_EXECUTION_REBIND_AUTHORIZATION_ID_MISSING");
  EXPECT_EQ(code_of([] { require_execution_rebind_authorization_id("short"); }),
            "TASK_EXECUTION_REBIND_AUTHORIZATION_ID_INVALID");
  EXPECT_EQ(require_execution_rebind_authorization_id(" owner-execution-rebind-20260818\n"),
            kAuthorization);
}

}  // namespace
}  // namespace aios::rebind_test
