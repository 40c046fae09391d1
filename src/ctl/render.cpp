// Tables and field lists of the APIs' answers.
#include "ctl/render.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "aios/ctl.hpp"

namespace aios::ctl {
namespace {

using Json = nlohmann::json;

// The number of code points of UTF-8 text (continuation bytes do not count).
std::size_t width_of(const std::string& text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// `text` cut to at most `max` code points, the last one "…" when cut.
std::string cut(const std::string& text, std::size_t max) {
  if (width_of(text) <= max) return text;
  std::string out;
  std::size_t points = 0;
  for (const char c : text) {
    if ((c & 0xC0) != 0x80 && ++points == max) break;
    out.push_back(c);
  }
  return out + "…";
}

std::string join(const Json& list, const char* separator = ",") {
  std::string out;
  for (const auto& item : list) out += (out.empty() ? "" : separator) + cell(item);
  return out.empty() ? "-" : out;
}

// The scope a task serves: its tenant (and project), or "global".
std::string scope_of(const Json& task) {
  const auto type = task.value("scope_type", std::string("global"));
  if (type == "tenant") return task.value("tenant_id", std::string());
  if (type == "project") {
    return task.value("tenant_id", std::string()) + "/" + task.value("project_id", std::string());
  }
  return "global";
}

std::string action_of(const Json& task) {
  const auto& metadata = task.value("metadata", Json::object());
  const auto& execution = metadata.value("execution", Json::object());
  return execution.value("action", std::string("?")) + "/" +
         execution.value("adapter", std::string("?"));
}

}  // namespace

std::string cell(const Json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows, std::size_t max_cell) {
  std::vector<std::size_t> widths(header.size(), 0);
  const auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], width_of(cut(row[i], max_cell)));
    }
  };
  measure(header);
  for (const auto& row : rows) measure(row);
  std::ostringstream out;
  const auto line = [&](const std::vector<std::string>& row) {
    std::string text;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      const auto value = i < row.size() ? cut(row[i], max_cell) : std::string();
      text += value;
      if (i + 1 < widths.size()) text += std::string(widths[i] - width_of(value) + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << '\n';
  };
  line(header);
  for (const auto& row : rows) line(row);
  return out.str();
}

std::string encoded(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char raw : text) {
    const auto c = static_cast<unsigned char>(raw);
    if (std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~' || c == ':') {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4U], kHex[c & 15U]};
    }
  }
  return out;
}

std::string tasks_view(const Json& answer) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& task : answer.value("tasks", Json::array())) {
    rows.push_back({cell(task.value("task_id", Json())), cell(task.value("status", Json())),
                    std::to_string(task.value("attempt", 0)) + "/" +
                        std::to_string(task.value("max_attempts", 0)),
                    action_of(task), scope_of(task), cell(task.value("claimed_by", Json())),
                    cell(task.value("updated_at", Json()))});
  }
  if (rows.empty()) return "no tasks\n";
  return table({"TASK", "STATUS", "ATTEMPT", "ACTION", "SCOPE", "CLAIMED BY", "UPDATED"}, rows);
}

// What the provider gateway counted of the run's model calls, or "-" for a run without one.
std::string model_calls_of(const Json& result) {
  const auto found = result.is_object() ? result.find("model_usage") : result.end();
  if (!result.is_object() || found == result.end() || !found->is_object()) return "-";
  const auto count = [&](const char* name) { return cell(found->value(name, Json())); };
  return count("requests") + " requests, " + count("total") + " used (" + count("input") + " in, " +
         count("output") + " out), " + count("refused") + " refused, " + count("unmetered") +
         " unmetered";
}

namespace {

// An agent's answer (output_text, else output_json), on one line and cut to 400 characters.
std::string answer_of(const Json& result) {
  if (!result.is_object()) return "-";
  std::string text = result.value("output_text", std::string());
  if (text.empty() && result.contains("output_json")) text = result["output_json"].dump();
  if (text.empty()) return "-";
  std::replace(text.begin(), text.end(), '\n', ' ');
  return cut(text, 400);
}

// The first verification command that did not pass: its label, exit code and last output line.
std::string failed_test_of(const Json& result) {
  if (!result.is_object()) return "-";
  for (const auto& test : result.value("tests", Json::array())) {
    if (!test.is_object() || test.value("passed", true)) continue;
    std::string output = test.value("output", std::string());
    while (!output.empty() && output.back() == '\n') output.pop_back();
    const auto last =
        output.substr(output.rfind('\n') == std::string::npos ? 0 : output.rfind('\n') + 1);
    return cell(test.value("label", Json())) + " (exit " + cell(test.value("exit_code", Json())) +
           ")" + (last.empty() ? "" : ": " + cut(last, 200));
  }
  return "-";
}

}  // namespace

