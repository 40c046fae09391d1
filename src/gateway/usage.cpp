// The gateway's reading of what it forwards: the upstream's URL, and the usage counts an answer
// states, JSON or stream, without holding more of the answer than it needs.
#include <algorithm>
#include <array>
#include <cctype>

#include "aios/canonical.hpp"
#include "aios/gateway.hpp"
#include "aios/http.hpp"

namespace aios::gateway {
namespace {

using nlohmann::json;

// A usage object is small; an answer that states one is bounded by the agent's own request.
constexpr std::size_t kMaxKeptAnswer = 16 * 1024 * 1024;
constexpr std::size_t kMaxEventLine = 4 * 1024 * 1024;

std::optional<std::uint64_t> count(const json& usage, const char* name) {
  const auto found = usage.find(name);
  if (found == usage.end() || !found->is_number_integer() || found->get<std::int64_t>() < 0) {
    return std::nullopt;
  }
  return found->get<std::uint64_t>();
}

std::optional<UsageReader::Counts> counts_of(const json& answer);

// An answer that is not JSON, or nests past the reader's bound, states no usage.
std::optional<UsageReader::Counts> counts_in(std::string_view text) {
  try {
    return counts_of(parse_json(text));
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::optional<UsageReader::Counts> counts_of(const json& answer) {
  if (!answer.is_object()) return std::nullopt;
  const json* usage = nullptr;
  if (const auto found = answer.find("usage"); found != answer.end() && found->is_object()) {
    usage = &*found;
  } else if (const auto response = answer.find("response");
             response != answer.end() && response->is_object()) {
    if (const auto inner = response->find("usage"); inner != response->end() && inner->is_object())
      usage = &*inner;
  }
  if (usage == nullptr) return std::nullopt;
  const auto input =
      count(*usage, "prompt_tokens").value_or(count(*usage, "input_tokens").value_or(0));
  const auto output =
      count(*usage, "completion_tokens").value_or(count(*usage, "output_tokens").value_or(0));
  const auto total = count(*usage, "total_tokens").value_or(input + output);
  if (input == 0 && output == 0 && total == 0 && !usage->contains("total_tokens")) {
    return std::nullopt;
  }
  return UsageReader::Counts{input, output, total};
}

}  // namespace

std::optional<Upstream> parse_upstream(std::string_view url) {
  http::Endpoint endpoint;
  try {
    endpoint = http::parse_http_url(url);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!process::parse_destination(endpoint.host + ":" + std::to_string(endpoint.port))) {
    return std::nullopt;
  }
  std::string prefix = endpoint.target;
  if (prefix.find_first_of("?#%") != std::string::npos) return std::nullopt;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  for (std::size_t at = 0; at < prefix.size();) {
    const auto next = prefix.find('/', at + 1);
    const auto segment = std::string_view(prefix).substr(at + 1, next - at - 1);
    if (segment.empty() || segment == "." || segment == "..") return std::nullopt;
    at = next == std::string::npos ? prefix.size() : next;
  }
  return Upstream{endpoint.https, endpoint.host, endpoint.port, prefix, {}};
}

std::optional<Budget> parse_budget(const json& value) {
  constexpr std::int64_t kMax = 1'000'000'000'000;
  if (!value.is_object() || value.empty()) return std::nullopt;
  Budget budget;
  for (const auto& [name, item] : value.items()) {
    if (!item.is_number_integer() || item.get<std::int64_t>() < 1 ||
        item.get<std::int64_t>() > kMax) {
      return std::nullopt;
    }
    if (name == "max_requests") {
      budget.max_requests = item.get<std::uint64_t>();
    } else if (name == "max_usage") {
      budget.max_usage = item.get<std::uint64_t>();
    } else {
      return std::nullopt;
    }
  }
  return budget;
}

Budget Budget::within(const Budget& ceiling) const {
  const auto bound = [](std::uint64_t own, std::uint64_t cap) {
    if (cap == 0) return own;
    return own == 0 ? cap : std::min(own, cap);
  };
  return {bound(max_requests, ceiling.max_requests), bound(max_usage, ceiling.max_usage)};
}

json Budget::to_json() const {
  json value = json::object();
  if (max_requests != 0) value["max_requests"] = max_requests;
  if (max_usage != 0) value["max_usage"] = max_usage;
  return value;
}

namespace {

// Usage's fields by name, in to_json's order.
constexpr std::array<std::pair<const char*, std::uint64_t Usage::*>, 8> kUsageFields = {{
    {"requests", &Usage::requests},
    {"input", &Usage::input},
    {"output", &Usage::output},
    {"total", &Usage::total},
    {"unmetered", &Usage::unmetered},
    {"refused", &Usage::refused},
    {"bytes_up", &Usage::bytes_up},
    {"bytes_down", &Usage::bytes_down},
}};

}  // namespace

std::optional<Usage> parse_usage(const json& value) {
  if (!value.is_object() || value.size() != kUsageFields.size()) return std::nullopt;
  Usage usage;
  for (const auto& [name, member] : kUsageFields) {
    const auto found = value.find(name);
    if (found == value.end() || !found->is_number_integer() || found->get<std::int64_t>() < 0) {
      return std::nullopt;
    }
    usage.*member = found->get<std::uint64_t>();
  }
  return usage;
}

Usage& Usage::operator+=(const Usage& other) {
  for (const auto& [name, member] : kUsageFields) this->*member += other.*member;
  return *this;
}

json Usage::to_json() const {
  return {{"requests", requests}, {"input", input},          {"output", output},
          {"total", total},       {"unmetered", unmetered},  {"refused", refused},
          {"bytes_up", bytes_up}, {"bytes_down", bytes_down}};
}

UsageReader::UsageReader(std::string_view content_type)
    : stream_(ascii_lower(content_type).starts_with("text/event-stream")) {}

void UsageReader::feed(std::string_view piece) {
  if (overflow_) return;
  if (!stream_) {
    if (kept_.size() + piece.size() > kMaxKeptAnswer) {
      overflow_ = true;
      kept_.clear();
      return;
    }
    kept_.append(piece);
    return;
  }
  // Server-sent events: one "data:" line per event here (what the model APIs send).
  while (!piece.empty()) {
    const auto end = piece.find('\n');
    kept_.append(piece.substr(0, end));
    if (end == std::string_view::npos) break;
    piece.remove_prefix(end + 1);
    if (kept_.size() <= kMaxEventLine && kept_.starts_with("data:")) read_event(kept_);
    kept_.clear();
  }
  if (kept_.size() > kMaxEventLine) kept_.resize(kMaxEventLine + 1);
}

void UsageReader::read_event(std::string_view line) {
  auto data = line.substr(5);
  while (!data.empty() && (data.front() == ' ' || data.front() == '\t')) data.remove_prefix(1);
  while (!data.empty() && (data.back() == '\r' || data.back() == ' ')) data.remove_suffix(1);
  if (data.find("usage") == std::string_view::npos) return;
  if (auto counts = counts_in(data)) counts_ = counts;
}

std::optional<UsageReader::Counts> UsageReader::finish() {
  if (!stream_ && !overflow_ && !kept_.empty()) counts_ = counts_in(kept_);
  if (stream_ && kept_.starts_with("data:") && kept_.size() <= kMaxEventLine) read_event(kept_);
  kept_.clear();
  return counts_;
}

}  // namespace aios::gateway
