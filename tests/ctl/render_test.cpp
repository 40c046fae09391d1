// aiosctl's pure pieces: tables, durations and the exit code of each class of refusal.
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

}  // namespace
}  // namespace aios::ctl
