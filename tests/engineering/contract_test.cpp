// The engineering runtime contract's documents and the worker's own checks, without daemons:
// runtime-request.v1 and runtime-result.v1 validation, the shipped backend configurations,
// OpenClaw's envelope and Codex's events mapped onto the result, the engineering envelope
// rules, the verification allowlist and the secret patterns.
#include <gtest/gtest.h>

#include "aios/envelope.hpp"
#include "aios/executor.hpp"
#include "support/daemon.hpp"
#include "worker/engineering.hpp"

namespace aios::broker {
namespace {

using nlohmann::json;

std::string code_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.code();
  }
  return "";
}

json request() {
  return {{"schema", kRequestSchema},
          {"request_id", "engineering-codex-0123456789abcdef"},
          {"backend", "codex"},
          {"task_id", "task-eng"},
          {"execution_digest", std::string(64, 'a')},
          {"base_oid", std::string(40, 'b')},
          {"worktree", "/var/lib/aios-online-agent-worker/workspaces/run/worktree"},
          {"goal", "Fix the bug"},
          {"instructions", ""},
          {"success_criteria", json::array()},
          {"constraints", json::object()}};
}

TEST(RuntimeRequest, AcceptsTheContractsShapeAndRefusesAnyDeviation) {
  EXPECT_EQ(validate_request(request()), request());
  const std::vector<std::pair<std::string, json>> broken = {
      {"schema", "aios.online-agent.runtime-request.v2"},
      {"request_id", "short"},
      {"task_id", "x"},
      {"execution_digest", "abc"},
      {"base_oid", std::string(40, 'Z')},
      {"worktree", "relative/worktree"},
      {"worktree", "/a/../b"},
      {"goal", "   "},
      {"constraints", {{"api_token", "x"}}}};
  for (const auto& [field, value] : broken) {
    auto changed = request();
    changed[field] = value;
    EXPECT_EQ(code_of([&] { validate_request(changed); }), "RUNTIME_BROKER_REQUEST_INVALID")
        << field << "=" << value;
  }
  auto extra = request();
  extra["lease_token"] = "x";
  EXPECT_EQ(code_of([&] { validate_request(extra); }), "RUNTIME_BROKER_REQUEST_INVALID");
  auto backend = request();
  backend["backend"] = "../codex";
  EXPECT_EQ(code_of([&] { validate_request(backend); }), "RUNTIME_BROKER_BACKEND_UNSUPPORTED");
}

TEST(RuntimeResult, ParsesTheSeedsExampleAndRedactsTheSummary) {
  const json seed = {{"schema", "aios.online-agent.runtime-result.v1"},
                     {"status", "COMPLETED"},
                     {"summary", "root cause and implementation summary; token=abc123"},
                     {"verification",
                      {{{"label", "focused test"},
                        {"argv", {"/usr/bin/python3", "-m", "pytest", "-q", "tests/test_x.py"}},
                        {"cwd", "."},
                        {"timeout_seconds", 600}}}},
                     {"evidence", {{"root_cause", "..."}}}};
  const auto parsed = parse_runtime_result("\n" + seed.dump() + "\n");
  EXPECT_EQ(parsed.at("status"), "COMPLETED");
  EXPECT_EQ(parsed.at("verification"), seed.at("verification"));
  EXPECT_EQ(parsed.at("summary").get<std::string>().find("abc123"), std::string::npos);
  for (const auto* status : {"BLOCKED", "FAILED"}) {
    auto other = seed;
    other["status"] = status;
    EXPECT_EQ(parse_runtime_result(other.dump()).at("status"), status);
  }
}

TEST(RuntimeResult, RefusesEverythingThatIsNotOneValidResultObject) {
  const json seed = {{"schema", "aios.online-agent.runtime-result.v1"},
                     {"status", "COMPLETED"},
                     {"summary", "done"}};
  std::vector<std::string> texts = {"", "not json", "[]", seed.dump() + seed.dump()};
  for (const auto& [field, value] : std::vector<std::pair<std::string, json>>{
           {"schema", "aios.online-agent.runtime-result.v0"},
           {"status", "DONE"},
           {"summary", 3},
           {"evidence", "text"},
           {"changed_files", {"a"}},
           {"verification",
            {{{"label", "x"}, {"argv", json::array()}, {"cwd", "."}, {"timeout_seconds", 5}}}},
           {"verification",
            {{{"label", "x"},
              {"argv", {"/usr/bin/true"}},
              {"cwd", "."},
              {"timeout_seconds", 0}}}}}) {
    auto changed = seed;
    changed[field] = value;
    texts.push_back(changed.dump());
  }
  for (const auto& text : texts) {
    EXPECT_EQ(code_of([&] { parse_runtime_result(text); }), "RUNTIME_BROKER_RESULT_MALFORMED")
        << text;
  }
}

