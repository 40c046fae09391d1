// aios::python_lower against Python's own str.lower(): cases pinned from Python 3.11, text
// generated and lowered by this machine's python3 at test time, and the generated table checked
// against the interpreter (scripts/gen-python-lower.py --check).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "aios/canonical.hpp"
#include "support/run_command.hpp"

namespace {

using nlohmann::json;

// [input, Python 3.11's input.lower()], as printed by python3 -c 'json.dumps(...)'.
constexpr const char* kPinned = R"([
  ["\u00c9T\u00c9", "\u00e9t\u00e9"], ["\u0391\u03a3", "\u03b1\u03c2"],
  ["\u0391\u03a3 \u0391", "\u03b1\u03c2 \u03b1"], ["\u03a3", "\u03c3"],
  ["\u03a3\u0391", "\u03c3\u03b1"], ["\u0391.\u03a3", "\u03b1.\u03c2"],
  ["\u0391\u03a3.", "\u03b1\u03c2."], ["\u0391\u0345\u03a3", "\u03b1\u0345\u03c2"],
  ["\u0391\u00ad\u03a3\u00ad", "\u03b1\u00ad\u03c2\u00ad"], ["\u0130", "i\u0307"],
  ["\u212a", "k"], ["\u041f\u0420\u0418\u0412\u0415\u0422", "\u043f\u0440\u0438\u0432\u0435\u0442"],
  ["\u01c5", "\u01c6"], ["\u038c\u03a3\u039f\u03a3", "\u03cc\u03c3\u03bf\u03c2"],
  ["\u0391\u03a3\u0301\u0392", "\u03b1\u03c3\u0301\u03b2"], ["\u00df", "\u00df"],
  ["\u1e9e", "\u00df"], ["\u216b", "\u217b"], ["\u24b6", "\u24d0"],
  ["\ud801\udc00", "\ud801\udc28"], ["\u0391\u03a3\u03a3", "\u03b1\u03c3\u03c2"],
  ["GIT.READ", "git.read"], ["", ""]
])";

// Given the cases the issue names (accented Latin, Greek with the final-sigma rule around
// case-ignorable marks and punctuation, Cyrillic, U+0130, the Kelvin sign, titlecase digraphs,
// letter-like symbols, a supplementary-plane letter), python_lower should give Python's bytes.
TEST(PythonLower, GivesPythonsResultOnPinnedCases) {
  for (const auto& pair : json::parse(kPinned)) {
    EXPECT_EQ(aios::python_lower(pair[0].get<std::string>()), pair[1].get<std::string>())
        << pair.dump();
  }
}

// Given bytes that are not UTF-8, they should be kept as they are around what is lowered.
TEST(PythonLower, KeepsBytesThatAreNotUtf8) {
  EXPECT_EQ(aios::python_lower("A\xff\xfe"
                               "B"),
            "a\xff\xfe"
            "b");
  EXPECT_EQ(aios::python_lower("\xce\xa3\xff"), "\xcf\x83\xff");
}

// Given 20,000 strings of up to eight code points drawn from cased letters, case-ignorable
// marks, capital sigma, spaces and all of Unicode (a fixed seed), lowered by this machine's
// python3, python_lower should agree on every one.
TEST(PythonLower, AgreesWithThisPythonOnGeneratedText) {
  const char* script = R"PY(
import json, random, sys
random.seed(20261202)
pools = [
    [chr(c) for c in range(0x41, 0x5b)] + ["\u03a3", "\u0391", "\u0130", "\u212a", "\u01c5"],
    ["\u0301", "\u0345", "\u00ad", ".", "'", ":", "\u02b0", "\u200d"],
    [" ", "\u2003", "x", "1"],
]
def draw():
    if random.random() < 0.3:
        c = random.randrange(0x110000)
        while 0xd800 <= c <= 0xdfff:
            c = random.randrange(0x110000)
        return chr(c)
    return random.choice(random.choice(pools))
cases = ["".join(draw() for _ in range(random.randrange(1, 9))) for _ in range(20000)]
json.dump([[c, c.lower()] for c in cases], sys.stdout)
)PY";
  const auto result =
      aios::test::run_command("/usr/bin/python3 - <<'PY'\n" + std::string(script) + "\nPY\n");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto cases = json::parse(result.output);
  ASSERT_EQ(cases.size(), 20000U);
  int mismatches = 0;
  for (const auto& pair : cases) {
    const auto ours = aios::python_lower(pair[0].get<std::string>());
    if (ours != pair[1].get<std::string>() && ++mismatches <= 10) {
      ADD_FAILURE() << json(pair[0]).dump() << " -> ours " << json(ours).dump() << ", Python's "
                    << pair[1].dump();
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// The checked-in table is what scripts/gen-python-lower.py writes from this python3.
TEST(PythonLower, TheTableIsThisPythonsTable) {
  const auto result = aios::test::run_command("/usr/bin/python3 " AIOS_SOURCE_DIR
                                              "/scripts/gen-python-lower.py --check");
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

}  // namespace
