// The provider gateway of one run (src/gateway/gateway.cpp, src/http/proxy.cpp) in front of a
// fake upstream on loopback: what it refuses, what it forwards with the key, what it counts.
#include "aios/gateway.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/http.hpp"
#include "support/certificates.hpp"
#include "support/daemon.hpp"

namespace aios::gateway {
namespace {

using nlohmann::json;

constexpr const char* kKey = "sk-provider-key-0123456789abcdefghij";
constexpr const char* kPlaceholder = "aios-run-placeholder";

// A listening socket on 127.0.0.1, as the sandbox's would be.
process::Fd listening(std::uint16_t& port) {
  process::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  auto* raw = reinterpret_cast<sockaddr*>(&address);
  if (::bind(fd.get(), raw, size) != 0 || ::listen(fd.get(), 16) != 0 ||
      ::getsockname(fd.get(), raw, &size) != 0) {
    throw std::runtime_error("cannot listen");
  }
  port = ntohs(address.sin_port);
  return fd;
}

// One request on a new connection; the whole answer as it came.
std::string round_trip(std::uint16_t port, const std::string& request) {
  process::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return "";
  if (::write(fd.get(), request.data(), request.size()) < 0) return "";
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd.get(), buffer, sizeof buffer)) > 0;) {
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  return answer;
}

class GatewayTest : public ::testing::Test {
 protected:
  // The fake upstream: plaintext, or TLS with a certificate of this test's own CA.
  void serve(bool tls) {
    http::ServerOptions options;
    if (tls) {
      ca_.write_certificate(dir_.path() / "ca.pem");
      other_ca_.write_certificate(dir_.path() / "other-ca.pem");
      const auto issued =
          ca_.issue(dir_.path(), "upstream", {.ips = {"127.0.0.1"}, .server = true});
      options.tls = std::make_shared<http::TlsServerCredentials>(
          http::TlsServerFiles{issued.certificate, issued.key, ""});
    }
    upstream_server_ = std::make_unique<http::Server>(
        options, [this](const http::Request& request) { return answer(request); });
    upstream_server_->start();
  }

  http::Response answer(const http::Request& request) {
    {
      const std::lock_guard lock(mutex_);
      seen_.push_back({request.target, std::string(request.header("Authorization")),
                       std::string(request.header("Host")), request.body});
    }
    const json usage = {{"prompt_tokens", 10}, {"completion_tokens", 5}, {"total_tokens", 15}};
    if (request.body.find("\"stream\":true") != std::string::npos) {
      const json with = parse_json(request.body);
      std::string events = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
      if (with.contains("stream_options")) {
        events += "data: " + json{{"choices", json::array()}, {"usage", usage}}.dump() + "\n\n";
      }
      events += "data: [DONE]\n\n";
      http::Response stream;
      stream.body = events;
      stream.content_type = "text/event-stream";
      return stream;
    }
    http::Response done;
    done.body = json{{"choices", json::array()}, {"usage", usage}}.dump();
    return done;
  }

  Gateway& start(Budget budget = {}, const std::string& ca = "") {
    if (!upstream_server_) serve(!ca.empty());
    Upstream upstream{!ca.empty(), "127.0.0.1", upstream_server_->port(), "/v1",
                      ca.empty() ? std::filesystem::path() : dir_.path() / ca};
    gateway_ = std::make_unique<Gateway>(upstream, kKey, kPlaceholder, budget,
                                         json{{"request_id", "gateway-test"}});
    gateway_->listen(listening(port_));
    return *gateway_;
  }

