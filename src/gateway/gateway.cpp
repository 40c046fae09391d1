// The provider gateway of one run: its accept loop, a thread per connection (an http::
// ProxyConnection), and the policy every model call passes: the placeholder key, the upstream's
// host and prefix, the budget; then the key, and the usage its answer states.
#include "aios/gateway.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <array>
#include <cctype>
#include <list>
#include <mutex>
#include <thread>

#include "aios/canonical.hpp"
#include "aios/http.hpp"
#include "aios/log.hpp"

namespace aios::gateway {
namespace {

using nlohmann::json;

// A run's agent needs a handful of connections to its provider; more at once is abuse. With the
// body bound, what one hostile agent can make the executor hold is 16 x 16 MiB.
constexpr std::size_t kMaxConnections = 16;
constexpr std::size_t kMaxRequestBody = 16 * 1024 * 1024;
constexpr std::size_t kMaxLoggedPath = 200;
constexpr std::size_t kMaxModelName = 128;

// Under the prefix, with no segment that could climb out of it once decoded.
bool path_allowed(std::string_view target, std::string_view prefix) {
  if (target.empty() || target.front() != '/') return false;
  const auto path = target.substr(0, target.find('?'));
  const auto lower = ascii_lower(path);
  if (lower.find("..") != std::string::npos || lower.find("//") != std::string::npos ||
      lower.find("%2e") != std::string::npos || lower.find("%2f") != std::string::npos ||
      lower.find('\\') != std::string::npos) {
    return false;
  }
  if (prefix.empty()) return true;
  return path == prefix || (path.starts_with(prefix) && path[prefix.size()] == '/');
}

std::string logged_path(std::string_view target) {
  return bounded_text(target.substr(0, target.find('?')), kMaxLoggedPath);
}

}  // namespace

struct Gateway::State : std::enable_shared_from_this<Gateway::State> {
  Upstream upstream;
  std::string key;
  std::string placeholder;
  Budget budget;
  json log_fields;
  std::shared_ptr<http::TlsClientCredentials> tls;

  mutable std::mutex mutex;
  Usage usage;
  bool exhausted = false;

  struct Active {
    std::shared_ptr<http::ProxyConnection> connection;
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
  };
  std::list<Active> active;  // the accept thread's
  std::vector<std::thread> acceptors;
  process::Fd wake{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  std::atomic<bool> stopping{false};

  json fields(json extra) const {
    json all = log_fields;
    all.update(extra);
    return all;
  }

  http::ProxyDecision refuse(const http::ProxyRequest& request, ErrorCode code) {
    {
      const std::lock_guard lock(mutex);
      ++usage.refused;
    }
    const Error error(code);
    log::warn("MODEL_CALL_REFUSED", fields({{"error", error.code()},
                                            {"method", bounded_text(request.method, 16)},
                                            {"path", logged_path(request.target)}}));
    return {http::error_response(error), {}, nullptr};
  }

  // Counts the call against the budget as it starts; false once the budget is used.
  bool admit() {
    const std::lock_guard lock(mutex);
    const bool over = (budget.max_requests != 0 && usage.requests >= budget.max_requests) ||
                      (budget.max_usage != 0 && usage.total >= budget.max_usage);
    if (over) {
      exhausted = true;
      return false;
    }
    ++usage.requests;
    return true;
  }

  http::ProxyDecision decide(http::ProxyRequest& request);
};

namespace {

// One forwarded call: what its answer states of usage, counted and logged at its end.
class Call final : public http::ProxyCall {
 public:
  Call(std::shared_ptr<Gateway::State> state, std::string method, std::string path,
       std::string model)
      : state_(std::move(state)),
        method_(std::move(method)),
        path_(std::move(path)),
        model_(std::move(model)) {}

  void on_response(int, std::string_view content_type) override { reader_.emplace(content_type); }
  void on_body(std::string_view piece) override {
    if (reader_) reader_->feed(piece);
  }
  void on_end(const http::ProxyOutcome& outcome) override {
    // Plain values: GCC 12 takes an optional's payload here for uninitialized.
    UsageReader::Counts counts;
    bool metered = false;
    if (reader_) {
      if (const auto read = reader_->finish()) {
        counts = *read;
        metered = true;
      }
    }
    {
      const std::lock_guard lock(state_->mutex);
      auto& usage = state_->usage;
      usage.bytes_up += outcome.bytes_up;
      usage.bytes_down += outcome.bytes_down;
      if (metered) {
        usage.input += counts.input;
        usage.output += counts.output;
        usage.total += counts.total;
      } else {
        ++usage.unmetered;
      }
    }
    json line = {{"method", method_},
                 {"path", path_},
                 {"status", outcome.status},
                 {"bytes_up", outcome.bytes_up},
                 {"bytes_down", outcome.bytes_down},
                 {"duration_ms", outcome.duration.count()},
                 {"model", model_}};
    if (metered) {
      line["usage"] = {{"input", counts.input}, {"output", counts.output}, {"total", counts.total}};
    } else {
      line["unmetered"] = true;
    }
    if (!outcome.error.empty()) line["error"] = outcome.error;
    log::info("MODEL_CALL", state_->fields(std::move(line)));
  }

