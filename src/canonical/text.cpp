#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "aios/canonical.hpp"

namespace aios {
namespace {

constexpr std::size_t kNoMatch = std::string_view::npos;

// The matcher works on valid UTF-8 (sanitize_text decodes with replacement first), so
// every decode below yields a whole code point.
class Matcher {
 public:
  explicit Matcher(std::string_view text) : text_(text) {}

  // End of the SENSITIVE_RE match starting exactly at `pos`, or kNoMatch. Every quantified
  // run is followed by something it cannot match (\s* by [:=] or a letter, \s+ by \S, \S+ by
  // the end), so greedy matching without backtracking finds what sre finds.
  std::size_t match_at(std::size_t pos) const {
    std::size_t end = pos;
    if (word(end, "authorization") && bearer_tail(end)) return end;
    for (const std::string_view keyword : {"password", "passwd", "secret", "token"}) {
      end = pos;
      if (word(end, keyword) && secret_tail(end)) return end;
    }
    end = pos;
    if (word(end, "api")) {
      std::size_t with_joiner = end;
      if ((literal(with_joiner, '_') || literal(with_joiner, '-')) && word(with_joiner, "key") &&
          secret_tail(with_joiner)) {
        return with_joiner;
      }
      if (word(end, "key") && secret_tail(end)) return end;
    }
    return kNoMatch;
  }

 private:
  utf8::Decoded at(std::size_t pos) const { return utf8::decode(text_, pos); }

  bool literal(std::size_t& pos, char letter) const {
    return utf8::match_ignore_case(text_, pos, std::string_view(&letter, 1));
  }

  bool word(std::size_t& pos, std::string_view letters) const {
    return utf8::match_ignore_case(text_, pos, letters);
  }

  // \s*[:=]
  bool separator(std::size_t& pos) const {
    skip_spaces(pos);
    return literal(pos, ':') || literal(pos, '=');
  }

  // \s*[:=]\s*bearer\s+\S+
  bool bearer_tail(std::size_t& pos) const {
    if (!separator(pos)) return false;
    skip_spaces(pos);
    return word(pos, "bearer") && skip_spaces(pos) > 0 && skip_non_spaces(pos) > 0;
  }

  // \s*[:=]\s*\S+
  bool secret_tail(std::size_t& pos) const {
    if (!separator(pos)) return false;
    skip_spaces(pos);
    return skip_non_spaces(pos) > 0;
  }

  std::size_t skip(std::size_t& pos, bool spaces) const {
    std::size_t count = 0;
    while (pos < text_.size()) {
      const utf8::Decoded d = at(pos);
      if (utf8::is_python_space(d.code_point) != spaces) break;
      pos += d.length;
      ++count;
    }
    return count;
  }
  std::size_t skip_spaces(std::size_t& pos) const { return skip(pos, true); }
  std::size_t skip_non_spaces(std::size_t& pos) const { return skip(pos, false); }

  std::string_view text_;
};

}  // namespace

std::string sanitize_text(std::string_view text) {
  const std::string valid = utf8::decode_replace(text);
  const Matcher matcher(valid);
  std::string out;
  out.reserve(valid.size());
  std::size_t copied = 0;
  for (std::size_t pos = 0; pos < valid.size();) {
    const std::size_t end = matcher.match_at(pos);
    if (end == kNoMatch) {
      pos += utf8::decode(valid, pos).length;
      continue;
    }
    out.append(valid, copied, pos - copied);
    out += "[REDACTED]";
    pos = copied = end;
  }
  out.append(valid, copied);
  return out;
}

std::string bounded_text(std::string_view text, std::size_t limit) {
  const std::string data = sanitize_text(text);
  if (data.size() <= limit) return data;
  const std::size_t marker = kTruncationMarker.size();
  // Python's max(1, (limit - len(marker)) // 2): a negative difference floors to <= 0.
  const std::size_t half = limit > marker ? std::max<std::size_t>(1, (limit - marker) / 2) : 1;
  std::string cut;
  cut.reserve(2 * half + marker);
  cut.append(data, 0, half);
  cut += kTruncationMarker;
  cut.append(data, data.size() - half);
  // The cut may split a code point at either end; CPython's replacement of the pieces is
  // what the seed logged.
  return utf8::decode_replace(cut);
}

std::string_view python_strip(std::string_view text) {
  return utf8::python_strip(text);
}

std::string_view prefix_code_points(std::string_view text, std::size_t n) {
  return utf8::prefix_code_points(text, n);
}

std::size_t count_code_points(std::string_view text) {
  return utf8::count_code_points(text);
}

}  // namespace aios