TEST(OpenClawResult, TakesAnEmbeddedResultOrFallsBackToTheFinalText) {
  const json embedded = {{"schema", "aios.online-agent.runtime-result.v1"},
                         {"status", "BLOCKED"},
                         {"summary", "needs a decision"}};
  const json turn = {{"ok", true},
                     {"status", "ok"},
                     {"final", "Here you go:\n```json\n" + embedded.dump() + "\n```"},
                     {"toolSummary", {{"calls", 1}, {"tools", {"write"}}, {"failures", 0}}}};
  const auto mapped = openclaw_runtime_result(turn.dump());
  EXPECT_EQ(mapped.at("status"), "BLOCKED");
  EXPECT_EQ(mapped.at("summary"), "needs a decision");
  EXPECT_EQ(mapped.at("evidence").at("openclaw").at("tools"), json({"write"}));

  auto plain = turn;
  plain["final"] = "I rewrote the file.";
  EXPECT_EQ(openclaw_runtime_result(plain.dump()).at("status"), "COMPLETED");
  EXPECT_EQ(openclaw_runtime_result(plain.dump()).at("summary"), "I rewrote the file.");
  auto failed = turn;
  failed["ok"] = false;
  failed["status"] = "error";
  failed["error"] = "model unavailable";
  EXPECT_EQ(openclaw_runtime_result(failed.dump()).at("status"), "FAILED");
  EXPECT_EQ(code_of([] { openclaw_runtime_result("{\"final\": \"x\"}"); }),
            "RUNTIME_BROKER_RESULT_MALFORMED");
}

// Each shipped example loads once its executable exists, under the executor's profile rules.
TEST(BackendConfig, ShippedExamplesLoadAndKeepTheProfileRules) {
  const test::ScopedTempDir dir("aios-backend-config");
  const auto load = [&](json config) {
    config["argv"][0] = "/usr/bin/true";
    const auto backend = config.at("backend").get<std::string>();
    test::write_text_file(dir.path() / ("agent-runtime-" + backend + ".conf"), config.dump());
    return load_backend(backend, dir.path(), {"/usr/bin"});
  };
  const std::filesystem::path examples = std::string(AIOS_SOURCE_DIR) + "/config";
  const auto codex =
      json::parse(test::read_text_file(examples / "agent-runtime-codex.conf.example"));
  const auto openclaw =
      json::parse(test::read_text_file(examples / "agent-runtime-openclaw.conf.example"));
  EXPECT_EQ(load(codex).protocol, Protocol::codex_exec);
  EXPECT_EQ(load(codex).profile.timeout_seconds, 1800);
  EXPECT_EQ(load(openclaw).protocol, Protocol::openclaw_agent_exec);

  // Codex's short -c is a shell word to the profile rules; the examples spell it --config.
  auto shell_word = codex;
  shell_word["argv"][15] = "-c";
  EXPECT_EQ(code_of([&] { load(shell_word); }), "EXTERNAL_AGENT_SHELL_MODE_DENY");
  auto unknown = codex;
  unknown["protocol"] = "codex-app-server";
  EXPECT_EQ(code_of([&] { load(unknown); }), "RUNTIME_BROKER_BACKEND_CONFIG_INVALID");
  auto secret = codex;
  secret["environment"] = {{"CODEX_API_KEY", "sk-inline"}};
  EXPECT_EQ(code_of([&] { load(secret); }), "EXTERNAL_AGENT_PROFILE_SECRET_ENV_DENY");
}

// `codex exec --json` events as Codex 0.171 prints them for a turn that edits a file.
std::string codex_turn(const std::string& final_text, const std::string& end) {
  const std::vector<json> events = {
      {{"type", "thread.started"}, {"thread_id", "01a22d31"}},
      {{"type", "item.completed"},
       {"item", {{"id", "item_0"}, {"type", "error"}, {"message", "Model metadata not found"}}}},
      {{"type", "turn.started"}},
      {{"type", "item.completed"},
       {"item",
        {{"id", "item_1"},
         {"type", "command_execution"},
         {"command", "/bin/bash -lc \"printf x > base.txt\""},
         {"exit_code", 0},
         {"status", "completed"}}}},
      {{"type", "item.completed"},
       {"item", {{"id", "item_2"}, {"type", "agent_message"}, {"text", final_text}}}},
      json::parse(end)};
  std::string text;
  for (const auto& event : events) text += event.dump() + "\n";
  return text;
}

