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

// Given names the seed strips and lower-cases with Python's Unicode str.strip() and str.lower(),
// the normalised list should hold the seed's bytes (pinned from Python 3.11): accented letters
// lowered, a final sigma, Unicode spaces stripped, the Kelvin sign folded to k, U+0130 to
// "i\u0307", and a known name behind U+0085 still known.
TEST(CapabilityContract, NamesAreStrippedAndLoweredAsPythonDoes) {
  const auto normalized = [](const char* name) {
    return normalize_required_capabilities(json::array({name}));
  };
  EXPECT_EQ(normalized("\u00c9T\u00c9"), (std::set<std::string>{"exact:\u00e9t\u00e9"}));
  EXPECT_EQ(normalized(" \u2003\u0391\u03a3\u3000"), (std::set<std::string>{"exact:\u03b1\u03c2"}));
  EXPECT_EQ(normalized("\u212aEY"), (std::set<std::string>{"exact:key"}));
  EXPECT_EQ(normalized("\u0130"), (std::set<std::string>{"exact:i\u0307"}));
  EXPECT_EQ(normalized("GIT.READ\u0085"), normalized("git.read"));
  EXPECT_FALSE(normalized("git.read").begin()->starts_with("exact:"));
}

}  // namespace
}  // namespace aios
