#include "executor/rules.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "aios/canonical.hpp"
#include "aios/error.hpp"
#include "canonical/utf8.hpp"

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

char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

bool starts_with_ignore_case(std::string_view text, std::size_t pos, std::string_view word) {
  if (text.size() - pos < word.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (ascii_lower(text[pos + i]) != word[i]) return false;
  }
  return true;
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

bool has_secret_marker(std::string_view name) {
  std::string upper(name);
  for (auto& c : upper) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
  static constexpr std::array<std::string_view, 7> kMarkers = {
      "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTHORIZATION", "PRIVATE_KEY", "API_KEY"};
  return std::any_of(kMarkers.begin(), kMarkers.end(), [&](std::string_view marker) {
    return upper.find(marker) != std::string::npos;
  });
}

std::string safe_runtime(const nlohmann::json& value) {
  // Only a string can spell a supported runtime; str() of anything else cannot.
  std::string runtime;
  if (value.is_string()) runtime = std::string(python_strip(value.get_ref<const std::string&>()));
  for (auto& c : runtime) c = ascii_lower(c);
  const bool shaped = matches(
      runtime, [](char c) { return c >= 'a' && c <= 'z'; },
      [](char c) { return (c >= 'a' && c <= 'z') || is_digit(c) || c == '_' || c == '-'; }, 2, 31);
  if (!shaped || (runtime != "hermes" && runtime != "openclaw")) {
    throw Error(ErrorCode::EXTERNAL_AGENT_RUNTIME_UNSUPPORTED);
  }
  return runtime;
}

bool has_secret_assignment(std::string_view text) {
  static constexpr std::array<std::string_view, 4> kWords = {"token", "secret", "password",
                                                             "authorization"};
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    for (const auto word : kWords) {
      if (starts_with_ignore_case(text, pos, word) && assignment_follows(text, pos + word.size())) {
        return true;
      }
    }
    if (starts_with_ignore_case(text, pos, "api")) {
      std::size_t after = pos + 3;
      if (after < text.size() && (text[after] == '_' || text[after] == '-')) ++after;
      if (starts_with_ignore_case(text, after, "key") && assignment_follows(text, after + 3)) {
        return true;
      }
    }
  }
  return false;
}

bool truthy(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return false;
    case nlohmann::json::value_t::boolean:
      return value.get<bool>();
    case nlohmann::json::value_t::number_integer:
      return value.get<std::int64_t>() != 0;
    case nlohmann::json::value_t::number_unsigned:
      return value.get<std::uint64_t>() != 0;
    case nlohmann::json::value_t::number_float:
      return value.get<double>() != 0.0;
    case nlohmann::json::value_t::string:
      return !value.get_ref<const std::string&>().empty();
    case nlohmann::json::value_t::array:
    case nlohmann::json::value_t::object:
      return !value.empty();
    default:
      return true;
  }
}

}  // namespace aios::executor::rules
