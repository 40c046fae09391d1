// aios::python_int: Python's int(str) in base 10 (see aios/canonical.hpp).
#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "aios/canonical.hpp"

namespace aios {
namespace {

// The zero of every run of Unicode 14.0 decimal digits (category Nd), each run ten code points
// long; int() accepts exactly these (read off Python 3.11's unicodedata.decimal, checked against
// int() itself in tests/canonical/python_int_test.cpp).
constexpr std::array<char32_t, 66> kDigitZeros = {
    0x30,    0x660,   0x6f0,   0x7c0,   0x966,   0x9e6,   0xa66,   0xae6,   0xb66,   0xbe6,
    0xc66,   0xce6,   0xd66,   0xde6,   0xe50,   0xed0,   0xf20,   0x1040,  0x1090,  0x17e0,
    0x1810,  0x1946,  0x19d0,  0x1a80,  0x1a90,  0x1b50,  0x1bb0,  0x1c40,  0x1c50,  0xa620,
    0xa8d0,  0xa900,  0xa9d0,  0xa9f0,  0xaa50,  0xabf0,  0xff10,  0x104a0, 0x10d30, 0x11066,
    0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650, 0x116c0, 0x11730, 0x118e0,
    0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0, 0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2,
    0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0};

constexpr long long kSaturated = 1'000'000'000'000'000'000LL;

std::optional<int> digit_value(char32_t c) {
  const auto* after = std::upper_bound(kDigitZeros.begin(), kDigitZeros.end(), c);
  if (after == kDigitZeros.begin()) return std::nullopt;
  const char32_t zero = *(after - 1);
  if (c - zero > 9) return std::nullopt;
  return static_cast<int>(c - zero);
}

}  // namespace

std::optional<long long> python_int(std::string_view text) {
  const std::string_view body = python_strip(text);
  std::size_t pos = 0;
  bool negative = false;
  if (pos < body.size() && (body[pos] == '+' || body[pos] == '-')) {
    negative = body[pos] == '-';
    ++pos;
  }
  long long value = 0;
  bool digit_before = false;  // an underscore needs a digit on each side
  bool any_digit = false;
  while (pos < body.size()) {
    const utf8::Decoded d = utf8::decode(body, pos);
    pos += d.length;
    if (d.valid && d.code_point == '_') {
      if (!digit_before) return std::nullopt;
      digit_before = false;
      continue;
    }
    const auto digit = d.valid ? digit_value(d.code_point) : std::nullopt;
    if (!digit) return std::nullopt;
    value = value > (kSaturated - *digit) / 10 ? kSaturated : value * 10 + *digit;
    digit_before = any_digit = true;
  }
  if (!any_digit || !digit_before) return std::nullopt;
  return negative ? -value : value;
}

}  // namespace aios
