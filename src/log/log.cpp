#include "aios/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "aios/sys.hpp"

namespace aios::log {
namespace {

spdlog::logger& logger() {
  // The message is the whole JSON line; spdlog supplies locking and flushing.
  static auto instance = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto created = std::make_shared<spdlog::logger>("aios", sink);
    created->set_pattern("%v");
    created->flush_on(spdlog::level::trace);
    return created;
  }();
  return *instance;
}

void emit(spdlog::level::level_enum level, std::string_view level_name, std::string_view event,
          const nlohmann::json& fields) {
  nlohmann::json line = fields.is_object() ? fields : nlohmann::json::object();
  line["ts"] = format_iso8601(std::chrono::system_clock::now());
  line["level"] = level_name;
  line["event"] = event;
  logger().log(level, "{}", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

void info(std::string_view event, const nlohmann::json& fields) {
  emit(spdlog::level::info, "info", event, fields);
}
void warn(std::string_view event, const nlohmann::json& fields) {
  emit(spdlog::level::warn, "warn", event, fields);
}
void error(std::string_view event, const nlohmann::json& fields) {
  emit(spdlog::level::err, "error", event, fields);
}

void request_failure(std::string_view event, const Error& failure, nlohmann::json fields) {
  if (failure.http_status() < 500) return;
  fields["error"] = failure.code();
  fields["detail"] = failure.detail();
  error(event, fields);
}

}  // namespace aios::log
