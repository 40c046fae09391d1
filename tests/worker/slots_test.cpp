// The claims and results of a worker's slots against a transport that holds the first request
// back: what comes meanwhile waits and goes in one request (the exact bodies the Task API is
// sent), and each slot gets its own answer, claim or error.
#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "support/code_of.hpp"
#include "worker/internal.hpp"

namespace aios::worker {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Answers from a script and records each request; the first waits until open() is called.
class GatedTransport final : public http::Transport {
 public:
  struct Call {
    std::string url;
    json body;
  };

  void respond(int status, const json& body) { script_.push_back({status, body.dump()}); }
  void open() {
    const std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  // Waits until `count` requests have come.
  void await_calls(std::size_t count) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return calls_.size() >= count; });
  }
  std::vector<Call> calls() {
    const std::lock_guard lock(mutex_);
    return calls_;
  }

  http::ClientResponse request(std::string_view, std::string_view url, std::string_view,
                               std::string_view body, std::chrono::milliseconds) override {
    std::unique_lock lock(mutex_);
    calls_.push_back({std::string(url), json::parse(body)});
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
    auto next = std::move(script_.front());
    script_.pop_front();
    return next;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  std::vector<Call> calls_;
  std::deque<http::ClientResponse> script_;
};

// Time for threads started to reach the sender or the queue and wait there.
void let_them_queue() {
  std::this_thread::sleep_for(300ms);
}

TEST(ResultSenderTest, ResultsThatComeWhileOneIsOutGoTogetherEachWithItsOwnAnswer) {
  // Given a result whose request is held back, two more submitted meanwhile (one asking for
  // its slot's next task, one not) should go in one POST /v1/tasks/results with one claim
  // asked for; the first slot gets its answer without its claim, the second its item, the
  // third its item's refusal as an error, and both claims wait in the queue.
  GatedTransport transport;
  transport.respond(201,
                    {{"task_id", "t-a"}, {"status", "VERIFYING"}, {"claim", {{"task_id", "t-x"}}}});
  transport.respond(200, {{"results",
                           {{{"task_id", "t-b"}, {"status", "VERIFYING"}},
                            {{"task_id", "t-c"}, {"error", "LEASE_EXPIRED"}}}},
                          {"claims", {{{"task_id", "t-y"}}}}});
  const JsonService api(transport, "http://peer", "token", 1s);
  ClaimQueue claims(api, "w-1");
  ResultSender sender(api, "w-1", claims);

  auto first = std::async(std::launch::async, [&] {
    return sender.submit("t-a", {{"result", {{"n", 1}}}}, true);
  });
  transport.await_calls(1);
  auto second = std::async(std::launch::async, [&] {
    return sender.submit("t-b", {{"result", {{"n", 2}}}}, true);
  });
  let_them_queue();  // in this order
  auto third = std::async(std::launch::async, [&] {
    return sender.submit("t-c", {{"result", {{"n", 3}}}}, false);
  });
  let_them_queue();
  transport.open();

  EXPECT_EQ(first.get(), (json{{"task_id", "t-a"}, {"status", "VERIFYING"}}));
  EXPECT_EQ(second.get(), (json{{"task_id", "t-b"}, {"status", "VERIFYING"}}));
  EXPECT_EQ(test::code_of([&] { third.get(); }), "LEASE_EXPIRED");
  const auto calls = transport.calls();
  ASSERT_EQ(calls.size(), 2U);
  EXPECT_EQ(calls[0].url, "http://peer/v1/tasks/t-a/result");
  EXPECT_EQ(calls[0].body, (json{{"result", {{"n", 1}}}, {"claim_next", {{"worker_id", "w-1"}}}}));
  EXPECT_EQ(calls[1].url, "http://peer/v1/tasks/results");
  EXPECT_EQ(calls[1].body, (json{{"results",
                                  {{{"task_id", "t-b"}, {"result", {{"n", 2}}}},
                                   {{"task_id", "t-c"}, {"result", {{"n", 3}}}}}},
                                 {"claim_next", {{"worker_id", "w-1"}, {"max_tasks", 1}}}}));
  EXPECT_EQ(claims.take(), (json{{"task_id", "t-x"}}));
  EXPECT_EQ(claims.take(), (json{{"task_id", "t-y"}}));
  EXPECT_EQ(claims.take(), std::nullopt);
}

TEST(ClaimQueueTest, OneClaimNextAsksForEverySlotThatWaits) {
  // Given one slot's claim-next held back and two more slots asking meanwhile, the first should
  // get what its claim-next brought, and the other two should share one claim-next made for
  // both (max_tasks 2), one claim each.
  GatedTransport transport;
  transport.respond(200, {{"claims", {{{"task_id", "t-1"}}}}});
  transport.respond(200, {{"claims", {{{"task_id", "t-2"}}, {{"task_id", "t-3"}}}}});
  const JsonService api(transport, "http://peer", "token", 1s);
  ClaimQueue claims(api, "w-1");

  auto first = std::async(std::launch::async, [&] { return claims.next(500ms, nullptr); });
  transport.await_calls(1);
  auto second = std::async(std::launch::async, [&] { return claims.next(500ms, nullptr); });
  auto third = std::async(std::launch::async, [&] { return claims.next(500ms, nullptr); });
  let_them_queue();
  transport.open();

  EXPECT_EQ(first.get(), (json{{"task_id", "t-1"}}));
  std::set<std::string> others;
  for (auto* slot : {&second, &third}) {
    const auto claim = slot->get();
    ASSERT_TRUE(claim.has_value());
    others.insert(claim->at("task_id").get<std::string>());
  }
  EXPECT_EQ(others, (std::set<std::string>{"t-2", "t-3"}));
  const auto calls = transport.calls();
  ASSERT_EQ(calls.size(), 2U);
  EXPECT_EQ(calls[0].url, "http://peer/v1/tasks/claim-next");
  EXPECT_EQ(calls[0].body, (json{{"worker_id", "w-1"}, {"wait_ms", 500}, {"max_tasks", 1}}));
  EXPECT_EQ(calls[1].body, (json{{"worker_id", "w-1"}, {"wait_ms", 500}, {"max_tasks", 2}}));
}

TEST(ClaimQueueTest, AStoppingSlotAsksForNothingButTakesWhatIsInHand) {
  // Given a stop already set, a slot should make no claim-next: it gets a claim a result
  // brought, and nothing once none is left.
  GatedTransport transport;
  transport.open();
  const JsonService api(transport, "http://peer", "token", 1s);
  ClaimQueue claims(api, "w-1");
  const std::atomic<bool> stopped{true};
  claims.add(json::array({{{"task_id", "t-1"}}}));

  EXPECT_EQ(claims.next(500ms, &stopped), (json{{"task_id", "t-1"}}));
  EXPECT_EQ(claims.next(500ms, &stopped), std::nullopt);
  EXPECT_TRUE(transport.calls().empty());
}

}  // namespace
}  // namespace aios::worker
