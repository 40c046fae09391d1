#pragma once
// aiosctl's human views of the APIs' answers: each takes the answer as the API gave it and
// returns the text to print. Internal to src/ctl.

#include <nlohmann/json.hpp>
#include <string>

namespace aios::ctl {

// A JSON value as a cell: strings as they are, null as "-", anything else as compact JSON.
std::string cell(const nlohmann::json& value);

// A path segment or query value, percent-encoded.
std::string encoded(const std::string& text);

// GET /v1/tasks.
std::string tasks_view(const nlohmann::json& answer);
// GET /v1/tasks/{id}: its fields, one per line.
std::string task_view(const nlohmann::json& task);
// GET /v1/tasks/{id}/events or GET /v1/events (each event with its task).
std::string events_view(const nlohmann::json& events, bool with_task);
// A page that came back full (`limit` items in `list`) may have more behind it: the line
// that says how to read on ("more: --after N"), or "".
std::string more_line(const nlohmann::json& answer, const char* list, int limit);
// GET /v1/tasks/{id}/eligibility: each worker, eligible or its reasons.
std::string eligibility_view(const nlohmann::json& answer);
// GET /v1/fleet: the workers only, or with the task quarantines and the scopes.
std::string workers_view(const nlohmann::json& fleet);
std::string fleet_view(const nlohmann::json& fleet);
// GET /v2/plans and GET /v2/plans/{task_id} (the Bridge).
std::string plans_view(const nlohmann::json& answer);
std::string plan_view(const nlohmann::json& plan);
// GET /v1/agents.
std::string agents_view(const nlohmann::json& answer);
// GET /v1/status.
std::string status_view(const nlohmann::json& status);

}  // namespace aios::ctl
