#pragma once
// Shared set-up for the executor tests, shaped like the seed's pytest helpers: a temporary
// directory with profiles/, a request file, and small Python helpers run by /usr/bin/python3
// (an allowed executable root) as the "agent".

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "aios/canonical.hpp"
#include "aios/executor.hpp"
#include "support/daemon.hpp"

namespace aios::executor::test {

using aios::test::read_text_file;
using aios::test::ScopedTempDir;
using aios::test::write_text_file;
using nlohmann::json;

inline const std::string kDigest(64, 'd');

inline json default_payload() {
  return {{"goal", "Return ok."},
          {"instructions", "No side effects."},
          {"success_criteria", json::array()},
          {"constraints", json::object()}};
}

inline json request_value(const std::string& runtime, json payload = default_payload(),
                          const std::string& request_id = "") {
  return {
      {"schema", kRequestSchema},
      {"request_id", request_id.empty() ? "external-" + runtime + "-0123456789abcdef" : request_id},
      {"runtime", runtime},
      {"task_id", "task-" + runtime + "-runtime"},
      {"execution_digest", kDigest},
      {"payload", std::move(payload)}};
}

// The seed's make_profile shape: python3 running `script`, stdin_json in, stdout_json out.
inline json python_profile(const std::string& runtime, const std::filesystem::path& script) {
  return {{"schema", kProfileSchema},
          {"runtime", runtime},
          {"argv", {"/usr/bin/python3", script.string()}},
          {"input_mode", "stdin_json"},
          {"output_mode", "stdout_json"},
          {"timeout_seconds", 30},
          {"max_output_bytes", 65536}};
}

// A profile running `argv` that projects OPENAI_API_KEY from the ONEAPI_REGULAR_TOKEN tier of
// provider.env (see ExecutorTest::provide_credentials) beside one fixed variable.
inline json provider_profile(const json& argv, const std::string& input_mode,
                             const std::string& output_mode) {
  return {{"schema", kProfileSchema},
          {"runtime", "hermes"},
          {"argv", argv},
          {"input_mode", input_mode},
          {"output_mode", output_mode},
          {"environment", {{"RUNTIME_PROFILE_MARKER", "staging"}}},
          {"credential_env",
           {{"OPENAI_API_KEY",
             {{"credential", "provider.env"},
              {"format", "dotenv"},
              {"key", "ONEAPI_REGULAR_TOKEN"}}}}}};
}

class ExecutorTest : public ::testing::Test {
 protected:
  ExecutorTest() {
    std::filesystem::create_directories(profiles());
    std::filesystem::create_directories(temporary());
    options_.profile_root = profiles();
    options_.temporary_root = temporary();
    options_.environment = &system_environment();
  }

  std::filesystem::path profiles() const { return dir_ / "profiles"; }
  std::filesystem::path temporary() const { return dir_ / "tmp"; }
  std::filesystem::path request_path() const { return dir_ / "request.json"; }
  std::filesystem::path result_path() const { return dir_ / "result.json"; }

  // Readable by others: the agent's sandbox, started by root (as the tests are), runs as nobody.
  std::filesystem::path write_script(const std::string& name, const std::string& source) {
    const auto path = dir_ / name;
    using std::filesystem::perms;
    write_text_file(
        path, source,
        perms::owner_read | perms::owner_write | perms::group_read | perms::others_read);
    return path;
  }
  void write_profile(const std::string& runtime, const json& profile) {
    write_text_file(profiles() / (runtime + ".json"), canonical_json(profile));
  }
  void write_request(const json& request) {
    write_text_file(request_path(), canonical_json(request));
  }

  // Writes the profile and request, runs the request; the result as written on disk.
  json run(const json& profile, const json& request) {
    write_profile(request["runtime"].get<std::string>(), profile);
    write_request(request);
    execute_request(request_path(), result_path(), options_);
    return parse_json(read_text_file(result_path()));
  }

  // The code execute_request throws (with its detail as failure_text() reports it, when
  // `with_detail`), or "OK".
  std::string failure(const json& profile, const json& request, bool with_detail = false) {
    try {
      run(profile, request);
    } catch (const Error& error) {
      return with_detail ? failure_text(error) : error.code();
    }
    return "OK";
  }

  std::filesystem::path credentials() const { return dir_ / "credentials"; }
  // provider.env with the tier provider_profile() projects and one it must not, as the
  // run's credential directory.
  void provide_credentials() {
    std::filesystem::create_directories(credentials());
    write_text_file(credentials() / "provider.env",
                    "ONEAPI_REGULAR_TOKEN=test-provider-key\nOTHER_PROVIDER_TOKEN=not-projected\n");
    options_.credentials_directory = credentials();
  }

  // Nothing left in the temporary root: every private directory was removed.
  bool temporary_root_is_empty() const { return std::filesystem::is_empty(temporary()); }

  ScopedTempDir dir_{"aios-executor"};
  ExecuteOptions options_;
};

}  // namespace aios::executor::test
