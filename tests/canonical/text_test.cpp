// Expected values were computed with CPython 3.11 running the seed's own code (SENSITIVE_RE,
// _bounded_text, str.strip, slicing, bytes.decode("utf-8", "replace")).

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "aios/canonical.hpp"

namespace {

using namespace std::string_view_literals;

struct TextCase {
  std::string_view input;
  std::string_view expected;
};

std::string repeat(std::string_view piece, std::size_t times) {
  std::string out;
  for (std::size_t i = 0; i < times; ++i) out += piece;
  return out;
}

TEST(SanitizeText, RedactsLikeSensitiveRe) {
  const TextCase cases[] = {
      {"Authorization: Bearer abc.def-123 next"sv, "[REDACTED] next"sv},
      {"authorization=bearer\ttok"sv, "[REDACTED]"sv},
      {"AUTHORIZATION :  BEARER   x y"sv, "[REDACTED] y"sv},
      {"authorization: bearer"sv, "authorization: bearer"sv},
      {"authorization: bearer "sv, "authorization: bearer "sv},
      {"authorization: basic abc"sv, "authorization: basic abc"sv},
      {"authorization bearer abc"sv, "authorization bearer abc"sv},
      {"authorization: bearer password=x"sv, "[REDACTED]"sv},
      {"password=hunter2"sv, "[REDACTED]"sv},
      {"passwd: hunter2 rest"sv, "[REDACTED] rest"sv},
      {"secret = s3cr3t!"sv, "[REDACTED]"sv},
      {"token:abc"sv, "[REDACTED]"sv},
      {"api_key=XYZ"sv, "[REDACTED]"sv},
      {"api-key: XYZ"sv, "[REDACTED]"sv},
      {"apikey=XYZ"sv, "[REDACTED]"sv},
      {"API_KEY =XYZ"sv, "[REDACTED]"sv},
      {"api__key=XYZ"sv, "api__key=XYZ"sv},
      {"PassWord = p"sv, "[REDACTED]"sv},
      {"my_token=abc;next"sv, "my_[REDACTED]"sv},
      {"password="sv, "password="sv},
      {"password:   "sv, "password:   "sv},
      {"password==x"sv, "[REDACTED]"sv},
      {"password: :x"sv, "[REDACTED]"sv},
      {"passwordpassword=x"sv, "password[REDACTED]"sv},
      {"password=a token=b secret:c"sv, "[REDACTED] [REDACTED] [REDACTED]"sv},
      {"token\n=\nvalue\nnext"sv, "[REDACTED]\nnext"sv},
      {"secret\x1c=\x1fv"sv, "[REDACTED]"sv},
      {"no secrets here"sv, "no secrets here"sv},
      {""sv, ""sv},
      // U+212A KELVIN SIGN, U+017F LONG S, U+0130 and U+0131 fold to k, s and i.
      {"to\xE2\x84\xAA"
       "en=abc"sv,
       "[REDACTED]"sv},
      {"pa\xC5\xBF\xC5\xBFword=abc"sv, "[REDACTED]"sv},
      {"\xC4\xB0\xC4\xB1 api\xE2\x84\xAA"
       "ey=1 AP\xC4\xB0_KEY=2 author\xC4\xB1zation: bearer z"sv,
       "\xC4\xB0\xC4\xB1 [REDACTED] [REDACTED] [REDACTED]"sv},
      // Non-ASCII whitespace (U+3000, U+00A0, U+0085) ends a secret; U+200B does not.
      {"password=s3cret\xE3\x80\x80"
       "after"sv,
       "[REDACTED]\xE3\x80\x80"
       "after"sv},
      {"password=s3cret\xC2\xA0"
       "after\xE2\x80\xA8x"sv,
       "[REDACTED]\xC2\xA0"
       "after\xE2\x80\xA8x"sv},
      {"token=\xC3\xA9\xF0\x9F\x98\x80\xC2\x85tail"sv, "[REDACTED]\xC2\x85tail"sv},
      {"Token=abc\xE2\x80\x8B"
       "def"sv,
       "[REDACTED]"sv},
      {"caf\xC3\xA9 secret=\xC3\xA9t\xC3\xA9 fin"sv, "caf\xC3\xA9 [REDACTED] fin"sv},
      {"passwd=\xED\x9F\xBF"sv, "[REDACTED]"sv},
  };
  for (const TextCase& c : cases) {
    EXPECT_EQ(aios::sanitize_text(c.input), c.expected) << "input: " << c.input;
  }
}

TEST(SanitizeText, DecodesInvalidUtf8WithReplacementFirst) {
  EXPECT_EQ(aios::sanitize_text("token=\xff\xfe"sv), "[REDACTED]");
  EXPECT_EQ(aios::sanitize_text("\xffpassword=x \xc3"sv), "\xEF\xBF\xBD[REDACTED] \xEF\xBF\xBD");
}

struct BoundedCase {
  std::string input;
  std::size_t limit;
  std::string_view expected;
};

TEST(BoundedText, MatchesTheSeedByteForByte) {
  const std::string alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  const BoundedCase cases[] = {
      {"hello", 5, "hello"sv},
      {"hello", 100, "hello"sv},
      {"", 0, ""sv},
      // Measured after redaction: 15 input bytes become 10.
      {"password=abcdef", 10, "[REDACTED]"sv},
      {alphabet, 29, "abcde\n...[TRUNCATED]...\n56789"sv},
      {alphabet, 30, "abcde\n...[TRUNCATED]...\n56789"sv},
      {alphabet, 35, "abcdefgh\n...[TRUNCATED]...\n23456789"sv},
      {alphabet, 23, "ab\n...[TRUNCATED]...\n89"sv},
      // (limit - 19) // 2 floors to <= 0, then max(1, ...) keeps one byte each side.
      {alphabet, 22, "a\n...[TRUNCATED]...\n9"sv},
      {alphabet, 21, "a\n...[TRUNCATED]...\n9"sv},
      {alphabet, 20, "a\n...[TRUNCATED]...\n9"sv},
      {alphabet, 19, "a\n...[TRUNCATED]...\n9"sv},
      {alphabet, 18, "a\n...[TRUNCATED]...\n9"sv},
      {"ab", 1, "a\n...[TRUNCATED]...\nb"sv},
      {"ab", 0, "a\n...[TRUNCATED]...\nb"sv},
      {"x", 0, "x\n...[TRUNCATED]...\nx"sv},
      {"\xC3\xA9", 1, "\xEF\xBF\xBD\n...[TRUNCATED]...\n\xEF\xBF\xBD"sv},
      {repeat("\xC3\xA9", 20), 24, "\xC3\xA9\n...[TRUNCATED]...\n\xC3\xA9"sv},
      {repeat("\xC3\xA9", 20), 25,
       "\xC3\xA9\xEF\xBF\xBD\n...[TRUNCATED]...\n\xEF\xBF\xBD\xC3\xA9"sv},
      // A cut 4-byte prefix is one U+FFFD; each orphaned continuation byte is another.
      {repeat("\xF0\x9F\x98\x80", 10), 26,
       "\xEF\xBF\xBD\n...[TRUNCATED]...\n\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {repeat("\xF0\x9F\x98\x80", 10), 27,
       "\xF0\x9F\x98\x80\n...[TRUNCATED]...\n\xF0\x9F\x98\x80"sv},
      {repeat("\xFF", 30), 25, "\xEF\xBF\xBD\n...[TRUNCATED]...\n\xEF\xBF\xBD"sv},
      {repeat("\xE2\x82", 20), 23, "\xEF\xBF\xBD\n...[TRUNCATED]...\n\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"token=" + std::string(40, 'x') + " tail " + std::string(40, 'y'), 40,
       "[REDACTED]\n...[TRUNCATED]...\nyyyyyyyyyy"sv},
  };
  for (const BoundedCase& c : cases) {
    EXPECT_EQ(aios::bounded_text(c.input, c.limit), c.expected)
        << "input: " << c.input << " limit: " << c.limit;
  }
}

TEST(BoundedText, MarkerIsTheSeeds) {
  EXPECT_EQ(aios::kTruncationMarker, "\n...[TRUNCATED]...\n");
}

TEST(PythonStrip, StripsExactlyPythonWhitespace) {
  const TextCase cases[] = {
      {""sv, ""sv},
      {"   "sv, ""sv},
      {"a b"sv, "a b"sv},
      {" \t\n\x0b\x0c\r\x1c\x1d\x1e\x1fx y\x1f "sv, "x y"sv},
      // U+0085 U+00A0 U+1680 U+2000 U+200A U+2028 U+2029 U+202F U+205F U+3000
      {"\xC2\x85\xC2\xA0\xE1\x9A\x80\xE2\x80\x80\xE2\x80\x8A\xE2\x80\xA8\xE2\x80\xA9\xE2\x80\xAF"
       "\xE2\x81\x9F\xE3\x80\x80x\xE3\x80\x80"sv,
       "x"sv},
      // U+200B, U+FEFF and U+180E are not whitespace for Python.
      {"\xE2\x80\x8Bx\xE2\x80\x8B"sv, "\xE2\x80\x8Bx\xE2\x80\x8B"sv},
      {"\xEF\xBB\xBFx"sv, "\xEF\xBB\xBFx"sv},
      {"\xE1\xA0\x8Ex"sv, "\xE1\xA0\x8Ex"sv},
      {"\xC3\xA9 "sv, "\xC3\xA9"sv},
      {"\x00 "sv, "\x00"sv},
      // Invalid bytes are kept and never count as whitespace.
      {"\xFF \xFF"sv, "\xFF \xFF"sv},
      {" \xE2\x82 "sv, "\xE2\x82"sv},
  };
  for (const TextCase& c : cases) EXPECT_EQ(aios::python_strip(c.input), c.expected);
}

TEST(PythonStrip, ReturnsAViewIntoTheInput) {
  const std::string_view text = "  x  ";
  EXPECT_EQ(aios::python_strip(text).data(), text.data() + 2);
}

TEST(IsPythonSpace, MatchesStrIsspace) {
  std::string spaces;
  for (char32_t c = 0; c < 0x110000; ++c) {
    if (aios::utf8::is_python_space(c)) spaces += std::to_string(c) + ",";
  }
  // [c for c in range(0x110000) if chr(c).isspace()]
  EXPECT_EQ(spaces,
            "9,10,11,12,13,28,29,30,31,32,133,160,5760,8192,8193,8194,8195,8196,8197,8198,8199,"
            "8200,8201,8202,8232,8233,8239,8287,12288,");
}

TEST(PrefixCodePoints, SlicesLikePython) {
  const std::string_view text = "h\xC3\xA9llo\xF0\x9F\x98\x80x";
  EXPECT_EQ(aios::prefix_code_points(text, 0), "");
  EXPECT_EQ(aios::prefix_code_points(text, 1), "h");
  EXPECT_EQ(aios::prefix_code_points(text, 2), "h\xC3\xA9");
  EXPECT_EQ(aios::prefix_code_points(text, 6), "h\xC3\xA9llo\xF0\x9F\x98\x80");
  EXPECT_EQ(aios::prefix_code_points(text, 7), text);
  EXPECT_EQ(aios::prefix_code_points(text, 100), text);
  EXPECT_EQ(aios::prefix_code_points("", 3), "");
  // Invalid input cuts where Python would cut the decoded text: one U+FFFD per subpart.
  EXPECT_EQ(aios::prefix_code_points("\xE2\x82"
                                     "AB"sv,
                                     1),
            "\xE2\x82");
  EXPECT_EQ(aios::prefix_code_points("\x80\x80"sv, 1), "\x80");
}

TEST(CountCodePoints, CountsLikeLenOfTheDecodedText) {
  EXPECT_EQ(aios::count_code_points(""), 0u);
  EXPECT_EQ(aios::count_code_points("abc"), 3u);
  EXPECT_EQ(aios::count_code_points("h\xC3\xA9llo\xF0\x9F\x98\x80"), 6u);
  EXPECT_EQ(aios::count_code_points("\xE2\x80\xA8\xF4\x8F\xBF\xBF"), 2u);
  EXPECT_EQ(aios::count_code_points("a\0b"sv), 3u);
  EXPECT_EQ(aios::count_code_points("\xE2\x82"
                                    "A"),
            2u);
  EXPECT_EQ(aios::count_code_points("\xF0\x9F\x98"), 1u);
  EXPECT_EQ(aios::count_code_points("\xED\xA0\x80"), 3u);
}

TEST(DecodeReplace, MatchesCPython) {
  const TextCase cases[] = {
      {"plain"sv, "plain"sv},
      {"\x00\x7F"sv, "\x00\x7F"sv},
      {"\xC3\xA9\xF0\x9F\x98\x80"sv, "\xC3\xA9\xF0\x9F\x98\x80"sv},
      {"\x80"sv, "\xEF\xBF\xBD"sv},
      {"\x80\x80\xBF"sv, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"\xC0\xAF"sv, "\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"\xC1\xBF"sv, "\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"\xC2"sv, "\xEF\xBF\xBD"sv},
      {"\xC2"
       "A"sv,
       "\xEF\xBF\xBD"
       "A"sv},
      {"\xE0\x80\x80"sv, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"\xE0\xA0"sv, "\xEF\xBF\xBD"sv},
      {"\xE0\xA0\x80"sv, "\xE0\xA0\x80"sv},
      {"\xE2\x82"sv, "\xEF\xBF\xBD"sv},
      {"\xE2\x82\n"sv, "\xEF\xBF\xBD\n"sv},
      {"\xE2\x82\xE2\x82\xAC"sv, "\xEF\xBF\xBD\xE2\x82\xAC"sv},
      {"\xED\xA0\x80"sv, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"\xED\xBF\xBF"sv, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"\xED\x9F\xBF"sv, "\xED\x9F\xBF"sv},
      {"\xEF\xBF\xBF"sv, "\xEF\xBF\xBF"sv},
      {"\xF0\x80\x80\x80"sv, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"\xF0\x8F\xBF\xBF"sv, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"\xF0\x9F\x98"sv, "\xEF\xBF\xBD"sv},
      {"\xF0\x9F\x98"
       "A"sv,
       "\xEF\xBF\xBD"
       "A"sv},
      {"\xF0\x9F"sv, "\xEF\xBF\xBD"sv},
      {"\xF4\x8F\xBF\xBF"sv, "\xF4\x8F\xBF\xBF"sv},
      {"\xF4\x90\x80\x80"sv, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"\xF5\x80\x80\x80"sv, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"\xF8\x88\x80\x80\x80"sv, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"\xFE\xFF"sv, "\xEF\xBF\xBD\xEF\xBF\xBD"sv},
      {"a\xFF"
       "b\xC3"sv,
       "a\xEF\xBF\xBD"
       "b\xEF\xBF\xBD"sv},
  };
  for (const TextCase& c : cases) EXPECT_EQ(aios::utf8::decode_replace(c.input), c.expected);
}

TEST(Utf8Decode, ReportsCodePointAndLength) {
  const auto d = aios::utf8::decode("x\xF0\x9F\x98\x80"sv, 1);
  EXPECT_TRUE(d.valid);
  EXPECT_EQ(d.code_point, U'\U0001F600');
  EXPECT_EQ(d.length, 4u);
  const auto bad = aios::utf8::decode(
      "\xF0\x9F\x98"
      "A"sv,
      0);
  EXPECT_FALSE(bad.valid);
  EXPECT_EQ(bad.code_point, aios::utf8::kReplacement);
  EXPECT_EQ(bad.length, 3u);
}

TEST(Utf8Append, EncodesEveryLength) {
  std::string out;
  for (const char32_t c : {U'A', U'\u00E9', U'\u20AC', U'\U0010FFFF'}) aios::utf8::append(out, c);
  EXPECT_EQ(out, "A\xC3\xA9\xE2\x82\xAC\xF4\x8F\xBF\xBF");
}

}  // namespace
