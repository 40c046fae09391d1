// The public client API: Connection and one-shot request().
#include "aios/http.hpp"
#include "http/client_connection.hpp"

namespace aios::http {

struct Connection::Impl : detail::ClientConnection {
  using ClientConnection::ClientConnection;
};

Connection::Connection(std::string host, std::uint16_t port, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(std::move(host), port, timeout, true)) {}

Connection::~Connection() = default;
Connection::Connection(Connection&&) noexcept = default;
Connection& Connection::operator=(Connection&&) noexcept = default;

ClientResponse Connection::request(std::string_view method, std::string_view target,
                                   std::string_view bearer_token, std::string_view body) {
  return impl_->request(method, target, bearer_token, body);
}

ClientResponse request(std::string_view method, std::string_view url, std::string_view bearer_token,
                       std::string_view body, std::chrono::milliseconds timeout,
                       const std::atomic<bool>* cancel) {
  Endpoint endpoint = parse_http_url(url);
  detail::ClientConnection connection(std::move(endpoint.host), endpoint.port, timeout, false,
                                      cancel);
  return connection.request(method, endpoint.target, bearer_token, body);
}

}  // namespace aios::http
