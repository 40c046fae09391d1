// Python's str.lower(), from the tables scripts/gen-python-lower.py writes off the interpreter
// itself (src/canonical/python_lower.inc), so a capability name lowers to the seed's bytes.
#include <algorithm>
#include <cctype>
#include <vector>

#include "aios/canonical.hpp"

namespace aios {
namespace {

struct LowerEntry {
  char32_t from;
  char32_t to[3];  // unused trailing slots are 0
};

struct CodeRange {
  char32_t first;
  char32_t last;
};

#include "canonical/python_lower.inc"

constexpr char32_t kCapitalSigma = 0x3A3;
constexpr char32_t kSmallSigma = 0x3C3;
constexpr char32_t kFinalSigma = 0x3C2;

template <std::size_t N>
bool in_ranges(const CodeRange (&ranges)[N], char32_t code_point) {
  const auto* end = ranges + N;
  const auto* it =
      std::upper_bound(ranges, end, code_point,
                       [](char32_t value, const CodeRange& range) { return value < range.first; });
  return it != ranges && code_point <= (it - 1)->last;
}

const LowerEntry* lower_of(char32_t code_point) {
  const auto* end = kLower + std::size(kLower);
  const auto* it =
      std::lower_bound(kLower, end, code_point,
                       [](const LowerEntry& entry, char32_t value) { return entry.from < value; });
  return it != end && it->from == code_point ? it : nullptr;
}

// CPython's handle_capital_sigma: \p{cased} \p{case-ignorable}* U+03A3 !(\p{case-ignorable}*
// \p{cased}). Bytes that are not UTF-8 count as neither.
bool final_sigma(const std::vector<utf8::Decoded>& text, std::size_t at) {
  const auto ignorable = [](const utf8::Decoded& d) {
    return d.valid && in_ranges(kCaseIgnorable, d.code_point);
  };
  const auto cased = [](const utf8::Decoded& d) {
    return d.valid && in_ranges(kCased, d.code_point);
  };
  std::size_t before = at;
  while (before > 0 && ignorable(text[before - 1])) --before;
  if (before == 0 || !cased(text[before - 1])) return false;
  std::size_t after = at + 1;
  while (after < text.size() && ignorable(text[after])) ++after;
  return after == text.size() || !cased(text[after]);
}

}  // namespace

std::string python_lower(std::string_view text) {
  // Capability names are ASCII almost always, and the poll lowers them for every candidate.
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
    std::string out(text);
    for (char& c : out) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
  }
  std::vector<utf8::Decoded> decoded;
  for (std::size_t pos = 0; pos < text.size();) {
    decoded.push_back(utf8::decode(text, pos));
    pos += decoded.back().length;
  }
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  for (std::size_t i = 0; i < decoded.size(); ++i) {
    const auto& d = decoded[i];
    const std::string_view bytes = text.substr(pos, d.length);
    pos += d.length;
    if (!d.valid) {
      out.append(bytes);
    } else if (d.code_point == kCapitalSigma) {
      utf8::append(out, final_sigma(decoded, i) ? kFinalSigma : kSmallSigma);
    } else if (const LowerEntry* entry = lower_of(d.code_point)) {
      for (const char32_t mapped : entry->to) {
        if (mapped != 0) utf8::append(out, mapped);
      }
    } else {
      out.append(bytes);
    }
  }
  return out;
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string ascii_upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

}  // namespace aios
