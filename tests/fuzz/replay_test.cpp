// Replays every committed fuzz input through its target in the normal builds (release and
// ASan): the seed corpus of each target (fuzz/corpus/<target>/) and every input that once was a
// finding (fuzz/regressions/<target>/), so a fixed crash stays fixed without a fuzz build.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_targets.hpp"
#include "support/daemon.hpp"

namespace aios::fuzz {
namespace {

const std::filesystem::path kFuzzDir = std::filesystem::path(AIOS_SOURCE_DIR) / "fuzz";

std::vector<std::filesystem::path> inputs_of(const std::string& folder, std::string_view target) {
  std::vector<std::filesystem::path> out;
  const auto dir = kFuzzDir / folder / target;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().filename() != "README.md") {
      out.push_back(entry.path());
    }
  }
  return out;
}

class FuzzReplayTest : public ::testing::TestWithParam<NamedTarget> {
 protected:
  static void replay(const NamedTarget& target, const std::vector<std::filesystem::path>& inputs) {
    for (const auto& path : inputs) {
      SCOPED_TRACE(path.string());
      const std::string content = test::read_text_file(path);
      // A finding aborts the test binary, naming the input in the trace above.
      EXPECT_EQ(target.run(reinterpret_cast<const std::uint8_t*>(content.data()), content.size()),
                0);
    }
  }
};

TEST_P(FuzzReplayTest, SeedCorpusRunsCleanly) {
  // Given the committed seed corpus of a target, every input should run without a finding.
  const auto inputs = inputs_of("corpus", GetParam().name);
  EXPECT_GE(inputs.size(), 3u) << "a target without a seed corpus";
  replay(GetParam(), inputs);
}

TEST_P(FuzzReplayTest, PastFindingsStayFixed) {
  // Given every input that once crashed a target, none should crash it again.
  replay(GetParam(), inputs_of("regressions", GetParam().name));
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplayTest, ::testing::ValuesIn(kTargets),
                         [](const ::testing::TestParamInfo<NamedTarget>& param_info) {
                           return std::string(param_info.param.name);
                         });

}  // namespace
}  // namespace aios::fuzz
