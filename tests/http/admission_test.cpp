// What the server checks before a handler runs, against callers without a token and browsers
// led by a rebinding DNS name: the Host header, the bodies held across all connections, and
// the room for connections that unauthenticated ones must not take.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
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
using testing::RawClient;
using testing::started;
using testing::status_of;
using testing::wait_for_connections;

// A keep-alive GET /x on localhost, with the token when one is given.
std::string get(std::string_view token = "", std::string_view connection = "keep-alive") {
  std::string bytes = "GET /x HTTP/1.1\r\nHost: localhost\r\n";
  if (!token.empty()) bytes += "Authorization: Bearer " + std::string(token) + "\r\n";
  return bytes + "Connection: " + std::string(connection) + "\r\n\r\n";
}

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t found = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++found;
  return found;
}

// Given Host headers, only loopback names and addresses, the listener's own and the allowed
// names should reach the handler; anything else is answered 421 before it runs.
TEST(HttpAdmission, AnswersOnlyLoopbackAndAllowedHosts) {
  std::atomic<int> calls{0};
  ServerOptions options;
  options.allowed_hosts = {"scheduler.example", "192.0.2.7"};
  const auto server = started(
      [&](const Request& request) {
        ++calls;
        return echo(request);
      },
      options);
  for (const std::string host :
       {"localhost", "localhost:8080", "LOCALHOST.", "127.0.0.1:1234", "127.9.9.9", "[::1]:80",
        "scheduler.example", "SCHEDULER.example:443", "192.0.2.7:18940"}) {
    const auto raw = exchange(server->port(),
                              "GET /x HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(raw), 200) << host;
  }
  EXPECT_EQ(calls.load(), 9);
  for (const std::string host : {"evil.example", "evil.example:18940", "localhost.evil.example",
                                 "10.0.0.1", "[2001:db8::1]:80", "scheduler.example.evil"}) {
    const auto raw = exchange(server->port(),
                              "GET /x HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(raw), 421) << host;
    EXPECT_EQ(body_of(raw), R"({"error":"HTTP_HOST_NOT_ALLOWED"})") << host;
  }
  EXPECT_EQ(calls.load(), 9);
  // HTTP/1.0 without Host, or an empty one: no name a browser could have been led to.
  EXPECT_EQ(status_of(exchange(server->port(), "GET /x HTTP/1.0\r\n\r\n")), 200);
  EXPECT_EQ(status_of(exchange(server->port(), "GET /x HTTP/1.0\r\nHost:\r\n\r\n")), 200);
}

// Given bodies held one byte short, a body that would take the bytes held past the budget
// should be answered 503 before it is read, small bodies should not count, and the budget
// should come back once the held body's answer is written.
TEST(HttpAdmission, RefusesABodyPastTheBudgetBeforeReadingIt) {
  ServerOptions options;
  options.max_body_bytes = 1024 * 1024;
  options.max_body_bytes_held = 300 * 1024;
  options.admit_before_bytes = 1024;
  options.admits = [](const Request&) { return true; };
  const auto server = started(echo, options);
  const std::string body(200 * 1024, 'x');
  const auto head =
      "POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n";

  RawClient held(server->port());
  held.send(head + body.substr(0, body.size() - 1));
  std::this_thread::sleep_for(200ms);  // its header is read and its body counted

  RawClient refused(server->port());
  refused.send(head);
  ASSERT_TRUE(refused.read_to_eof());  // answered without a byte of its body
  EXPECT_EQ(status_of(refused.received()), 503);
  EXPECT_EQ(body_of(refused.received()), R"({"error":"HTTP_BODY_BUDGET_EXHAUSTED"})");

  const auto small = exchange(server->port(),
                              "POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 500\r\n"
                              "Connection: close\r\n\r\n" +
                                  std::string(500, 'y'));
  EXPECT_EQ(status_of(small), 200);

  held.send(body.substr(body.size() - 1));
  ASSERT_TRUE(held.read_until("\r\n\r\n"));
  EXPECT_EQ(status_of(held.received()), 200);
  const auto again = exchange(server->port(),
                              head.substr(0, head.size() - 2) + "Connection: close\r\n\r\n" + body);
  EXPECT_EQ(status_of(again), 200);
}

class Eviction : public ::testing::Test {
 protected:
  Eviction() {
    options_.max_connections = 4;
    options_.admits = [](const Request& request) { return request.bearer_token == "good"; };
    server_ = started(echo, options_);
  }
  // A keep-alive connection whose request carried the token, answered and now idle.
  std::unique_ptr<RawClient> authenticated() {
    auto client = std::make_unique<RawClient>(server_->port());
    client->send(get("good"));
    EXPECT_TRUE(client->read_until("\"path\":\"/x\""));
    return client;
  }
  ServerOptions options_;
  std::unique_ptr<Server> server_;
};

// Given a server full of connections, one of them authenticated and three that sent nothing, a
// new connection should take the place of the unauthenticated one that waited longest; the
// authenticated one should stay served.
TEST_F(Eviction, AnUnauthenticatedConnectionMakesRoomForANewOne) {
  auto owner = authenticated();
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(std::make_unique<RawClient>(server_->port()));
    ASSERT_TRUE(wait_for_connections(*server_, static_cast<std::size_t>(i) + 2));
    std::this_thread::sleep_for(20ms);  // an order of waiting the server can see
  }
  const auto answered = exchange(server_->port(),
                                 "GET /x HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
                                 "good\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(answered), 200) << answered;
  EXPECT_TRUE(idle.front()->read_to_eof());  // closed, with nothing written
  EXPECT_EQ(idle.front()->received(), "");
  owner->send(get("good", "close"));
  EXPECT_TRUE(owner->read_to_eof());
  EXPECT_EQ(count(owner->received(), "HTTP/1.1 200 OK\r\n"), 2U) << owner->received();
}

// Given a server full of authenticated connections, a new one should find no room: 503.
TEST_F(Eviction, AuthenticatedConnectionsAreNeverEvicted) {
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 4; ++i) held.push_back(authenticated());
  const auto refused = exchange(server_->port(), get("good"));
  EXPECT_EQ(status_of(refused), 503) << refused;
  EXPECT_EQ(body_of(refused), R"({"error":"HTTP_CONNECTION_LIMIT"})");
}

// Given an idle unauthenticated connection and an idle authenticated one, the first should be
// closed after the short idle timeout, the second kept.
TEST(HttpAdmission, UnauthenticatedConnectionsWaitOnlyAShortTime) {
  ServerOptions options;
  options.admits = [](const Request& request) { return request.bearer_token == "good"; };
  options.unauthenticated_idle_timeout = 300ms;
  const auto server = started(echo, options);
  RawClient anonymous(server->port(), 5s);
  anonymous.send(get());
  ASSERT_TRUE(anonymous.read_until("\"path\":\"/x\""));
  RawClient owner(server->port(), 5s);
  owner.send(get("good"));
  ASSERT_TRUE(owner.read_until("\"path\":\"/x\""));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(anonymous.read_to_eof());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  std::this_thread::sleep_for(500ms);
  owner.send(get("good", "close"));
  EXPECT_TRUE(owner.read_to_eof());
  EXPECT_EQ(count(owner.received(), "HTTP/1.1 200 OK\r\n"), 2U) << owner.received();
}

}  // namespace
}  // namespace aios::http
