// parse_json: the bounded reader every JSON entry point goes through.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "aios/canonical.hpp"
#include "aios/error.hpp"

namespace aios {
namespace {

std::string arrays(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

std::string refusal(const std::string& text, std::size_t max_depth = kMaxJsonDepth) {
  try {
    parse_json(text, max_depth);
  } catch (const Error& error) {
    return error.code();
  }
  return "";
}

std::string refusal_of_canonical(const nlohmann::json& value) {
  try {
    canonical_json(value);
  } catch (const Error& error) {
    return error.code();
  }
  return "";
}

TEST(ParseJson, ReadsDocumentsNestedUpToTheBound) {
  // Given arrays and objects nested exactly kMaxJsonDepth deep, the document should parse.
  const auto value = parse_json(arrays(kMaxJsonDepth));
  ASSERT_TRUE(value.is_array());
  std::string objects;
  for (std::size_t i = 0; i < kMaxJsonDepth; ++i) objects += R"({"k":)";
  objects += "1" + std::string(kMaxJsonDepth, '}');
  EXPECT_TRUE(parse_json(objects).is_object());
}

TEST(ParseJson, RefusesOneLevelPastTheBoundAndFarDeeperWithoutBuildingIt) {
  // Given one level too many, 10^5 and 10^6 levels (arrays, objects, mixed), we should throw
  // JSON_NESTING_TOO_DEEP; the deep ones would overflow the stack if a tree were built and copied.
  for (const std::size_t depth : {kMaxJsonDepth + 1, std::size_t{100000}, std::size_t{1000000}}) {
    EXPECT_EQ(refusal(arrays(depth)), "JSON_NESTING_TOO_DEEP") << depth;
    std::string mixed;
    for (std::size_t i = 0; i < depth; ++i) mixed += i % 2 == 0 ? R"({"a":)" : "[";
    EXPECT_EQ(refusal(mixed), "JSON_NESTING_TOO_DEEP") << depth;
  }
  // An unterminated deep prefix is refused the same way, before the parser sees it.
  EXPECT_EQ(refusal(std::string(200000, '[')), "JSON_NESTING_TOO_DEEP");
}

TEST(ParseJson, BracketsInsideStringsDoNotCount) {
  // Given brackets, escaped quotes and backslashes inside strings, only real nesting counts.
  const std::string text = R"({"a":")" + std::string(1000, '[') + R"(\"[[[\\","b":[1]})";
  const auto value = parse_json(text);
  ASSERT_TRUE(value.is_object());
  EXPECT_EQ(value.at("a").get<std::string>().size(), 1000u + 5u);
  EXPECT_EQ(value.at("b"), nlohmann::json::array({1}));
  EXPECT_EQ(refusal(R"(["\\")" + std::string(kMaxJsonDepth, '[')), "JSON_NESTING_TOO_DEEP");
}

TEST(ParseJson, TextThatIsNotJsonIsDiscarded) {
  // Given text that is not JSON, we should get a discarded value, not an exception.
  for (const std::string text : {"", "{", "[1,", "nul", "{\"a\":1}}", "\"unterminated"}) {
    EXPECT_TRUE(parse_json(text).is_discarded()) << text;
  }
}

// Python's json.loads keeps an integer of any size exactly; each case pins what
// json.dumps(json.loads(text), sort_keys=True, separators=(",", ":")) gives for it.
TEST(ParseJson, IntegersPast64BitsAreKeptExactlyAsPythonKeepsThem) {
  const std::string many_digits = "1" + std::string(4299, '0');
  const struct {
    std::string text;
    std::string canonical;
  } cases[] = {
      {"18446744073709551616", "18446744073709551616"},  // 2**64
      {"-9223372036854775809", "-9223372036854775809"},  // -(2**63) - 1
      {"[18446744073709551615,-9223372036854775808]",    // still 64-bit: plain numbers
       "[18446744073709551615,-9223372036854775808]"},
      {R"({"b":1e2,"a":123456789012345678901234567890})",
       R"({"a":123456789012345678901234567890,"b":100.0})"},
      {"18446744073709551616.0", "1.8446744073709552e+19"},  // a float literal stays a float
      {"-0", "0"},
      {many_digits, many_digits},
      {"-" + many_digits, "-" + many_digits},
  };
  for (const auto& c : cases) {
    const auto value = parse_json(c.text);
    ASSERT_FALSE(value.is_discarded()) << c.text.substr(0, 40);
    EXPECT_EQ(canonical_json(value), c.canonical) << c.text.substr(0, 40);
  }
  EXPECT_EQ(exact_integer_text(parse_json("18446744073709551616")), "18446744073709551616");
  EXPECT_EQ(exact_integer_text(parse_json("18446744073709551615")), std::nullopt);
  EXPECT_EQ(exact_integer_text(parse_json("\"18446744073709551616\"")), std::nullopt);
  // Equal literals compare equal and unequal ones do not, as Python ints do.
  EXPECT_EQ(parse_json("[100000000000000000000]"), parse_json("[100000000000000000000]"));
  EXPECT_NE(parse_json("100000000000000000000"), parse_json("100000000000000000001"));
}

TEST(ParseJson, AnIntegerPastPythonsDigitLimitIsNotJson) {
  // Given 4301 digits, Python 3.11's json.loads raises ValueError (int_max_str_digits); we should
  // read no value either, with or without a sign, however deep it sits.
  const std::string too_many = "1" + std::string(4300, '0');
  for (const std::string& text : {too_many, "-" + too_many, R"({"a":[)" + too_many + "]}"}) {
    EXPECT_TRUE(parse_json(text).is_discarded()) << text.size();
  }
}

TEST(ParseJson, ABinaryValueBuiltInCodeIsNotAnInteger) {
  // Only parse_json makes exact integers; any other binary still has no canonical form.
  EXPECT_EQ(exact_integer_text(nlohmann::json::binary({'1', '2'})), std::nullopt);
  EXPECT_EQ(refusal_of_canonical(nlohmann::json::binary({'1', '2'}, 7)), "CANONICAL_JSON_INVALID");
}

TEST(ParseJson, ASmallerBoundIsHonoured) {
  EXPECT_TRUE(parse_json("[[1]]", 2).is_array());
  EXPECT_EQ(refusal("[[[1]]]", 2), "JSON_NESTING_TOO_DEEP");
}

}  // namespace
}  // namespace aios