TEST(CodexResult, MapsTheTurnsEventsAndFailsWhatDidNotComplete) {
  const std::string completed = R"({"type":"turn.completed","usage":{"input_tokens":20}})";
  const auto plain = codex_runtime_result(codex_turn("I rewrote base.txt.", completed));
  EXPECT_EQ(plain.at("status"), "COMPLETED");
  EXPECT_EQ(plain.at("summary"), "I rewrote base.txt.");
  const auto& account = plain.at("evidence").at("codex");
  EXPECT_EQ(account.at("thread_id"), "01a22d31");
  EXPECT_EQ(account.at("usage").at("input_tokens"), 20);
  ASSERT_EQ(account.at("commands").size(), 1U);
  EXPECT_EQ(account.at("commands").at(0).at("exit_code"), 0);

  const json answer = {{"schema", "aios.online-agent.runtime-result.v1"},
                       {"status", "BLOCKED"},
                       {"summary", "needs a decision"}};
  const auto embedded =
      codex_runtime_result(codex_turn("```json\n" + answer.dump() + "\n```", completed));
  EXPECT_EQ(embedded.at("status"), "BLOCKED");
  EXPECT_EQ(embedded.at("summary"), "needs a decision");
  EXPECT_EQ(embedded.at("evidence").at("codex").at("thread_id"), "01a22d31");

  const auto failed = codex_runtime_result(
      codex_turn("partial", R"({"type":"turn.failed","error":{"message":"model unavailable"}})"));
  EXPECT_EQ(failed.at("status"), "FAILED");
  EXPECT_EQ(failed.at("summary"), "model unavailable");
  const auto unfinished = codex_runtime_result(codex_turn("partial", R"({"type":"turn.started"})"));
  EXPECT_EQ(unfinished.at("status"), "FAILED");
  EXPECT_EQ(unfinished.at("summary"), "the Codex turn did not complete");

  for (const std::string& text :
       std::vector<std::string>{"", "\n\n", "I changed things\n", "{\"no_type\": 1}\n",
                                codex_turn("x", completed) + "not json\n"}) {
    EXPECT_EQ(code_of([&] { codex_runtime_result(text); }), "RUNTIME_BROKER_RESULT_MALFORMED")
        << text;
  }
}

TEST(AgentPrompt, CarriesTheTaskAndTheContractNotTheWorktreePath) {
  auto value = request();
  value["success_criteria"] = {{{"id", "c1"}, {"description", "tests pass"}}};
  const auto prompt = render_agent_prompt(value);
  EXPECT_NE(prompt.find("Fix the bug"), std::string::npos);
  EXPECT_NE(prompt.find("- c1: tests pass"), std::string::npos);
  EXPECT_NE(prompt.find("aios.online-agent.runtime-result.v1"), std::string::npos);
  EXPECT_NE(prompt.find("Do not commit"), std::string::npos);
}

}  // namespace
}  // namespace aios::broker

