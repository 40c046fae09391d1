#include <charconv>
#include <cstdio>
#include <ctime>

#include "aios/sys.hpp"

namespace aios {
namespace {

bool parse_digits(std::string_view text, std::size_t pos, std::size_t count, int& out) {
  if (pos + count > text.size()) return false;
  const auto* begin = text.data() + pos;
  const auto [end, ec] = std::from_chars(begin, begin + count, out);
  return ec == std::errc() && end == begin + count;
}

}  // namespace

std::string format_iso8601(TimePoint t) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  auto seconds = static_cast<std::time_t>(micros / 1000000);
  auto fraction = micros % 1000000;
  if (fraction < 0) {
    fraction += 1000000;
    --seconds;
  }
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%06lld+00:00",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(fraction));
  return buffer;
}

std::optional<TimePoint> parse_iso8601(std::string_view text) {
  std::tm tm{};
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':') {
    return std::nullopt;
  }
  if (!parse_digits(text, 0, 4, tm.tm_year) || !parse_digits(text, 5, 2, tm.tm_mon) ||
      !parse_digits(text, 8, 2, tm.tm_mday) || !parse_digits(text, 11, 2, tm.tm_hour) ||
      !parse_digits(text, 14, 2, tm.tm_min) || !parse_digits(text, 17, 2, tm.tm_sec)) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  std::int64_t micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    std::size_t digits = 0;
    ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 6) micros = micros * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (; digits < 6; ++digits) micros *= 10;
  }
  int offset_minutes = 0;
  const auto zone = text.substr(pos);
  if (zone == "Z") {
    offset_minutes = 0;
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    int hours = 0;
    int minutes = 0;
    if (!parse_digits(zone, 1, 2, hours) || !parse_digits(zone, 4, 2, minutes)) {
      return std::nullopt;
    }
    offset_minutes = (zone[0] == '-' ? -1 : 1) * (hours * 60 + minutes);
  } else {
    return std::nullopt;
  }
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60) {
    return std::nullopt;
  }
  // timegm would roll 2099-02-30 into March; a date that does not exist is not a time.
  const std::chrono::year_month_day date{std::chrono::year(tm.tm_year),
                                         std::chrono::month(static_cast<unsigned>(tm.tm_mon)),
                                         std::chrono::day(static_cast<unsigned>(tm.tm_mday))};
  if (!date.ok()) return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const std::time_t seconds = timegm(&tm);
  return TimePoint(std::chrono::seconds(seconds) - std::chrono::minutes(offset_minutes) +
                   std::chrono::microseconds(micros));
}

double to_epoch_seconds(TimePoint t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace aios
