#pragma once
// The seed's name patterns and markers, as plain character-class checks (no regex engine).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace aios::executor::rules {

// ^[A-Za-z0-9][A-Za-z0-9._:-]{15,254}$
bool is_request_id(std::string_view text);
// ^[A-Za-z0-9][A-Za-z0-9._:-]{2,179}$
bool is_task_id(std::string_view text);
// ^[A-Z][A-Z0-9_]{1,63}$ (profile environment names and dotenv credential keys)
bool is_env_name(std::string_view text);
// ^[A-Za-z0-9][A-Za-z0-9_.:-]{2,127}$
bool is_credential_name(std::string_view text);

// True when the upper-cased `name` contains TOKEN, SECRET, PASSWORD, CREDENTIAL,
// AUTHORIZATION, PRIVATE_KEY or API_KEY.
bool has_secret_marker(std::string_view name);

// The seed's _safe_runtime: str(value or "").strip().lower() must match ^[a-z][a-z0-9_-]{2,31}$
// and be hermes or openclaw; otherwise EXTERNAL_AGENT_RUNTIME_UNSUPPORTED.
std::string safe_runtime(const nlohmann::json& value);

// True when `text` contains (?i)(token|secret|password|api[_-]?key|authorization)\s*[:=].
bool has_secret_assignment(std::string_view text);

}  // namespace aios::executor::rules
