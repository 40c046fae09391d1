// validate_request and render_prompt of the seed.
#include <string>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/executor.hpp"
#include "executor/rules.hpp"

namespace aios::executor {
namespace {

using nlohmann::json;

// str(value or "") for an identifier: only a string can pass the identifier patterns in the
// way the worker writes them (see docs/executor.md for ids given as numbers).
std::string text_field(const json& object, const char* name) {
  const json value = object.value(name, json());
  return value.is_string() ? value.get<std::string>() : std::string();
}

}  // namespace

json validate_request(const json& value) {
  if (!value.is_object() || value.value("schema", json()) != json(kRequestSchema)) {
    throw Error(ErrorCode::EXTERNAL_AGENT_REQUEST_SCHEMA_INVALID);
  }
  const std::string request_id = text_field(value, "request_id");
  if (!rules::is_request_id(request_id)) throw Error(ErrorCode::EXTERNAL_AGENT_REQUEST_ID_INVALID);
  const std::string runtime = rules::safe_runtime(value.value("runtime", json()));
  const std::string task_id = text_field(value, "task_id");
  const std::string execution_digest = text_field(value, "execution_digest");
  if (!rules::is_task_id(task_id)) throw Error(ErrorCode::EXTERNAL_AGENT_TASK_ID_INVALID);
  if (!is_sha256_hex(execution_digest)) {
    throw Error(ErrorCode::EXTERNAL_AGENT_EXECUTION_DIGEST_INVALID);
  }
  const json payload = value.value("payload", json());
  if (!payload.is_object()) throw Error(ErrorCode::EXTERNAL_AGENT_PAYLOAD_INVALID);
  if (canonical_json(payload).size() > kMaxRequestBytes) {
    throw Error(ErrorCode::EXTERNAL_AGENT_PAYLOAD_TOO_LARGE);
  }
  const json goal = payload.value("goal", json());
  const json instructions = payload.value("instructions", json());
  if (!goal.is_string() || python_strip(goal.get_ref<const std::string&>()).empty()) {
    throw Error(ErrorCode::EXTERNAL_AGENT_GOAL_REQUIRED);
  }
  if (!instructions.is_null() && !instructions.is_string()) {
    throw Error(ErrorCode::EXTERNAL_AGENT_INSTRUCTIONS_INVALID);
  }
  json request = {{"schema", kRequestSchema},
                  {"request_id", request_id},
                  {"runtime", runtime},
                  {"task_id", task_id},
                  {"execution_digest", execution_digest},
                  {"payload", payload}};
  // Only when set, so a request without one digests as the seed's does.
  if (const auto budget = value.find("model_budget"); budget != value.end()) {
    const auto parsed = gateway::parse_budget(*budget);
    if (!parsed) throw Error(ErrorCode::EXTERNAL_AGENT_MODEL_BUDGET_INVALID);
    request["model_budget"] = parsed->to_json();
  }
  return request;
}

std::string python_json_dumps(const json& value) {
  // Canonical JSON has no whitespace outside strings, so every ',' and ':' outside a string is
  // a separator, and Python's default separators add one space after each.
  const std::string compact = canonical_json(value);
  std::string out;
  out.reserve(compact.size() + compact.size() / 4);
  bool in_string = false;
  bool escaped = false;
  for (const char c : compact) {
    out.push_back(c);
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
    } else if (c == ',' || c == ':') {
      out.push_back(' ');
    }
  }
  return out;
}

std::string render_prompt(const json& payload) {
  const auto text = [&](const char* name) {
    const json value = payload.value(name, json());
    return value.is_string() ? std::string(python_strip(value.get_ref<const std::string&>()))
                             : std::string();
  };
  const std::string goal = text("goal");
  const std::string instructions = text("instructions");
  const json criteria = payload.value("success_criteria", json());
  const json constraints = payload.value("constraints", json());
  std::string prompt = "AIOS Online Agent Task\n\nGoal:\n" + goal;
  if (!instructions.empty()) prompt += "\n\nInstructions:\n" + instructions;
  if (envelope::python_truthy(criteria))
    prompt += "\n\nSuccess criteria:\n" + python_json_dumps(criteria);
  if (envelope::python_truthy(constraints))
    prompt += "\n\nConstraints:\n" + python_json_dumps(constraints);
  prompt +=
      "\n\nReturn the final task result only. Do not claim repository, production, credential, "
      "or control-plane side effects unless they are explicitly represented in the task "
      "payload.";
  return prompt;
}

}  // namespace aios::executor