 private:
  std::shared_ptr<Gateway::State> state_;
  std::string method_;
  std::string path_;
  std::string model_;
  std::optional<UsageReader> reader_;
};

}  // namespace

http::ProxyDecision Gateway::State::decide(http::ProxyRequest& request) {
  const auto host = request.header("Host");
  const auto port = std::to_string(upstream.port);
  if (host != upstream.host && host != upstream.host + ":" + port) {
    return refuse(request, ErrorCode::GATEWAY_HOST_DENY);
  }
  if (http::bearer_from_authorization(request.header("Authorization")) != placeholder) {
    return refuse(request, ErrorCode::GATEWAY_KEY_INVALID);
  }
  if (!path_allowed(request.target, upstream.prefix)) {
    return refuse(request, ErrorCode::GATEWAY_PATH_DENY);
  }
  if (!admit()) return refuse(request, ErrorCode::MODEL_BUDGET_EXHAUSTED);

  std::string model;
  std::string body = std::move(request.body);
  const auto path = request.target.substr(0, request.target.find('?'));
  if (request.header("Content-Type").starts_with("application/json")) {
    json document;
    try {
      document = parse_json(body);
    } catch (const Error&) {
      document = json::value_t::discarded;
    }
    if (document.is_object()) {
      if (const auto named = document.find("model"); named != document.end() && named->is_string())
        model = bounded_text(named->get_ref<const std::string&>(), kMaxModelName);
      // A Chat Completions stream states its usage only when asked to.
      if (path.ends_with("/chat/completions") && document.value("stream", false) == true &&
          !document.contains("stream_options")) {
        document["stream_options"] = {{"include_usage", true}};
        body = document.dump();
      }
    }
  }
  http::ProxyDecision decision;
  decision.forward.target = request.target;
  for (auto& [name, value] : request.headers) {
    if (http::same_header_name(name, "Authorization") || http::same_header_name(name, "Host") ||
        http::same_header_name(name, "Accept-Encoding")) {
      continue;
    }
    decision.forward.headers.emplace_back(std::move(name), std::move(value));
  }
  // Identity: the usage is read from the answer as it passes.
  decision.forward.headers.emplace_back("Accept-Encoding", "identity");
  decision.forward.headers.emplace_back("Authorization", "Bearer " + key);
  decision.forward.body = std::move(body);
  decision.call = std::make_unique<Call>(shared_from_this(), bounded_text(request.method, 16),
                                         logged_path(request.target), std::move(model));
  return decision;
}

Gateway::Gateway(Upstream upstream, std::string key, std::string placeholder, Budget budget,
                 json log_fields)
    : state_(std::make_shared<State>()) {
  state_->upstream = std::move(upstream);
  state_->key = std::move(key);
  state_->placeholder = std::move(placeholder);
  state_->budget = budget;
  state_->log_fields = std::move(log_fields);
  if (state_->upstream.https) {
    http::TlsClientFiles files;
    files.ca_bundle = state_->upstream.ca_file;
    state_->tls = std::make_shared<http::TlsClientCredentials>(files);
  }
}

Gateway::~Gateway() {
  state_->stopping = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto written = ::write(state_->wake.get(), &one, sizeof one);
  for (auto& thread : state_->acceptors) thread.join();
  for (auto& active : state_->active) active.connection->stop();
  for (auto& active : state_->active) active.thread.join();
}

void Gateway::listen(process::Fd listener) {
  state_->acceptors.emplace_back([state = state_.get(), listener = std::move(listener)] {
    http::ProxyOptions options;
    options.host = state->upstream.host;
    options.port = state->upstream.port;
    options.tls = state->tls;
    options.max_body_bytes = kMaxRequestBody;
    while (!state->stopping) {
      std::array<pollfd, 2> fds = {pollfd{listener.get(), POLLIN, 0},
                                   pollfd{state->wake.get(), POLLIN, 0}};
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
      if (state->stopping) return;
      if ((fds[0].revents & POLLIN) == 0) continue;
      const int fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      state->active.remove_if([](State::Active& active) {
        if (!active.done->load()) return false;
        active.thread.join();
        return true;
      });
      if (state->active.size() >= kMaxConnections) {
        ::close(fd);
        continue;
      }
      auto& active = state->active.emplace_back();
      active.connection = std::make_shared<http::ProxyConnection>(
          fd, options, [state](http::ProxyRequest& request) { return state->decide(request); });
      active.thread = std::thread([connection = active.connection, done = active.done] {
        connection->serve();
        *done = true;
      });
    }
  });
}

Usage Gateway::usage() const {
  const std::lock_guard lock(state_->mutex);
  return state_->usage;
}

bool Gateway::budget_exhausted() const {
  const std::lock_guard lock(state_->mutex);
  return state_->exhausted;
}

}  // namespace aios::gateway
