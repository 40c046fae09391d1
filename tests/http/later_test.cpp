// Answers given after the handler returned (Response::later): the long poll's plumbing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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
using testing::started;
using testing::url;

// Later answers a test hands out and completes from its own thread.
class LaterBox {
 public:
  Response hand_out() {
    auto later = std::make_shared<Later>();
    {
      const std::lock_guard lock(mutex_);
      pending_.push_back(later);
    }
    Response response;
    response.later = std::move(later);
    return response;
  }
  // Waits until `n` answers are out, then completes the oldest with `response`.
  void complete_when(std::size_t n, Response response) {
    std::shared_ptr<Later> later;
    while (!later) {
      {
        const std::lock_guard lock(mutex_);
        if (pending_.size() >= n) later = pending_.front();
      }
      std::this_thread::sleep_for(5ms);
    }
    later->complete(std::move(response));
  }
  void drop_all() {
    const std::lock_guard lock(mutex_);
    pending_.clear();
  }
  std::size_t count() {
    const std::lock_guard lock(mutex_);
    return pending_.size();
  }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<Later>> pending_;
};

// Given a handler that answers later from another thread, we should send that answer on the
// connection, and keep the connection for the next request.
TEST(HttpLater, SendsTheAnswerCompletedFromAnotherThread) {
  LaterBox box;
  ServerOptions options;
  options.threads = 1;  // the io thread must be free while the answer waits
  const auto server = started(
      [&](const Request& request) {
        if (request.path == "/now") return json_response(200, {{"now", true}});
        return box.hand_out();
      },
      options);
  Connection connection("127.0.0.1", server->port(), 10s);
  std::thread completer([&] { box.complete_when(1, json_response(201, {{"later", true}})); });

  const auto answered = connection.request("POST", "/wait", "", "{}");
  completer.join();
  EXPECT_EQ(answered.status, 201);
  EXPECT_EQ(answered.body, R"({"later":true})");
  const auto next = connection.request("GET", "/now", "", "");
  EXPECT_EQ(next.status, 200);
  EXPECT_EQ(next.body, R"({"now":true})");
}

// Given one io thread and a connection waiting on a later answer, we should still answer other
// connections: the waiting request holds no thread.
TEST(HttpLater, AWaitingAnswerHoldsNoIoThread) {
  LaterBox box;
  ServerOptions options;
  options.threads = 1;
  const auto server = started(
      [&](const Request& request) {
        if (request.path == "/now") return json_response(200, {{"now", true}});
        return box.hand_out();
      },
      options);
  ClientResponse waited;
  std::thread waiter(
      [&] { waited = request("POST", url(server->port(), "/wait"), "", "{}", 10s); });
  while (box.count() == 0) std::this_thread::sleep_for(5ms);

  const auto other = request("GET", url(server->port(), "/now"), "", "", 5s);
  box.complete_when(1, json_response(200, {{"done", true}}));
  waiter.join();

  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(waited.body, R"({"done":true})");
}

// Given a later answer completed before the server asked for it, or completed twice, we should
// send the first answer once.
TEST(HttpLater, AnEarlyAnswerIsSentAndOnlyTheFirstCounts) {
  const auto server = started([](const Request&) {
    auto later = std::make_shared<Later>();
    later->complete(json_response(200, {{"first", true}}));
    later->complete(json_response(500, {{"second", true}}));
    Response response;
    response.later = later;
    return response;
  });
  const auto answered = request("GET", url(server->port(), "/"), "", "", 5s);
  EXPECT_EQ(answered.status, 200);
  EXPECT_EQ(answered.body, R"({"first":true})");
}

// Given a later answer dropped without one, or completed with a response that cannot be sent,
// we should answer 500 INTERNAL_ERROR rather than leave the connection waiting.
TEST(HttpLater, ADroppedOrUnsendableAnswerIsAnInternalError) {
  LaterBox box;
  const auto server = started([&](const Request& request) {
    if (request.path == "/bad") {
      auto later = std::make_shared<Later>();
      later->complete(Response{99, "", "text/plain", {}, {}});
      Response response;
      response.later = later;
      return response;
    }
    return box.hand_out();
  });
  ClientResponse dropped;
  std::thread waiter([&] { dropped = request("GET", url(server->port(), "/drop"), "", "", 10s); });
  while (box.count() == 0) std::this_thread::sleep_for(5ms);
  box.drop_all();
  waiter.join();
  const auto bad = request("GET", url(server->port(), "/bad"), "", "", 5s);

  EXPECT_EQ(dropped.status, 500);
  EXPECT_EQ(dropped.body, R"({"error":"INTERNAL_ERROR"})");
  EXPECT_EQ(bad.status, 500);
}

// Given a client that gives up a request awaiting a later answer, we should throw
// HTTP_CLIENT_CANCELLED in the client and show the server's Later as abandoned, so a long poll
// does not act for a caller that is gone.
TEST(HttpLater, AClientThatGivesUpIsCancelledAndItsLaterAbandoned) {
  std::mutex mutex;
  std::shared_ptr<Later> held;
  const auto server = started([&](const Request&) {
    auto later = std::make_shared<Later>();
    {
      const std::lock_guard lock(mutex);
      held = later;
    }
    Response response;
    response.later = std::move(later);
    return response;
  });
  std::atomic<bool> cancel{false};
  std::string code;
  std::thread caller([&] {
    try {
      request("POST", url(server->port(), "/wait"), "", "{}", 30s, &cancel);
    } catch (const Error& error) {
      code = error.code();
    }
  });
  const auto waiting = [&] {
    const std::lock_guard lock(mutex);
    return held != nullptr;
  };
  while (!waiting()) std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(held->abandoned());

  cancel = true;
  caller.join();
  for (int i = 0; i < 400 && !held->abandoned(); ++i) std::this_thread::sleep_for(5ms);

  EXPECT_EQ(code, "HTTP_CLIENT_CANCELLED");
  EXPECT_TRUE(held->abandoned());
  held->complete(json_response(200, {{"unheard", true}}));
}

}  // namespace
}  // namespace aios::http