  std::string call(const std::string& target, const std::string& body,
                   const std::string& token = kPlaceholder, std::string host = "") {
    if (host.empty()) host = "127.0.0.1:" + std::to_string(upstream_server_->port());
    return round_trip(
        port_, "POST " + target + " HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " +
                   token + "\r\nContent-Type: application/json\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  }

  struct Seen {
    std::string target;
    std::string authorization;
    std::string host;
    std::string body;
  };
  std::mutex mutex_;
  std::vector<Seen> seen_;
  test::ScopedTempDir dir_{"aios-gateway"};
  test::CertificateAuthority ca_{"aios gateway test CA"};
  test::CertificateAuthority other_ca_{"aios other CA"};
  std::unique_ptr<http::Server> upstream_server_;
  std::unique_ptr<Gateway> gateway_;
  std::uint16_t port_ = 0;
};

// Given a call with the placeholder, the upstream should get it with the real key and the
// answer should come back with its usage counted; the key is never in what the agent sees.
TEST_F(GatewayTest, ForwardsWithTheKeyAndCountsTheUsage) {
  auto& gateway = start();
  const auto answer = call("/v1/chat/completions", R"({"model":"m1","messages":[]})");
  EXPECT_NE(answer.find("200 OK"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"total_tokens\":15"), std::string::npos) << answer;
  EXPECT_EQ(answer.find(kKey), std::string::npos);
  ASSERT_EQ(seen_.size(), 1U);
  EXPECT_EQ(seen_[0].authorization, std::string("Bearer ") + kKey);
  EXPECT_EQ(seen_[0].target, "/v1/chat/completions");
  const auto usage = gateway.usage();
  EXPECT_EQ(usage.requests, 1U);
  EXPECT_EQ(usage.input, 10U);
  EXPECT_EQ(usage.output, 5U);
  EXPECT_EQ(usage.total, 15U);
  EXPECT_EQ(usage.unmetered, 0U);
  EXPECT_GT(usage.bytes_down, 0U);
}

// Given a Chat Completions stream that did not ask for usage, the gateway should ask for it and
// count what the final chunk states; the stream reaches the agent as a stream.
TEST_F(GatewayTest, AsksAStreamForItsUsage) {
  auto& gateway = start();
  const auto answer = call("/v1/chat/completions", R"({"model":"m1","stream":true,"messages":[]})");
  EXPECT_NE(answer.find("text/event-stream"), std::string::npos) << answer;
  EXPECT_NE(answer.find("data: [DONE]"), std::string::npos) << answer;
  ASSERT_EQ(seen_.size(), 1U);
  EXPECT_EQ(parse_json(seen_[0].body).at("stream_options").at("include_usage"), true);
  EXPECT_EQ(gateway.usage().total, 15U);
}

// Given calls with another token, another host, or a path outside or climbing out of the
// prefix, each should be refused with its code and reach nothing.
TEST_F(GatewayTest, RefusesAnotherTokenHostOrPath) {
  auto& gateway = start();
  EXPECT_NE(call("/v1/chat/completions", "{}", kKey).find("GATEWAY_KEY_INVALID"),
            std::string::npos);
  EXPECT_NE(call("/v1/chat/completions", "{}", "").find("GATEWAY_KEY_INVALID"), std::string::npos);
  EXPECT_NE(call("/v1/chat/completions", "{}", kPlaceholder, "evil.example.com")
                .find("GATEWAY_HOST_DENY"),
            std::string::npos);
  for (const char* path : {"/admin", "/v1/../admin", "/v1/%2e%2e/admin", "/v10/x", "/v1//x"}) {
    EXPECT_NE(call(path, "{}").find("GATEWAY_PATH_DENY"), std::string::npos) << path;
  }
  EXPECT_TRUE(seen_.empty());
  EXPECT_EQ(gateway.usage().refused, 8U);
  EXPECT_EQ(gateway.usage().requests, 0U);
}

// Given a budget of two requests, the third call should be refused 429 without reaching the
// upstream, and the gateway should say the budget was reached.
TEST_F(GatewayTest, StopsAtTheBudget) {
  auto& gateway = start({2, 0});
  for (int i = 0; i < 2; ++i) {
    EXPECT_NE(call("/v1/chat/completions", "{}").find("200 OK"), std::string::npos);
  }
  EXPECT_FALSE(gateway.budget_exhausted());
  const auto refused = call("/v1/chat/completions", "{}");
  EXPECT_NE(refused.find("429"), std::string::npos) << refused;
  EXPECT_NE(refused.find("MODEL_BUDGET_EXHAUSTED"), std::string::npos) << refused;
  EXPECT_EQ(seen_.size(), 2U);
  EXPECT_TRUE(gateway.budget_exhausted());
  EXPECT_EQ(gateway.usage().total, 30U);
}

// Given a usage budget, a call that starts within it is forwarded and counted whole, and the
// next one is refused.
TEST_F(GatewayTest, AUsageBudgetCountsTheCallThatPassesItWhole) {
  auto& gateway = start({0, 20});
  EXPECT_NE(call("/v1/chat/completions", "{}").find("200 OK"), std::string::npos);
  EXPECT_NE(call("/v1/chat/completions", "{}").find("200 OK"), std::string::npos);
  EXPECT_NE(call("/v1/chat/completions", "{}").find("MODEL_BUDGET_EXHAUSTED"), std::string::npos);
  EXPECT_EQ(gateway.usage().total, 30U);
}

// Given an HTTPS upstream whose certificate chains to the provider's ca_file, calls should go
// through; given a ca_file of another CA, the handshake should fail and nothing reach it.
TEST_F(GatewayTest, VerifiesAnHttpsUpstreamAgainstItsCaFile) {
  auto& gateway = start({}, "ca.pem");
  EXPECT_NE(call("/v1/chat/completions", "{}").find("200 OK"), std::string::npos);
  ASSERT_EQ(seen_.size(), 1U);
  EXPECT_EQ(seen_[0].authorization, std::string("Bearer ") + kKey);
  EXPECT_EQ(gateway.usage().total, 15U);

  gateway_.reset();
  auto& other = start({}, "other-ca.pem");
  const auto refused = call("/v1/chat/completions", "{}");
  EXPECT_NE(refused.find("TLS_HANDSHAKE_FAILED"), std::string::npos) << refused;
  EXPECT_EQ(seen_.size(), 1U);
  EXPECT_EQ(other.usage().unmetered, 1U);
}

// Given an upstream that sends the first event of a stream and then waits until the agent has
// it, the agent should get that event while the stream is still open: the gateway passes a
// stream on as it arrives, never after it ends.
TEST_F(GatewayTest, PassesAStreamOnAsItArrives) {
  std::uint16_t upstream_port = 0;
  process::Fd upstream_listener = listening(upstream_port);
  std::promise<void> first_seen;
  auto seen = first_seen.get_future();
  std::thread upstream([&] {
    const process::Fd peer(::accept(upstream_listener.get(), nullptr, nullptr));
    char buffer[4096];
    (void)::read(peer.get(), buffer, sizeof buffer);  // the request (small, one read)
    const std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    const auto chunk = [](const std::string& data) {
      std::ostringstream out;
      out << std::hex << data.size() << "\r\n" << data << "\r\n";
      return out.str();
    };
    const std::string first = head + chunk("data: {\"first\":true}\n\n");
    (void)::write(peer.get(), first.data(), first.size());
    seen.wait_for(std::chrono::seconds(10));
    const std::string rest =
        chunk(
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,"
            "\"total_tokens\":2}}\n\n") +
        chunk("data: [DONE]\n\n") + "0\r\n\r\n";
    (void)::write(peer.get(), rest.data(), rest.size());
  });
  Upstream target{false, "127.0.0.1", upstream_port, "/v1", {}};
  Gateway gateway(target, kKey, kPlaceholder, {}, json::object());
  gateway.listen(listening(port_));
  process::Fd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port_);
  ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const std::string body = R"({"model":"m","stream":true})";
  const std::string request =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(upstream_port) +
      "\r\nAuthorization: Bearer " + kPlaceholder + "\r\nContent-Type: application/json\r\n" +
      "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  ASSERT_GT(::write(client.get(), request.data(), request.size()), 0);
  timeval wait{5, 0};
  ::setsockopt(client.get(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  std::string got;
  char buffer[4096];
  while (got.find("\"first\":true") == std::string::npos) {
    const auto n = ::read(client.get(), buffer, sizeof buffer);
    if (n <= 0) break;
    got.append(buffer, static_cast<std::size_t>(n));
  }
  const bool before_the_end = got.find("\"first\":true") != std::string::npos;
  first_seen.set_value();
  for (ssize_t n; (n = ::read(client.get(), buffer, sizeof buffer)) > 0;) {
    got.append(buffer, static_cast<std::size_t>(n));
  }
  upstream.join();
  EXPECT_TRUE(before_the_end) << got;
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos) << got;
  EXPECT_EQ(gateway.usage().total, 2U);
}

}  // namespace
}  // namespace aios::gateway