std::string task_view(const Json& task) {
  const auto& result = task.value("result", Json());
  const auto& verification = task.value("verification", Json());
  std::vector<std::vector<std::string>> rows = {
      {"task", cell(task.value("task_id", Json()))},
      {"status", cell(task.value("status", Json()))},
      {"revision", cell(task.value("revision", Json()))},
      {"attempt", std::to_string(task.value("attempt", 0)) + " of " +
                      std::to_string(task.value("max_attempts", 0))},
      {"action", action_of(task)},
      {"scope", scope_of(task)},
      {"priority", cell(task.value("priority", Json()))},
      {"goal", cell(task.value("goal", Json()))},
      {"required", join(task.value("required_capabilities", Json::array()))},
      {"claimed by", cell(task.value("claimed_by", Json()))},
      {"lease until", cell(task.value("lease_expires_at", Json()))},
      {"execution", cell(task.value("execution_digest", Json()))},
      {"base", cell(task.value("base_oid", Json()))},
      {"branch", cell(task.value("target_branch", Json()))},
      {"result", result.is_object() ? cell(result.value("status", Json())) + " " +
                                          cell(result.value("classification", Json()))
                                    : cell(result)},
      {"model calls", model_calls_of(result)},
      {"answer", answer_of(result)},
      {"commit", result.is_object() ? cell(result.value("commit_oid", Json())) : "-"},
      {"failed test", failed_test_of(result)},
      {"verification", verification.is_object()
                           ? cell(verification.value("decision", Json())) + ": " +
                                 cell(verification.value("reason", Json()))
                           : cell(verification)},
      {"created", cell(task.value("created_at", Json()))},
      {"updated", cell(task.value("updated_at", Json()))},
  };
  std::ostringstream out;
  for (const auto& row : rows)
    out << row[0] << std::string(14 - row[0].size(), ' ') << row[1] << '\n';
  return out.str();
}

// An event's payload as name=value pairs (the reason of a cancel, a verification's decision, a
// commit's oid), nested values as compact JSON, the whole cut to a table cell's width.
std::string detail_of(const Json& payload) {
  if (!payload.is_object() || payload.empty()) return "-";
  std::string out;
  for (const auto& [name, value] : payload.items()) {
    out += (out.empty() ? "" : " ") + name + "=" + cell(value);
  }
  return cut(out, 96);
}

std::string events_view(const Json& events, bool with_task) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& event : events.value("events", Json::array())) {
    std::vector<std::string> row = {cell(event.value("event_id", Json())),
                                    cell(event.value("created_at", Json()))};
    if (with_task) row.push_back(cell(event.value("task_id", Json())));
    row.push_back(cell(event.value("event_type", Json())));
    row.push_back(cell(event.value("agent_id", Json())));
    row.push_back(detail_of(event.value("payload", Json())));
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return "no events\n";
  std::vector<std::string> header = {"EVENT", "TIME"};
  if (with_task) header.emplace_back("TASK");
  header.emplace_back("TYPE");
  header.emplace_back("BY");
  header.emplace_back("DETAIL");
  return table(header, rows);
}

std::string more_line(const Json& answer, const char* list, int limit) {
  const auto found = answer.find(list);
  if (found == answer.end() || !found->is_array() ||
      found->size() < static_cast<std::size_t>(limit)) {
    return "";
  }
  return "more: --after " + cell(answer.value("next_after", Json())) + "\n";
}

std::string eligibility_view(const Json& answer) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& worker : answer.value("workers", Json::array())) {
    const bool eligible = worker.value("eligible", false);
    // Each reason with what it is about, where the answer names it.
    Json reasons = Json::array();
    for (const auto& reason : worker.value("reasons", Json::array())) {
      if (reason == "capability_missing" && worker.contains("missing_capabilities")) {
        reasons.push_back("capability_missing (" + join(worker["missing_capabilities"]) + ")");
      } else if (reason == "adapter_not_allowed" && worker.contains("adapter")) {
        reasons.push_back("adapter_not_allowed (" + cell(worker["adapter"]) + ")");
      } else {
        reasons.push_back(reason);
      }
    }
    rows.push_back({cell(worker.value("worker_id", Json())), eligible ? "yes" : "no",
                    eligible ? "-" : join(reasons, ", "),
                    cell(worker.value("failure_domain", Json()))});
  }
  std::ostringstream out;
  out << cell(answer.value("task_id", Json())) << " is " << cell(answer.value("status", Json()))
      << "\n";
  // A claim-next passes over a task whose envelope does not resolve, whatever its workers.
  if (const auto envelope = answer.value("envelope", Json::object());
      envelope.value("resolves", true) == false) {
    out << "its envelope does not resolve now: " << cell(envelope.value("code", Json()))
        << " (no worker can claim it until it does)\n";
  }
  if (rows.empty()) {
    out << "no worker is registered: nothing can take it\n";
    return out.str();
  }
  out << table({"WORKER", "ELIGIBLE", "WHY NOT", "FAILURE DOMAIN"}, rows, 96);
  return out.str();
}

