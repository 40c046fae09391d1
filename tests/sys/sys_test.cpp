// The operating-system seams: ISO-8601 times as the seed's Python writes them, random hex from
// the CSPRNG, and credential files read the way load_control_token does.

#include "aios/sys.hpp"

#include <sys/stat.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

using std::chrono::microseconds;

TimePoint at(std::int64_t epoch_micros) {
  return TimePoint(microseconds(epoch_micros));
}

std::int64_t micros_of(TimePoint t) {
  return std::chrono::duration_cast<microseconds>(t.time_since_epoch()).count();
}

TEST(Iso8601Test, FormatIsPythonIsoformatWithMicroseconds) {
  // Given UTC times, we should write Python's isoformat() of an aware datetime, always with six
  // fraction digits and +00:00.
  struct Case {
    std::int64_t micros;
    std::string text;
  };
  const std::vector<Case> cases = {
      {0, "1970-01-01T00:00:00.000000+00:00"},
      {1796018923123456, "2026-11-30T06:08:43.123456+00:00"},
      {4070908800000000, "2099-01-01T00:00:00.000000+00:00"},
      {951782400000001, "2000-02-29T00:00:00.000001+00:00"},
      {-1, "1969-12-31T23:59:59.999999+00:00"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(format_iso8601(at(c.micros)), c.text) << c.micros;
  }
}

TEST(Iso8601Test, ParseAcceptsEveryPythonUtcForm) {
  // Given the forms Python and the seed write ("Z" or an offset, with or without a fraction),
  // we should parse each to the same instant.
  struct Case {
    std::string text;
    std::int64_t micros;
  };
  const std::int64_t y2099 = 4070908800000000;
  const std::vector<Case> cases = {
      {"2099-01-01T00:00:00Z", y2099},
      {"2099-01-01T00:00:00+00:00", y2099},
      {"2099-01-01T00:00:00.000000+00:00", y2099},
      {"2099-01-01T00:00:00.5Z", y2099 + 500000},
      {"2099-01-01T00:00:00.123456+00:00", y2099 + 123456},
      {"2099-01-01T02:30:00+02:30", y2099},
      {"2098-12-31T19:00:00-05:00", y2099},
      {"2026-11-30T06:08:43.123456+00:00", 1796018923123456},
  };
  for (const auto& c : cases) {
    const auto parsed = parse_iso8601(c.text);
    ASSERT_TRUE(parsed.has_value()) << c.text;
    EXPECT_EQ(micros_of(*parsed), c.micros) << c.text;
  }
}

TEST(Iso8601Test, ParseRefusesAnythingElse) {
  // Given text that is not a complete ISO-8601 UTC-offset time, we should return nullopt.
  const std::vector<std::string> cases = {
      "",
      "2099-01-01",
      "2099-01-01T00:00:00",  // naive: no zone
      "2099-01-01 00:00:00Z",
      "2099-01-01T00:00:00z",
      "2099-01-01T00:00:00.Z",
      "2099-01-01T00:00:00+0000",
      "2099-01-01T00:00:00+00:00 ",
      "2099-01-01T00:00:00Zjunk",
      "2099-13-01T00:00:00Z",
      "2099-00-01T00:00:00Z",
      "2099-01-32T00:00:00Z",
      "2099-02-30T00:00:00Z",
      "2099-01-01T24:00:00Z",
      "2099-01-01T00:60:00Z",
      "+099-01-01T00:00:00Z",
      "2099-01-01T00:00:00+ab:00",
  };
  for (const auto& text : cases) {
    EXPECT_FALSE(parse_iso8601(text).has_value()) << '"' << text << '"';
  }
}

TEST(Iso8601Test, FormatThenParseRoundTripsAndSortsAsText) {
  // Given times a microsecond to years apart, we should parse back exactly what we wrote, and
  // the texts should sort as the times do (the sweeper orders leases by text).
  const std::vector<std::int64_t> times = {
      0, 1, 999999, 1000000, 1796018923123456, 4070908800000000, 4070908800000001};
  std::string previous;
  for (const auto micros : times) {
    const std::string text = format_iso8601(at(micros));
    const auto parsed = parse_iso8601(text);
    ASSERT_TRUE(parsed.has_value()) << text;
    EXPECT_EQ(micros_of(*parsed), micros) << text;
    EXPECT_LT(previous, text);
    previous = text;
  }
}

TEST(Iso8601Test, EpochSecondsKeepMicroseconds) {
  // Given a time with microseconds, we should give the seed's float seconds since the epoch.
  EXPECT_DOUBLE_EQ(to_epoch_seconds(at(1796018923123456)), 1796018923.123456);
  EXPECT_DOUBLE_EQ(to_epoch_seconds(at(0)), 0.0);
}

TEST(RandomHexTest, LengthCharsetAndUniqueness) {
  // Given n bytes, we should return 2n lower-case hex digits, different on every call.
  for (const std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{16}, std::size_t{32}, std::size_t{1000}}) {
    const std::string hex = random_hex(bytes);
    EXPECT_EQ(hex.size(), 2 * bytes);
    EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos) << hex;
  }
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(random_hex(16));
  EXPECT_EQ(seen.size(), 1000u);
  // Every digit turns up in a long draw (a stuck nibble would not).
  const std::string long_draw = random_hex(4096);
  for (const char digit : std::string("0123456789abcdef")) {
    EXPECT_NE(long_draw.find(digit), std::string::npos) << digit;
  }
}

