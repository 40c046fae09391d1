#pragma once
// What the executor keeps of a child's output, and how it turns it into the result's
// output_text / output_json (seed: _parse_output, _bounded_text).

#include <cstddef>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/executor.hpp"
#include "aios/gateway.hpp"

namespace aios::executor {

// One output stream as Python's subprocess text mode sees it ("\r\n" and "\r" become "\n"),
// kept within bounds: the first `keep` bytes and the last `keep` bytes, with the truncation
// marker between them when more arrived. The SHA-256 covers everything. Not thread-safe.
class StreamCapture {
 public:
  explicit StreamCapture(std::size_t keep);
  ~StreamCapture();
  StreamCapture(const StreamCapture&) = delete;
  StreamCapture& operator=(const StreamCapture&) = delete;

  void feed(std::string_view chunk);
  // Ends the stream (a trailing "\r" becomes "\n"); call once, before text() and sha256().
  void finish();

  std::string text() const;
  std::string sha256() const;

 private:
  void emit(std::string_view translated);

  std::size_t keep_;
  std::string head_;
  std::string tail_;
  bool dropped_ = false;
  bool pending_cr_ = false;
  std::unique_ptr<Sha256> hash_;
  std::string digest_;
};

// Replaces every occurrence of each non-empty value in `secrets` with "[REDACTED]".
std::string redact_values(std::string text, const std::vector<std::string>& secrets);

struct ParsedOutput {
  std::string text;                    // output_text: redacted and bounded
  std::optional<nlohmann::json> json;  // output_json, string values redacted
};

// The seed's _parse_output over the captured stdout (already decoded) or the output file,
// with the projected credential values redacted as well. Throws
// EXTERNAL_AGENT_OUTPUT_FILE_MISSING, _OUTPUT_TOO_LARGE, _OUTPUT_JSON_INVALID.
ParsedOutput parse_output(const RuntimeProfile& profile, const std::string& stdout_text,
                          const std::filesystem::path& output_path,
                          const std::vector<std::string>& secrets);

// What an agent says of its own run in the file its argv names as {usage_json} (Hermes'
// --usage-file, written also when the run fails): whether it failed, and its counts
// (api_calls, input_tokens, output_tokens, total_tokens; absent or null counts as 0).
struct UsageReport {
  bool failed = false;  // "failed": true or "completed": false
  gateway::Usage usage;
};
inline constexpr std::size_t kMaxUsageReportBytes = 64 * 1024;

// Reads the report (O_NOFOLLOW, at most 64 KiB, nesting bounded). Throws
// EXTERNAL_AGENT_USAGE_REPORT_INVALID when it is missing or not that shape.
UsageReport read_usage_report(const std::filesystem::path& path);

}  // namespace aios::executor
