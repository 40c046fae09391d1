// One input per envelope-module error code, each reaching its code through the public API, and a
// walk of the registry that fails when an envelope code has no row here.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "aios/envelope.hpp"
#include "aios/error.hpp"
#include "test_fixtures.hpp"

namespace aios::envelope_test {
namespace {

// The code families the envelope module owns.
constexpr std::array<std::string_view, 11> kEnvelopePrefixes = {"BINDING_",
                                                                "EXECUTION_",
                                                                "CHANGE_",
                                                                "VERIFICATION_",
                                                                "GOVERNANCE_",
                                                                "SOURCE_CAPTURE_",
                                                                "AGENT_RUNTIME_",
                                                                "DETERMINISTIC_",
                                                                "TASK_",
                                                                "CAPABILITY_",
                                                                "REQUIRED_CAPABILITIES_"};

// The sections of error_codes.inc that hold the envelope module's codes. Other modules share
// the prefixes (the task store's TASK_NOT_FOUND, the Task API's TASK_NOT_CLAIMABLE, ...) but
// declare their codes in their own sections, and nothing in the envelope API can raise them.
constexpr std::array<std::string_view, 7> kEnvelopeSections = {
    "Capability contract",   "Governed binding", "Execution request and envelope",
    "deterministic",         "source_capture",   "agent_runtime (seed codes)",
    "Online task projection"};

bool has_envelope_prefix(std::string_view wire) {
  return std::any_of(kEnvelopePrefixes.begin(), kEnvelopePrefixes.end(),
                     [wire](std::string_view prefix) { return wire.starts_with(prefix); });
}

bool is_envelope_section(std::string_view section) {
  return std::find(kEnvelopeSections.begin(), kEnvelopeSections.end(), section) !=
         kEnvelopeSections.end();
}

// Each code of error_codes.inc with the "// Section" comment it is declared under.
std::map<std::string, std::string> code_sections() {
  std::map<std::string, std::string> sections;
  std::ifstream in(AIOS_SOURCE_DIR "/include/aios/error_codes.inc");
  std::string section;
  for (std::string line; std::getline(in, line);) {
    constexpr std::string_view kMacro = "AIOS_ERROR(";
    if (line.starts_with("// ")) {
      section = line.substr(3);
    } else if (line.starts_with(kMacro)) {
      const std::size_t comma = line.find(',');
      sections[line.substr(kMacro.size(), comma - kMacro.size())] = section;
    }
  }
  return sections;
}

// A code the envelope API must be able to raise: one of the envelope families, declared in an
// envelope section.
bool is_envelope_code(const std::map<std::string, std::string>& sections, const std::string& wire) {
  const auto it = sections.find(wire);
  return has_envelope_prefix(wire) && it != sections.end() && is_envelope_section(it->second);
}

struct Row {
  std::string code;
  std::function<void()> call;
};

// --- the four entry points, with the seed fixtures as the valid base --------------------------

std::function<void()> binding_with(const std::string& field, const Json& value) {
  return [=] { GovernedBinding::from_mapping(with(rebind_binding_mapping(), "/" + field, value)); };
}

std::function<void()> project(const Json& request, const Json& required = Json::array()) {
  return [=] { project_execution_envelope(rebind_binding(), request, required); };
}

std::function<void()> project_new(const std::string& pointer, const Json& value) {
  return project(with(new_request(), pointer, value));
}

std::function<void()> project_old(const std::string& pointer, const Json& value) {
  return project(with(old_request(), pointer, value));
}

std::function<void()> project_hermes(const Json& runtime_input) {
  return [=] {
    project_execution_envelope(runtime_binding("task-hermes-runtime"),
                               hermes_request(runtime_input));
  };
}

std::function<void()> validate(const Json& envelope, const EnvelopeChecks& checks = {}) {
  return [=] { validate_execution_envelope(envelope, checks); };
}

std::function<void()> validate_new(const std::string& pointer, const Json& value) {
  return validate(with(new_envelope(), pointer, value));
}

std::function<void()> task_with(const std::string& field, const Json& value,
                                const Json& execution = old_request()) {
  return [=] {
    project_online_task(rebind_binding(), with(source_task_request(), "/" + field, value),
                        execution);
  };
}

Json change_set_of(const Json& change) {
  return Json::array({change});
}

Json command_with(const std::string& field, const Json& value) {
  Json command = new_request()["verification"][0];
  command[field] = value;
  return Json::array({command});
}

const std::vector<Row>& rows() {
  static const GovernedBinding kTaskBinding = rebind_binding();
  static const Json kWorker = Json::array({"git.read"});
  static const std::vector<Row> kRows = [] {
    Json too_many_changes = Json::array();
    for (int i = 0; i < 129; ++i) too_many_changes.push_back(write_file("f" + std::to_string(i)));
    Json too_many_commands = Json::array();
    for (int i = 0; i < 33; ++i) too_many_commands.push_back(new_request()["verification"][0]);
    Json conflict_metadata = source_task_request();
    conflict_metadata["metadata"] = {{"execution", new_envelope()}};
    const Json runtime_envelope = projected("hermes")["metadata"]["execution"];
    Json oversized_task = new_request();
    oversized_task["change_set"][0]["content"] = std::string(600 * 1024, 'x');
    return std::vector<Row>{
        // Capability contract
        {"CAPABILITY_INVALID", project_old("/capability_scope", Json::array({5}))},
        {"CAPABILITY_UNKNOWN", project_old("/capability_scope", Json::array({"root.admin"}))},
        {"REQUIRED_CAPABILITIES_INVALID", project(old_request(), "git.read")},
        {"CAPABILITY_SCOPE_INVALID", project_old("/capability_scope", "git.read")},
        {"CAPABILITY_SCOPE_REQUIRED", project_old("/capability_scope", Json::array())},
        // Governed binding
        {"BINDING_INVALID", [] { GovernedBinding::from_mapping("binding"); }},
        {"BINDING_TASK_ID_INVALID", binding_with("task_id", "ab")},
        {"BINDING_JOB_ID_INVALID", binding_with("job_id", "-job")},
        {"BINDING_REPOSITORY_INVALID", binding_with("repository", "aios")},
        {"BINDING_BASE_OID_INVALID", binding_with("base_oid", std::string(40, 'A'))},
        {"BINDING_EXPECTED_BRANCH_OID_INVALID",
         binding_with("expected_branch_oid", std::string(40, 'b'))},
        {"BINDING_TARGET_BRANCH_INVALID", binding_with("target_branch", "agent/a..b")},
        {"BINDING_TARGET_BRANCH_PROTECTED", binding_with("target_branch", "main")},
        {"BINDING_BRANCH_MODE_INVALID", binding_with("branch_mode", "FORCE")},
        {"BINDING_GENERATION_INVALID", binding_with("generation", true)},
        {"BINDING_IDEMPOTENCY_KEY_INVALID", binding_with("idempotency_key", "short")},
        // Execution request and envelope
        {"EXECUTION_REQUEST_INVALID", project("source_capture")},
        {"EXECUTION_REQUEST_FIELDS_INVALID", project_old("/workspace", Json::object())},
        {"EXECUTION_ENVELOPE_INVALID", validate("envelope")},
        {"EXECUTION_ENVELOPE_FIELDS_INVALID", validate(Json::object())},
        {"EXECUTION_ENVELOPE_TOO_LARGE",
         validate_new("/unknown", std::string(16 * 1024 * 1024, 'x'))},
        {"EXECUTION_SCHEMA_INVALID", validate_new("/schema", "aios.online-agent.execution.v2")},
        {"EXECUTION_BINDING_MISMATCH", validate(drift_envelope(), {.binding = &kTaskBinding})},
        {"EXECUTION_ACTION_UNSUPPORTED", project_old("/action", "delete")},
        {"EXECUTION_ADAPTER_INVALID", project_new("/adapter", "compact_interface_map")},
        {"EXECUTION_WORKSPACE_INVALID", validate_new("/workspace/authority_git_dir", "/tmp/x")},
        {"EXECUTION_DIGEST_INVALID", validate_new("/execution_digest", "not-a-digest")},
        {"EXECUTION_DIGEST_MISMATCH", validate_new("/execution_digest", std::string(64, '0'))},
        {"EXECUTION_WORKER_CAPABILITY_DENY",
         validate(new_envelope(), {.worker_capabilities = &kWorker})},
        {"EXECUTION_CAPABILITY_SCOPE_MISMATCH",
         project(with(old_request(), "/capability_scope", Json::array({"git.read"})),
                 Json::array({"git.test"}))},
        {"EXECUTION_PROJECTION_CONFLICT",
         [conflict_metadata] {
           project_online_task(rebind_binding(), conflict_metadata, old_request());
         }},
        {"GOVERNANCE_FIELDS_INVALID",
         project_old("/governance", {{"commit_idempotency_key", "task-rebind-a-commit-v1"}})},
        {"GOVERNANCE_COMMIT_KEY_INVALID",
         project_new("/governance/commit_idempotency_key", "short")},
        {"GOVERNANCE_INVALID", validate_new("/governance/writer_lease", false)},
        // deterministic
        {"CHANGE_SET_INVALID", project_new("/change_set", Json::array())},
        {"CHANGE_SET_TOO_LARGE", project_new("/change_set", too_many_changes)},
        {"CHANGE_FIELDS_INVALID",
         project_new("/change_set", change_set_of({{"path", "a"}, {"operation", "write_file"}}))},
        {"CHANGE_OPERATION_INVALID",
         project_new("/change_set", change_set_of({{"path", "a"}, {"operation", "rename"}}))},
        {"CHANGE_PATH_INVALID", project_new("/change_set", change_set_of(write_file("../x")))},
        {"CHANGE_PATH_GIT_DENY",
         project_new("/change_set", change_set_of(write_file(".git/config")))},
        {"CHANGE_PATH_DUPLICATE",
         project_new("/change_set", Json::array({write_file("a"), write_file("a")}))},
        {"CHANGE_PATH_CONFLICT",
         project_new("/change_set", Json::array({write_file("a"), write_file("a/b")}))},
        {"CHANGE_CONTENT_INVALID", project_new("/change_set", change_set_of(write_file("a", 1)))},
        {"CHANGE_CONTENT_TOO_LARGE",
         project_new("/change_set",
                     change_set_of(write_file("a", std::string(2 * 1024 * 1024 + 1, 'x'))))},
        {"VERIFICATION_INVALID", project_new("/verification", too_many_commands)},
        {"VERIFICATION_FIELDS_INVALID", project_new("/verification", command_with("env", "x"))},
        {"VERIFICATION_LABEL_INVALID", project_new("/verification", command_with("label", " "))},
        {"VERIFICATION_ARGV_INVALID",
         project_new("/verification", command_with("argv", Json::array()))},
        {"VERIFICATION_EXECUTABLE_INVALID",
         project_new("/verification", command_with("argv", Json::array({"python3"})))},
        {"VERIFICATION_SHELL_DENY",
         project_new("/verification", command_with("argv", Json::array({"/bin/sh", "-c", "x"})))},
        {"VERIFICATION_INLINE_CODE_DENY",
         project_new("/verification",
                     command_with("argv", Json::array({"/usr/bin/python3", "-c", "x"})))},
        {"VERIFICATION_CWD_INVALID", project_new("/verification", command_with("cwd", "../x"))},
        {"VERIFICATION_TIMEOUT_INVALID",
         project_new("/verification", command_with("timeout_seconds", 0))},
        {"DETERMINISTIC_SOURCE_SIGNALS_DENY",
         project_new("/source_signals", Json::array({"signal"}))},
        {"DETERMINISTIC_RUNTIME_INPUT_DENY", project_new("/runtime_input", {{"goal", "g"}})},
        // source_capture
        {"SOURCE_CAPTURE_MUTATION_DENY",
         project_old("/change_set", change_set_of(write_file("a")))},
        {"SOURCE_CAPTURE_SIGNALS_INVALID", project_old("/source_signals", Json::array({5}))},
        {"SOURCE_CAPTURE_RUNTIME_INPUT_DENY", project_old("/runtime_input", {{"goal", "g"}})},
        // agent_runtime
        {"AGENT_RUNTIME_MUTATION_DENY", project(with(hermes_request({{"goal", "g"}}), "/change_set",
                                                     change_set_of(write_file("a"))))},
        {"AGENT_RUNTIME_ADAPTER_INVALID",
         project(with(hermes_request({{"goal", "g"}}), "/adapter", "codex"))},
        {"AGENT_RUNTIME_INPUT_REQUIRED", project_hermes("goal")},
        {"AGENT_RUNTIME_INPUT_FIELDS_INVALID", project_hermes({{"goal", "g"}, {"extra", 1}})},
        {"AGENT_RUNTIME_GOAL_REQUIRED", project_hermes({{"goal", " "}})},
        {"AGENT_RUNTIME_INSTRUCTIONS_INVALID",
         project_hermes({{"goal", "g"}, {"instructions", nullptr}})},
        {"AGENT_RUNTIME_SUCCESS_CRITERIA_INVALID",
         project_hermes({{"goal", "g"}, {"success_criteria", Json::array({"done"})}})},
        {"AGENT_RUNTIME_CONSTRAINTS_INVALID",
         project_hermes({{"goal", "g"}, {"constraints", Json::array()}})},
        {"AGENT_RUNTIME_SECRET_FIELD_DENY",
         project_hermes({{"goal", "g"}, {"constraints", {{"api_token", "x"}}}})},
        {"AGENT_RUNTIME_INPUT_TOO_LARGE",
         project_hermes({{"goal", "g"}, {"constraints", {{"n", std::string(70000, 'n')}}}})},
        {"AGENT_RUNTIME_INPUT_NOT_CANONICAL",
         validate(reseal(with(runtime_envelope, "/runtime_input/goal", " padded ")))},
        {"AGENT_RUNTIME_CAPABILITY_REQUIRED",
         project(with(hermes_request({{"goal", "g"}}), "/capability_scope",
                      Json::array({"git.read"})))},
        {"AGENT_RUNTIME_SOURCE_SIGNALS_DENY",
         project(with(hermes_request({{"goal", "g"}}), "/source_signals", Json::array({"s"})))},
        // Online task projection
        {"TASK_REQUEST_INVALID",
         [] { project_online_task(rebind_binding(), Json::array(), old_request()); }},
        {"TASK_FIELDS_INVALID", task_with("status", "QUEUED")},
        {"TASK_BINDING_MISMATCH", task_with("task_id", "task-rebind-b")},
        {"TASK_GOAL_INVALID", task_with("goal", "")},
        {"TASK_INSTRUCTIONS_INVALID", task_with("instructions", 5)},
        {"TASK_SUCCESS_CRITERIA_INVALID", task_with("success_criteria", "done")},
        {"TASK_CONSTRAINTS_INVALID", task_with("constraints", Json::array())},
        {"TASK_SECRET_FIELD_DENY", task_with("constraints", {{"password", "x"}})},
        {"TASK_MAX_ATTEMPTS_INVALID", task_with("max_attempts", 0)},
        {"TASK_PRIORITY_INVALID", task_with("priority", 1001)},
        {"TASK_SCOPE_INVALID", task_with("scope_type", "tenant")},
        {"TASK_METADATA_INVALID", task_with("metadata", "owner")},
        {"TASK_METADATA_TOO_LARGE", task_with("metadata", {{"blob", std::string(64 * 1024, 'm')}})},
        {"TASK_TOO_LARGE", task_with("goal", "Map the interfaces.", oversized_task)},
    };
  }();
  return kRows;
}

TEST(ErrorTableTest, EveryRowProducesExactlyItsCode) {
  // Given one input per envelope code, we should see exactly that code thrown.
  for (const Row& row : rows()) {
    SCOPED_TRACE(row.code);
    EXPECT_EQ(code_of(row.call), row.code);
  }
}

TEST(ErrorTableTest, EveryRowNamesARegisteredEnvelopeCode) {
  // Given the table, we should find each row's code in the registry, in an envelope family and
  // section, and only once.
  const auto sections = code_sections();
  std::vector<std::string> seen;
  for (const Row& row : rows()) {
    SCOPED_TRACE(row.code);
    EXPECT_NE(find_error(row.code), nullptr);
    EXPECT_TRUE(is_envelope_code(sections, row.code));
    EXPECT_EQ(std::count(seen.begin(), seen.end(), row.code), 0);
    seen.push_back(row.code);
  }
}

TEST(ErrorTableTest, RegistryFileMatchesTheRegistry) {
  // Given error_codes.inc, we should read every registered code with its section, and find every
  // envelope section, so that the walk below sees the layout it expects.
  const auto sections = code_sections();
  EXPECT_EQ(sections.size(), error_registry().size());
  for (const ErrorInfo& info : error_registry()) {
    EXPECT_TRUE(sections.contains(std::string(info.wire))) << info.wire;
  }
  for (const std::string_view section : kEnvelopeSections) {
    const bool found = std::any_of(sections.begin(), sections.end(),
                                   [section](const auto& item) { return item.second == section; });
    EXPECT_TRUE(found) << "no codes under // " << section;
  }
}

TEST(ErrorTableTest, EveryEnvelopeCodeInTheRegistryHasARow) {
  // Given the error registry, we should find a row for every code of the envelope families and
  // sections (and every code of an envelope section has an envelope prefix), so that a new code
  // cannot land without an input that reaches it.
  const auto sections = code_sections();
  std::size_t envelope_codes = 0;
  for (const ErrorInfo& info : error_registry()) {
    const std::string wire(info.wire);
    const auto it = sections.find(wire);
    if (it != sections.end() && is_envelope_section(it->second)) {
      EXPECT_TRUE(has_envelope_prefix(wire)) << wire << " is outside the envelope families";
    }
    if (!is_envelope_code(sections, wire)) continue;
    ++envelope_codes;
    const bool has_row = std::any_of(rows().begin(), rows().end(),
                                     [&wire](const Row& row) { return row.code == wire; });
    EXPECT_TRUE(has_row) << "no error-table row for " << wire;
  }
  EXPECT_EQ(envelope_codes, rows().size());
}

}  // namespace
}  // namespace aios::envelope_test