std::string workers_view(const Json& fleet) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& worker : fleet.value("workers", Json::array())) {
    rows.push_back({cell(worker.value("worker_id", Json())), cell(worker.value("agent_id", Json())),
                    std::to_string(worker.value("used_slots", 0)) + "/" +
                        std::to_string(worker.value("max_slots", 0)),
                    cell(worker.value("circuit_state", Json())),
                    worker.value("quarantined", false) ? "yes" : "no",
                    cell(worker.value("failure_domain", Json())),
                    worker.value("stopped", false)  ? "stopped"
                    : worker.value("online", false) ? "online"
                                                    : "offline",
                    cell(worker.value("last_seen_at", Json()))});
  }
  if (rows.empty()) return "no workers\n";
  return table(
      {"WORKER", "AGENT", "SLOTS", "CIRCUIT", "QUARANTINED", "DOMAIN", "STATE", "LAST SEEN"}, rows);
}

std::string plans_view(const Json& answer) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& plan : answer.value("plans", Json::array())) {
    rows.push_back({cell(plan.value("task_id", Json())), cell(plan.value("changes", Json())),
                    cut(cell(plan.value("execution_digest", Json())), 16),
                    cell(plan.value("created_at", Json()))});
  }
  if (rows.empty()) return "no plans\n";
  return table({"TASK", "CHANGES", "EXECUTION", "REGISTERED"}, rows);
}

std::string plan_view(const Json& plan) {
  std::ostringstream out;
  out << "task          " << cell(plan.value("task_id", Json())) << "\n"
      << "execution     " << cell(plan.value("execution_digest", Json())) << "\n"
      << "plan          " << cell(plan.value("plan_sha256", Json())) << "\n"
      << "registered    " << cell(plan.value("created_at", Json())) << "\n";
  const auto body = plan.value("plan", Json::object());
  for (const auto& change : body.value("change_set", Json::array())) {
    out << "change        " << cell(change.value("operation", Json())) << " "
        << cell(change.value("path", Json())) << "\n";
  }
  for (const auto& command : body.value("verification", Json::array())) {
    out << "verification  " << cell(command.value("label", Json())) << ": "
        << join(command.value("argv", Json::array()), " ") << "\n";
  }
  return out.str();
}

std::string agents_view(const Json& answer) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& agent : answer.value("agents", Json::array())) {
    const auto revoked = agent.value("revoked_at", Json());
    rows.push_back({cell(agent.value("agent_id", Json())),
                    join(agent.value("granted_capabilities", Json::array())),
                    join(agent.value("granted_tenants", Json::array())),
                    join(agent.value("workers", Json::array())),
                    agent.value("client_certificate", Json()).is_null() ? "-" : "bound",
                    revoked.is_null() ? "live" : "revoked " + cell(revoked)});
  }
  if (rows.empty()) return "no agents\n";
  return table({"AGENT", "CAPABILITIES", "TENANTS", "WORKERS", "CERTIFICATE", "STATE"}, rows);
}

std::string fleet_view(const Json& fleet) {
  std::ostringstream out;
  out << workers_view(fleet);
  std::vector<std::vector<std::string>> quarantines;
  for (const auto& q : fleet.value("task_quarantines", Json::array())) {
    quarantines.push_back({cell(q.value("task_id", Json())), cell(q.value("worker_id", Json())),
                           cell(q.value("failure_class", Json())),
                           cell(q.value("failures", Json()))});
  }
  if (!quarantines.empty()) {
    out << "\n" << table({"QUARANTINED TASK", "FOR WORKER", "FAILURE", "FAILURES"}, quarantines);
  }
  std::vector<std::vector<std::string>> scopes;
  for (const auto& scope : fleet.value("scopes", Json::array())) {
    scopes.push_back(
        {cell(scope.value("scope_key", Json())), cell(scope.value("dispatch_count", Json()))});
  }
  if (!scopes.empty()) out << "\n" << table({"SCOPE", "DISPATCHED"}, scopes);
  return out.str();
}

std::string status_view(const Json& status) {
  std::ostringstream out;
  out << "scheduler " << cell(status.value("version", Json())) << ", store "
      << cell(status.value("backend", Json())) << " schema "
      << cell(status.value("schema_version", Json())) << ", integrity "
      << cell(status.value("integrity", Json())) << ", "
      << (status.value("leader", false) ? "leads" : "does not lead") << " governed commits, "
      << cell(status.value("workers", Json())) << " workers\n";
  std::vector<std::vector<std::string>> rows;
  const auto tasks = status.value("tasks", Json::object());
  for (const auto& [name, count] : tasks.items()) {
    rows.push_back({name, cell(count)});
  }
  out << (rows.empty() ? "no tasks\n" : table({"STATUS", "TASKS"}, rows));
  return out.str();
}

}  // namespace aios::ctl
