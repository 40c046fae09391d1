// execute_request end to end with real child processes: the seed's executor tests, each I/O
// mode, timeouts, large output, redaction and the result's seal.
#include <sys/stat.h>

#include "aios/canonical.hpp"
#include "executor/fixture.hpp"
#include "support/code_of.hpp"

namespace aios::executor::test {
namespace {

constexpr const char* kEchoGoal =
    "import json,sys\n"
    "value=json.load(sys.stdin)\n"
    "print(json.dumps({'answer':'ok','goal':value['goal']},sort_keys=True))\n";

class ExecuteRequest : public ExecutorTest, public ::testing::WithParamInterface<std::string> {};

// Given a root-owned profile for either runtime, we should run it without a shell and write a
// sealed result (seed: test_external_executor_runs_root_owned_profile_without_shell).
TEST_P(ExecuteRequest, RunsRootOwnedProfileWithoutShell) {
  const std::string runtime = GetParam();
  const auto helper = write_script("runtime_helper.py", kEchoGoal);
  const auto result = run(python_profile(runtime, helper), request_value(runtime));
  EXPECT_EQ(result["runtime"], runtime);
  EXPECT_EQ(result["exit_code"], 0);
  EXPECT_EQ(result["output_json"]["answer"], "ok");
  EXPECT_EQ(result["output_json"]["goal"], "Return ok.");
  EXPECT_EQ(result["credential_material_exposed"], false);
  EXPECT_EQ(result["control_plane_access_granted"], false);
  EXPECT_TRUE(temporary_root_is_empty());
}

INSTANTIATE_TEST_SUITE_P(BothRuntimes, ExecuteRequest, ::testing::Values("hermes", "openclaw"));

// Given a result, every field the seed writes should be there and the seal should verify.
TEST_F(ExecutorTest, ResultCarriesEveryFieldAndItsOwnDigest) {
  const auto helper = write_script("helper.py", kEchoGoal);
  const auto request = request_value("hermes");
  const auto result = run(python_profile("hermes", helper), request);
  for (const char* field : {"schema", "request_id", "request_sha256", "runtime", "task_id",
                            "execution_digest", "exit_code", "duration_ms", "output_text",
                            "output_sha256", "stderr_sha256", "credential_material_exposed",
                            "control_plane_access_granted", "output_json", "result_sha256"}) {
    EXPECT_TRUE(result.contains(field)) << field;
  }
  EXPECT_EQ(result.size(), 15U);
  EXPECT_EQ(result["schema"], kResultSchema);
  EXPECT_EQ(result["request_sha256"], digest(validate_request(request)));
  EXPECT_EQ(result["output_sha256"], sha256_hex(result["output_text"].get<std::string>()));
  EXPECT_EQ(result["stderr_sha256"], sha256_hex(""));
  EXPECT_EQ(result["result_sha256"], result_digest(result));
  // Written as canonical JSON plus a newline, readable by the worker's group only.
  EXPECT_EQ(read_text_file(result_path()), canonical_json(result) + "\n");
  struct stat info {};
  ASSERT_EQ(::stat(result_path().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0640U);
}

// Given a helper that reports its argv, environment and working directory, we should see the
// fixed environment only, the profile's variables, and a private cwd with home/.
TEST_F(ExecutorTest, ChildGetsFixedEnvironmentAndPrivateDirectory) {
  const auto helper =
      write_script("env_helper.py",
                   "import json,os,sys\n"
                   "print(json.dumps({'env':dict(os.environ),'cwd':os.getcwd(),'argv':sys.argv,\n"
                   "  'home_is_dir':os.path.isdir(os.environ['HOME']),\n"
                   "  'fds':sorted(int(f) for f in os.listdir('/proc/self/fd'))}))\n");
  auto profile = python_profile("hermes", helper);
  profile["input_mode"] = "stdin_text";
  profile["environment"] = {{"RUNTIME_PROFILE_MARKER", "staging"}};
  const auto out = run(profile, request_value("hermes"))["output_json"];
  const json expected_env = {{"PATH", "/usr/bin:/usr/local/bin:/bin"},
                             {"LC_ALL", "C.UTF-8"},
                             {"LANG", "C.UTF-8"},
                             {"HOME", out["cwd"].get<std::string>() + "/home"},
                             {"NO_COLOR", "1"},
                             {"RUNTIME_PROFILE_MARKER", "staging"}};
  EXPECT_EQ(out["env"], expected_env);
  EXPECT_TRUE(out["home_is_dir"].get<bool>());
  EXPECT_EQ(std::filesystem::path(out["cwd"].get<std::string>()).parent_path(), temporary());
  EXPECT_EQ(out["argv"], json({helper.string()}));
  // stdin, stdout, stderr and the directory listing itself: nothing of ours leaked in.
  EXPECT_LE(out["fds"].size(), 4U) << out["fds"];
  EXPECT_TRUE(temporary_root_is_empty());
}

// Given the {prompt} placeholder, the child should receive the rendered prompt as one argv
// item (seed: test_runtime_profile_prompt_placeholder_is_root_owned).
TEST_F(ExecutorTest, PromptPlaceholderIsRootOwned) {
  const auto helper =
      write_script("prompt_helper.py",
                   "import sys\n"
                   "print('AIOS_PROMPT_PLACEHOLDER_OK' if 'Goal:' in sys.argv[1] else "
                   "'AIOS_PROMPT_PLACEHOLDER_FAIL')\n");
  json profile = {{"schema", kProfileSchema},
                  {"runtime", "hermes"},
                  {"argv", {"/usr/bin/python3", helper.string(), "{prompt}"}},
                  {"input_mode", "stdin_text"},
                  {"output_mode", "stdout_text"}};
  const auto result = run(profile, request_value("hermes"));
  EXPECT_NE(result["output_text"].get<std::string>().find("AIOS_PROMPT_PLACEHOLDER_OK"),
            std::string::npos);
  EXPECT_FALSE(result.contains("output_json"));
}

// Given integers past 64 bits in the payload's constraints, as the seed's json.loads keeps them,
// the prompt should carry them digit for digit (the expected text is Python's json.dumps of the
// same constraints), the canonical payload on stdin too, and the request digest should cover
// them; an integer past 64 bits in the child's JSON output should stay exact in output_json.
TEST_F(ExecutorTest, IntegersPast64BitsStayExactThroughPromptDigestAndOutput) {
  const auto helper = write_script("big_helper.py",
                                   "import json,sys\n"
                                   "text=sys.stdin.read()\n"
                                   "print(json.dumps({'stdin':text,'big':-2**70}))\n");
  auto payload = default_payload();
  payload["constraints"] = parse_json(R"({"n":18446744073709551616,"m":-9223372036854775809})");
  const auto request = request_value("hermes", payload);
  auto profile = python_profile("hermes", helper);

  profile["input_mode"] = "stdin_text";
  const auto prompted = run(profile, request);
  EXPECT_NE(prompted["output_json"]["stdin"].get<std::string>().find(
                "Constraints:\n{\"m\": -9223372036854775809, \"n\": 18446744073709551616}\n"),
            std::string::npos)
      << prompted["output_json"]["stdin"];
  EXPECT_EQ(exact_integer_text(prompted["output_json"]["big"]), "-1180591620717411303424");
  EXPECT_EQ(prompted["request_sha256"], digest(validate_request(request)));
  EXPECT_NE(canonical_json(validate_request(request)).find(R"("n":18446744073709551616)"),
            std::string::npos);
  // The sealed file holds the digits too, and reads back as the same value.
  const auto stored = read_text_file(result_path());
  EXPECT_NE(stored.find(R"("big":-1180591620717411303424)"), std::string::npos);
  EXPECT_EQ(parse_json(stored), prompted);

  profile["input_mode"] = "stdin_json";
  EXPECT_EQ(run(profile, request)["output_json"]["stdin"], canonical_json(payload));
}

// Given each input mode, the child should get the prompt text, the canonical payload on
// stdin, or the payload in the {input_json} file with stdin empty.
TEST_F(ExecutorTest, EachInputModeDeliversItsInput) {
  const auto helper = write_script(
      "input_helper.py",
      "import json,sys\n"
      "stdin=sys.stdin.read()\n"
      "path=sys.argv[1] if len(sys.argv)>1 else ''\n"
      "print(json.dumps({'stdin':stdin,'file':open(path).read() if path else None}))\n");
  const auto request = request_value("hermes");
  const auto payload_json = canonical_json(request["payload"]);
  auto profile = python_profile("hermes", helper);

  profile["input_mode"] = "stdin_text";
  EXPECT_EQ(run(profile, request)["output_json"]["stdin"], render_prompt(request["payload"]));
  profile["input_mode"] = "stdin_json";
  EXPECT_EQ(run(profile, request)["output_json"]["stdin"], payload_json);
  profile["input_mode"] = "file_json";
  profile["argv"] = {"/usr/bin/python3", helper.string(), "{input_json}"};
  const auto out = run(profile, request)["output_json"];
  EXPECT_EQ(out["stdin"], "");
  EXPECT_EQ(out["file"], payload_json);
}

// Given each output mode, the result should carry text only, parsed stdout, or the parsed
// {output_json} file.
TEST_F(ExecutorTest, EachOutputModeIsParsed) {
  const auto helper = write_script("output_helper.py",
                                   "import sys\n"
                                   "if len(sys.argv)>1:\n"
                                   "    open(sys.argv[1],'w').write('{\"from\": \"file\"}')\n"
                                   "print('{\"from\": \"stdout\"}')\n");
  const auto request = request_value("hermes");
  auto profile = python_profile("hermes", helper);
  profile["output_mode"] = "stdout_text";
  auto result = run(profile, request);
  EXPECT_EQ(result["output_text"], "{\"from\": \"stdout\"}\n");
  EXPECT_FALSE(result.contains("output_json"));
  profile["output_mode"] = "stdout_json";
  EXPECT_EQ(run(profile, request)["output_json"], json({{"from", "stdout"}}));
  profile["output_mode"] = "file_json";
  profile["argv"] = {"/usr/bin/python3", helper.string(), "{output_json}"};
  result = run(profile, request);
  EXPECT_EQ(result["output_json"], json({{"from", "file"}}));
  EXPECT_EQ(result["output_text"], "{\"from\": \"file\"}");
}

// Given output the seed would treat specially, we should match it: CRLF as LF (text mode),
// over-long output cut around the truncation marker, JSON modes refusing what is not JSON.
TEST_F(ExecutorTest, OutputIsTranslatedBoundedAndChecked) {
  auto profile = python_profile("hermes", write_script("crlf.py",
                                                       "import sys\n"
                                                       "sys.stdout.write('a\\r\\nb\\rc')\n"));
  profile["output_mode"] = "stdout_text";
  EXPECT_EQ(run(profile, request_value("hermes"))["output_text"], "a\nb\nc");

  // 4 MiB of output, far past the 1024-byte limit: read without deadlock, kept bounded.
  profile = python_profile("hermes", write_script("huge.py",
                                                  "import sys\n"
                                                  "sys.stdout.write('x'*(4<<20))\n"
                                                  "sys.stderr.write('y'*(4<<20))\n"));
  profile["output_mode"] = "stdout_text";
  profile["max_output_bytes"] = 1024;
  const auto text = run(profile, request_value("hermes"))["output_text"].get<std::string>();
  EXPECT_EQ(text, std::string(502, 'x') + std::string(kTruncationMarker) + std::string(502, 'x'));

  profile["output_mode"] = "stdout_json";
  EXPECT_EQ(failure(profile, request_value("hermes")), "EXTERNAL_AGENT_OUTPUT_JSON_INVALID");
  profile = python_profile("hermes", write_script("notjson.py", "print('not json')\n"));
  EXPECT_EQ(failure(profile, request_value("hermes")), "EXTERNAL_AGENT_OUTPUT_JSON_INVALID");
  profile["output_mode"] = "file_json";
  profile["argv"] = {"/usr/bin/python3", (dir_ / "notjson.py").string(), "{output_json}"};
  EXPECT_EQ(failure(profile, request_value("hermes")), "EXTERNAL_AGENT_OUTPUT_FILE_MISSING");
  profile = python_profile(
      "hermes", write_script("bigfile.py", "import sys\nopen(sys.argv[1],'w').write('1'*2048)\n"));
  profile["output_mode"] = "file_json";
  profile["max_output_bytes"] = 1024;
  profile["argv"].push_back("{output_json}");
  EXPECT_EQ(failure(profile, request_value("hermes")), "EXTERNAL_AGENT_OUTPUT_TOO_LARGE");
  EXPECT_TRUE(temporary_root_is_empty());
}

// Given secret-looking text in the output, output_text and output_json should carry
// [REDACTED] instead, and the stderr of a failure too.
TEST_F(ExecutorTest, OutputAndStderrAreRedacted) {
  auto profile = python_profile(
      "hermes", write_script("leak.py",
                             "import json\n"
                             "print(json.dumps({'note':'use api_key=abc123 here'}))\n"));
  const auto result = run(profile, request_value("hermes"));
  EXPECT_EQ(result["output_json"]["note"], "use [REDACTED] here");
  EXPECT_EQ(result["output_text"].get<std::string>().find("abc123"), std::string::npos);

  profile = python_profile("hermes", write_script("fail.py",
                                                  "import sys\n"
                                                  "sys.stderr.write('token=abc123 bad')\n"
                                                  "sys.exit(3)\n"));
  std::filesystem::remove(result_path());
  EXPECT_EQ(failure(profile, request_value("hermes"), true),
            "EXTERNAL_AGENT_PROCESS_FAILED:3:[REDACTED] bad");
  EXPECT_FALSE(std::filesystem::exists(result_path()));
}

// Given a child that outlives the profile's timeout (and a helper it started), the whole
// process group should be killed, EXTERNAL_AGENT_TIMEOUT thrown, and nothing left behind.
TEST_F(ExecutorTest, TimeoutKillsTheProcessGroup) {
  const std::string marker = "aios-grandchild-" + std::to_string(::getpid());
  auto profile = python_profile(
      "hermes", write_script("slow.py",
                             "import subprocess,sys,time\n"
                             "p=subprocess.Popen(['/usr/bin/python3','-c','import time; "
                             "time.sleep(60)','" +
                                 marker +
                                 "'])\n"
                                 "time.sleep(60)\n"));
  profile["timeout_seconds"] = 1;
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(failure(profile, request_value("hermes")), "EXTERNAL_AGENT_TIMEOUT");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
  // The grandchild went with its sandbox's PID namespace.
  for (int i = 0; i < 200 && aios::test::processes_with(marker) > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(aios::test::processes_with(marker), 0);
  EXPECT_TRUE(temporary_root_is_empty());
}

// Given a child that exits non-zero, killed by a signal, or cannot be executed, we should
// report the seed's code (or ours for an exec failure) and write no result.
TEST_F(ExecutorTest, ProcessFailuresAreReported) {
  auto profile = python_profile("hermes", write_script("exit.py", "import sys\nsys.exit(7)\n"));
  EXPECT_EQ(failure(profile, request_value("hermes")), "EXTERNAL_AGENT_PROCESS_FAILED");
  profile = python_profile(
      "hermes", write_script("kill.py", "import os,signal\nos.kill(os.getpid(),signal.SIGKILL)\n"));
  write_profile("hermes", profile);
  try {
    execute_request(request_path(), result_path(), options_);
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(failure_text(error), "EXTERNAL_AGENT_PROCESS_FAILED:-9:");
  }
  EXPECT_FALSE(std::filesystem::exists(result_path()));
}

// Given a child that ignores a large stdin, writing it should neither block nor kill us.
TEST_F(ExecutorTest, ChildThatIgnoresStdinDoesNotBlock) {
  auto profile = python_profile("hermes", write_script("quiet.py", "print('{}')\n"));
  profile["input_mode"] = "stdin_text";
  auto payload = default_payload();
  payload["goal"] = std::string(200 * 1024, 'g');
  EXPECT_EQ(run(profile, request_value("hermes", payload))["output_json"], json::object());
}

// Given request files that are not acceptable, we should refuse them with the seed's codes.
TEST_F(ExecutorTest, RequestFileRefusals) {
  write_profile("hermes", python_profile("hermes", write_script("ok.py", "print('{}')\n")));
  const auto code = [&] {
    try {
      execute_request(request_path(), result_path(), options_);
    } catch (const Error& error) {
      return error.code();
    }
    return std::string("OK");
  };
  EXPECT_EQ(code(), "EXTERNAL_AGENT_REQUEST_FILE_INVALID");  // missing
  write_text_file(dir_ / "real.json", request_value("hermes").dump());
  std::filesystem::create_symlink(dir_ / "real.json", request_path());
  EXPECT_EQ(code(), "EXTERNAL_AGENT_REQUEST_FILE_INVALID");
  std::filesystem::remove(request_path());
  write_text_file(request_path(), std::string(kMaxRequestBytes + 1, ' '));
  EXPECT_EQ(code(), "EXTERNAL_AGENT_REQUEST_TOO_LARGE");
  write_text_file(request_path(), "{not json");
  EXPECT_EQ(code(), "EXTERNAL_AGENT_REQUEST_JSON_INVALID");
  write_text_file(request_path(), "[]");
  EXPECT_EQ(code(), "EXTERNAL_AGENT_REQUEST_SCHEMA_INVALID");
  // json.loads(raw.decode("utf-8")) refuses a byte-order mark, as the seed does.
  write_text_file(request_path(), "\xEF\xBB\xBF" + canonical_json(request_value("hermes")));
  EXPECT_EQ(code(), "EXTERNAL_AGENT_REQUEST_JSON_INVALID");
  write_request(request_value("hermes"));
  EXPECT_EQ(code(), "OK");
}

// Given output that starts with a byte-order mark, either JSON mode should refuse it as the seed
// does; given JSON output `null`, the result should carry no output_json, as the seed's does.
TEST_F(ExecutorTest, JsonOutputWithAByteOrderMarkIsRefusedAndNullIsOmitted) {
  auto profile = python_profile(
      "hermes", write_script("bom.py",
                             "import sys\n"
                             "data='\\ufeff{\"a\": 1}'\n"
                             "open(sys.argv[1],'w').write(data) if len(sys.argv)>1 else None\n"
                             "sys.stdout.write(data)\n"));
  EXPECT_EQ(failure(profile, request_value("hermes")), "EXTERNAL_AGENT_OUTPUT_JSON_INVALID");
  profile["output_mode"] = "file_json";
  profile["argv"] = {"/usr/bin/python3", (dir_ / "bom.py").string(), "{output_json}"};
  EXPECT_EQ(failure(profile, request_value("hermes")), "EXTERNAL_AGENT_OUTPUT_JSON_INVALID");

  profile = python_profile("hermes", write_script("null.py", "print('null')\n"));
  const auto result = run(profile, request_value("hermes"));
  EXPECT_FALSE(result.contains("output_json")) << result;
  EXPECT_EQ(result["output_text"], "null\n");
  EXPECT_EQ(result["result_sha256"], result_digest(result));
}

// Given a goal holding NUL and a profile that passes {prompt} in argv, we should refuse with a
// code of its own before anything runs, where execve would silently cut the prompt short; on
// stdin the same prompt is delivered whole.
TEST_F(ExecutorTest, APromptHoldingNulIsNeverCutIntoArgv) {
  const auto marker = dir_ / "ran";
  const auto helper = write_script(
      "argv_helper.py", "import json,sys\nopen('" + marker.string() +
                            "','w').write('x')\nprint(json.dumps({'stdin':sys.stdin.read()}))\n");
  auto payload = default_payload();
  payload["goal"] = std::string("first\0second", 12);
  const auto request = request_value("hermes", payload);
  json profile = {{"schema", kProfileSchema},
                  {"runtime", "hermes"},
                  {"argv", {"/usr/bin/python3", helper.string(), "{prompt}"}},
                  {"input_mode", "stdin_json"},
                  {"output_mode", "stdout_json"}};
  EXPECT_EQ(failure(profile, request), "EXTERNAL_AGENT_PROMPT_NUL_INVALID");
  EXPECT_FALSE(std::filesystem::exists(marker));
  profile["argv"] = {"/usr/bin/python3", helper.string()};
  profile["input_mode"] = "stdin_text";
  const auto stdin_text = run(profile, request)["output_json"]["stdin"].get<std::string>();
  EXPECT_NE(stdin_text.find(std::string("first\0second", 12)), std::string::npos);
}

// Given file modes without their placeholders, we should refuse before running anything.
TEST_F(ExecutorTest, FileModesRequireTheirPlaceholders) {
  auto profile = python_profile("hermes", write_script("ok.py", "print('{}')\n"));
  profile["input_mode"] = "file_json";
  EXPECT_EQ(failure(profile, request_value("hermes")), "EXTERNAL_AGENT_INPUT_PLACEHOLDER_REQUIRED");
  profile["input_mode"] = "stdin_json";
  profile["output_mode"] = "file_json";
  EXPECT_EQ(failure(profile, request_value("hermes")),
            "EXTERNAL_AGENT_OUTPUT_PLACEHOLDER_REQUIRED");
  EXPECT_TRUE(temporary_root_is_empty());
}

// Given a result path that cannot be written, the run should fail with its own code and leave
// no temporary file behind.
TEST_F(ExecutorTest, UnwritableResultIsResultWriteFailed) {
  write_profile("hermes", python_profile("hermes", write_script("ok.py", "print('{}')\n")));
  write_request(request_value("hermes"));
  write_text_file(dir_ / "not-a-directory", "");
  EXPECT_EQ(aios::test::code_of([&] {
              execute_request(request_path(), dir_ / "not-a-directory" / "result.json", options_);
            }),
            "EXTERNAL_AGENT_RESULT_WRITE_FAILED");
  EXPECT_TRUE(temporary_root_is_empty());
}

// Given a script without an interpreter line, exec fails and we should say so.
TEST_F(ExecutorTest, ExecFailureIsSpawnFailed) {
  const auto root = dir_ / "bin";
  std::filesystem::create_directories(root);
  write_text_file(root / "agent", "no interpreter line\n", std::filesystem::perms::owner_all);
  options_.executable_roots = {root};
  json profile = {
      {"schema", kProfileSchema}, {"runtime", "hermes"}, {"argv", {(root / "agent").string()}}};
  EXPECT_EQ(failure(profile, request_value("hermes")), "EXTERNAL_AGENT_SPAWN_FAILED");
}

// Given a profile with a state template, the child should find a writable copy of it where
// the template's variable points, inside its private directory; what it writes there should
// never reach the template; and a template holding a link should refuse the run.
TEST_F(ExecutorTest, AStateTemplateIsCopiedIntoTheRunAndNeverWrittenBack) {
  const auto home = dir_ / "hermes-home";
  std::filesystem::create_directories(home / "cron");
  write_text_file(home / "config.yaml", "model: demo\n");
  // The sandbox runs as nobody under root: the template is read by the executor, not the child.
  const auto helper =
      write_script("state_helper.py",
                   "import json, os\n"
                   "home = os.environ['HERMES_HOME']\n"
                   "config = open(os.path.join(home, 'config.yaml')).read()\n"
                   "open(os.path.join(home, 'cron', 'state.db'), 'w').write('written by the run')\n"
                   "print(json.dumps({'home': home, 'cwd': os.getcwd(), 'config': config}))\n");
  auto profile = python_profile("hermes", helper);
  profile["state_template"] = {{"from", home.string()}, {"env", "HERMES_HOME"}};
  const auto out = run(profile, request_value("hermes"))["output_json"];
  EXPECT_EQ(out["config"], "model: demo\n");
  EXPECT_EQ(out["home"], out["cwd"].get<std::string>() + "/state");
  EXPECT_FALSE(std::filesystem::exists(home / "cron" / "state.db"));
  EXPECT_TRUE(temporary_root_is_empty());

  std::filesystem::create_symlink("/etc/shadow", home / "cron" / "shadow");
  EXPECT_EQ(failure(profile, request_value("hermes")), "EXTERNAL_AGENT_STATE_TEMPLATE_INVALID");
  EXPECT_TRUE(temporary_root_is_empty());
  profile["state_template"] = {{"from", home.string()}, {"env", "PATH"}};
  EXPECT_EQ(failure(profile, request_value("hermes")),
            "EXTERNAL_AGENT_PROFILE_STATE_TEMPLATE_INVALID");
  profile["state_template"] = {{"from", "relative/home"}, {"env", "HERMES_HOME"}};
  EXPECT_EQ(failure(profile, request_value("hermes")),
            "EXTERNAL_AGENT_PROFILE_STATE_TEMPLATE_INVALID");
}

// Given a profile whose argv names {usage_json}, exit 0 should count only with a usage report
// that says the run completed: a missing or malformed report and one that says failed should
// fail the run, the failed one with the agent's stdout; a good one gives model_usage.
TEST_F(ExecutorTest, AUsageReportDecidesWhetherExitZeroSucceeded) {
  const auto helper =
      write_script("usage_helper.py",
                   "import sys\n"
                   "report = sys.argv[2]\n"
                   "if report == 'big':\n"
                   "    report = ' ' * 70000 + '{\"completed\": true, \"failed\": false}'\n"
                   "if report != 'none':\n"
                   "    open(sys.argv[1], 'w').write(report)\n"
                   "print('answer of the run')\n");
  const auto with_report = [&](const std::string& report) {
    auto profile = python_profile("hermes", helper);
    profile["argv"].push_back("{usage_json}");
    profile["argv"].push_back(report);
    profile["output_mode"] = "stdout_text";
    return profile;
  };
  const auto request = request_value("hermes");
  const auto good = run(with_report(R"({"completed": true, "failed": false, "model": null,
      "api_calls": 2, "input_tokens": 7, "output_tokens": 3, "total_tokens": 10})"),
                        request);
  EXPECT_EQ(good["output_text"], "answer of the run\n");
  EXPECT_EQ(good["model_usage"]["requests"], 2);
  EXPECT_EQ(good["model_usage"]["total"], 10);
  EXPECT_EQ(failure(with_report(R"({"completed": false, "failed": true})"), request, true),
            "EXTERNAL_AGENT_REPORTED_FAILURE:answer of the run\n");
  EXPECT_EQ(failure(with_report(R"({"completed": false, "failed": false})"), request),
            "EXTERNAL_AGENT_REPORTED_FAILURE");
  for (const std::string& bad : std::vector<std::string>{
           "none", "[]", R"({"failed": false})", R"({"completed": true, "failed": "no"})",
           R"({"completed": true, "failed": false, "api_calls": -1})",
           R"({"completed": true, "failed": false, "input_tokens": 1.5})",
           R"({"completed": true, "failed": false, "total_tokens": 1000000000001})", "big"}) {
    EXPECT_EQ(failure(with_report(bad), request), "EXTERNAL_AGENT_USAGE_REPORT_INVALID")
        << bad.substr(0, 60);
  }
  // Without {usage_json} the run reports no usage of its own.
  EXPECT_FALSE(run(python_profile("hermes", write_script("plain.py", kEchoGoal)), request)
                   .contains("model_usage"));
  EXPECT_TRUE(temporary_root_is_empty());
}

// Given a prompt longer than one argv item may be, a profile passing it in argv should refuse
// the run before anything starts, where the same prompt on stdin runs.
TEST_F(ExecutorTest, APromptTooLongForArgvIsRefusedBeforeTheSpawn) {
  auto payload = default_payload();
  payload["goal"] = std::string(140 * 1024, 'g');
  auto profile = python_profile("hermes", write_script("argv_helper.py", "print('{}')\n"));
  profile["argv"].push_back("{prompt}");
  EXPECT_EQ(failure(profile, request_value("hermes", payload)), "EXTERNAL_AGENT_PROMPT_TOO_LARGE");
  profile["argv"].erase(profile["argv"].size() - 1);
  EXPECT_EQ(failure(profile, request_value("hermes", payload)), "OK");
}

}  // namespace
}  // namespace aios::executor::test
