#include <algorithm>
#include <array>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"

namespace aios::envelope {
namespace {

bool is_ascii_alnum(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// Python's str.lower() agrees with ASCII lower-casing for every character that can lower-case
// into an ASCII marker letter, except KELVIN SIGN (U+212A, "\xE2\x84\xAA"), which becomes 'k'.
std::string marker_lower(std::string_view name) {
  static constexpr std::string_view kKelvin = "\xE2\x84\xAA";
  std::string out;
  out.reserve(name.size());
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name.substr(i, kKelvin.size()) == kKelvin) {
      out.push_back('k');
      i += kKelvin.size() - 1;
      continue;
    }
    const char c = name[i];
    out.push_back((c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c);
  }
  return out;
}

}  // namespace

void fail(ErrorCode code) {
  throw Error(code);
}

const std::string& require_string(const nlohmann::json& value, ErrorCode code) {
  if (!value.is_string()) fail(code);
  return value.get_ref<const std::string&>();
}

std::string require_text(const nlohmann::json& value, ErrorCode code) {
  const auto text = python_strip(require_string(value, code));
  if (text.empty()) fail(code);
  return std::string(text);
}

std::int64_t require_int(const nlohmann::json& value, std::int64_t min, std::int64_t max,
                         ErrorCode code) {
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    if (number > static_cast<std::uint64_t>(max)) fail(code);
    const auto signed_number = static_cast<std::int64_t>(number);
    if (signed_number < min) fail(code);
    return signed_number;
  }
  if (!value.is_number_integer()) fail(code);
  const auto number = value.get<std::int64_t>();
  if (number < min || number > max) fail(code);
  return number;
}

void require_exact_keys(const nlohmann::json& object, std::initializer_list<std::string_view> keys,
                        ErrorCode code) {
  if (!object.is_object() || object.size() != keys.size()) fail(code);
  for (const auto key : keys) {
    if (!object.contains(key)) fail(code);
  }
}

void require_known_keys(const nlohmann::json& object, std::initializer_list<std::string_view> keys,
                        ErrorCode code) {
  if (!object.is_object()) fail(code);
  for (const auto& item : object.items()) {
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) fail(code);
  }
}

const nlohmann::json& get_or(const nlohmann::json& object, std::string_view key,
                             const nlohmann::json& fallback) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  return *it;
}

bool is_identifier(std::string_view text, std::string_view extra, std::size_t min_rest,
                   std::size_t max_rest) {
  if (text.empty() || !is_ascii_alnum(text.front())) return false;
  const std::size_t rest = text.size() - 1;
  if (rest < min_rest || rest > max_rest) return false;
  return std::all_of(text.begin() + 1, text.end(), [extra](char c) {
    return is_ascii_alnum(c) || extra.find(c) != std::string_view::npos;
  });
}

bool is_task_id(std::string_view text) {
  return is_identifier(text, "._:-", 2, 179);
}

bool is_idempotency_key(std::string_view text) {
  return is_identifier(text, "._:-", 7, 159);
}

bool is_safe_relative_path(std::string_view path, bool allow_dot) {
  if (path.empty() || path.size() > 1024) return false;
  if (allow_dot && path == ".") return true;
  if (path.front() == '/') return false;
  const bool bad_char = std::any_of(path.begin(), path.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f || c == '\\';
  });
  if (bad_char) return false;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const auto part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

bool is_secret_field_name(std::string_view name) {
  static constexpr std::array<std::string_view, 7> kMarkers = {
      "token", "secret", "password", "credential", "authorization", "api_key", "apikey"};
  const std::string lowered = marker_lower(name);
  return std::any_of(kMarkers.begin(), kMarkers.end(), [&lowered](std::string_view marker) {
    return lowered.find(marker) != std::string::npos;
  });
}

bool has_secret_field(const nlohmann::json& value) {
  if (value.is_object()) {
    for (const auto& item : value.items()) {
      if (is_secret_field_name(item.key()) || has_secret_field(item.value())) return true;
    }
  } else if (value.is_array()) {
    return std::any_of(value.begin(), value.end(),
                       [](const nlohmann::json& item) { return has_secret_field(item); });
  }
  return false;
}

std::size_t canonical_size(const nlohmann::json& value) {
  return canonical_json(value).size();
}

bool python_truthy(const nlohmann::json& value) {
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

}  // namespace aios::envelope
