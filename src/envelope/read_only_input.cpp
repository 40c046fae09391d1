#include <string>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"

namespace aios::envelope {
namespace {

constexpr std::size_t kMaxSignalCodePoints = 240;
constexpr std::size_t kMaxCriteria = 32;

std::string truncated(const std::string& text, std::size_t code_points) {
  return std::string(prefix_code_points(text, code_points));
}

nlohmann::json criteria_of(const nlohmann::json& criteria) {
  if (!criteria.is_array() || criteria.size() > kMaxCriteria) {
    fail(ErrorCode::AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID);
  }
  auto normalized = nlohmann::json::array();
  for (const auto& item : criteria) {
    if (!item.is_object()) fail(ErrorCode::AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID);
    const auto id_it = item.find("id");
    const auto description_it = item.find("description");
    const std::string id = require_text(id_it == item.end() ? envelope::kNull : *id_it,
                                        ErrorCode::AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID);
    const std::string description =
        require_text(description_it == item.end() ? envelope::kNull : *description_it,
                     ErrorCode::AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID);
    normalized.push_back(
        {{"id", truncated(id, 120)}, {"description", truncated(description, 1000)}});
  }
  return normalized;
}

}  // namespace

nlohmann::json normalize_source_signals(const nlohmann::json& value) {
  if (!value.is_array() || value.size() > kMaxSourceSignals) {
    fail(ErrorCode::SOURCE_CAPTURE_SIGNALS_INVALID);
  }
  auto signals = nlohmann::json::array();
  for (const auto& item : value) {
    const std::string signal = require_text(item, ErrorCode::SOURCE_CAPTURE_SIGNALS_INVALID);
    if (count_code_points(signal) > kMaxSignalCodePoints) {
      fail(ErrorCode::SOURCE_CAPTURE_SIGNALS_INVALID);
    }
    if (std::find(signals.begin(), signals.end(), signal) == signals.end()) {
      signals.push_back(signal);
    }
  }
  return signals;
}

nlohmann::json normalize_agent_runtime_input(const nlohmann::json& value) {
  if (!value.is_object()) fail(ErrorCode::AGENT_RUNTIME_INPUT_REQUIRED);
  require_known_keys(value, {"goal", "instructions", "success_criteria", "constraints"},
                     ErrorCode::AGENT_RUNTIME_INPUT_FIELDS_INVALID);
  using envelope::kEmptyArray;
  using envelope::kEmptyObject;
  using envelope::kEmptyText;
  // Absent fields take defaults; a present null is a wrong type, as in the seed's raw.get().
  const auto field = [&value](const char* key,
                              const nlohmann::json& fallback) -> const nlohmann::json& {
    const auto it = value.find(key);
    return it == value.end() ? fallback : *it;
  };
  const std::string goal =
      require_text(field("goal", envelope::kNull), ErrorCode::AGENT_RUNTIME_GOAL_REQUIRED);
  const auto& instructions = field("instructions", kEmptyText);
  if (!instructions.is_string()) fail(ErrorCode::AGENT_RUNTIME_INSTRUCTIONS_INVALID);
  nlohmann::json criteria = criteria_of(field("success_criteria", kEmptyArray));
  const auto& constraints = field("constraints", kEmptyObject);
  if (!constraints.is_object()) fail(ErrorCode::AGENT_RUNTIME_CONSTRAINTS_INVALID);
  // The seed checks top-level keys; a nested secret-looking key is refused as well.
  if (has_secret_field(constraints)) fail(ErrorCode::AGENT_RUNTIME_SECRET_FIELD_DENY);
  nlohmann::json normalized = {
      {"goal", truncated(goal, 12000)},
      {"instructions", truncated(instructions.get_ref<const std::string&>(), 32000)},
      {"success_criteria", std::move(criteria)},
      {"constraints", constraints},
  };
  if (canonical_size(normalized) > kMaxAgentRuntimeInputBytes) {
    fail(ErrorCode::AGENT_RUNTIME_INPUT_TOO_LARGE);
  }
  return normalized;
}

}  // namespace aios::envelope
