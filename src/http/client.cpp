// The public client API: Connection, one-shot request() and the pooling SystemTransport.
#include <map>
#include <mutex>
#include <vector>

#include "aios/http.hpp"
#include "http/client_connection.hpp"

namespace aios::http {
namespace {

// Idle connections kept per scheme, host and port: more than a worker's concurrent calls.
constexpr std::size_t kMaxIdlePerPeer = 16;

// The credentials an https:// URL is verified with: the given ones, else the system's CAs
// (read once, on the first https:// request of the process).
std::shared_ptr<TlsClientCredentials> credentials_for(
    const Endpoint& endpoint, const std::shared_ptr<TlsClientCredentials>& given) {
  if (!endpoint.https) return nullptr;
  if (given) return given;
  static const auto system = std::make_shared<TlsClientCredentials>(TlsClientFiles{});
  return system;
}

}  // namespace

struct Connection::Impl {
  Impl(std::string host, std::uint16_t port, std::chrono::milliseconds call_timeout,
       std::shared_ptr<TlsClientCredentials> tls)
      : connection(std::move(host), port, true, std::move(tls)), timeout(call_timeout) {}
  detail::ClientConnection connection;
  std::chrono::milliseconds timeout;
};

Connection::Connection(std::string host, std::uint16_t port, std::chrono::milliseconds timeout,
                       std::shared_ptr<TlsClientCredentials> tls)
    : impl_(std::make_unique<Impl>(std::move(host), port, timeout, std::move(tls))) {}

Connection::~Connection() = default;
Connection::Connection(Connection&&) noexcept = default;
Connection& Connection::operator=(Connection&&) noexcept = default;

ClientResponse Connection::request(std::string_view method, std::string_view target,
                                   std::string_view bearer_token, std::string_view body) {
  return impl_->connection.request(method, target, bearer_token, body, impl_->timeout);
}

ClientResponse request(std::string_view method, std::string_view url, std::string_view bearer_token,
                       std::string_view body, std::chrono::milliseconds timeout,
                       const std::atomic<bool>* cancel, std::shared_ptr<TlsClientCredentials> tls) {
  Endpoint endpoint = parse_http_url(url);
  auto credentials = credentials_for(endpoint, tls);
  detail::ClientConnection connection(std::move(endpoint.host), endpoint.port, false,
                                      std::move(credentials));
  return connection.request(method, endpoint.target, bearer_token, body, timeout, cancel);
}

struct SystemTransport::Pool {
  struct Idle {
    std::unique_ptr<detail::ClientConnection> connection;
    std::chrono::steady_clock::time_point since;
  };

  // An idle connection to `key`, or a new one.
  std::unique_ptr<detail::ClientConnection> take(const std::string& key, Endpoint& endpoint) {
    {
      const std::lock_guard lock(mutex);
      auto& kept = idle[key];
      const auto now = std::chrono::steady_clock::now();
      while (!kept.empty()) {
        auto entry = std::move(kept.back());
        kept.pop_back();
        if (now - entry.since < kMaxIdle) return std::move(entry.connection);
      }
    }
    return std::make_unique<detail::ClientConnection>(std::move(endpoint.host), endpoint.port, true,
                                                      credentials_for(endpoint, tls));
  }

  void give_back(const std::string& key, std::unique_ptr<detail::ClientConnection> connection) {
    if (!connection->is_open()) return;
    const std::lock_guard lock(mutex);
    auto& kept = idle[key];
    if (kept.size() < kMaxIdlePerPeer) {
      kept.push_back({std::move(connection), std::chrono::steady_clock::now()});
    }
  }

  ClientResponse request(std::string_view method, std::string_view url,
                         std::string_view bearer_token, std::string_view body,
                         std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
    Endpoint endpoint = parse_http_url(url);
    const std::string key = (endpoint.https ? "https://" : "http://") + endpoint.host + ":" +
                            std::to_string(endpoint.port);
    const std::string target = endpoint.target;
    auto connection = take(key, endpoint);
    // A throw drops the connection with it: only a whole answer leaves it reusable.
    auto response = connection->request(method, target, bearer_token, body, timeout, cancel);
    give_back(key, std::move(connection));
    return response;
  }

  std::shared_ptr<TlsClientCredentials> tls;
  std::mutex mutex;
  std::map<std::string, std::vector<Idle>> idle;
};

SystemTransport::SystemTransport(std::shared_ptr<TlsClientCredentials> tls)
    : pool_(std::make_unique<Pool>()) {
  pool_->tls = std::move(tls);
}

SystemTransport::~SystemTransport() = default;

ClientResponse SystemTransport::request(std::string_view method, std::string_view url,
                                        std::string_view bearer_token, std::string_view body,
                                        std::chrono::milliseconds timeout) {
  return pool_->request(method, url, bearer_token, body, timeout, nullptr);
}

ClientResponse SystemTransport::cancellable_request(std::string_view method, std::string_view url,
                                                    std::string_view bearer_token,
                                                    std::string_view body,
                                                    std::chrono::milliseconds timeout,
                                                    const std::atomic<bool>& cancel) {
  return pool_->request(method, url, bearer_token, body, timeout, &cancel);
}

}  // namespace aios::http
