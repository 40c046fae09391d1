// aiosctl's pure pieces: tables, durations and the exit code of each class of refusal.
#include "ctl/render.hpp"

#include <gtest/gtest.h>

#include "aios/ctl.hpp"

namespace aios::ctl {
namespace {

// Given rows of different widths, we should pad each column to its widest cell, two spaces
// apart, cut cells over the limit with an ellipsis and leave no trailing blanks.
TEST(CtlTable, PadsColumnsAndCutsLongCells) {
  EXPECT_EQ(table({"A", "BB"}, {{"xyz", "1"}, {"q", ""}}), "A    BB\nxyz  1\nq\n");
  EXPECT_EQ(table({"NAME"}, {{"abcdefghij"}}, 5), "NAME\nabcd…\n");
  EXPECT_EQ(table({"É", "X"}, {{"éé", "y"}}), "É   X\néé  y\n");  // widths in code points
}

// Given durations with or without a unit, we should read seconds, and refuse anything else as
// a usage error.
TEST(CtlDuration, ReadsSecondsMinutesHoursAndDays) {
  EXPECT_EQ(seconds_of("3600"), 3600);
  EXPECT_EQ(seconds_of("90s"), 90);
  EXPECT_EQ(seconds_of("15m"), 900);
  EXPECT_EQ(seconds_of("12h"), 43200);
  EXPECT_EQ(seconds_of("30d"), 2592000);
  for (const char* bad : {"", "d", "1w", "-1h", "1.5h", "h1", "9999999999999d"}) {
    EXPECT_THROW(seconds_of(bad), UsageError) << bad;
  }
}

// Given refusals by status, we should map each class to its documented exit code.
TEST(CtlExitCode, FollowsTheApisErrorClasses) {
  EXPECT_EQ(exit_code_of(Error::remote("TASK_NOT_FOUND", 404)), kNotFound);
  EXPECT_EQ(exit_code_of(Error::remote("UNAUTHORIZED", 401)), kNotAllowed);
  EXPECT_EQ(exit_code_of(Error::remote("OWNER_NOT_LOOPBACK", 403)), kNotAllowed);
  EXPECT_EQ(exit_code_of(Error::remote("TASK_REVISION_CONFLICT", 409)), kConflict);
  EXPECT_EQ(exit_code_of(Error::remote("LIMIT_INVALID", 400)), kInvalid);
  EXPECT_EQ(exit_code_of(Error::remote("REQUEST_SIZE_INVALID", 413)), kInvalid);
  EXPECT_EQ(exit_code_of(Error(ErrorCode::HTTP_UPSTREAM_UNAVAILABLE)), kUnavailable);
  EXPECT_EQ(exit_code_of(Error(ErrorCode::HTTP_UPSTREAM_TIMEOUT)), kUnavailable);
  EXPECT_EQ(exit_code_of(Error(ErrorCode::CONTROL_CREDENTIAL_UNAVAILABLE)), kNotAllowed);
  EXPECT_EQ(exit_code_of(Error(ErrorCode::INTERNAL_ERROR)), kFailed);
}

// Given a task whose envelope does not resolve, we should say so with its code above the
// workers; a task that resolves, or an answer without the field, shows the workers alone.
TEST(CtlWhy, SaysWhenTheEnvelopeDoesNotResolve) {
  const nlohmann::json worker = {{"worker_id", "w1"},
                                 {"eligible", false},
                                 {"reasons", {"envelope_unresolved"}},
                                 {"failure_domain", "default"}};
  nlohmann::json answer = {{"task_id", "t1"},
                           {"status", "QUEUED"},
                           {"workers", {worker}},
                           {"envelope", {{"resolves", false}, {"code", "TASK_ENVELOPE_DRIFT"}}}};
  const std::string unresolved = "its envelope does not resolve now: TASK_ENVELOPE_DRIFT";
  EXPECT_NE(eligibility_view(answer).find(unresolved), std::string::npos)
      << eligibility_view(answer);
  answer["envelope"] = {{"resolves", true}};
  EXPECT_EQ(eligibility_view(answer).find("does not resolve"), std::string::npos);
  answer.erase("envelope");
  EXPECT_EQ(eligibility_view(answer).find("does not resolve"), std::string::npos);
}

// Given a task whose result carries the gateway's model usage, the task view should say what
// its model calls used; a result without one shows "-".
TEST(CtlTaskView, ShowsTheModelCallsOfAGatewayRun) {
  nlohmann::json task = {{"task_id", "t1"},
                         {"status", "VERIFYING"},
                         {"result",
                          {{"status", "SUCCEEDED"},
                           {"model_usage",
                            {{"requests", 3},
                             {"input", 30},
                             {"output", 15},
                             {"total", 45},
                             {"unmetered", 0},
                             {"refused", 2},
                             {"bytes_up", 10},
                             {"bytes_down", 20}}}}}};
  EXPECT_NE(task_view(task).find(
                "model calls   3 requests, 45 used (30 in, 15 out), 2 refused, 0 unmetered"),
            std::string::npos)
      << task_view(task);
  task["result"].erase("model_usage");
  EXPECT_NE(task_view(task).find("model calls   -\n"), std::string::npos) << task_view(task);
}

}  // namespace
}  // namespace aios::ctl
