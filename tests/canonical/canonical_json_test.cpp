#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/error.hpp"

namespace {

using nlohmann::json;
using namespace std::string_view_literals;

// Runs `f` and returns the wire code of the aios::Error it throws, or "" when it returns.
template <typename F>
std::string thrown_code(F&& f) {
  try {
    f();
  } catch (const aios::Error& e) {
    return e.code();
  }
  return "";
}

struct FloatCase {
  double value;
  std::string_view python_repr;
};

// Expected strings are Python 3.11's repr() of the same literal.
TEST(CanonicalJson, FloatsAreWrittenAsPythonRepr) {
  const FloatCase cases[] = {
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {1.0, "1.0"},
      {-1.0, "-1.0"},
      {0.1, "0.1"},
      {0.1 + 0.2, "0.30000000000000004"},
      {1.5, "1.5"},
      {0.5, "0.5"},
      {100.0, "100.0"},
      {123.456, "123.456"},
      {123456789.125, "123456789.125"},
      {1e15, "1000000000000000.0"},
      {9999999999999998.0, "9999999999999998.0"},
      {1e16, "1e+16"},
      {1e17, "1e+17"},
      {1e21, "1e+21"},
      {1e22, "1e+22"},
      {1e23, "1e+23"},
      {9007199254740992.0, "9007199254740992.0"},
      {9007199254740994.0, "9007199254740994.0"},
      {12345678901234567.0, "1.2345678901234568e+16"},
      {1234567890123456.7, "1234567890123456.8"},
      {0.001, "0.001"},
      {0.0001, "0.0001"},
      {0.00012345, "0.00012345"},
      {1e-05, "1e-05"},
      {9.9e-05, "9.9e-05"},
      {1.5e-07, "1.5e-07"},
      {-1.2345e-10, "-1.2345e-10"},
      {1e100, "1e+100"},
      {1e-100, "1e-100"},
      {2.5e-308, "2.5e-308"},
      {2.2250738585072014e-308, "2.2250738585072014e-308"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {1.0 / 3.0, "0.3333333333333333"},
  };
  for (const FloatCase& c : cases) {
    EXPECT_EQ(aios::canonical_json(json(c.value)), c.python_repr) << "expected " << c.python_repr;
  }
}

TEST(CanonicalJson, NonFiniteFloatsAreRefused) {
  const double non_finite[] = {std::numeric_limits<double>::quiet_NaN(),
                               std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity()};
  for (const double value : non_finite) {
    EXPECT_EQ(thrown_code([&] { aios::canonical_json(json(value)); }), "CANONICAL_JSON_INVALID");
    EXPECT_EQ(thrown_code([&] {
                aios::digest(json{{"a", {1, value}}});
              }),
              "CANONICAL_JSON_INVALID");
  }
}

TEST(CanonicalJson, BinaryValuesAreRefused) {
  const json binary = json::binary({1, 2, 3});
  EXPECT_EQ(thrown_code([&] { aios::canonical_json(binary); }), "CANONICAL_JSON_INVALID");
  EXPECT_EQ(thrown_code([&] {
              aios::canonical_json(json::array({1, binary}));
            }),
            "CANONICAL_JSON_INVALID");
}

// A Python str cannot hold these, so there is no canonical form to agree with.
TEST(CanonicalJson, InvalidUtf8IsRefusedInValuesAndKeys) {
  for (const std::string_view bad : {"\xff"sv, "a\xc3"sv, "\xed\xa0\x80"sv, "\xc0\xaf"sv}) {
    EXPECT_EQ(thrown_code([&] { aios::canonical_json(json(std::string(bad))); }),
              "CANONICAL_JSON_INVALID");
    EXPECT_EQ(thrown_code([&] {
                aios::canonical_json(json{{std::string(bad), 1}});
              }),
              "CANONICAL_JSON_INVALID");
  }
}

json nested_arrays(int depth) {
  json value = json::array();
  for (int i = 1; i < depth; ++i) value = json::array({std::move(value)});
  return value;
}

TEST(CanonicalJson, NestingDeeperThanPythonCanWriteIsRefused) {
  EXPECT_EQ(aios::canonical_json(nested_arrays(1000)).size(), 2000u);
  EXPECT_EQ(thrown_code([] { aios::canonical_json(nested_arrays(1001)); }),
            "CANONICAL_JSON_INVALID");
}

TEST(CanonicalJson, IntegersCoverTheFull64BitRange) {
  EXPECT_EQ(aios::canonical_json(json(std::numeric_limits<std::int64_t>::min())),
            "-9223372036854775808");
  EXPECT_EQ(aios::canonical_json(json(std::numeric_limits<std::int64_t>::max())),
            "9223372036854775807");
  EXPECT_EQ(aios::canonical_json(json(std::numeric_limits<std::uint64_t>::max())),
            "18446744073709551615");
  EXPECT_EQ(aios::canonical_json(json(0)), "0");
  EXPECT_EQ(aios::canonical_json(json(-7)), "-7");
}

TEST(CanonicalJson, ScalarsAndEmptyContainers) {
  EXPECT_EQ(aios::canonical_json(json(nullptr)), "null");
  EXPECT_EQ(aios::canonical_json(json(true)), "true");
  EXPECT_EQ(aios::canonical_json(json(false)), "false");
  EXPECT_EQ(aios::canonical_json(json::object()), "{}");
  EXPECT_EQ(aios::canonical_json(json::array()), "[]");
  EXPECT_EQ(aios::canonical_json(json("")), "\"\"");
}

TEST(CanonicalJson, StringsEscapeOnlyWhatPythonEscapes) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"\"\\"sv, R"("\"\\")"sv},
      {"\b\f\n\r\t"sv, R"("\b\f\n\r\t")"sv},
      {"\x00\x01\x0b\x1f"sv, R"("\u0000\u0001\u000b\u001f")"sv},
      {"/\x7f"sv, "\"/\x7f\""sv},
      {"\xe2\x80\xa8\xe2\x80\xa9"sv, "\"\xe2\x80\xa8\xe2\x80\xa9\""sv},
      {"\xf4\x8f\xbf\xbf\xf0\x9f\x98\x80"sv, "\"\xf4\x8f\xbf\xbf\xf0\x9f\x98\x80\""sv},
      {"plain text"sv, "\"plain text\""sv},
  };
  for (const auto& [input, expected] : cases) {
    EXPECT_EQ(aios::canonical_json(json(std::string(input))), expected);
  }
}

