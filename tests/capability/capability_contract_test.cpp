// Port of the seed's tests/test_agent_runtime_capability_contract.py.
#include <gtest/gtest.h>

#include "aios/capability.hpp"

namespace aios {
namespace {

using nlohmann::json;

class RuntimeCapability : public ::testing::TestWithParam<const char*> {};

// Given an agent runtime capability, both vocabularies should know it and it should grant itself.
TEST_P(RuntimeCapability, IsKnownToTaskAndWorkerVocabulary) {
  const std::string capability = std::string("agent.runtime.") + GetParam();
  const std::set<std::string> expected = {capability};
  EXPECT_EQ(normalize_required_capabilities(json::array({capability})), expected);
  EXPECT_EQ(normalize_worker_capabilities(json::array({capability})), expected);
  EXPECT_TRUE(has_capabilities(json::array({capability}), json::array({capability})));
}

INSTANTIATE_TEST_SUITE_P(Runtimes, RuntimeCapability, ::testing::Values("hermes", "openclaw"));

// Given one runtime's worker, we should never hand it the other runtime's task.
TEST(CapabilityContract, RuntimeCapabilitiesAreIsolatedBetweenWorkers) {
  EXPECT_FALSE(has_capabilities(json::array({"agent.runtime.hermes"}),
                                json::array({"agent.runtime.openclaw"})));
  EXPECT_FALSE(has_capabilities(json::array({"agent.runtime.openclaw"}),
                                json::array({"agent.runtime.hermes"})));
}

// Given an unknown runtime requirement, we should stay fail-closed.
TEST(CapabilityContract, UnknownRuntimeCapabilityRemainsFailClosed) {
  EXPECT_FALSE(has_capabilities(json::array({"agent.runtime.hermes"}),
                                json::array({"agent.runtime.unknown"})));
}

}  // namespace
}  // namespace aios
