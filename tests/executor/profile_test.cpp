// Profile rules: every profile code, as tables of one change to a valid profile each.
#include "executor/fixture.hpp"
#include "support/code_of.hpp"

namespace aios::executor::test {
namespace {

using aios::test::code_of;

class ProfileRules : public ExecutorTest {
 protected:
  json valid() const {
    return {{"schema", kProfileSchema},
            {"runtime", "hermes"},
            {"argv", {"/usr/bin/python3", "-V"}},
            {"input_mode", "stdin_text"},
            {"output_mode", "stdout_text"}};
  }
  std::string load(const json& profile, const std::string& runtime = "hermes") {
    write_profile(runtime, profile);
    return code_of([&] { load_profile(runtime, profiles(), default_executable_roots()); });
  }
};

struct ProfileCase {
  const char* name;
  json patch;  // merged into the valid profile (null removes a field)
  const char* code;
};

// Given one change each, the loader should refuse with exactly the seed's code.
TEST_F(ProfileRules, EachRuleHasItsCode) {
  const json dotenv = {{"credential", "provider.env"}, {"format", "dotenv"}, {"key", "ONEAPI_KEY"}};
  const std::vector<ProfileCase> cases = {
      {"valid", json::object(), "OK"},
      {"schema", {{"schema", "v0"}}, "EXTERNAL_AGENT_PROFILE_INVALID"},
      {"runtime mismatch", {{"runtime", "openclaw"}}, "EXTERNAL_AGENT_PROFILE_RUNTIME_MISMATCH"},
      {"runtime unknown", {{"runtime", "codex"}}, "EXTERNAL_AGENT_RUNTIME_UNSUPPORTED"},
      {"argv string", {{"argv", "/usr/bin/python3"}}, "EXTERNAL_AGENT_PROFILE_ARGV_INVALID"},
      {"argv empty", {{"argv", json::array()}}, "EXTERNAL_AGENT_PROFILE_ARGV_INVALID"},
      {"argv empty item",
       {{"argv", {"/usr/bin/python3", ""}}},
       "EXTERNAL_AGENT_PROFILE_ARGV_INVALID"},
      {"argv number", {{"argv", {"/usr/bin/python3", 1}}}, "EXTERNAL_AGENT_PROFILE_ARGV_INVALID"},
      {"relative", {{"argv", {"python3"}}}, "EXTERNAL_AGENT_EXECUTABLE_ABSOLUTE_REQUIRED"},
      {"missing", {{"argv", {"/usr/bin/no-such-agent"}}}, "EXTERNAL_AGENT_EXECUTABLE_INVALID"},
      {"not executable", {{"argv", {"/etc/passwd"}}}, "EXTERNAL_AGENT_EXECUTABLE_INVALID"},
      {"outside roots",
       {{"argv", {"/bin/../sbin/ldconfig"}}},
       "EXTERNAL_AGENT_EXECUTABLE_ROOT_DENY"},
      {"shell -c",
       {{"argv", {"/usr/bin/python3", "-c", "print('x')"}}},
       "EXTERNAL_AGENT_SHELL_MODE_DENY"},
      {"shell word", {{"argv", {"/usr/bin/env", "bash"}}}, "EXTERNAL_AGENT_SHELL_MODE_DENY"},
      {"shell executable", {{"argv", {"/usr/bin/sh", "script"}}}, "EXTERNAL_AGENT_SHELL_MODE_DENY"},
      {"secret arg",
       {{"argv", {"/usr/bin/python3", "--api-key=abc"}}},
       "EXTERNAL_AGENT_PROFILE_SECRET_ARG_DENY"},
      {"secret arg spaced",
       {{"argv", {"/usr/bin/python3", "TOKEN", ":x"}}},
       "EXTERNAL_AGENT_PROFILE_SECRET_ARG_DENY"},
      // Python's re.IGNORECASE folds these into the ASCII letters of the seed's pattern.
      {"secret arg kelvin sign",
       {{"argv",
         {"/usr/bin/python3",
          "--to\xE2\x84\xAA"
          "en=abc"}}},
       "EXTERNAL_AGENT_PROFILE_SECRET_ARG_DENY"},
      {"secret arg long s",
       {{"argv", {"/usr/bin/python3", "--pa\xC5\xBF\xC5\xBFword=x"}}},
       "EXTERNAL_AGENT_PROFILE_SECRET_ARG_DENY"},
      {"secret arg dotless i",
       {{"argv", {"/usr/bin/python3", "authorizat\xC4\xB1on:x"}}},
       "EXTERNAL_AGENT_PROFILE_SECRET_ARG_DENY"},
      {"secret arg unicode space",
       {{"argv", {"/usr/bin/python3", "api-key\xE3\x80\x80=x"}}},
       "EXTERNAL_AGENT_PROFILE_SECRET_ARG_DENY"},
      // ... but no other letter: an accented e is not e.
      {"accented arg", {{"argv", {"/usr/bin/python3", "--tok\xC3\xA9n=abc"}}}, "OK"},
      {"input mode", {{"input_mode", "argv"}}, "EXTERNAL_AGENT_INPUT_MODE_INVALID"},
      {"output mode", {{"output_mode", "stderr"}}, "EXTERNAL_AGENT_OUTPUT_MODE_INVALID"},
      {"default modes", {{"input_mode", nullptr}, {"output_mode", ""}}, "OK"},
      {"timeout zero is default", {{"timeout_seconds", 0}}, "OK"},
      {"timeout high", {{"timeout_seconds", 3601}}, "EXTERNAL_AGENT_TIMEOUT_INVALID"},
      {"timeout negative", {{"timeout_seconds", -1}}, "EXTERNAL_AGENT_TIMEOUT_INVALID"},
      {"timeout text", {{"timeout_seconds", "soon"}}, "EXTERNAL_AGENT_TIMEOUT_INVALID"},
      {"timeout numeric text", {{"timeout_seconds", "60"}}, "OK"},
      // Python's int() of a string: underscores, leading zeros, any script's decimal digits.
      {"timeout python int text", {{"timeout_seconds", " 0000000000000000000060 "}}, "OK"},
      {"timeout underscores", {{"timeout_seconds", "1_0"}}, "OK"},
      {"timeout fullwidth digits", {{"timeout_seconds", "\xEF\xBC\x96\xEF\xBC\x90"}}, "OK"},
      {"timeout huge text",
       {{"timeout_seconds", std::string(40, '9')}},
       "EXTERNAL_AGENT_TIMEOUT_INVALID"},
      {"timeout huge integer",
       {{"timeout_seconds", parse_json("123456789012345678901234567890")}},
       "EXTERNAL_AGENT_TIMEOUT_INVALID"},
      {"output low", {{"max_output_bytes", 1023}}, "EXTERNAL_AGENT_OUTPUT_LIMIT_INVALID"},
      {"output high", {{"max_output_bytes", 131073}}, "EXTERNAL_AGENT_OUTPUT_LIMIT_INVALID"},
      {"env list", {{"environment", json::array()}}, "EXTERNAL_AGENT_PROFILE_ENVIRONMENT_INVALID"},
      {"env name",
       {{"environment", {{"lower", "x"}}}},
       "EXTERNAL_AGENT_PROFILE_ENVIRONMENT_NAME_INVALID"},
      {"env fixed",
       {{"environment", {{"LD_PRELOAD", "x"}}}},
       "EXTERNAL_AGENT_PROFILE_ENVIRONMENT_NAME_DENY"},
      {"env node options",
       {{"environment", {{"NODE_OPTIONS", "x"}}}},
       "EXTERNAL_AGENT_PROFILE_ENVIRONMENT_NAME_DENY"},
      {"env secret",
       {{"environment", {{"MY_API_KEY", "x"}}}},
       "EXTERNAL_AGENT_PROFILE_SECRET_ENV_DENY"},
      {"env provider key",
       {{"environment", {{"OPENAI_API_KEY", "x"}}}},
       "EXTERNAL_AGENT_PROFILE_SECRET_ENV_DENY"},
      {"env value type",
       {{"environment", {{"MARKER", 1}}}},
       "EXTERNAL_AGENT_PROFILE_ENVIRONMENT_VALUE_INVALID"},
      {"env value newline",
       {{"environment", {{"MARKER", "a\nb"}}}},
       "EXTERNAL_AGENT_PROFILE_ENVIRONMENT_VALUE_INVALID"},
      {"env value size",
       {{"environment", {{"MARKER", std::string(4097, 'v')}}}},
       "EXTERNAL_AGENT_PROFILE_ENVIRONMENT_VALUE_TOO_LARGE"},
      {"credentials list",
       {{"credential_env", json::array()}},
       "EXTERNAL_AGENT_PROFILE_CREDENTIAL_ENV_INVALID"},
      {"credential other env",
       {{"credential_env", {{"ANTHROPIC_API_KEY", dotenv}}}},
       "EXTERNAL_AGENT_CREDENTIAL_ENV_NAME_DENY"},
      {"credential spec",
       {{"credential_env", {{"OPENAI_API_KEY", "file"}}}},
       "EXTERNAL_AGENT_CREDENTIAL_SPEC_INVALID"},
      {"credential traversal",
       {{"credential_env",
         {{"OPENAI_API_KEY", {{"credential", "../provider.env"}, {"key", "K1"}}}}}},
       "EXTERNAL_AGENT_CREDENTIAL_NAME_INVALID"},
      {"credential slash",
       {{"credential_env", {{"OPENAI_API_KEY", {{"credential", "a/b/c"}, {"key", "K1"}}}}}},
       "EXTERNAL_AGENT_CREDENTIAL_NAME_INVALID"},
      {"credential format",
       {{"credential_env",
         {{"OPENAI_API_KEY", {{"credential", "provider.env"}, {"format", "yaml"}}}}}},
       "EXTERNAL_AGENT_CREDENTIAL_FORMAT_INVALID"},
      {"credential key",
       {{"credential_env",
         {{"OPENAI_API_KEY", {{"credential", "provider.env"}, {"key", "lower"}}}}}},
       "EXTERNAL_AGENT_CREDENTIAL_KEY_INVALID"},
      {"credential raw key",
       {{"credential_env",
         {{"OPENAI_API_KEY", {{"credential", "provider.env"}, {"format", "raw"}, {"key", "K1"}}}}}},
       "EXTERNAL_AGENT_CREDENTIAL_KEY_UNEXPECTED"},
      {"credential dotenv", {{"credential_env", {{"OPENAI_API_KEY", dotenv}}}}, "OK"},
  };
  for (const auto& c : cases) {
    json profile = valid();
    profile.merge_patch(c.patch);
    EXPECT_EQ(load(profile), c.code) << c.name;
  }
  write_text_file(profiles() / "hermes.json", "{not json");
  EXPECT_EQ(code_of([&] { load_profile("hermes", profiles(), default_executable_roots()); }),
            "EXTERNAL_AGENT_PROFILE_INVALID");
  // The seed's json.loads(path.read_text()) refuses a byte-order mark before a valid profile.
  write_text_file(profiles() / "hermes.json", "\xEF\xBB\xBF" + valid().dump());
  EXPECT_EQ(code_of([&] { load_profile("hermes", profiles(), default_executable_roots()); }),
            "EXTERNAL_AGENT_PROFILE_INVALID");
}

// Given two bad entries in one environment or credential_env, the first in the file should
// decide the code, as the seed's `for name, value in value.items()` does (each expected code
// is the seed's for that exact text; sorted order would give the other one).
TEST_F(ProfileRules, EntriesAreCheckedInDocumentOrder) {
  const std::string head =
      R"({"schema":"aios.external-agent-runtime.profile.v1","runtime":"hermes",)"
      R"("argv":["/usr/bin/python3","-V"],)";
  const struct {
    const char* entries;
    const char* code;
  } cases[] = {
      {R"("environment":{"lower":"x","LD_PRELOAD":"x"})",
       "EXTERNAL_AGENT_PROFILE_ENVIRONMENT_NAME_INVALID"},
      {R"("environment":{"LD_PRELOAD":"x","lower":"x"})",
       "EXTERNAL_AGENT_PROFILE_ENVIRONMENT_NAME_DENY"},
      {R"("environment":{"MARKER":1,"A_TOKEN":"x"})",
       "EXTERNAL_AGENT_PROFILE_ENVIRONMENT_VALUE_INVALID"},
      {R"("environment":{"A_TOKEN":"x","MARKER":1})", "EXTERNAL_AGENT_PROFILE_SECRET_ENV_DENY"},
      {R"("environment":{"PATH":"x","A b":"y"})", "EXTERNAL_AGENT_PROFILE_ENVIRONMENT_NAME_DENY"},
      {R"("environment":{"Z_BAD":"a\nb","A_TOKEN":"x"})",
       "EXTERNAL_AGENT_PROFILE_ENVIRONMENT_VALUE_INVALID"},
      {R"("credential_env":{"ZZZ_KEY":{},"OPENAI_API_KEY":"file"})",
       "EXTERNAL_AGENT_CREDENTIAL_ENV_NAME_DENY"},
      {R"("credential_env":{"OPENAI_API_KEY":"file","ZZZ_KEY":{}})",
       "EXTERNAL_AGENT_CREDENTIAL_SPEC_INVALID"},
  };
  for (const auto& c : cases) {
    write_text_file(profiles() / "hermes.json", head + c.entries + "}");
    EXPECT_EQ(code_of([&] { load_profile("hermes", profiles(), default_executable_roots()); }),
              c.code)
        << c.entries;
  }
}

// Given the shell refusal the seed tests, python3 -c should be refused.
TEST_F(ProfileRules, RejectsShellMode) {
  json profile = valid();
  profile["argv"] = {"/usr/bin/python3", "-c", "print('x')"};
  EXPECT_EQ(load(profile), "EXTERNAL_AGENT_SHELL_MODE_DENY");
}

// Given a credential name that climbs out of the credential directory, the profile should be
// refused (seed: test_runtime_profile_rejects_credential_path_traversal).
TEST_F(ProfileRules, RejectsCredentialPathTraversal) {
  json profile = valid();
  profile["credential_env"] = {
      {"OPENAI_API_KEY",
       {{"credential", "../provider.env"}, {"format", "dotenv"}, {"key", "ONEAPI_REGULAR_TOKEN"}}}};
  EXPECT_EQ(load(profile), "EXTERNAL_AGENT_CREDENTIAL_NAME_INVALID");
}

// Given missing, symlinked or oversized profile files, the profile is unavailable; a
// symlinked profile directory is refused outright.
TEST_F(ProfileRules, ProfileFilesAreNeverFollowed) {
  const auto roots = default_executable_roots();
  EXPECT_EQ(code_of([&] { load_profile("hermes", profiles(), roots); }),
            "EXTERNAL_AGENT_PROFILE_UNAVAILABLE");
  write_text_file(dir_ / "elsewhere.json", valid().dump());
  std::filesystem::create_symlink(dir_ / "elsewhere.json", profiles() / "hermes.json");
  EXPECT_EQ(code_of([&] { load_profile("hermes", profiles(), roots); }),
            "EXTERNAL_AGENT_PROFILE_UNAVAILABLE");
  std::filesystem::remove(profiles() / "hermes.json");
  write_text_file(profiles() / "hermes.json", std::string(kMaxProfileBytes + 1, ' '));
  EXPECT_EQ(code_of([&] { load_profile("hermes", profiles(), roots); }),
            "EXTERNAL_AGENT_PROFILE_UNAVAILABLE");
  std::filesystem::create_directory_symlink(profiles(), dir_ / "linked");
  EXPECT_EQ(code_of([&] { load_profile("hermes", dir_ / "linked", roots); }),
            "EXTERNAL_AGENT_PROFILE_ROOT_SYMLINK_DENY");
  // pathlib drops a trailing "/" or "/." where lstat would follow the link through it.
  for (const std::string tail : {"/", "//", "/.", "/./"}) {
    EXPECT_EQ(code_of([&] { load_profile("hermes", (dir_ / "linked").string() + tail, roots); }),
              "EXTERNAL_AGENT_PROFILE_ROOT_SYMLINK_DENY")
        << tail;
  }
  // The real directory with a trailing slash passes the root check (its profile is too large).
  EXPECT_EQ(code_of([&] { load_profile("hermes", profiles().string() + "/", roots); }),
            "EXTERNAL_AGENT_PROFILE_UNAVAILABLE");
  EXPECT_EQ(code_of([&] { load_profile("../hermes", profiles(), roots); }),
            "EXTERNAL_AGENT_RUNTIME_UNSUPPORTED");
}

// Given node, the script must be an absolute file under an allowed root, and inline code
// flags are refused; the loader keeps the resolved paths.
TEST_F(ProfileRules, NodeNeedsAnAllowedScript) {
  const auto root = dir_ / "opt";
  std::filesystem::create_directories(root / "bin");
  write_text_file(root / "bin" / "node", "#!/usr/bin/python3\n", std::filesystem::perms::owner_all);
  write_text_file(root / "agent.mjs", "");
  write_text_file(dir_ / "outside.mjs", "");
  const std::vector<std::filesystem::path> roots = {root};
  const auto node = (root / "bin" / "node").string();
  const auto check = [&](json argv) {
    json profile = valid();
    profile["runtime"] = "openclaw";
    profile["argv"] = std::move(argv);
    write_profile("openclaw", profile);
    return code_of([&] { load_profile("openclaw", profiles(), roots); });
  };
  EXPECT_EQ(check({node}), "EXTERNAL_AGENT_NODE_SCRIPT_REQUIRED");
  EXPECT_EQ(check({node, "--version"}), "EXTERNAL_AGENT_NODE_SCRIPT_REQUIRED");
  EXPECT_EQ(check({node, "agent.mjs"}), "EXTERNAL_AGENT_SCRIPT_ABSOLUTE_REQUIRED");
  EXPECT_EQ(check({node, (root / "none.mjs").string()}), "EXTERNAL_AGENT_SCRIPT_INVALID");
  EXPECT_EQ(check({node, (dir_ / "outside.mjs").string()}), "EXTERNAL_AGENT_SCRIPT_ROOT_DENY");
  EXPECT_EQ(check({node, (root / "agent.mjs").string(), "--eval", "1"}),
            "EXTERNAL_AGENT_NODE_CODE_MODE_DENY");
  EXPECT_EQ(check({node, (root / "agent.mjs").string(), "-r", "x"}),
            "EXTERNAL_AGENT_NODE_CODE_MODE_DENY");
  EXPECT_EQ(check({node, (root / "bin" / ".." / "agent.mjs").string(), "agent", "--json"}), "OK");
  const auto profile = load_profile("openclaw", profiles(), roots);
  EXPECT_EQ(profile.argv,
            (std::vector<std::string>{node, (root / "agent.mjs").string(), "agent", "--json"}));
}

// Given the shipped staging profiles, they should reach their provider through the gateway with
// the one systemd credential (the agent holding no key); the examples are stdin/stdout text
// examples only (seed tests).
TEST(ShippedProfiles, StagingProfilesAreProviderOnlyAndExamplesAreExamples) {
  const std::filesystem::path config =
      std::filesystem::path(AIOS_SOURCE_DIR) / "config" / "external-agent-runtime.d";
  for (const std::string runtime : {"hermes", "openclaw"}) {
    const auto example = json::parse(read_text_file(config / (runtime + ".example.json")));
    EXPECT_EQ(example["schema"], kProfileSchema);
    EXPECT_EQ(example["runtime"], runtime);
    EXPECT_EQ(example["input_mode"], "stdin_text");
    EXPECT_EQ(example["output_mode"], "stdout_text");
    const auto staging = json::parse(read_text_file(config / (runtime + ".profile.json")));
    EXPECT_EQ(staging["runtime"], runtime);
    EXPECT_FALSE(staging.contains("credential_env"));
    EXPECT_FALSE(staging.contains("network"));
    EXPECT_EQ(staging["provider"]["upstream"], "http://172.18.0.2:3000/v1");
    EXPECT_EQ(staging["provider"]["credential"]["credential"], "aios-external-agent-oneapi-env");
    EXPECT_FALSE(staging.value("environment", json::object()).contains("OPENAI_API_KEY"));
  }
  // Hermes as its CLI needs it: one-shot, a writable home copied from the shipped template
  // (whose base_url is the gateway's upstream), its usage file read, lazy installs off.
  for (const std::string name : {"hermes.profile.json", "hermes.example.json"}) {
    const auto hermes = json::parse(read_text_file(config / name));
    EXPECT_EQ(hermes["argv"][1], "-z") << name;
    EXPECT_EQ(hermes["argv"][2], "{prompt}") << name;
    EXPECT_EQ(hermes["argv"].back(), "{usage_json}") << name;
    EXPECT_EQ(hermes["environment"]["HERMES_DISABLE_LAZY_INSTALLS"], "1") << name;
    EXPECT_EQ(
        hermes["state_template"],
        json({{"from", "/etc/aios/external-agent-runtime.d/hermes-home"}, {"env", "HERMES_HOME"}}))
        << name;
  }
  const auto home = read_text_file(config / "hermes-home" / "config.yaml");
  EXPECT_NE(home.find("base_url: http://172.18.0.2:3000/v1"), std::string::npos);
  EXPECT_NE(home.find("allow_lazy_installs: false"), std::string::npos);
}

}  // namespace
}  // namespace aios::executor::test
