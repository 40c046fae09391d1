// The two documents of the engineering runtime contract: runtime-request.v1 (what a backend is
// asked) and runtime-result.v1 (what it answers), and the OpenClaw turn's mapping onto them.
#include <algorithm>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/executor.hpp"
#include "aios/gateway.hpp"
#include "executor/rules.hpp"

namespace aios::broker {
namespace {

using nlohmann::json;

[[noreturn]] void invalid_request() {
  throw Error(ErrorCode::RUNTIME_BROKER_REQUEST_INVALID);
}

[[noreturn]] void malformed(const std::string& detail) {
  throw Error(ErrorCode::RUNTIME_BROKER_RESULT_MALFORMED, detail);
}

bool is_object_id(const json& value) {
  if (!value.is_string()) return false;
  const auto& text = value.get_ref<const std::string&>();
  return text.size() == 40 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

const std::string& string_field(const json& value, const char* key) {
  const auto it = value.find(key);
  if (it == value.end() || !it->is_string()) invalid_request();
  return it->get_ref<const std::string&>();
}

// Redacted (the seed's sanitize_text) in every string, recursively.
json sanitized(const json& value) {
  if (value.is_string()) return sanitize_text(value.get_ref<const std::string&>());
  if (value.is_array() || value.is_object()) {
    json copy = value;
    for (auto& item : copy) item = sanitized(item);
    return copy;
  }
  return value;
}

json verification_requests(const json& value) {
  if (!value.is_array() || value.size() > kMaxVerificationRequests) {
    malformed("verification is not a list of at most 32 requests");
  }
  for (const auto& request : value) {
    if (!request.is_object() || request.size() != 4 || !request.contains("label") ||
        !request.contains("argv") || !request.contains("cwd") ||
        !request.contains("timeout_seconds")) {
      malformed("a verification request is not {label, argv, cwd, timeout_seconds}");
    }
    const auto& argv = request["argv"];
    const bool argv_ok = argv.is_array() && !argv.empty() &&
                         std::all_of(argv.begin(), argv.end(), [](const json& arg) {
                           return arg.is_string() && !arg.get_ref<const std::string&>().empty();
                         });
    const auto& timeout = request["timeout_seconds"];
    if (!request["label"].is_string() || !argv_ok || !request["cwd"].is_string() ||
        !timeout.is_number_integer() || timeout.get<long long>() < 1 ||
        timeout.get<long long>() > 3600) {
      malformed("a verification request has a field of the wrong shape");
    }
  }
  return value;
}

json result_of(const json& value) {
  if (!value.is_object()) malformed("not a JSON object");
  for (const auto& [key, item] : value.items()) {
    if (key != "schema" && key != "status" && key != "summary" && key != "verification" &&
        key != "evidence") {
      malformed("unknown field " + key);
    }
  }
  if (value.value("schema", json()) != json(kRuntimeResultSchema)) malformed("schema");
  const auto status = value.value("status", json());
  if (status != "COMPLETED" && status != "BLOCKED" && status != "FAILED") malformed("status");
  const auto summary = value.value("summary", json());
  if (!summary.is_string()) malformed("summary");
  const auto evidence = value.value("evidence", json::object());
  if (!evidence.is_object()) malformed("evidence");
  if (canonical_json(evidence).size() > kMaxEvidenceBytes) malformed("evidence too large");
  return {{"schema", kRuntimeResultSchema},
          {"status", status},
          {"summary", bounded_text(summary.get_ref<const std::string&>(), kMaxSummaryBytes)},
          {"verification", verification_requests(value.value("verification", json::array()))},
          {"evidence", sanitized(evidence)}};
}

// The object a final answer holds, with or without a Markdown code fence around it.
std::optional<json> embedded_object(std::string_view text) {
  const auto open = text.find('{');
  const auto close = text.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  json value = parse_json(text.substr(open, close - open + 1));
  if (value.is_discarded() || !value.is_object()) return std::nullopt;
  return value;
}

// The runtime-result.v1 of one agent CLI turn: a final answer that is itself a runtime-result.v1
// is taken as it is; another successful turn is COMPLETED with the final text as summary; a
// failed one is FAILED with `failure` as summary. The CLI's own account of the turn goes into
// the evidence under `cli` either way.
json turn_result(const std::string& cli, const json& account,
                 const std::optional<std::string>& failure, const std::string& final_text) {
  if (const auto answer = failure ? std::nullopt : embedded_object(final_text);
      answer && answer->value("schema", json()) == json(kRuntimeResultSchema)) {
    json result = result_of(*answer);
    result["evidence"][cli] = sanitized(account);
    return result;
  }
  return result_of({{"schema", kRuntimeResultSchema},
                    {"status", failure ? "FAILED" : "COMPLETED"},
                    {"summary", failure ? *failure : final_text},
                    {"evidence", {{cli, account}}}});
}

std::string message_of(const json& error) {
  if (error.is_string()) return error.get<std::string>();
  if (error.is_object() && error.contains("message") && error["message"].is_string()) {
    return error["message"].get<std::string>();
  }
  return canonical_json(error);
}

}  // namespace

bool is_backend_name(std::string_view name) {
  if (name.size() < 3 || name.size() > 32 || name.front() < 'a' || name.front() > 'z') {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

json validate_request(const json& value) {
  if (!value.is_object()) invalid_request();
  static const std::vector<std::string> kKeys = {
      "schema",   "request_id", "backend",      "task_id",          "execution_digest", "base_oid",
      "worktree", "goal",       "instructions", "success_criteria", "constraints"};
  // model_budget (ours) only when the task set one; the backend never sees it.
  const bool budgeted = value.contains("model_budget");
  if (value.size() != kKeys.size() + (budgeted ? 1 : 0)) invalid_request();
  for (const auto& key : kKeys) {
    if (!value.contains(key)) invalid_request();
  }
  if (budgeted) {
    const auto budget = gateway::parse_budget(value["model_budget"]);
    if (!budget || budget->to_json() != value["model_budget"]) invalid_request();
  }
  if (value["schema"] != kRequestSchema) invalid_request();
  if (!executor::rules::is_request_id(string_field(value, "request_id"))) invalid_request();
  if (!is_backend_name(string_field(value, "backend"))) {
    throw Error(ErrorCode::RUNTIME_BROKER_BACKEND_UNSUPPORTED);
  }
  if (!executor::rules::is_task_id(string_field(value, "task_id"))) invalid_request();
  if (!is_sha256_hex(string_field(value, "execution_digest"))) invalid_request();
  if (!is_object_id(value["base_oid"])) invalid_request();
  const std::filesystem::path worktree = string_field(value, "worktree");
  if (!worktree.is_absolute() || worktree.lexically_normal() != worktree ||
      worktree.string().find('\0') != std::string::npos || worktree.filename().empty()) {
    invalid_request();
  }
  const json input = {{"goal", value["goal"]},
                      {"instructions", value["instructions"]},
                      {"success_criteria", value["success_criteria"]},
                      {"constraints", value["constraints"]}};
  try {
    if (envelope::normalize_agent_runtime_input(input) != input) invalid_request();
  } catch (const Error& error) {
    if (error.is(ErrorCode::RUNTIME_BROKER_REQUEST_INVALID)) throw;
    throw Error(ErrorCode::RUNTIME_BROKER_REQUEST_INVALID, error.code());
  }
  return value;
}

json parse_runtime_result(std::string_view stdout_text) {
  const auto trimmed = python_strip(stdout_text);
  if (trimmed.empty()) malformed("empty output");
  const json value = parse_json(trimmed);
  if (value.is_discarded()) malformed("not JSON");
  return result_of(value);
}

std::string render_agent_prompt(const json& request) {
  std::string prompt =
      "You are the engineering backend of an AIOS task. Your working directory is a "
      "disposable git worktree of the repository at commit " +
      request["base_oid"].get<std::string>() +
      ". Change files in it to meet the goal. Do not commit, do not push, do not create or "
      "move branches or tags, and never write credentials or secrets into a file.\n\nGoal:\n" +
      request["goal"].get<std::string>() + "\n";
  if (!request["instructions"].get_ref<const std::string&>().empty()) {
    prompt += "\nInstructions:\n" + request["instructions"].get<std::string>() + "\n";
  }
  if (!request["success_criteria"].empty()) {
    prompt += "\nSuccess criteria:\n";
    for (const auto& criterion : request["success_criteria"]) {
      prompt += "- " + criterion.value("id", std::string()) + ": " +
                criterion.value("description", std::string()) + "\n";
    }
  }
  if (!request["constraints"].empty()) {
    prompt += "\nConstraints (JSON):\n" + canonical_json(request["constraints"]) + "\n";
  }
  prompt +=
      "\nWhen you are done, answer with one JSON object and nothing else: {\"schema\": "
      "\"aios.online-agent.runtime-result.v1\", \"status\": \"COMPLETED\" or \"BLOCKED\" or "
      "\"FAILED\", \"summary\": \"root cause and implementation summary\", \"verification\": "
      "[{\"label\": \"...\", \"argv\": [\"/usr/bin/...\"], \"cwd\": \".\", "
      "\"timeout_seconds\": 600}], \"evidence\": {\"root_cause\": \"...\"}}\n";
  return prompt;
}

json openclaw_runtime_result(std::string_view stdout_text) {
  const json value = parse_json(python_strip(stdout_text));
  if (value.is_discarded() || !value.is_object() || !value.contains("ok") ||
      !value["ok"].is_boolean()) {
    malformed("not an OpenClaw agent exec JSON envelope");
  }
  const json tools = value.value("toolSummary", json::object());
  const json account = {{"status", value.value("status", json())},
                        {"model", value.value("model", json())},
                        {"provider", value.value("provider", json())},
                        {"tool_calls", tools.is_object() ? tools.value("calls", json()) : json()},
                        {"tools", tools.is_object() ? tools.value("tools", json()) : json()}};
  std::optional<std::string> failure;
  if (value["ok"] != true || value.value("status", json()) != "ok") {
    failure = message_of(value.value("error", json()));
  }
  const auto final_value = value.value("final", json());
  return turn_result("openclaw", account, failure,
                     final_value.is_string() ? final_value.get<std::string>() : "");
}

json codex_runtime_result(std::string_view stdout_text) {
  json commands = json::array();
  json account = {{"thread_id", json()}, {"usage", json()}};
  std::string final_text;
  std::optional<std::string> failure;
  bool completed = false;
  bool any = false;
  for (std::size_t start = 0; start < stdout_text.size();) {
    auto end = stdout_text.find('\n', start);
    if (end == std::string_view::npos) end = stdout_text.size();
    const auto line = python_strip(stdout_text.substr(start, end - start));
    start = end + 1;
    if (line.empty()) continue;
    const json event = parse_json(line);
    if (event.is_discarded() || !event.is_object() || !event.contains("type") ||
        !event["type"].is_string()) {
      malformed("not Codex exec --json events");
    }
    any = true;
    const auto& type = event["type"].get_ref<const std::string&>();
    if (type == "thread.started") {
      account["thread_id"] = event.value("thread_id", json());
    } else if (type == "turn.completed") {
      completed = true;
      account["usage"] = event.value("usage", json());
    } else if (type == "turn.failed") {
      failure = message_of(event.value("error", json()));
    } else if (type == "error") {
      failure = message_of(event.value("message", json()));
    } else if (type == "item.completed" && event.contains("item") && event["item"].is_object()) {
      const auto& item = event["item"];
      const auto item_type = item.value("type", json());
      if (item_type == "agent_message" && item.contains("text") && item["text"].is_string()) {
        final_text = item["text"].get<std::string>();
      } else if (item_type == "command_execution" && commands.size() < kMaxEvidenceCommands) {
        const auto command = item.value("command", json());
        commands.push_back(
            {{"command",
              command.is_string() ? json(bounded_text(command.get<std::string>(), 512)) : json()},
             {"exit_code", item.value("exit_code", json())}});
      }
    }
  }
  if (!any) malformed("no Codex exec --json events");
  if (!failure && !completed) failure = "the Codex turn did not complete";
  account["commands"] = std::move(commands);
  return turn_result("codex", account, failure, final_text);
}

}  // namespace aios::broker
