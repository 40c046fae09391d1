#pragma once
// Audit and operational events as JSON lines on stderr (journald keeps them), through spdlog.
// Never pass a secret: tokens, lease tokens and credential values must not be fields.
// Thread-safe.

#include <nlohmann/json.hpp>
#include <string_view>

namespace aios::log {

// {"ts": "<ISO-8601 UTC>", "level": "...", "event": "<name>", ...fields} on one line.
void info(std::string_view event, const nlohmann::json& fields = nlohmann::json::object());
void warn(std::string_view event, const nlohmann::json& fields = nlohmann::json::object());
void error(std::string_view event, const nlohmann::json& fields = nlohmann::json::object());

}  // namespace aios::log
