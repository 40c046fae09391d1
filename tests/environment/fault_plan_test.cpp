// The crash tests' fault plan (aios/environment.hpp): unarmed points pass, a kill point ends
// the process with SIGKILL, a pause point holds its thread once.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>

#include "aios/environment.hpp"

namespace aios {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Given a plan armed at one phase, every other phase should pass, and that one should kill the
// process with SIGKILL (no handler can run, as with a crash).
TEST(FaultPlanDeathTest, AKillPointEndsTheProcessWithSigkillAndNoOtherPointDoes) {
  const FaultPlan unarmed;
  unarmed.point("scheduler_claim_committed");
  const FaultPlan plan("bridge_ref_moved", "");
  plan.point("scheduler_claim_committed");
  plan.point("bridge_ref");
  EXPECT_EXIT(plan.point("bridge_ref_moved"), ::testing::KilledBySignal(SIGKILL), "");
}

// Given a pause at a phase, the first point there should hold at least the pause and the later
// ones not at all; a phase that only starts with the armed name is not it.
TEST(FaultPlanTest, APausePointHoldsItsThreadOnce) {
  const FaultPlan plan("", "rebind_resolved:1500");
  const auto held = [&](const char* phase) {
    const auto start = steady_clock::now();
    plan.point(phase);
    return steady_clock::now() - start;
  };
  EXPECT_LT(held("rebind"), milliseconds(1500));
  EXPECT_GE(held("rebind_resolved"), milliseconds(1500));
  EXPECT_LT(held("rebind_resolved"), milliseconds(1500));
}

// Given the variables a crash test sets, the plan read from the process environment should be
// armed as they say.
TEST(FaultPlanDeathTest, ThePlanIsReadFromTheProcessEnvironment) {
  ::setenv("AIOS_FAULT_KILL_AT", "executor_start_marked", 1);
  const auto plan = FaultPlan::from_process_environment();
  ::unsetenv("AIOS_FAULT_KILL_AT");
  plan.point("executor_request_accepted");
  EXPECT_EXIT(plan.point("executor_start_marked"), ::testing::KilledBySignal(SIGKILL), "");
}

}  // namespace
}  // namespace aios