namespace aios {
namespace {

using nlohmann::json;

GovernedBinding engineering_binding() {
  return GovernedBinding::from_mapping({{"task_id", "task-eng"},
                                        {"job_id", "job-eng"},
                                        {"repository", "aios/aios"},
                                        {"base_oid", std::string(40, 'a')},
                                        {"expected_branch_oid", std::string(40, 'a')},
                                        {"target_branch", "agent/task-eng"},
                                        {"branch_mode", "CREATE_NEW"},
                                        {"generation", 1},
                                        {"idempotency_key", "task-eng-binding-v1"}});
}

json engineering_request() {
  return {
      {"action", "engineering"},
      {"adapter", "codex"},
      {"capability_scope", {"governed.write.branch", "governed.write.file", "git.read"}},
      {"runtime_input", {{"goal", "Fix the bug"}}},
      {"verification",
       {{{"label", "unit"}, {"argv", {"/usr/bin/true"}}, {"cwd", "."}, {"timeout_seconds", 30}}}}};
}

std::string projection_code(const json& request) {
  try {
    project_execution_envelope(engineering_binding(), request);
  } catch (const Error& error) {
    return error.code();
  }
  return "";
}

TEST(EngineeringEnvelope, HoldsTheTaskAndAWriterLeaseButNoChangeSet) {
  const auto envelope = project_execution_envelope(engineering_binding(), engineering_request());
  EXPECT_EQ(envelope.at("action"), "engineering");
  EXPECT_EQ(envelope.at("change_set"), json::array());
  EXPECT_EQ(envelope.at("runtime_input").at("goal"), "Fix the bug");
  EXPECT_EQ(envelope.at("governance").at("writer_lease"), true);
  EXPECT_TRUE(envelope.at("governance").contains("commit_idempotency_key"));
  EXPECT_EQ(validate_execution_envelope(envelope), envelope);

  // Another goal is another plan, so it can never replay the first one's commit.
  auto other = engineering_request();
  other["runtime_input"]["goal"] = "Fix another bug";
  EXPECT_NE(project_execution_envelope(engineering_binding(), other)
                .at("governance")
                .at("commit_idempotency_key"),
            envelope.at("governance").at("commit_idempotency_key"));
}

TEST(EngineeringEnvelope, RefusesWhatDoesNotBelongToAnEngineeringTask) {
  auto adapter = engineering_request();
  adapter["adapter"] = "deterministic";
  EXPECT_EQ(projection_code(adapter), "ENGINEERING_ADAPTER_INVALID");
  auto changes = engineering_request();
  changes["change_set"] = {{{"path", "a.md"}, {"operation", "write_file"}, {"content", "a"}}};
  EXPECT_EQ(projection_code(changes), "ENGINEERING_CHANGE_SET_DENY");
  auto scope = engineering_request();
  scope["capability_scope"] = {"governed.write.branch", "git.read"};
  EXPECT_EQ(projection_code(scope), "ENGINEERING_CAPABILITY_REQUIRED");
  auto signals = engineering_request();
  signals["source_signals"] = {"scheduler"};
  EXPECT_EQ(projection_code(signals), "ENGINEERING_SOURCE_SIGNALS_DENY");
  auto input = engineering_request();
  input.erase("runtime_input");
  EXPECT_EQ(projection_code(input), "AGENT_RUNTIME_INPUT_REQUIRED");
  auto shell = engineering_request();
  shell["verification"][0]["argv"] = {"/bin/sh", "-c", "true"};
  EXPECT_EQ(projection_code(shell), "VERIFICATION_SHELL_DENY");
}

}  // namespace
}  // namespace aios

namespace aios::worker {
namespace {

using nlohmann::json;

TEST(SecretPattern, FindsKeyShapesAndKnownSecretsButNotOrdinaryCode) {
  EXPECT_EQ(secret_pattern("key = 'sk-" + std::string(32, 'x') + "'", {}), "OpenAI-style key");
  EXPECT_EQ(secret_pattern("-----BEGIN OPENSSH PRIVATE KEY-----\nabc", {}), "private key");
  EXPECT_EQ(secret_pattern("AKIAABCDEFGHIJKLMNOP", {}), "AWS access key id");
  EXPECT_EQ(secret_pattern("ghp_" + std::string(36, 'a'), {}), "GitHub token");
  EXPECT_EQ(secret_pattern("the agent token is worker-token-123", {"worker-token-123"}),
            "known secret");
  EXPECT_EQ(secret_pattern("token = read_token()\nsk-short\n-----BEGIN CERTIFICATE-----", {""}),
            std::nullopt);
}

json command(const std::string& label, const std::vector<std::string>& argv) {
  return {{"label", label}, {"argv", argv}, {"cwd", "."}, {"timeout_seconds", 30}};
}

TEST(VerificationPlan, RunsRequestsAsTheirAllowlistedCommandsThenTheRest) {
  const json allowlist = {command("unit", {"/usr/bin/make", "test"}),
                          command("lint", {"/usr/bin/make", "lint"})};
  auto requested = command("mine", {"/usr/bin/make", "lint"});
  requested["timeout_seconds"] = 3000;
  requested["cwd"] = "sub";
  const auto plan = verification_plan(allowlist, json::array({requested, requested}));
  ASSERT_EQ(plan.size(), 2U);
  EXPECT_EQ(plan[0], allowlist[1]);  // the allowlist's cwd and timeout, once
  EXPECT_EQ(plan[1], allowlist[0]);
  try {
    verification_plan(allowlist, json::array({command("x", {"/usr/bin/make", "install"})}));
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), "ENGINEERING_VERIFICATION_NOT_ALLOWED");
  }
}

}  // namespace
}  // namespace aios::worker
