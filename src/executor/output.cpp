#include "executor/output.hpp"

#include "aios/canonical.hpp"
#include "aios/files.hpp"

namespace aios::executor {
namespace {

using nlohmann::json;

constexpr std::string_view kRedacted = "[REDACTED]";

void redact_strings(json& value, const std::vector<std::string>& secrets) {
  if (value.is_string()) {
    value = sanitize_text(redact_values(value.get<std::string>(), secrets));
  } else if (value.is_structured()) {
    for (auto& item : value) redact_strings(item, secrets);
  }
}

}  // namespace

StreamCapture::StreamCapture(std::size_t keep) : keep_(keep), hash_(std::make_unique<Sha256>()) {}

StreamCapture::~StreamCapture() = default;

void StreamCapture::feed(std::string_view chunk) {
  std::string translated;
  translated.reserve(chunk.size() + 1);
  for (const char c : chunk) {
    if (pending_cr_) {
      pending_cr_ = false;
      translated.push_back('\n');
      if (c == '\n') continue;
    }
    if (c == '\r') {
      pending_cr_ = true;
    } else {
      translated.push_back(c);
    }
  }
  emit(translated);
}

void StreamCapture::finish() {
  if (pending_cr_) emit("\n");
  pending_cr_ = false;
  digest_ = hash_->finish();
}

void StreamCapture::emit(std::string_view translated) {
  if (translated.empty()) return;
  hash_->update(translated);
  const std::size_t to_head = std::min(translated.size(), keep_ - std::min(keep_, head_.size()));
  head_.append(translated.substr(0, to_head));
  tail_.append(translated.substr(to_head));
  // Trim in batches so a stream of small chunks does not move the tail every time.
  if (tail_.size() > 2 * keep_) {
    tail_.erase(0, tail_.size() - keep_);
    dropped_ = true;
  }
}

std::string StreamCapture::text() const {
  if (!dropped_) return head_ + tail_;
  std::string out = head_;
  out.append(kTruncationMarker);
  out.append(std::string_view(tail_).substr(tail_.size() - keep_));
  return out;
}

std::string StreamCapture::sha256() const {
  return digest_;
}

std::string redact_values(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& secret : secrets) {
    if (secret.empty()) continue;
    for (auto pos = text.find(secret); pos != std::string::npos;
         pos = text.find(secret, pos + kRedacted.size())) {
      text.replace(pos, secret.size(), kRedacted);
    }
  }
  return text;
}

ParsedOutput parse_output(const RuntimeProfile& profile, const std::string& stdout_text,
                          const std::filesystem::path& output_path,
                          const std::vector<std::string>& secrets) {
  const std::size_t limit = profile.max_output_bytes;
  ParsedOutput parsed;
  std::string text;
  if (profile.output_mode == OutputMode::file_json) {
    const auto read = files::read_file(output_path, limit);
    if (read.status == files::ReadStatus::too_large) {
      throw Error(ErrorCode::EXTERNAL_AGENT_OUTPUT_TOO_LARGE);
    }
    if (read.status != files::ReadStatus::ok) {
      throw Error(ErrorCode::EXTERNAL_AGENT_OUTPUT_FILE_MISSING);
    }
    text = redact_values(utf8::decode_replace(read.content), secrets);
  } else {
    text = redact_values(stdout_text, secrets);
    if (text.size() > limit) text = bounded_text(text, limit);
  }
  if (profile.output_mode != OutputMode::stdout_text) {
    json value = parse_json(text);
    if (value.is_discarded()) throw Error(ErrorCode::EXTERNAL_AGENT_OUTPUT_JSON_INVALID);
    redact_strings(value, secrets);
    // The seed writes output_json only when the parsed value is not None.
    if (!value.is_null()) parsed.json = std::move(value);
  }
  parsed.text = bounded_text(text, limit);
  return parsed;
}

UsageReport read_usage_report(const std::filesystem::path& path) {
  const auto invalid = [] { return Error(ErrorCode::EXTERNAL_AGENT_USAGE_REPORT_INVALID); };
  const auto read = files::read_file(path, kMaxUsageReportBytes);
  if (read.status != files::ReadStatus::ok) throw invalid();
  const json value = parse_json(read.content);
  if (!value.is_object()) throw invalid();
  const auto flag = [&](const char* name) {
    const auto item = value.find(name);
    if (item == value.end() || !item->is_boolean()) throw invalid();
    return item->get<bool>();
  };
  const auto count = [&](const char* name) -> std::uint64_t {
    const auto item = value.find(name);
    if (item == value.end() || item->is_null()) return 0;
    // Bounded as a budget is: a hostile agent's count must not wrap a total it is added to.
    constexpr std::uint64_t kMaxCount = 1'000'000'000'000ULL;
    if (!item->is_number_unsigned() || item->get<std::uint64_t>() > kMaxCount) throw invalid();
    return item->get<std::uint64_t>();
  };
  const bool failed = flag("failed");
  const bool completed = flag("completed");
  UsageReport report;
  report.failed = failed || !completed;
  report.usage.requests = count("api_calls");
  report.usage.input = count("input_tokens");
  report.usage.output = count("output_tokens");
  report.usage.total = count("total_tokens");
  return report;
}

}  // namespace aios::executor
