// Fuzz targets over what the executor and the worker read from files: runtime profiles, the
// agent's output, the credential file (dotenv and raw), and the worker's checkpoint rows.
#include <SQLiteCpp/SQLiteCpp.h>

#include "aios/environment.hpp"
#include "aios/executor.hpp"
#include "aios/store.hpp"
#include "executor/output.hpp"
#include "fuzz_targets.hpp"
#include "store/sqlite/database.hpp"
#include "support.hpp"
#include "worker/internal.hpp"

namespace aios::fuzz {
namespace {

// A valid profile of the "hermes" runtime for `output_mode`, loaded once per mode; its
// credential comes from the file "provider" in dotenv (key PROVIDER_KEY) or raw format.
executor::RuntimeProfile fixed_profile(const std::string& output_mode, const std::string& format) {
  const auto root = scratch_dir() / ("profile-" + output_mode + "-" + format);
  std::filesystem::create_directories(root);
  nlohmann::json credential = {{"credential", "provider"}, {"format", format}};
  if (format == "dotenv") credential["key"] = "PROVIDER_KEY";
  const nlohmann::json profile = {{"schema", "aios.external-agent-runtime.profile.v1"},
                                  {"runtime", "hermes"},
                                  {"argv", {"/usr/bin/true"}},
                                  {"input_mode", "stdin_json"},
                                  {"output_mode", output_mode},
                                  {"max_output_bytes", 1024},
                                  {"credential_env", {{"OPENAI_API_KEY", credential}}}};
  write_file(root / "hermes.json", profile.dump());
  return executor::load_profile("hermes", root, {"/usr/bin"});
}

}  // namespace

int runtime_profile(const std::uint8_t* data, std::size_t size) {
  const auto root = scratch_dir() / "profiles";
  std::filesystem::create_directories(root);
  write_file(root / "hermes.json", text_of(data, size));
  refusal_ok([&] {
    const auto profile =
        executor::load_profile("hermes", root, executor::default_executable_roots());
    require(!profile.argv.empty() && profile.argv.front().starts_with("/"),
            "a loaded profile's executable is not absolute");
    require(profile.timeout_seconds >= 1 && profile.timeout_seconds <= 3600,
            "a loaded profile's timeout is out of range");
  });
  return 0;
}

int runtime_output(const std::uint8_t* data, std::size_t size) {
  static const executor::RuntimeProfile json_profile = fixed_profile("stdout_json", "raw");
  static const executor::RuntimeProfile text_profile = fixed_profile("stdout_text", "raw");
  const std::string secret = "sk-fuzz-secret-value";
  // The raw bytes through the stream capture, as the executor reads a child's stdout.
  executor::StreamCapture capture(512);
  const auto text = text_of(data, size);
  capture.feed(text.substr(0, size / 2));
  capture.feed(text.substr(size / 2));
  capture.finish();
  const std::string captured = capture.text() + secret;
  for (const auto* profile : {&json_profile, &text_profile}) {
    refusal_ok([&] {
      const auto parsed =
          executor::parse_output(*profile, captured, scratch_dir() / "no-output.json", {secret});
      require(parsed.text.find(secret) == std::string::npos, "output_text keeps a secret");
      if (parsed.json) {
        require(parsed.json->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                        .find(secret) == std::string::npos,
                "output_json keeps a secret");
      }
    });
  }
  return 0;
}

int credentials_dotenv(const std::uint8_t* data, std::size_t size) {
  static const executor::RuntimeProfile dotenv = fixed_profile("stdout_text", "dotenv");
  static const executor::RuntimeProfile raw = fixed_profile("stdout_text", "raw");
  const auto directory = scratch_dir() / "credentials";
  std::filesystem::create_directories(directory);
  write_file(directory / "provider", text_of(data, size));
  for (const auto* profile : {&dotenv, &raw}) {
    try {
      const auto projected = executor::project_credentials(*profile, directory);
      require(projected.size() == 1 && projected.front().first == "OPENAI_API_KEY",
              "a projection other than OPENAI_API_KEY");
      const auto& value = projected.front().second;
      require(!value.empty(), "an empty credential was projected");
      require(value.find('\0') == std::string::npos && value.find('\n') == std::string::npos,
              "a credential value with NUL or a newline was projected");
    } catch (const Error& error) {
      // The error's detail never carries the file's content (a short input may be part of
      // any text, the error code included, so only distinctive ones are checked).
      require(size < 16 || error.detail().find(text_of(data, size)) == std::string::npos,
              "a credential error carries the content");
    }
  }
  return 0;
}

int checkpoint_record(const std::uint8_t* data, std::size_t size) {
  static const auto path = scratch_dir() / "checkpoints.sqlite3";
  static worker::CheckpointStore store(path, system_environment().clock);
  static SQLite::Database raw(path.string(), SQLite::OPEN_READWRITE);
  // The input split at its first two NUL-free newlines: phase, lease token, state text.
  const auto text = text_of(data, size);
  const auto first = text.find('\n');
  const auto second = first == std::string_view::npos ? first : text.find('\n', first + 1);
  const auto phase = text.substr(0, first);
  const auto lease =
      first == std::string_view::npos
          ? std::string_view()
          : text.substr(first + 1, second == std::string_view::npos ? std::string_view::npos
                                                                    : second - first - 1);
  const auto state =
      second == std::string_view::npos ? std::string_view() : text.substr(second + 1);
  SQLite::Statement upsert(raw,
                           "INSERT OR REPLACE INTO worker_checkpoints(task_id,execution_digest,"
                           "attempt,lease_token,phase,state_json,updated_at) "
                           "VALUES ('fz',?,?,?,?,?,'2026-01-01T00:00:00+00:00')");
  upsert.bind(1, std::string(64, 'd'));
  upsert.bind(2, static_cast<std::int64_t>(size % 5));
  upsert.bind(3, std::string(lease));
  upsert.bind(4, std::string(phase));
  upsert.bind(5, std::string(state));
  upsert.exec();
  refusal_ok([&] {
    const auto loaded = store.load("fz");
    require(loaded.has_value() && loaded->task_id == "fz", "the checkpoint row is not loaded");
    require(loaded->state.is_object(), "a loaded checkpoint state is not an object");
  });
  refusal_ok([&] { (void)store.all(); });
  return 0;
}

}  // namespace aios::fuzz