class SecretFileTest : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& name, const std::string& content,
                              mode_t mode = 0600) {
    const auto path = dir_.path() / name;
    std::ofstream(path, std::ios::binary) << content;
    ::chmod(path.c_str(), mode);
    return path;
  }

  std::string code_for(const std::filesystem::path& path, std::size_t min_length = 32) {
    return code_of([&] {
      read_secret_file(path, min_length, ErrorCode::CONTROL_CREDENTIAL_UNAVAILABLE,
                       ErrorCode::CONTROL_CREDENTIAL_INVALID);
    });
  }

  ScopedTempDir dir_;
};

const std::string kSecret = "s3cr3t-" + std::string(40, 'x');

TEST_F(SecretFileTest, TrimmedContentIsReturned) {
  // Given a token file with surrounding whitespace and a newline, we should return the token.
  const auto path = write("token", "  \t" + kSecret + "\r\n\n");

  EXPECT_EQ(read_secret_file(path, 32, ErrorCode::CONTROL_CREDENTIAL_UNAVAILABLE,
                             ErrorCode::CONTROL_CREDENTIAL_INVALID),
            kSecret);
}

TEST_F(SecretFileTest, RefusalsCarryTheGivenCodesAndNeverTheContent) {
  // Given files that are not usable credentials, we should refuse each with the caller's
  // unavailable or invalid code (or, for one others may read or write, SECRET_FILE_MODE_INVALID),
  // and never put the content in the error.
  const auto target = write("target", kSecret);
  std::filesystem::create_symlink(target, dir_.path() / "link");
  std::filesystem::create_directory(dir_.path() / "directory");
  ::mkfifo((dir_.path() / "fifo").c_str(), 0600);
  const std::string short_secret = "short-secret-" + std::string(18, 'y');  // 31 characters
  write("short", "   " + short_secret + "   \n");
  write("blank", " \n\t ");
  write("empty", "");
  write("group-readable", kSecret, 0640);
  write("world-readable", kSecret, 0604);
  write("group-writable", kSecret, 0620);

  struct Case {
    std::string name;
    std::string code;
  };
  const std::vector<Case> cases = {
      {"link", "CONTROL_CREDENTIAL_UNAVAILABLE"},
      {"missing", "CONTROL_CREDENTIAL_UNAVAILABLE"},
      {"directory", "CONTROL_CREDENTIAL_UNAVAILABLE"},
      {"fifo", "CONTROL_CREDENTIAL_UNAVAILABLE"},
      {"short", "CONTROL_CREDENTIAL_INVALID"},
      {"blank", "CONTROL_CREDENTIAL_INVALID"},
      {"empty", "CONTROL_CREDENTIAL_INVALID"},
      {"group-readable", "SECRET_FILE_MODE_INVALID"},
      {"world-readable", "SECRET_FILE_MODE_INVALID"},
      {"group-writable", "SECRET_FILE_MODE_INVALID"},
      {"target", "OK"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(code_for(dir_.path() / c.name), c.code) << c.name;
  }
  try {
    read_secret_file(dir_.path() / "short", 32, ErrorCode::CONTROL_CREDENTIAL_UNAVAILABLE,
                     ErrorCode::CONTROL_CREDENTIAL_INVALID);
    ADD_FAILURE() << "short secret accepted";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()).find("short-secret"), std::string::npos);
    EXPECT_EQ(error.detail().find("short-secret"), std::string::npos);
  }
  EXPECT_EQ(code_for(dir_.path() / "short", 31), "OK") << "exactly min_length is enough";
}

}  // namespace
}  // namespace aios::fleet_test
