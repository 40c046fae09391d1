// parse_json: the bounded reader every JSON entry point goes through.
#include <gtest/gtest.h>

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

TEST(ParseJson, ASmallerBoundIsHonoured) {
  EXPECT_TRUE(parse_json("[[1]]", 2).is_array());
  EXPECT_EQ(refusal("[[[1]]]", 2), "JSON_NESTING_TOO_DEEP");
}

}  // namespace
}  // namespace aios