TEST(CanonicalJson, ObjectsSortKeysByCodePointWithoutSpaces) {
  const json value = {{"\xc3\xa9", 1},
                      {"e\xcc\x81", 2},
                      {"B", 3},
                      {"a", 4},
                      {"\xef\xbf\xbf", 5},
                      {"\xf0\x9f\x98\x80", 6},
                      {"", {{"z", nullptr}, {"y", json::array()}}}};
  EXPECT_EQ(aios::canonical_json(value),
            "{\"\":{\"y\":[],\"z\":null},\"B\":3,\"a\":4,\"e\xcc\x81\":2,\"\xc3\xa9\":1,"
            "\"\xef\xbf\xbf\":5,\"\xf0\x9f\x98\x80\":6}");
  EXPECT_EQ(aios::canonical_json(json::array({1, "x", json::array({true}), 1.5})),
            "[1,\"x\",[true],1.5]");
}

TEST(Digest, IsSha256OfTheCanonicalBytes) {
  const json value = {{"b", 1}, {"a", json::array({"x", 2.5})}};
  EXPECT_EQ(aios::digest(value), aios::sha256_hex(R"({"a":["x",2.5],"b":1})"));
  // Python: hashlib.sha256(b'{"a":["x",2.5],"b":1}').hexdigest()
  EXPECT_EQ(aios::digest(value),
            "ca15487de1c8492116c702b9da39c673fc6faefc7e299e27fa6d96403dfa27fe");
}

TEST(Sha256Hex, KnownVectors) {
  EXPECT_EQ(aios::sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(aios::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(aios::sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(aios::sha256_hex("a\0b"sv),
            "59b271ae1bbcb1d31d41929817f4b16fb439eb4f31520b5ad1d5ce98920a7138");
}

TEST(Sha256, FedInPiecesEqualsTheWholeDigest) {
  aios::Sha256 nothing;
  EXPECT_EQ(nothing.finish(), aios::sha256_hex(""));
  aios::Sha256 pieces;
  for (int i = 0; i < 1000; ++i) pieces.update(std::string(1000, 'a'));
  EXPECT_EQ(pieces.finish(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  aios::Sha256 split;
  split.update("a\0"sv);
  split.update("");
  split.update("b");
  EXPECT_EQ(split.finish(), aios::sha256_hex("a\0b"sv));
}

TEST(IsSha256Hex, AcceptsOnlySixtyFourLowerCaseHexDigits) {
  const std::string good = aios::sha256_hex("abc");
  EXPECT_TRUE(aios::is_sha256_hex(good));
  EXPECT_TRUE(aios::is_sha256_hex(std::string(64, '0')));
  EXPECT_TRUE(aios::is_sha256_hex(std::string(64, 'f')));
  EXPECT_FALSE(aios::is_sha256_hex(""));
  EXPECT_FALSE(aios::is_sha256_hex(good.substr(1)));
  EXPECT_FALSE(aios::is_sha256_hex(good + "0"));
  EXPECT_FALSE(aios::is_sha256_hex(std::string(64, 'A')));
  EXPECT_FALSE(aios::is_sha256_hex(std::string(63, 'a') + "g"));
  EXPECT_FALSE(aios::is_sha256_hex(std::string(63, 'a') + " "));
  EXPECT_FALSE(aios::is_sha256_hex(std::string(63, 'a') + '\0'));
}

TEST(ConstantTimeEqual, ComparesWholeContents) {
  EXPECT_TRUE(aios::constant_time_equal("", ""));
  EXPECT_TRUE(aios::constant_time_equal("secret", "secret"));
  EXPECT_TRUE(aios::constant_time_equal("a\0b"sv, "a\0b"sv));
  EXPECT_FALSE(aios::constant_time_equal("secret", "Secret"));
  EXPECT_FALSE(aios::constant_time_equal("secret", "secreT"));
  EXPECT_FALSE(aios::constant_time_equal("a\0b"sv, "a\0c"sv));
  EXPECT_FALSE(aios::constant_time_equal("secret", "secret "));
  EXPECT_FALSE(aios::constant_time_equal("", "x"));
}

}  // namespace
