#include <algorithm>
#include <iterator>

#include "aios/canonical.hpp"

namespace aios::utf8 {
namespace {

constexpr std::string_view kReplacementBytes = "\xEF\xBF\xBD";

bool is_space_at(std::string_view text, std::size_t pos, std::size_t& length) {
  const Decoded d = decode(text, pos);
  length = d.length;
  return d.valid && is_python_space(d.code_point);
}

}  // namespace

Decoded decode(std::string_view text, std::size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return {lead, 1, true};
  // The second byte's range depends on the lead so that overlongs, UTF-16 surrogates and
  // values above U+10FFFF are rejected at the first byte that proves them invalid; that
  // position is where CPython ends the maximal subpart.
  std::size_t continuation_bytes = 0;
  char32_t code_point = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    continuation_bytes = 1;
    code_point = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    continuation_bytes = 2;
    code_point = lead & 0x0Fu;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    continuation_bytes = 3;
    code_point = lead & 0x07u;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return {kReplacement, 1, false};
  }
  std::size_t length = 1;
  for (; length <= continuation_bytes; ++length) {
    if (pos + length >= text.size()) return {kReplacement, length, false};
    const auto byte = static_cast<unsigned char>(text[pos + length]);
    if (byte < low || byte > high) return {kReplacement, length, false};
    code_point = (code_point << 6) | (byte & 0x3Fu);
    low = 0x80;
    high = 0xBF;
  }
  return {code_point, length, true};
}

namespace {

bool folds_to(char32_t c, char letter) {
  const auto lower = static_cast<char32_t>(letter);
  if (c == lower) return true;
  if (letter < 'a' || letter > 'z') return false;
  if (c == lower - 0x20) return true;
  switch (letter) {
    case 'i':
      return c == 0x130 || c == 0x131;
    case 's':
      return c == 0x17F;
    case 'k':
      return c == 0x212A;
    default:
      return false;
  }
}

}  // namespace

bool match_ignore_case(std::string_view text, std::size_t& pos, std::string_view word) {
  std::size_t at = pos;
  for (const char letter : word) {
    if (at >= text.size()) return false;
    const Decoded d = decode(text, at);
    if (!d.valid || !folds_to(d.code_point, letter)) return false;
    at += d.length;
  }
  pos = at;
  return true;
}

bool is_python_space(char32_t code_point) {
  struct Range {
    char32_t first;
    char32_t last;
  };
  // Characters with bidirectional class WS, B or S, or category Zs (Python 3.11).
  static constexpr Range kSpaces[] = {
      {0x09, 0x0D},     {0x1C, 0x20},     {0x85, 0x85},     {0xA0, 0xA0},     {0x1680, 0x1680},
      {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}};
  return std::any_of(std::begin(kSpaces), std::end(kSpaces), [code_point](const Range& r) {
    return code_point >= r.first && code_point <= r.last;
  });
}

void append(std::string& out, char32_t code_point) {
  const auto byte = [](char32_t bits) { return static_cast<char>(bits); };
  if (code_point < 0x80) {
    out += byte(code_point);
  } else if (code_point < 0x800) {
    out += byte(0xC0 | (code_point >> 6));
    out += byte(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += byte(0xE0 | (code_point >> 12));
    out += byte(0x80 | ((code_point >> 6) & 0x3F));
    out += byte(0x80 | (code_point & 0x3F));
  } else {
    out += byte(0xF0 | (code_point >> 18));
    out += byte(0x80 | ((code_point >> 12) & 0x3F));
    out += byte(0x80 | ((code_point >> 6) & 0x3F));
    out += byte(0x80 | (code_point & 0x3F));
  }
}

bool valid(std::string_view text) {
  for (std::size_t pos = 0; pos < text.size();) {
    const Decoded d = decode(text, pos);
    if (!d.valid) return false;
    pos += d.length;
  }
  return true;
}

std::string decode_replace(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t pos = 0; pos < bytes.size();) {
    const Decoded d = decode(bytes, pos);
    out += d.valid ? bytes.substr(pos, d.length) : kReplacementBytes;
    pos += d.length;
  }
  return out;
}

std::string_view python_strip(std::string_view text) {
  std::size_t begin = 0;
  std::size_t length = 0;
  while (begin < text.size() && is_space_at(text, begin, length)) begin += length;
  std::size_t end = begin;
  for (std::size_t pos = begin; pos < text.size(); pos += length) {
    if (!is_space_at(text, pos, length)) end = pos + length;
  }
  return text.substr(begin, end - begin);
}

std::string_view prefix_code_points(std::string_view text, std::size_t n) {
  std::size_t pos = 0;
  for (; n > 0 && pos < text.size(); --n) pos += decode(text, pos).length;
  return text.substr(0, pos);
}

std::size_t count_code_points(std::string_view text) {
  std::size_t count = 0;
  for (std::size_t pos = 0; pos < text.size(); ++count) pos += decode(text, pos).length;
  return count;
}

}  // namespace aios::utf8
