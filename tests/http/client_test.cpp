// The client against real peers: a healthy server, a silent one, a closed port, a peer that
// answers garbage, and a server that drops idle connections.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "aios/http.hpp"
#include "http_test_support.hpp"

namespace aios::http {
namespace {

using namespace std::chrono_literals;
using testing::url;

// Runs `call` and returns the aios::Error it throws (failing the test when it does not).
template <class Call>
Error error_of(Call&& call) {
  try {
    call();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "no aios::Error thrown";
  return Error(ErrorCode::INTERNAL_ERROR);
}

// Given a bearer token and a body, we should send both, and the server should see the token.
TEST(HttpClient, SendsTokenBodyAndMethod) {
  Server server({}, [](const Request& r) {
    return json_response(201, {{"ok", bearer_matches(r, "owner-token")},
                               {"type", std::string(r.header("content-type"))},
                               {"method", r.method},
                               {"body", r.body}});
  });
  server.start();
  const auto response = request("PUT", url(server.port(), "/v1/fleet/workers/w1"), "owner-token",
                                R"({"slots":2})", 5s);
  EXPECT_EQ(response.status, 201);
  EXPECT_EQ(nlohmann::json::parse(response.body), (nlohmann::json{{"ok", true},
                                                                  {"type", "application/json"},
                                                                  {"method", "PUT"},
                                                                  {"body", R"({"slots":2})"}}));
  const auto anonymous = request("GET", url(server.port(), "/x"), "", "", 5s);
  EXPECT_EQ(nlohmann::json::parse(anonymous.body)["ok"], false);
}

// Given a peer that accepts and never answers, we should fail with HTTP_UPSTREAM_TIMEOUT
// without the token in the detail, and the connection should be usable again afterwards.
TEST(HttpClient, TimesOutOnASilentPeer) {
  testing::BoundSocket silent(true);
  const auto error = error_of([&] {
    request("POST", url(silent.port(), "/v1/tasks/poll"), "very-secret-token", "{}", 200ms);
  });
  EXPECT_EQ(error.code(), "HTTP_UPSTREAM_TIMEOUT");
  EXPECT_EQ(error.http_status(), 503);
  EXPECT_EQ(error.detail().find("very-secret-token"), std::string::npos);

  Connection connection("127.0.0.1", silent.port(), 200ms);
  EXPECT_EQ(error_of([&] { connection.request("GET", "/", "t", ""); }).code(),
            "HTTP_UPSTREAM_TIMEOUT");
  EXPECT_EQ(error_of([&] { connection.request("GET", "/", "t", ""); }).code(),
            "HTTP_UPSTREAM_TIMEOUT");
}

// Given a port nobody listens on, we should fail with HTTP_UPSTREAM_UNAVAILABLE (502).
TEST(HttpClient, ReportsConnectionRefused) {
  testing::BoundSocket closed(false);
  const auto error = error_of([&] { request("GET", url(closed.port(), "/health"), "", "", 2s); });
  EXPECT_EQ(error.code(), "HTTP_UPSTREAM_UNAVAILABLE");
  EXPECT_EQ(error.http_status(), 502);
  EXPECT_TRUE(nothing_sent(error));  // another replica may take the request
  Connection connection("127.0.0.1", closed.port(), 2s);
  EXPECT_EQ(error_of([&] { connection.request("GET", "/health", "", ""); }).code(),
            "HTTP_UPSTREAM_UNAVAILABLE");
}

// Given a peer that answers something that is not HTTP, we should report an invalid response.
TEST(HttpClient, ReportsAnInvalidResponse) {
  testing::ScriptedPeer peer({{"SMTP ready\r\n\r\n"}});
  EXPECT_EQ(error_of([&] { request("GET", url(peer.port(), "/"), "", "", 5s); }).code(),
            "HTTP_UPSTREAM_RESPONSE_INVALID");
}

// Given a peer that closes without answering, we should report it unavailable (no retry on a
// fresh connection).
TEST(HttpClient, ReportsAPeerThatClosesWithoutAnswering) {
  testing::ScriptedPeer peer({{""}});
  const auto error = error_of([&] { request("GET", url(peer.port(), "/"), "", "", 5s); });
  EXPECT_EQ(error.code(), "HTTP_UPSTREAM_UNAVAILABLE");
  EXPECT_FALSE(nothing_sent(error));  // the request went out: it may have been acted on
}

// Given a URL that is not http:// or https://, we should fail with HTTP_URL_INVALID before
// connecting.
TEST(HttpClient, RefusesNonHttpUrls) {
  for (const std::string bad : {"httpx://127.0.0.1:1/", "file:///etc/passwd", "127.0.0.1:1/x"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(error_of([&] { request("GET", bad, "", "", 1s); }).code(), "HTTP_URL_INVALID");
  }
}

// Given a method, target or token that would break the request line or headers, we should
// refuse to send it, without the token in the detail.
TEST(HttpClient, RefusesUnsendableRequests) {
  testing::BoundSocket closed(false);  // never reached: validation comes first
  Connection connection("127.0.0.1", closed.port(), 1s);
  const struct {
    std::string method, target, token;
  } cases[] = {
      {"GE T", "/x", ""},
      {"", "/x", ""},
      {"GET", "x", ""},
      {"GET", "/x y", ""},
      {"GET", "/x\r\nEvil: 1", ""},
      {"GET", "/x", "tok\r\nEvil: 1"},
      {"GET", "/x", "tok en"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.method + " " + c.target);
    const auto error = error_of([&] { connection.request(c.method, c.target, c.token, ""); });
    EXPECT_EQ(error.code(), "HTTP_CLIENT_REQUEST_INVALID");
    if (!c.token.empty()) {
      EXPECT_EQ(error.detail().find(c.token), std::string::npos);
    }
  }
}

// Given a server that closed an idle keep-alive connection, we should notice before sending and
// reconnect, so that even a POST succeeds, on a new TCP connection.
TEST(HttpClient, ReconnectsAfterTheServerClosedAnIdleConnection) {
  std::mutex mutex;
  std::set<std::uint16_t> peers;
  ServerOptions options;
  options.read_timeout = 100ms;
  Server server(options, [&](const Request& r) {
    const std::lock_guard lock(mutex);
    peers.insert(r.remote_port);
    return json_response(200, {{"ok", true}});
  });
  server.start();
  Connection connection("127.0.0.1", server.port(), 5s);
  ASSERT_EQ(connection.request("GET", "/a", "", "").status, 200);
  // Wait (bounded) until the server's read timeout has closed the idle connection.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (server.connections() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(server.connections(), 0u);
  EXPECT_EQ(connection.request("POST", "/b", "", "{}").status, 200);
  const std::lock_guard lock(mutex);
  EXPECT_EQ(peers.size(), 2u);
}

// Given a peer that closes a reused connection on receiving the next request, we should send an
// idempotent request once more on a new connection, and never repeat a POST.
TEST(HttpClient, RetriesOnlyIdempotentRequestsOnAClosedReusedConnection) {
  const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst";
  const std::string again = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nretry";
  {
    testing::ScriptedPeer peer({{ok, ""}, {again}});
    Connection connection("127.0.0.1", peer.port(), 5s);
    EXPECT_EQ(connection.request("GET", "/a", "", "").body, "first");
    EXPECT_EQ(connection.request("GET", "/b", "", "").body, "retry");
    EXPECT_EQ(peer.requests(), 3);
  }
  {
    testing::ScriptedPeer peer({{ok, ""}, {again}});
    Connection connection("127.0.0.1", peer.port(), 5s);
    EXPECT_EQ(connection.request("POST", "/a", "", "").body, "first");
    EXPECT_EQ(error_of([&] { connection.request("POST", "/b", "", ""); }).code(),
              "HTTP_UPSTREAM_UNAVAILABLE");
    EXPECT_EQ(peer.requests(), 2);
    EXPECT_EQ(connection.request("POST", "/c", "", "").body, "retry");  // reconnects
  }
}

// Given a server that answers "Connection: close", we should open a new connection next time.
TEST(HttpClient, ReopensAfterConnectionClose) {
  ServerOptions options;
  Server server(options, [](const Request& r) { return json_response(200, {{"p", r.path}}); });
  server.start();
  Connection connection("127.0.0.1", server.port(), 5s);
  // A refusal closes the connection ("Connection: close"); the next request must reconnect.
  EXPECT_EQ(connection.request("GET", "/x?bad=%zz", "", "").status, 400);
  EXPECT_EQ(connection.request("GET", "/y", "", "").body, R"({"p":"/y"})");
}

}  // namespace
}  // namespace aios::http
