// The one bounded entry point for JSON text (see aios/canonical.hpp).
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "aios/canonical.hpp"
#include "aios/error.hpp"

namespace aios {
namespace {

// True when brackets outside strings nest deeper than `max_depth`. Text that is not JSON may
// be miscounted; the parser refuses it anyway.
bool nests_deeper_than(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace

nlohmann::json parse_json(std::string_view text, std::size_t max_depth) {
  if (nests_deeper_than(text, max_depth)) throw Error(ErrorCode::JSON_NESTING_TOO_DEEP);
  return nlohmann::json::parse(text, nullptr, false);
}

}  // namespace aios
