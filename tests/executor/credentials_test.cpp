// Provider credential projection from $CREDENTIALS_DIRECTORY and the executor's own
// environment check.
#include "executor/fixture.hpp"
#include "support/code_of.hpp"

namespace aios::executor::test {
namespace {

using aios::test::code_of;

class Credentials : public ExecutorTest {
 protected:
  Credentials() { std::filesystem::create_directories(credentials()); }

  RuntimeProfile profile(const std::string& format = "dotenv") const {
    RuntimeProfile value;
    value.runtime = "hermes";
    value.credential_env = {{"OPENAI_API_KEY", "provider.env", format,
                             format == "dotenv" ? "ONEAPI_REGULAR_TOKEN" : ""}};
    return value;
  }
  std::string project(const std::string& content, const std::string& format = "dotenv") {
    write_text_file(credentials() / "provider.env", content);
    std::string value;
    const auto code = code_of([&] {
      const auto projected = project_credentials(profile(format), credentials());
      value = projected.at(0).second;
    });
    return code == "OK" ? value : code;
  }
};

// Given dotenv files the way operators write them, we should select the one key's value.
TEST_F(Credentials, DotenvSelectsTheKey) {
  struct Case {
    const char* content;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"ONEAPI_REGULAR_TOKEN=test-key\nOTHER_PROVIDER_TOKEN=no\n", "test-key"},
      {"# comment\n\n  export ONEAPI_REGULAR_TOKEN = \"quoted key\"  \r\n", "quoted key"},
      {"ONEAPI_REGULAR_TOKEN='single'", "single"},
      {"ONEAPI_REGULAR_TOKEN=\"mismatched'", "\"mismatched'"},
      {"ONEAPI_REGULAR_TOKEN=a=b", "a=b"},
      {"export\tONEAPI_REGULAR_TOKEN=tab", "EXTERNAL_AGENT_CREDENTIAL_KEY_MISSING"},
      {"ONEAPI_REGULAR_TOKENX=near", "EXTERNAL_AGENT_CREDENTIAL_KEY_MISSING"},
      {"OTHER=1\n", "EXTERNAL_AGENT_CREDENTIAL_KEY_MISSING"},
      {"ONEAPI_REGULAR_TOKEN=a\nONEAPI_REGULAR_TOKEN=b\n",
       "EXTERNAL_AGENT_CREDENTIAL_KEY_DUPLICATE"},
      {"ONEAPI_REGULAR_TOKEN=\n", "EXTERNAL_AGENT_CREDENTIAL_VALUE_INVALID"},
      {"ONEAPI_REGULAR_TOKEN=\"\"\n", "EXTERNAL_AGENT_CREDENTIAL_VALUE_INVALID"},
      {"ONEAPI_REGULAR_TOKEN=a\xff\n", "EXTERNAL_AGENT_CREDENTIAL_CONTENT_INVALID"},
  };
  for (const auto& c : cases) EXPECT_EQ(project(c.content), c.expected) << c.content;
  EXPECT_EQ(project(std::string("ONEAPI_REGULAR_TOKEN=a\0b", 24)),
            "EXTERNAL_AGENT_CREDENTIAL_CONTENT_INVALID");
}

// Given a raw credential, the whole stripped file is the value.
TEST_F(Credentials, RawIsTheWholeFile) {
  EXPECT_EQ(project("  raw-key-value\n", "raw"), "raw-key-value");
  EXPECT_EQ(project("two\nlines\n", "raw"), "EXTERNAL_AGENT_CREDENTIAL_VALUE_INVALID");
  EXPECT_EQ(project(" \n", "raw"), "EXTERNAL_AGENT_CREDENTIAL_VALUE_INVALID");
}

// Given a missing or unsafe credential directory or file, projection should refuse.
TEST_F(Credentials, DirectoryAndFileMustBeSafe) {
  const auto code = [&](const std::optional<std::filesystem::path>& directory) {
    return code_of([&] { project_credentials(profile(), directory); });
  };
  EXPECT_EQ(code(std::nullopt), "EXTERNAL_AGENT_CREDENTIAL_DIRECTORY_MISSING");
  EXPECT_EQ(code(std::filesystem::path("relative")), "EXTERNAL_AGENT_CREDENTIAL_DIRECTORY_MISSING");
  EXPECT_EQ(code(dir_ / "absent"), "EXTERNAL_AGENT_CREDENTIAL_DIRECTORY_INVALID");
  std::filesystem::create_directory_symlink(credentials(), dir_ / "linked");
  EXPECT_EQ(code(dir_ / "linked"), "EXTERNAL_AGENT_CREDENTIAL_DIRECTORY_INVALID");
  // As pathlib spells "linked/" and "linked/.": the link itself, refused as the seed refuses it.
  for (const std::string tail : {"/", "/.", "//"}) {
    EXPECT_EQ(code((dir_ / "linked").string() + tail),
              "EXTERNAL_AGENT_CREDENTIAL_DIRECTORY_INVALID")
        << tail;
  }
  EXPECT_EQ(code(credentials()), "EXTERNAL_AGENT_CREDENTIAL_FILE_INVALID");
  write_text_file(dir_ / "real.env", "ONEAPI_REGULAR_TOKEN=x\n");
  std::filesystem::create_symlink(dir_ / "real.env", credentials() / "provider.env");
  EXPECT_EQ(code(credentials()), "EXTERNAL_AGENT_CREDENTIAL_FILE_INVALID");
  std::filesystem::remove(credentials() / "provider.env");
  write_text_file(credentials() / "provider.env", std::string(kMaxCredentialBytes + 1, 'x'));
  EXPECT_EQ(code(credentials()), "EXTERNAL_AGENT_CREDENTIAL_TOO_LARGE");
  // No credential in the profile: nothing is read, not even the directory.
  EXPECT_TRUE(project_credentials(RuntimeProfile{}, std::nullopt).empty());
}

// Given a profile that projects the provider key, the child should see OPENAI_API_KEY with the
// selected value and nothing else of the file, and the result should not carry the value
// (seed: test_external_executor_projects_only_selected_provider_credential).
TEST_F(Credentials, ProjectsOnlySelectedProviderCredential) {
  const auto helper = write_script(
      "credential_helper.py",
      "import os\n"
      "value=os.environ.get('OPENAI_API_KEY','')\n"
      "leaked=[k for k,v in os.environ.items() if 'not-projected' in v or "
      "k=='OTHER_PROVIDER_TOKEN']\n"
      "print('AIOS_PROVIDER_PROJECTED_OK' if value=='test-provider-key' and not leaked else "
      "'AIOS_PROVIDER_PROJECTED_FAIL')\n"
      "print(value)\n");
  provide_credentials();
  const auto result =
      run(provider_profile({"/usr/bin/python3", helper.string()}, "stdin_text", "stdout_text"),
          request_value("hermes"));
  const auto text = result["output_text"].get<std::string>();
  EXPECT_NE(text.find("AIOS_PROVIDER_PROJECTED_OK"), std::string::npos) << text;
  // The child printed the key; the result carries [REDACTED] in its place.
  EXPECT_EQ(text.find("test-provider-key"), std::string::npos) << text;
  EXPECT_NE(text.find("[REDACTED]"), std::string::npos);
  EXPECT_EQ(result["credential_material_exposed"], false);
  EXPECT_EQ(read_text_file(result_path()).find("test-provider-key"), std::string::npos);
}

// Given the executor's own environment, secret-looking names with a value are refused (except
// systemd's CREDENTIALS_DIRECTORY), listed in order after the code.
TEST(OwnEnvironment, SecretLookingVariablesAreRefused) {
  EXPECT_EQ(secret_looking_variables({"PATH=/usr/bin", "CREDENTIALS_DIRECTORY=/run/c",
                                      "GITHUB_TOKEN=x", "db_password=y",
                                      "EMPTY_SECRET=", "OPENAI_API_KEY=k", "SSH_PRIVATE_KEY=z"}),
            (std::vector<std::string>{"GITHUB_TOKEN", "OPENAI_API_KEY", "SSH_PRIVATE_KEY",
                                      "db_password"}));
  try {
    assert_no_secret_environment({"B_TOKEN=1", "A_SECRET=2"});
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(failure_text(error), "EXTERNAL_AGENT_CREDENTIAL_ENV_EXPOSED:A_SECRET,B_TOKEN");
  }
  EXPECT_NO_THROW(assert_no_secret_environment({"PATH=/usr/bin", "AUTHORIZATION_MODE="}));
  // Python's key.upper() turns U+00DF into "SS" and U+017F into "S"; U+00E9 stays a letter of
  // its own, so it spells no marker.
  try {
    assert_no_secret_environment({"DB_PA\xC3\x9FWORD=1",
                                  "\xC5\xBF"
                                  "ECRET=2",
                                  "TOK\xC3\xA9N=3"});
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(failure_text(error),
              "EXTERNAL_AGENT_CREDENTIAL_ENV_EXPOSED:DB_PA\xC3\x9FWORD,\xC5\xBF"
              "ECRET");
  }
}

}  // namespace
}  // namespace aios::executor::test
