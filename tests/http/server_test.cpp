// The server over real loopback sockets: dispatch, required headers, limits and malformed
// input.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "aios/http.hpp"
#include "http_test_support.hpp"

namespace aios::http {
namespace {

using namespace std::chrono_literals;
using testing::body_of;
using testing::echo;
using testing::exchange;
using testing::started;
using testing::status_of;
using testing::url;
using testing::wait_for_connections;

// Given a running server, we should dispatch a request to the handler and answer its JSON.
TEST(HttpServer, DispatchesToTheHandlerAndAnswersJson) {
  const auto server = started(echo);
  ASSERT_NE(server->port(), 0);
  const auto response = request("POST", url(server->port(), "/v1/tasks/t-1/claim?x=a%20b&y=%2B"),
                                "tok-123", R"({"k":1})", 5s);
  EXPECT_EQ(response.status, 200);
  const auto body = nlohmann::json::parse(response.body);
  EXPECT_EQ(body["method"], "POST");
  EXPECT_EQ(body["path"], "/v1/tasks/t-1/claim");
  EXPECT_EQ(body["target"], "/v1/tasks/t-1/claim?x=a%20b&y=%2B");
  EXPECT_EQ(body["query"], (nlohmann::json{{"x", "a b"}, {"y", "+"}}));
  EXPECT_EQ(body["body"], R"({"k":1})");
  EXPECT_EQ(body["bearer"], "tok-123");
  EXPECT_EQ(body["remote"], "127.0.0.1");
}

// Given a request, we should answer with Content-Type, Content-Length and no-store caching.
TEST(HttpServer, AnswersWithTheRequiredHeaders) {
  const auto server = started([](const Request&) { return json_response(200, {{"ok", true}}); });
  const auto raw = exchange(server->port(),
                            "GET /health HTTP/1.1\r\nHost: localhost\r\nX-Trace: 9\r\n"
                            "Connection: close\r\n\r\n");
  EXPECT_EQ(raw,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n{\"ok\":true}");
}

// Given handlers that throw, we should answer the aios::Error's code and status, and a bare
// 500 INTERNAL_ERROR (without the exception text) for anything else.
TEST(HttpServer, TranslatesHandlerExceptions) {
  std::vector<std::string> logged;
  std::mutex mutex;
  ServerOptions options;
  options.on_unhandled_exception = [&](std::string_view what) {
    const std::lock_guard lock(mutex);
    logged.emplace_back(what);
  };
  const auto server = started(
      [](const Request& r) -> Response {
        if (r.path == "/refused") throw Error(ErrorCode::EXECUTION_DIGEST_MISMATCH, "d1 != d2");
        throw std::runtime_error("password=hunter2 at /srv/db");
      },
      options);
  const auto refused = request("GET", url(server->port(), "/refused"), "", "", 5s);
  EXPECT_EQ(refused.status, 409);
  EXPECT_EQ(refused.body, R"({"error":"EXECUTION_DIGEST_MISMATCH"})");
  const auto broken = request("GET", url(server->port(), "/broken"), "", "", 5s);
  EXPECT_EQ(broken.status, 500);
  EXPECT_EQ(broken.body, R"({"error":"INTERNAL_ERROR"})");
  const std::lock_guard lock(mutex);
  EXPECT_EQ(logged, std::vector<std::string>{"password=hunter2 at /srv/db"});
}

// Given bodies over the limit (declared or chunked), we should answer 413 REQUEST_SIZE_INVALID
// and never call the handler; a body at the limit is accepted.
TEST(HttpServer, RefusesBodiesOverTheLimit) {
  std::atomic<int> calls{0};
  ServerOptions options;
  options.max_body_bytes = 1024;
  const auto server = started(
      [&](const Request& r) {
        ++calls;
        return json_response(200, {{"size", r.body.size()}});
      },
      options);
  const auto big =
      request("POST", url(server->port(), "/v1/tasks"), "", std::string(256 * 1024, 'x'), 5s);
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(big.body, R"({"error":"REQUEST_SIZE_INVALID"})");

  const auto chunked = exchange(
      server->port(),
      "POST /v1/tasks HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
      "\r\n200\r\n" +
          std::string(512, 'a') + "\r\n401\r\n" + std::string(1025, 'b') + "\r\n0\r\n\r\n");
  EXPECT_EQ(status_of(chunked), 413);
  EXPECT_EQ(body_of(chunked), R"({"error":"REQUEST_SIZE_INVALID"})");
  EXPECT_EQ(calls.load(), 0);

  const auto exact =
      request("POST", url(server->port(), "/v1/tasks"), "", std::string(1024, 'x'), 5s);
  EXPECT_EQ(exact.status, 200);
  EXPECT_EQ(exact.body, R"({"size":1024})");
  EXPECT_EQ(calls.load(), 1);
}

// Given malformed requests, we should answer 400 REQUEST_INVALID, close, and not call the
// handler.
TEST(HttpServer, RefusesMalformedRequests) {
  std::atomic<int> calls{0};
  const auto server = started([&](const Request&) {
    ++calls;
    return json_response(200, {});
  });
  for (const std::string& bytes : {
           std::string("NOT A VALID REQUEST\r\n\r\n"),
           std::string("GET /x HTTP/9.9\r\n\r\n"),
           std::string("GET http://elsewhere/x HTTP/1.1\r\nHost: localhost\r\n\r\n"),
           std::string("OPTIONS * HTTP/1.1\r\nHost: localhost\r\n\r\n"),
           std::string("GET /x?a=%zz HTTP/1.1\r\nHost: localhost\r\n\r\n"),
           std::string("GET /x HTTP/1.1\r\nBad Header: 1\r\n\r\n"),
       }) {
    SCOPED_TRACE(bytes);
    const auto raw = exchange(server->port(), bytes);  // returns only once the server closed
    EXPECT_EQ(status_of(raw), 400);
    EXPECT_EQ(body_of(raw), R"({"error":"REQUEST_INVALID"})");
    EXPECT_NE(raw.find("Connection: close\r\n"), std::string::npos);
  }
  EXPECT_EQ(calls.load(), 0);
  // A Content-Length that is not one decimal number has a code of its own (the seed's).
  for (const std::string& bytes :
       {std::string("POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"),
        std::string("POST /x HTTP/1.1\r\nContent-Length: abc\r\n\r\n{}")}) {
    SCOPED_TRACE(bytes);
    const auto raw = exchange(server->port(), bytes);
    EXPECT_EQ(status_of(raw), 400);
    EXPECT_EQ(body_of(raw), R"({"error":"CONTENT_LENGTH_INVALID"})");
  }
  EXPECT_EQ(calls.load(), 0);
}

// Given a request head over the header limit, we should answer 400 HTTP_HEADER_TOO_LARGE.
TEST(HttpServer, RefusesHeadersOverTheLimit) {
  ServerOptions options;
  options.max_header_bytes = 1024;
  const auto server = started(echo, options);
  const auto raw = exchange(server->port(), "GET /x HTTP/1.1\r\nHost: localhost\r\nX-Big: " +
                                                std::string(4096, 'a') + "\r\n\r\n");
  EXPECT_EQ(status_of(raw), 400);
  EXPECT_EQ(body_of(raw), R"({"error":"HTTP_HEADER_TOO_LARGE"})");
}

// Given "Expect: 100-continue", we should send 100 Continue before reading the body.
TEST(HttpServer, HonoursExpectContinue) {
  const auto server = started(echo);
  testing::RawClient client(server->port());
  client.send(
      "POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(client.read_until("\r\n\r\n"));
  EXPECT_EQ(client.received(), "HTTP/1.1 100 Continue\r\n\r\n");
  client.send("hello");
  ASSERT_TRUE(client.read_until(R"("body":"hello")"));
}

// What the server writes to a connection that sends nothing, until it closes.
std::string unasked(std::uint16_t port) {
  testing::RawClient client(port);
  if (!client.read_to_eof()) return "(the server kept the connection open)";
  return client.received();
}

// Given a server holding its limit of open connections, a further connection should be answered
// 503 HTTP_CONNECTION_LIMIT and closed without reaching the handler, and connections should be
// taken again once one closes.
TEST(HttpServer, AnswersConnectionsPastTheLimitWith503) {
  ServerOptions options;
  options.max_connections = 2;
  const auto server = started(echo, options);
  std::vector<std::unique_ptr<testing::RawClient>> held;
  for (int i = 0; i < 2; ++i) held.push_back(std::make_unique<testing::RawClient>(server->port()));
  ASSERT_TRUE(wait_for_connections(*server, 2));
  const auto refused = unasked(server->port());
  EXPECT_EQ(status_of(refused), 503) << refused;
  EXPECT_EQ(body_of(refused), R"({"error":"HTTP_CONNECTION_LIMIT"})");
  EXPECT_NE(refused.find("Connection: close\r\n"), std::string::npos);
  held.pop_back();
  ASSERT_TRUE(wait_for_connections(*server, 1));
  EXPECT_EQ(status_of(exchange(server->port(), "GET /again HTTP/1.0\r\n\r\n")), 200);
}

// Given one peer address holding its own limit, its next connection should be refused the same
// way although the server as a whole has room.
TEST(HttpServer, AnswersAPeerPastItsOwnLimitWith503) {
  ServerOptions options;
  options.max_connections = 64;
  options.max_connections_per_peer = 1;
  const auto server = started(echo, options);
  auto held = std::make_unique<testing::RawClient>(server->port());
  ASSERT_TRUE(wait_for_connections(*server, 1));
  EXPECT_EQ(status_of(unasked(server->port())), 503);
  held.reset();
  ASSERT_TRUE(wait_for_connections(*server, 0));
  EXPECT_EQ(status_of(exchange(server->port(), "GET /again HTTP/1.0\r\n\r\n")), 200);
}

// Given a server that admits only one bearer token, a body over admit_before_bytes (or chunked)
// from any other caller should be refused 401 UNAUTHORIZED before it is read, the connection
// closed and the handler never called; small bodies and the admitted token go through.
TEST(HttpServer, RefusesLargeBodiesOfUnadmittedCallersBeforeReadingThem) {
  std::atomic<int> calls{0};
  ServerOptions options;
  options.admit_before_bytes = 1024;
  options.admits = [](const Request& r) { return r.bearer_token == "good-token"; };
  const auto server = started(
      [&](const Request& r) {
        ++calls;
        return json_response(200, {{"size", r.body.size()}});
      },
      options);
  const std::string large(200 * 1024, 'x');
  for (const std::string token : {"", "bad-token"}) {
    const auto refused = request("POST", url(server->port(), "/v1/tasks"), token, large, 5s);
    EXPECT_EQ(refused.status, 401) << token;
    EXPECT_EQ(refused.body, R"({"error":"UNAUTHORIZED"})");
  }
  const auto chunked = exchange(server->port(),
                                "POST /v1/tasks HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: "
                                "chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(status_of(chunked), 401);
  EXPECT_NE(chunked.find("Connection: close\r\n"), std::string::npos);
  EXPECT_EQ(calls.load(), 0);

  EXPECT_EQ(
      request("POST", url(server->port(), "/v1/tasks"), "bad-token", std::string(1024, 'x'), 5s)
          .status,
      200);
  const auto admitted = request("POST", url(server->port(), "/v1/tasks"), "good-token", large, 5s);
  EXPECT_EQ(admitted.status, 200);
  EXPECT_EQ(admitted.body, R"({"size":204800})");
  EXPECT_EQ(calls.load(), 2);
}

// Given an HTTP/1.0 request without keep-alive, we should answer and close.
TEST(HttpServer, ClosesHttp10ConnectionsByDefault) {
  const auto server = started(echo);
  const auto raw = exchange(server->port(), "GET /old HTTP/1.0\r\n\r\n");
  EXPECT_EQ(status_of(raw), 200);
  EXPECT_NE(raw.find("Connection: close\r\n"), std::string::npos);
}

}  // namespace
}  // namespace aios::http
