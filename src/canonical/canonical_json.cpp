#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "aios/canonical.hpp"
#include "aios/error.hpp"

namespace aios {
namespace {

using Json = nlohmann::json;

// Python's json.dumps raises RecursionError near depth 1000 (default recursion limit), so no
// deeper value has a Python canonical form; refusing it also bounds our own recursion.
constexpr std::size_t kMaxDepth = 1000;

[[noreturn]] void refuse(const char* why) {
  throw Error(ErrorCode::CANONICAL_JSON_INVALID, why);
}

void append_escape(std::string& out, unsigned char c) {
  static constexpr std::string_view kHex = "0123456789abcdef";
  switch (c) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0x0F];
  }
}

// Copies runs that need no escaping in one append; non-ASCII is validated, never escaped.
void append_string(std::string& out, std::string_view s) {
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  std::size_t run = 0;
  std::size_t pos = 0;
  while (pos < s.size()) {
    const auto c = static_cast<unsigned char>(s[pos]);
    if (c >= 0x80) {
      const utf8::Decoded d = utf8::decode(s, pos);
      // A Python str cannot hold these bytes, so there is no canonical form to match.
      if (!d.valid) refuse("string is not valid UTF-8");
      pos += d.length;
    } else if (c >= 0x20 && c != '"' && c != '\\') {
      ++pos;
    } else {
      out += s.substr(run, pos - run);
      append_escape(out, c);
      run = ++pos;
    }
  }
  out += s.substr(run);
  out += '"';
}

template <typename Integer>
void append_integer(std::string& out, Integer value) {
  char buffer[24];
  const auto result = std::to_chars(std::begin(buffer), std::end(buffer), value);
  out.append(buffer, result.ptr);
}

// Python's repr(float): the shortest round-trip digits (what to_chars also produces), in
// positional form while the decimal point position is in (-4, 16], otherwise exponential.
void append_float(std::string& out, double value) {
  if (!std::isfinite(value)) refuse("NaN or infinity");
  if (std::signbit(value)) {
    out += '-';
    value = -value;
  }
  char buffer[32];
  const auto result =
      std::to_chars(std::begin(buffer), std::end(buffer), value, std::chars_format::scientific);
  // "d[.ddd]e[+-]XX": the exponent already has a sign and at least two digits, like Python's.
  const std::string_view scientific(buffer, static_cast<std::size_t>(result.ptr - buffer));
  const std::size_t e = scientific.find('e');
  int exponent = 0;
  std::from_chars(scientific.data() + e + 2, result.ptr, exponent);
  if (scientific[e + 1] == '-') exponent = -exponent;
  const int point = exponent + 1;  // digits before the decimal point
  if (point <= -4 || point > 16) {
    out += scientific;
    return;
  }
  const char lead = scientific[0];
  const std::string_view rest = e > 1 ? scientific.substr(2, e - 2) : std::string_view();
  if (point <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-point), '0');
    out += lead;
    out += rest;
    return;
  }
  const auto after_lead = static_cast<std::size_t>(point - 1);  // integer digits in `rest`
  out += lead;
  if (after_lead < rest.size()) {
    out += rest.substr(0, after_lead);
    out += '.';
    out += rest.substr(after_lead);
  } else {
    out += rest;
    out.append(after_lead - rest.size(), '0');
    out += ".0";
  }
}

void append_value(std::string& out, const Json& value, std::size_t depth) {
  switch (value.type()) {
    case Json::value_t::null:
      out += "null";
      return;
    case Json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case Json::value_t::number_integer:
      append_integer(out, value.get<std::int64_t>());
      return;
    case Json::value_t::number_unsigned:
      append_integer(out, value.get<std::uint64_t>());
      return;
    case Json::value_t::number_float:
      append_float(out, value.get<double>());
      return;
    case Json::value_t::string:
      append_string(out, value.get_ref<const Json::string_t&>());
      return;
    case Json::value_t::array: {
      if (depth == kMaxDepth) refuse("nesting too deep");
      out += '[';
      bool first = true;
      for (const Json& item : value.get_ref<const Json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        append_value(out, item, depth + 1);
      }
      out += ']';
      return;
    }
    case Json::value_t::object: {
      if (depth == kMaxDepth) refuse("nesting too deep");
      out += '{';
      bool first = true;
      // object_t is a std::map ordered by std::string's unsigned byte comparison, and UTF-8
      // byte order is code point order, which is how Python's sort_keys orders str keys.
      for (const auto& [key, item] : value.get_ref<const Json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        append_string(out, key);
        out += ':';
        append_value(out, item, depth + 1);
      }
      out += '}';
      return;
    }
    case Json::value_t::binary:
      if (const auto digits = exact_integer_text(value)) {
        out += *digits;
        return;
      }
      break;
    case Json::value_t::discarded:
      break;
  }
  refuse("value has no JSON form");
}

}  // namespace

std::string canonical_json(const nlohmann::json& value) {
  std::string out;
  out.reserve(256);
  append_value(out, value, 0);
  return out;
}

std::string digest(const nlohmann::json& value) {
  return sha256_hex(canonical_json(value));
}

}  // namespace aios
