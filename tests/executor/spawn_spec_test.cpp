// execute_request against a recording spawner: the exact child the executor asks for (argv,
// environment, stdin, working directory, sandbox) and the order of its commit points, without
// starting a process. execute_test.cpp runs the same paths with real children.
#include <algorithm>
#include <system_error>

#include "aios/canonical.hpp"
#include "executor/fixture.hpp"
#include "support/code_of.hpp"
#include "support/recording.hpp"

namespace aios::executor::test {
namespace {

class SpawnSpec : public ExecutorTest {
 protected:
  SpawnSpec() {
    options_.environment = &world_.environment;
    provide_credentials();
  }

  static json profile(const std::string& input_mode, const std::string& output_mode,
                      const json& argv = {"/usr/bin/python3", "-I", "/opt/hermes/agent.py"}) {
    json value = provider_profile(argv, input_mode, output_mode);
    value["timeout_seconds"] = 17;
    value["network"] = {"api.example.invalid:443"};
    return value;
  }

  // The child as the fake would be: prints `stdout_text` and exits with `outcome`.
  void child_prints(std::string stdout_text, process::Outcome outcome = {}) {
    world_.spawner.answer = [stdout_text, outcome](const process::Spec& spec) {
      spec.on_stdout(stdout_text);
      return outcome;
    };
  }

  aios::test::FakeWorld world_;
};

// Given a profile with a fixed environment, a provider credential and one destination, the
// child we ask for should get exactly the profile's argv, the fixed environment plus the
// profile's and the one projected key (never the other tiers of the credential file), the
// payload on stdin, its private directory as its only writable path and the profile's network.
TEST_F(SpawnSpec, AsksForExactlyTheProfilesChild) {
  bool spawned_before_marker = true;
  options_.before_spawn = [&] { spawned_before_marker = !world_.spawner.calls().empty(); };
  child_prints("{\"answer\":\"ok\"}",
               process::Outcome{.elapsed = std::chrono::milliseconds(1234), .exceeded = {}});
  const auto request = request_value("hermes");
  const auto result = run(profile("stdin_json", "stdout_json"), request);

  const auto calls = world_.spawner.calls();
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_FALSE(spawned_before_marker);
  EXPECT_TRUE(calls[0].socket.empty());
  const auto& spec = calls[0].spec;
  // argv[0] as resolved beneath the executable roots (python3 is a symlink there).
  EXPECT_EQ(spec.argv,
            (std::vector<std::string>{std::filesystem::canonical("/usr/bin/python3").string(), "-I",
                                      "/opt/hermes/agent.py"}));
  EXPECT_EQ(spec.working_directory.parent_path(), temporary());
  EXPECT_EQ(spec.environment,
            (std::vector<std::string>{
                "PATH=/usr/bin:/usr/local/bin:/bin", "LC_ALL=C.UTF-8", "LANG=C.UTF-8",
                "HOME=" + (spec.working_directory / "home").string(), "NO_COLOR=1",
                "RUNTIME_PROFILE_MARKER=staging", "OPENAI_API_KEY=test-provider-key"}));
  EXPECT_EQ(spec.stdin_data, canonical_json(request["payload"]));
  EXPECT_EQ(spec.timeout, std::chrono::seconds(17));
  ASSERT_TRUE(spec.sandbox.has_value());
  EXPECT_EQ(spec.sandbox->network,
            (std::vector<process::Destination>{{"api.example.invalid", 443}}));
  EXPECT_EQ(spec.sandbox->writable, (std::vector<std::filesystem::path>{spec.working_directory}));
  for (const auto& secret : {credentials(), temporary(), std::filesystem::absolute(request_path()),
                             std::filesystem::absolute(result_path())}) {
    const auto& hidden = spec.sandbox->hidden;
    EXPECT_NE(std::find(hidden.begin(), hidden.end(), secret), hidden.end()) << secret;
  }

  EXPECT_EQ(world_.faults.phases(),
            (std::vector<std::string>{"executor_request_accepted", "executor_start_marked",
                                      "executor_outcome_written"}));
  EXPECT_EQ(result["duration_ms"], 1234);
  EXPECT_EQ(result["output_json"], json({{"answer", "ok"}}));
  EXPECT_TRUE(temporary_root_is_empty());
}

// Given a text-in, file-out profile, the prompt should go on stdin and the output placeholder
// should name the output file inside the private directory.
TEST_F(SpawnSpec, TextInputAndFileOutputArePlacedAsTheModesSay) {
  world_.spawner.answer = [](const process::Spec& spec) {
    write_text_file(spec.argv.back(), "{\"answer\":\"from-file\"}");
    return process::Outcome{};
  };
  const auto request = request_value("hermes");
  const auto result =
      run(profile("stdin_text", "file_json", {"/usr/bin/python3", "/opt/a.py", "{output_json}"}),
          request);
  const auto spec = world_.spawner.calls().at(0).spec;
  EXPECT_EQ(spec.stdin_data, render_prompt(request["payload"]));
  ASSERT_EQ(spec.argv.size(), 3U);
  EXPECT_EQ(std::filesystem::path(spec.argv[2]), spec.working_directory / "output.json");
  EXPECT_EQ(result["output_json"]["answer"], "from-file");
}

// Given a child that cannot be started, times out or fails, we should throw its code, write no
// result and stop before the outcome point; a failure's stderr carries the key redacted.
TEST_F(SpawnSpec, SpawnFailureTimeoutAndExitAreRefusedWithoutAResult) {
  world_.spawner.answer = [](const process::Spec&) -> process::Outcome {
    throw std::system_error(ENOENT, std::generic_category(), "posix_spawn");
  };
  EXPECT_EQ(failure(profile("stdin_json", "stdout_json"), request_value("hermes")),
            "EXTERNAL_AGENT_SPAWN_FAILED");
  child_prints("",
               process::Outcome{.timed_out = true, .exit_code = -9, .elapsed = {}, .exceeded = {}});
  EXPECT_EQ(failure(profile("stdin_json", "stdout_json"), request_value("hermes")),
            "EXTERNAL_AGENT_TIMEOUT");
  world_.spawner.answer = [](const process::Spec& spec) {
    for (const auto& entry : spec.environment) {
      if (entry.starts_with("OPENAI_API_KEY=")) spec.on_stderr("leaked " + entry.substr(15));
    }
    return process::Outcome{.exit_code = 3, .elapsed = {}, .exceeded = {}};
  };
  EXPECT_EQ(failure(profile("stdin_json", "stdout_json"), request_value("hermes"), true),
            "EXTERNAL_AGENT_PROCESS_FAILED:3:leaked [REDACTED]");
  EXPECT_FALSE(std::filesystem::exists(result_path()));
  const auto phases = world_.faults.phases();
  EXPECT_EQ(std::count(phases.begin(), phases.end(), "executor_start_marked"), 3);
  EXPECT_EQ(std::count(phases.begin(), phases.end(), "executor_outcome_written"), 0);
  EXPECT_TRUE(temporary_root_is_empty());
}

}  // namespace
}  // namespace aios::executor::test
