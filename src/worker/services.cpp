// The worker's peers, its checkpoint store and its heartbeat thread.
#include <csignal>
#include <sstream>

#include "aios/canonical.hpp"
#include "aios/http.hpp"
#include "aios/log.hpp"
#include "worker/internal.hpp"

namespace aios::worker {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto first = item.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    items.push_back(item.substr(first, item.find_last_not_of(" \t") - first + 1));
  }
  return items;
}

JsonService::JsonService(http::Transport& transport, const std::string& base_urls,
                         std::string token, std::chrono::milliseconds timeout)
    : transport_(transport),
      base_urls_(split_list(base_urls)),
      token_(std::move(token)),
      timeout_(timeout) {
  if (base_urls_.empty()) base_urls_.emplace_back();
}

namespace {

// The {"error": CODE} of an answer, or "".
std::string error_code_of(const std::string& body) {
  const auto value = parse_json(body);
  if (value.is_discarded() || !value.is_object()) return {};
  const auto found = value.find("error");
  return found != value.end() && found->is_string() ? found->get<std::string>() : std::string();
}

}  // namespace

http::ClientResponse JsonService::exchange(std::string_view method, const std::string& path,
                                           const std::string& text, CallWait wait) const {
  const auto timeout = timeout_ + wait.extra;
  for (std::size_t tried = 1;; ++tried) {
    std::size_t at = current_.load();
    const std::string url = base_urls_[at % base_urls_.size()] + path;
    http::ClientResponse response;
    try {
      response = wait.cancel != nullptr ? transport_.cancellable_request(method, url, token_, text,
                                                                         timeout, *wait.cancel)
                                        : transport_.request(method, url, token_, text, timeout);
    } catch (const Error& error) {
      // The replica failed us (a cancelled wait is the caller's doing, not the replica's).
      if (error.is_any({ErrorCode::HTTP_UPSTREAM_UNAVAILABLE, ErrorCode::HTTP_UPSTREAM_TIMEOUT})) {
        current_.compare_exchange_strong(at, at + 1);
      }
      if (http::nothing_sent(error) && tried < base_urls_.size()) continue;
      throw;
    }
    if (response.status == 503 && tried < base_urls_.size() &&
        error_code_of(response.body) == "BRIDGE_NOT_LEADER") {
      current_.compare_exchange_strong(at, at + 1);
      continue;
    }
    return response;
  }
}

std::pair<int, nlohmann::json> JsonService::call(std::string_view method, const std::string& path,
                                                 const nlohmann::json* body, CallWait wait) const {
  const auto response =
      exchange(method, path, body != nullptr ? body->dump() : std::string(), wait);
  auto value = parse_json(response.body);
  if (value.is_discarded() || !value.is_object()) {
    throw Error(ErrorCode::HTTP_UPSTREAM_RESPONSE_INVALID, path);
  }
  return {response.status, std::move(value)};
}

std::string JsonService::require_bytes(std::string_view method, const std::string& path,
                                       const nlohmann::json& body) const {
  auto response = exchange(method, path, body.dump(), {});
  if (response.status < 200 || response.status >= 300) {
    const auto code = error_code_of(response.body);
    throw Error::remote(code.empty() ? "HTTP_UPSTREAM_RESPONSE_INVALID" : code, response.status);
  }
  return std::move(response.body);
}

nlohmann::json JsonService::require(std::string_view method, const std::string& path,
                                    const nlohmann::json* body, CallWait wait) const {
  auto [status, value] = call(method, path, body, wait);
  if (status < 200 || status >= 300) {
    throw Error::remote(value.value("error", std::string("HTTP_UPSTREAM_RESPONSE_INVALID")),
                        status);
  }
  return value;
}

CheckpointStore::CheckpointStore(const std::filesystem::path& path, const Clock& clock,
                                 std::string kill_after_phase)
    : store_(store::open_sqlite_checkpoints(path, clock)),
      kill_after_phase_(std::move(kill_after_phase)) {}

void CheckpointStore::save(const Checkpoint& checkpoint) {
  store_->save(checkpoint);
  log::info("TASK_CHECKPOINT", {{"task_id", checkpoint.task_id},
                                {"phase", checkpoint.phase},
                                {"attempt", checkpoint.attempt}});
  if (!kill_after_phase_.empty() && checkpoint.phase == kill_after_phase_) {
    log::warn("FAULT_INJECTED_KILL",
              {{"task_id", checkpoint.task_id}, {"phase", checkpoint.phase}});
    std::raise(SIGKILL);
  }
}

Heartbeat::Heartbeat(const JsonService& api, std::string task_id, std::string lease_token,
                     std::chrono::milliseconds interval)
    : api_(api),
      task_id_(std::move(task_id)),
      lease_token_(std::move(lease_token)),
      interval_(interval),
      last_alive_(std::chrono::steady_clock::now()),
      ticker_(interval, [this] { beat(); }) {}

void Heartbeat::alive(const std::string& stage) {
  const std::lock_guard lock(mutex_);
  last_alive_ = std::chrono::steady_clock::now();
  stage_ = stage;
}

void Heartbeat::beat() {
  nlohmann::json body;
  {
    const std::lock_guard lock(mutex_);
    // A work loop silent for two intervals is stalled: let the lease run out.
    if (std::chrono::steady_clock::now() - last_alive_ > 2 * interval_) return;
    body = {{"lease_token", lease_token_}, {"stage", stage_}};
  }
  try {
    const auto [status, reply] = api_.call("POST", "/v1/tasks/" + task_id_ + "/heartbeat", &body);
    if (status == 409 || status == 404) {
      lost_ = true;
      log::warn("TASK_LEASE_LOST", {{"task_id", task_id_}, {"error", reply.value("error", "")}});
    }
  } catch (const Error& error) {
    log::warn("HEARTBEAT_FAILED", {{"task_id", task_id_}, {"error", error.code()}});
  }
}

}  // namespace aios::worker
