// aios::python_int against Python's own int(str): cases pinned from Python 3.11, and every
// Unicode decimal digit plus generated spellings parsed by this machine's python3 at test time.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "aios/canonical.hpp"
#include "support/run_command.hpp"

namespace {

using nlohmann::json;

// Given the spellings int() accepts and refuses, python_int should decide as Python 3.11 does
// (each expectation is what int(text) returned or that it raised ValueError).
TEST(PythonInt, DecidesAsPythonOnPinnedCases) {
  const struct {
    const char* text;
    std::optional<long long> value;
  } cases[] = {
      {"60", 60},
      {" 60\n", 60},
      {"+5", 5},
      {"-0007", -7},
      {"1_0", 10},
      {"0000000000000000000060", 60},
      {"\xD9\xA3", 3},
      {"\xEF\xBC\x96\xEF\xBC\x90", 60},  // Arabic-Indic 3, fullwidth 60
      {"\xC2\xA0"
       "12\xE3\x80\x80",
       12},  // NBSP and ideographic space around
      {"1__0", std::nullopt},
      {"_1", std::nullopt},
      {"1_", std::nullopt},
      {"+-1", std::nullopt},
      {"", std::nullopt},
      {"+", std::nullopt},
      {" ", std::nullopt},
      {"0x10", std::nullopt},
      {"1 0", std::nullopt},
      {"1.5", std::nullopt},
      {"\xC2\xB2", std::nullopt},  // superscript two: a digit, not decimal
      {"99999999999999999999999", 1'000'000'000'000'000'000LL},  // saturated past 10^18
  };
  for (const auto& c : cases) {
    EXPECT_EQ(aios::python_int(c.text), c.value) << json(c.text).dump();
  }
}

// Given every Unicode decimal digit alone and in generated spellings (signs, underscores,
// whitespace, letters, other digits), python_int should agree with this python3's int().
TEST(PythonInt, AgreesWithThisPythonOnEveryDigitAndGeneratedText) {
  const char* script = R"PY(
import json, random, sys, unicodedata
random.seed(20261202)
digits = [chr(c) for c in range(0x110000) if unicodedata.decimal(chr(c), -1) >= 0]
others = [" ", "\u2003", "_", "__", "+", "-", "a", "\u00b2", "\u2460", ".", "0", "9"]
cases = list(digits)
for _ in range(5000):
    parts = [random.choice(digits if random.random() < 0.6 else others)
             for _ in range(random.randrange(1, 7))]
    cases.append("".join(parts))
def value(text):
    try:
        n = int(text)
    except ValueError:
        return None
    return max(-10**18, min(10**18, n))
json.dump([[c, value(c)] for c in cases], sys.stdout)
)PY";
  const auto result =
      aios::test::run_command("/usr/bin/python3 - <<'PY'\n" + std::string(script) + "\nPY\n");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto cases = json::parse(result.output);
  ASSERT_EQ(cases.size(), 660U + 5000U);
  int mismatches = 0;
  for (const auto& pair : cases) {
    const auto ours = aios::python_int(pair[0].get<std::string>());
    const std::optional<long long> python =
        pair[1].is_null() ? std::nullopt : std::optional<long long>(pair[1].get<long long>());
    if (ours != python && ++mismatches <= 10) {
      ADD_FAILURE() << pair.dump() << " -> ours " << (ours ? std::to_string(*ours) : "ValueError");
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
