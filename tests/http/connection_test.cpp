// The server's connections over real loopback sockets: keep-alive, pipelining, concurrency,
// idle timeout, binding rules and the stop sequence.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "aios/http.hpp"
#include "http_test_support.hpp"

namespace aios::http {
namespace {

using namespace std::chrono_literals;
using testing::echo;
using testing::exchange;
using testing::started;
using testing::url;

// Given one keep-alive connection, we should answer 100 requests on the same TCP connection.
TEST(HttpServer, ServesManyRequestsOnOneKeepAliveConnection) {
  std::mutex mutex;
  std::set<std::uint16_t> peers;
  const auto server = started([&](const Request& r) {
    {
      const std::lock_guard lock(mutex);
      peers.insert(r.remote_port);
    }
    return json_response(200, {{"n", r.query.at("n")}});
  });
  Connection connection("127.0.0.1", server->port(), 5s);
  for (int i = 0; i < 100; ++i) {
    const auto response = connection.request("GET", "/health?n=" + std::to_string(i), "", "");
    ASSERT_EQ(response.status, 200);
    ASSERT_EQ(response.body, R"({"n":")" + std::to_string(i) + R"("})");
  }
  const std::lock_guard lock(mutex);
  EXPECT_EQ(peers.size(), 1u);
}

// Given two pipelined requests in one write, we should answer both, in order.
TEST(HttpServer, AnswersPipelinedRequestsInOrder) {
  const auto server = started(echo);
  const auto raw = exchange(server->port(),
                            "GET /first HTTP/1.1\r\nHost: localhost\r\n\r\n"
                            "GET /second HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  const auto first = raw.find(R"("path":"/first")");
  const auto second = raw.find(R"("path":"/second")");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  EXPECT_LT(first, second);
}

// Given 8 client threads sending 50 requests each, we should answer every one correctly.
TEST(HttpServer, AnswersConcurrentClients) {
  std::atomic<int> calls{0};
  const auto server = started([&](const Request& r) {
    ++calls;
    return json_response(200, {{"echo", r.query.at("v")}});
  });
  constexpr int kThreads = 8;
  constexpr int kRequests = 50;
  std::vector<std::future<int>> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.push_back(std::async(std::launch::async, [&, t] {
      Connection connection("127.0.0.1", server->port(), 10s);
      int good = 0;
      for (int i = 0; i < kRequests; ++i) {
        const std::string value = std::to_string(t) + "-" + std::to_string(i);
        // Every fifth request on its own connection, so accepts interleave with keep-alive.
        const auto response =
            i % 5 == 0 ? request("GET", url(server->port(), "/echo?v=" + value), "", "", 10s)
                       : connection.request("GET", "/echo?v=" + value, "", "");
        if (response.status == 200 && response.body == R"({"echo":")" + value + R"("})") ++good;
      }
      return good;
    }));
  }
  int good = 0;
  for (auto& worker : workers) good += worker.get();
  EXPECT_EQ(good, kThreads * kRequests);
  EXPECT_EQ(calls.load(), kThreads * kRequests);
}

// Given an idle connection, we should close it after the read timeout.
TEST(HttpServer, ClosesIdleConnectionsAfterTheReadTimeout) {
  ServerOptions options;
  options.read_timeout = 100ms;
  const auto server = started(echo, options);
  testing::RawClient client(server->port(), 10s);
  EXPECT_TRUE(client.read_to_eof());  // false would mean the 10 s receive timeout fired
  EXPECT_TRUE(client.received().empty());
}

// Given a non-loopback host without TLS, we should refuse to start with
// HTTP_PLAINTEXT_NOT_LOOPBACK (bearer tokens cross a network only inside TLS); loopback hosts
// start.
TEST(HttpServer, RefusesPlaintextOffLoopback) {
  for (const std::string host :
       {"0.0.0.0", "::", "192.0.2.1", "::ffff:127.0.0.1", "127.0.0.1,192.0.2.1"}) {
    SCOPED_TRACE(host);
    ServerOptions options;
    options.host = host;
    Server server(options, echo);
    try {
      server.start();
      ADD_FAILURE() << "started";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), "HTTP_PLAINTEXT_NOT_LOOPBACK");
    }
  }
  for (const std::string host : {"localhost", "::1", "127.0.0.2", "127.0.0.1,::1"}) {
    SCOPED_TRACE(host);
    ServerOptions options;
    options.host = host;
    EXPECT_NE(started(echo, options)->port(), 0);
  }
}

// Given a host that is not an IP address or a port already in use, we should fail with
// HTTP_BIND_FAILED.
TEST(HttpServer, FailsToBindClearly) {
  const auto first = started(echo);
  ServerOptions busy;
  busy.port = first->port();
  Server second(busy, echo);
  try {
    second.start();
    ADD_FAILURE() << "bound a port in use";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), "HTTP_BIND_FAILED");
    EXPECT_NE(error.detail().find(std::to_string(first->port())), std::string::npos);
  }
  ServerOptions named;
  named.host = "example.invalid";
  Server third(named, echo);
  EXPECT_THROW(third.start(), Error);
  EXPECT_THROW(first->start(), Error);  // a server starts once
}

// Given a slow request in flight, we should let stop() finish it with 200, then refuse new
// connections.
TEST(HttpServer, StopDrainsInFlightRequests) {
  std::promise<void> entered;
  const auto server = started([&](const Request&) {
    entered.set_value();
    std::this_thread::sleep_for(300ms);
    return json_response(200, {{"done", true}});
  });
  const auto port = server->port();
  auto slow = std::async(std::launch::async,
                         [&] { return request("GET", url(port, "/slow"), "", "", 10s); });
  entered.get_future().wait();
  EXPECT_EQ(server->in_flight(), 1u);
  server->stop();
  const auto response = slow.get();
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, R"({"done":true})");
  EXPECT_EQ(server->in_flight(), 0u);
  EXPECT_EQ(server->connections(), 0u);
  try {
    request("GET", url(port, "/after"), "", "", 2s);
    ADD_FAILURE() << "answered after stop";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), "HTTP_UPSTREAM_UNAVAILABLE");
  }
  server->stop();  // idempotent
}

// Given an idle keep-alive connection, we should close it on stop() instead of waiting for it.
TEST(HttpServer, StopClosesIdleConnections) {
  ServerOptions options;
  options.drain_timeout = 20s;  // a stop that waited for the idle connection would take this
  auto server = started(echo, options);
  Connection idle("127.0.0.1", server->port(), 5s);
  ASSERT_EQ(idle.request("GET", "/x", "", "").status, 200);
  const auto begin = std::chrono::steady_clock::now();
  server->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 10s);
  EXPECT_EQ(server->connections(), 0u);
}

}  // namespace
}  // namespace aios::http
