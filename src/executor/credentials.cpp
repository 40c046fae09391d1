// _credential_environment and _assert_no_secret_env of the seed: the one provider credential the
// profile names is read from systemd's credential directory; the executor's own environment must
// not carry secrets.

#include <algorithm>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/executor.hpp"
#include "aios/files.hpp"
#include "executor/rules.hpp"

namespace aios::executor {
namespace {

namespace fs = std::filesystem;

using envelope::fail;

bool is_line_break(char32_t c) {
  switch (c) {
    case U'\n':
    case U'\r':
    case 0x0B:
    case 0x0C:
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x85:
    case 0x2028:
    case 0x2029:
      return true;
    default:
      return false;
  }
}

// Python's str.splitlines() of valid UTF-8.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto decoded = utf8::decode(text, pos);
    if (!is_line_break(decoded.code_point)) {
      pos += decoded.length;
      continue;
    }
    lines.push_back(text.substr(start, pos - start));
    pos += decoded.length;
    if (decoded.code_point == U'\r' && pos < text.size() && text[pos] == '\n') ++pos;
    start = pos;
  }
  if (start < text.size()) lines.push_back(text.substr(start));
  return lines;
}

std::string dotenv_value(std::string_view text, const std::string& key) {
  bool found = false;
  std::string selected;
  for (const auto line : split_lines(text)) {
    auto candidate = python_strip(line);
    if (candidate.empty() || candidate.front() == '#') continue;
    if (candidate.starts_with("export ")) {
      // The seed's lstrip(): the line is stripped already, so only leading space is left.
      candidate = python_strip(candidate.substr(7));
    }
    const auto equals = candidate.find('=');
    if (equals == std::string_view::npos) continue;
    if (python_strip(candidate.substr(0, equals)) != key) continue;
    if (found) fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_KEY_DUPLICATE);
    auto value = python_strip(candidate.substr(equals + 1));
    if (value.size() >= 2 && value.front() == value.back() &&
        (value.front() == '\'' || value.front() == '"')) {
      value = value.substr(1, value.size() - 2);
    }
    selected = std::string(value);
    found = true;
  }
  if (!found) fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_KEY_MISSING);
  return selected;
}

const fs::path& credential_directory(const std::optional<fs::path>& credentials_directory) {
  if (!credentials_directory || !credentials_directory->is_absolute()) {
    fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_DIRECTORY_MISSING);
  }
  if (!files::is_real_directory(*credentials_directory)) {
    fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_DIRECTORY_INVALID);
  }
  return *credentials_directory;
}

std::string read_credential(const CredentialBinding& binding, const fs::path& directory) {
  const auto read = files::read_file(directory / binding.credential, kMaxCredentialBytes);
  switch (read.status) {
    case files::ReadStatus::ok:
      break;
    case files::ReadStatus::not_regular:
      fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_FILE_INVALID);
    case files::ReadStatus::too_large:
      fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_TOO_LARGE);
    case files::ReadStatus::failed:
      fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_READ_FAILED);
  }
  const std::string& raw = read.content;
  if (raw.find('\0') != std::string::npos || !utf8::valid(raw)) {
    fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_CONTENT_INVALID);
  }
  std::string selected =
      binding.format == "raw" ? std::string(python_strip(raw)) : dotenv_value(raw, binding.key);
  if (selected.empty() ||
      selected.find_first_of(std::string_view("\0\n\r", 3)) != std::string::npos) {
    fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_VALUE_INVALID);
  }
  if (selected.size() > kMaxCredentialBytes) {
    fail(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_VALUE_TOO_LARGE);
  }
  return selected;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> project_credentials(
    const RuntimeProfile& profile, const std::optional<fs::path>& credentials_directory) {
  std::vector<std::pair<std::string, std::string>> result;
  if (profile.credential_env.empty()) return result;
  const auto& directory = credential_directory(credentials_directory);
  for (const auto& binding : profile.credential_env) {
    result.emplace_back(binding.env_name, read_credential(binding, directory));
  }
  return result;
}

std::string provider_key(const Provider& provider,
                         const std::optional<fs::path>& credentials_directory) {
  return read_credential(provider.credential, credential_directory(credentials_directory));
}

std::vector<std::string> secret_looking_variables(const std::vector<std::string>& environment) {
  std::vector<std::string> names;
  for (const auto& entry : environment) {
    const auto equals = entry.find('=');
    if (equals == std::string::npos || equals + 1 == entry.size()) continue;
    const std::string name = entry.substr(0, equals);
    if (name != "CREDENTIALS_DIRECTORY" && rules::has_secret_marker(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void assert_no_secret_environment(const std::vector<std::string>& environment) {
  const auto names = secret_looking_variables(environment);
  if (names.empty()) return;
  std::string joined;
  for (const auto& name : names) joined += (joined.empty() ? "" : ",") + name;
  throw Error(ErrorCode::EXTERNAL_AGENT_CREDENTIAL_ENV_EXPOSED, joined);
}

}  // namespace aios::executor
