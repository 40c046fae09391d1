#pragma once
// Audit and operational events as JSON lines on stderr (journald keeps them), through spdlog.
// Never pass a secret: tokens, lease tokens and credential values must not be fields.
// Thread-safe.

#include <nlohmann/json.hpp>
#include <string_view>

#include "aios/error.hpp"

namespace aios::log {

// {"ts": "<ISO-8601 UTC>", "level": "...", "event": "<name>", ...fields} on one line.
void info(std::string_view event, const nlohmann::json& fields = nlohmann::json::object());
void warn(std::string_view event, const nlohmann::json& fields = nlohmann::json::object());
void error(std::string_view event, const nlohmann::json& fields = nlohmann::json::object());

// A request's failure of ours (a 5xx: the store busy or unavailable, a peer service down) as an
// error `event` with `fields`, its code and its detail (which names the cause, never request
// data); a 4xx is the caller's refusal and is not logged here.
void request_failure(std::string_view event, const Error& failure, nlohmann::json fields);

}  // namespace aios::log
