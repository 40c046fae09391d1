#include <set>
#include <string>

#include "aios/capability.hpp"
#include "aios/envelope.hpp"

namespace aios::envelope {

nlohmann::json normalize_capability_list(const nlohmann::json& value, ErrorCode invalid_code,
                                         ErrorCode empty_code) {
  constexpr std::size_t kMaxCapabilities = 64;
  if (!value.is_array() || value.size() > kMaxCapabilities) fail(invalid_code);
  std::set<std::string> names;
  for (const auto& item : value) {
    std::string name = clean_capability(item);
    // Nothing grants an unknown name, so a task requiring one could never run: refuse it now.
    if (!is_known_task_capability(name)) fail(ErrorCode::CAPABILITY_UNKNOWN);
    names.insert(std::move(name));
  }
  if (names.empty()) fail(empty_code);
  return nlohmann::json(std::vector<std::string>(names.begin(), names.end()));
}

}  // namespace aios::envelope
