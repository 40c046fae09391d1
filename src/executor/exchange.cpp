// The worker side of the exchange (seed: ExternalAgentExchange), waiting on inotify instead of
// sleep-polling.
#include <system_error>

#include "aios/canonical.hpp"
#include "aios/executor.hpp"
#include "aios/files.hpp"
#include "executor/exchange_core.hpp"

namespace aios::executor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A failure file's {"error": "CODE[:detail]"} as an Error with that code; an unreadable one, or
// one naming no code of ours, is EXTERNAL_AGENT_EXECUTOR_FAILED.
Error recorded_failure(const std::string& content) {
  const json value = parse_json(content);
  const json text = value.is_object() ? value.value("error", json()) : json();
  if (!text.is_string() || text.get_ref<const std::string&>().empty()) {
    return Error(ErrorCode::EXTERNAL_AGENT_EXECUTOR_FAILED);
  }
  const auto& message = text.get_ref<const std::string&>();
  const auto colon = message.find(':');
  const auto* info = find_error(message.substr(0, colon));
  if (info == nullptr) return Error(ErrorCode::EXTERNAL_AGENT_EXECUTOR_FAILED, message);
  return Error(info->code, colon == std::string::npos ? std::string() : message.substr(colon + 1));
}

json validated_result(const std::string& content, const json& request,
                      const std::string& request_sha) {
  json value = parse_json(content);
  if (value.is_discarded()) throw Error(ErrorCode::EXTERNAL_AGENT_RESULT_INVALID);
  const auto field = [&](const char* name) { return value.value(name, json()); };
  if (!value.is_object() || field("schema") != json(kResultSchema) ||
      field("request_id") != request["request_id"] ||
      field("request_sha256") != json(request_sha) || field("runtime") != request["runtime"] ||
      field("task_id") != request["task_id"] ||
      field("execution_digest") != request["execution_digest"]) {
    throw Error(ErrorCode::EXTERNAL_AGENT_RESULT_BINDING_INVALID);
  }
  const json declared = field("result_sha256");
  if (!declared.is_string() ||
      !constant_time_equal(declared.get_ref<const std::string&>(), result_digest(value))) {
    throw Error(ErrorCode::EXTERNAL_AGENT_RESULT_DIGEST_INVALID);
  }
  return value;
}

}  // namespace

json exchange_request(const fs::path& root, const std::string& request_id, const json& request,
                      std::chrono::milliseconds timeout, const ExchangeKey& key,
                      const ResultReader& read_result) {
  if (key.empty()) throw Error(ErrorCode::EXTERNAL_AGENT_EXCHANGE_KEY_INVALID);
  const fs::path requests = root / "requests";
  const fs::path results = root / "results";
  const fs::path failed = root / "failed";
  const std::string file = request_id + ".json";
  const std::string request_sha = digest(request);
  // Watch before looking, so an answer written between the look and the wait is not missed.
  files::DirectoryWatch watch = [&] {
    try {
      for (const auto& directory : {requests, results, failed}) fs::create_directories(directory);
      files::DirectoryWatch answers;
      answers.add(results, IN_MOVED_TO | IN_CLOSE_WRITE);
      answers.add(failed, IN_MOVED_TO | IN_CLOSE_WRITE);
      return answers;
    } catch (const std::exception& error) {
      throw Error(ErrorCode::EXTERNAL_AGENT_EXCHANGE_UNAVAILABLE, error.what());
    }
  }();

  const auto answer = [&]() -> std::optional<json> {
    if (const auto result = read_answer(results / file, kMaxAnswerBytes, key))
      return read_result(*result, request_sha);
    if (const auto failure = read_answer(failed / file, kMaxRequestBytes, key))
      throw recorded_failure(*failure);
    return std::nullopt;
  };
  if (auto result = answer()) return *result;

  const fs::path request_path = requests / file;
  if (files::exists(request_path)) {
    const auto read = files::read_file(request_path, kMaxRequestBytes);
    const json existing = read.status == files::ReadStatus::ok ? parse_json(read.content)
                                                               : json(json::value_t::discarded);
    if (existing.is_discarded()) throw Error(ErrorCode::EXTERNAL_AGENT_EXISTING_REQUEST_INVALID);
    if (digest(existing) != request_sha) throw Error(ErrorCode::EXTERNAL_AGENT_REQUEST_ID_CONFLICT);
  } else {
    try {
      files::write_atomic(request_path, canonical_json(request) + "\n");
    } catch (const std::system_error& error) {
      throw Error(ErrorCode::EXTERNAL_AGENT_EXCHANGE_UNAVAILABLE, error.what());
    }
  }

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto result = answer()) return *result;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw Error(ErrorCode::EXTERNAL_AGENT_EXCHANGE_TIMEOUT);
    bool woken = false;
    watch.wait(left, -1, woken);
  }
}

Exchange::Exchange(fs::path root, ExchangeKey key) : root_(std::move(root)), key_(std::move(key)) {}

json Exchange::execute(const Call& call) const {
  json fields = {{"schema", kRequestSchema},
                 {"request_id", call.request_id},
                 {"runtime", call.runtime},
                 {"task_id", call.task_id},
                 {"execution_digest", call.execution_digest},
                 {"payload", call.payload}};
  if (!call.model_budget.is_null()) fields["model_budget"] = call.model_budget;
  const json request = validate_request(fields);
  return exchange_request(root_, call.request_id, request, call.timeout, key_,
                          [&request](const std::string& content, const std::string& request_sha) {
                            return validated_result(content, request, request_sha);
                          });
}

}  // namespace aios::executor
