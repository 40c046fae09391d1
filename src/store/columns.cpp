#include "store/columns.hpp"

#include "aios/canonical.hpp"
#include "aios/error.hpp"

namespace aios::store {
namespace {

[[noreturn]] void damaged() {
  throw Error(ErrorCode::STORE_FAILURE, "a stored fleet column");
}

// Parsed under the nesting bound; an empty (NULL) column is `fallback`.
nlohmann::json parsed(const std::string& text, nlohmann::json fallback) {
  if (text.empty()) return fallback;
  nlohmann::json value;
  try {
    value = parse_json(text);
  } catch (const Error&) {
    damaged();
  }
  if (value.is_discarded()) damaged();
  return value;
}

std::optional<Names> listed(const nlohmann::json& value) {
  if (!value.is_array()) return std::nullopt;
  Names names;
  names.reserve(value.size());
  for (const auto& item : value) {
    if (!item.is_string()) return std::nullopt;
    names.push_back(item.get<std::string>());
  }
  return names;
}

}  // namespace

Names names_of(const std::string& text) {
  auto names = listed(parsed(text, nlohmann::json::array()));
  if (!names) damaged();
  return std::move(*names);
}

std::optional<Names> scope_of(const std::string& text) {
  if (text.empty()) return std::nullopt;
  try {
    return listed(parsed(text, nullptr));
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::string scope_text(const std::optional<Names>& scope) {
  return scope ? names_text(*scope) : std::string();
}

std::string names_text(const Names& names) {
  return canonical_json(nlohmann::json(names));
}

std::string labels_text(const Labels& labels) {
  return canonical_json(nlohmann::json(labels));
}

Labels labels_of(const std::string& text) {
  const auto value = parsed(text, nlohmann::json::object());
  if (!value.is_object()) damaged();
  Labels labels;
  for (const auto& [name, item] : value.items()) {
    if (!item.is_string()) damaged();
    labels.emplace(name, item.get<std::string>());
  }
  return labels;
}

}  // namespace aios::store
