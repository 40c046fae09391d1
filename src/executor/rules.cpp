#include "executor/rules.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "aios/canonical.hpp"
#include "aios/error.hpp"

namespace aios::executor::rules {
namespace {

bool is_alnum(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool is_upper(char c) {
  return c >= 'A' && c <= 'Z';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A first character of one class, then between `min_rest` and `max_rest` of another.
template <typename First, typename Rest>
bool matches(std::string_view text, First first, Rest rest, std::size_t min_rest,
             std::size_t max_rest) {
  if (text.empty() || !first(text.front())) return false;
  const auto tail = text.substr(1);
  if (tail.size() < min_rest || tail.size() > max_rest) return false;
  return std::all_of(tail.begin(), tail.end(), rest);
}

bool id_char(char c) {
  return is_alnum(c) || c == '.' || c == '_' || c == ':' || c == '-';
}

// \s*[:=] at `pos`.
bool assignment_follows(std::string_view text, std::size_t pos) {
  while (pos < text.size()) {
    const auto decoded = utf8::decode(text, pos);
    if (!decoded.valid || !utf8::is_python_space(decoded.code_point)) break;
    pos += decoded.length;
  }
  return pos < text.size() && (text[pos] == ':' || text[pos] == '=');
}

}  // namespace

bool is_request_id(std::string_view text) {
  return matches(text, is_alnum, id_char, 15, 254);
}
bool is_task_id(std::string_view text) {
  return matches(text, is_alnum, id_char, 2, 179);
}

bool is_env_name(std::string_view text) {
  return matches(
      text, is_upper, [](char c) { return is_upper(c) || is_digit(c) || c == '_'; }, 1, 63);
}

bool is_credential_name(std::string_view text) {
  return matches(text, is_alnum, id_char, 2, 127);
}

namespace {

// Python's name.upper() as far as an ASCII marker can see it: ASCII letters upper-cased, the
// seventeen other code points whose upper() holds ASCII letters (listed off CPython 3.11, e.g.
// U+00DF -> "SS", U+017F -> "S", U+FB05 -> "ST") expanded, every other code point a byte no
// marker contains.
std::string upper_for_markers(std::string_view name) {
  static constexpr std::array<std::pair<char32_t, std::string_view>, 17> kExpanding = {{
      {0xDF, "SS"},
      {0x131, "I"},
      {0x149, "\x80N"},
      {0x17F, "S"},
      {0x1F0, "J\x80"},
      {0x1E96, "H\x80"},
      {0x1E97, "T\x80"},
      {0x1E98, "W\x80"},
      {0x1E99, "Y\x80"},
      {0x1E9A, "A\x80"},
      {0xFB00, "FF"},
      {0xFB01, "FI"},
      {0xFB02, "FL"},
      {0xFB03, "FFI"},
      {0xFB04, "FFL"},
      {0xFB05, "ST"},
      {0xFB06, "ST"},
  }};
  std::string upper;
  upper.reserve(name.size());
  for (std::size_t pos = 0; pos < name.size();) {
    const auto decoded = utf8::decode(name, pos);
    pos += decoded.length;
    const char32_t c = decoded.code_point;
    if (c < 0x80) {
      const auto ascii = static_cast<char>(c);
      upper += (ascii >= 'a' && ascii <= 'z') ? static_cast<char>(ascii - 32) : ascii;
      continue;
    }
    const auto* expanding = std::find_if(kExpanding.begin(), kExpanding.end(),
                                         [c](const auto& entry) { return entry.first == c; });
    upper += expanding != kExpanding.end() ? expanding->second : std::string_view("\x80");
  }
  return upper;
}

}  // namespace

bool has_secret_marker(std::string_view name) {
  const std::string upper = upper_for_markers(name);
  static constexpr std::array<std::string_view, 7> kMarkers = {
      "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTHORIZATION", "PRIVATE_KEY", "API_KEY"};
  return std::any_of(kMarkers.begin(), kMarkers.end(), [&](std::string_view marker) {
    return upper.find(marker) != std::string::npos;
  });
}

std::string safe_runtime(const nlohmann::json& value) {
  // Only a string can spell a supported runtime; str() of anything else cannot.
  std::string runtime;
  if (value.is_string()) runtime = python_lower(python_strip(value.get_ref<const std::string&>()));
  const bool shaped = matches(
      runtime, [](char c) { return c >= 'a' && c <= 'z'; },
      [](char c) { return (c >= 'a' && c <= 'z') || is_digit(c) || c == '_' || c == '-'; }, 2, 31);
  if (!shaped || (runtime != "hermes" && runtime != "openclaw")) {
    throw Error(ErrorCode::EXTERNAL_AGENT_RUNTIME_UNSUPPORTED);
  }
  return runtime;
}

bool has_secret_assignment(std::string_view text) {
  // The seed's re.search(r"(?i)(token|secret|password|api[_-]?key|authorization)\s*[:=]"):
  // Unicode case folding, so a Kelvin sign spells the k of "token".
  static constexpr std::array<std::string_view, 4> kWords = {"token", "secret", "password",
                                                             "authorization"};
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    for (const auto word : kWords) {
      std::size_t end = pos;
      if (utf8::match_ignore_case(text, end, word) && assignment_follows(text, end)) return true;
    }
    std::size_t end = pos;
    if (utf8::match_ignore_case(text, end, "api")) {
      if (end < text.size() && (text[end] == '_' || text[end] == '-')) ++end;
      if (utf8::match_ignore_case(text, end, "key") && assignment_follows(text, end)) return true;
    }
  }
  return false;
}

}  // namespace aios::executor::rules
