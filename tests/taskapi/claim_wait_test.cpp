// POST /v1/tasks/claim-next in process: the answer at once, the long poll woken by the plane's
// queue signal or by its worker's claim window (no periodic recheck, so nothing else can wake
// it), its deadline, the stop that answers every waiter, and the refusals of a malformed body.
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "aios/taskapi.hpp"
#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

using namespace std::chrono_literals;

const std::string kOwnerToken(40, 'o');

class ClaimWaitTest : public PlaneTest {
 protected:
  void SetUp() override {
    const Json created = plane_.create_agent(fleet::agent_grant_of(
        {{"agent_id", "agent-wait"}, {"granted_capabilities", {"code.read"}}}));
    agent_token_ = created["token"];
    const auto agent = plane_.authenticate_agent(agent_token_);
    ASSERT_TRUE(agent.has_value());
    register_worker(*agent, "worker-wait");
  }

  http::Request claim_next(const Json& body, const std::string& token) const {
    return post("/v1/tasks/claim-next", body, token);
  }

  static http::Request post(const std::string& path, const Json& body, const std::string& token) {
    http::Request request;
    request.method = "POST";
    request.path = request.target = path;
    request.bearer_token = token;
    request.remote_address = "127.0.0.1";  // the owner's token counts from loopback only
    request.body = body.dump();
    return request;
  }

  // The result body for `claim`, with `extra` fields.
  static Json result_for(const Json& claim, const Json& extra = Json::object()) {
    Json body = {{"lease_token", claim["lease_token"]},
                 {"attempt", claim["attempt"]},
                 {"execution_digest", claim["execution_digest"]},
                 {"idempotency_key", "result-" + claim["task_id"].get<std::string>()},
                 {"result", {{"ok", true}}}};
    for (const auto& item : extra.items()) body[item.key()] = item.value();
    return body;
  }

  // The answer, at once or once the long poll completes it.
  static std::future<http::Response> answer_of(http::Response response) {
    auto promise = std::make_shared<std::promise<http::Response>>();
    auto future = promise->get_future();
    if (!response.later) {
      promise->set_value(std::move(response));
    } else {
      response.later->on_complete(
          [promise](http::Response answer) { promise->set_value(std::move(answer)); });
    }
    return future;
  }

  static Json body_of(std::future<http::Response>& answer) {
    return Json::parse(answer.get().body);
  }

  // The task id worker-wait claims with a claim-next waiting 20 s that finds nothing at first,
  // while the store's clock moves on with real time ("none" when it is answered without one).
  std::string claimed_once_the_window_ends() {
    auto answer = answer_of(
        api_.handle(claim_next({{"worker_id", "worker-wait"}, {"wait_ms", 20000}}, agent_token_)));
    EXPECT_EQ(answer.wait_for(0ms), std::future_status::timeout) << "claimed before the window";
    const std::jthread ticker([this](const std::stop_token& stop) {
      while (!stop.stop_requested()) {
        std::this_thread::sleep_for(10ms);
        clock_.advance(10ms);
      }
    });
    if (answer.wait_for(10s) != std::future_status::ready) return "not answered";
    const Json claim = body_of(answer)["claim"];
    return claim.is_null() ? "none" : claim["task_id"].get<std::string>();
  }

  TaskApiMetrics metrics_;
  TaskApi api_{plane_, kOwnerToken, metrics_};
  std::string agent_token_;
};

TEST_F(ClaimWaitTest, AQueuedTaskIsClaimedAtOnce) {
  // Given a queued task, we should answer the claim without waiting.
  create_task("wait-now");

  auto response =
      api_.handle(claim_next({{"worker_id", "worker-wait"}, {"wait_ms", 20000}}, agent_token_));

  EXPECT_EQ(response.later, nullptr);
  const Json body = Json::parse(response.body);
  EXPECT_EQ(body["claim"]["task_id"], "wait-now");
  EXPECT_EQ(view("wait-now")["status"], "CLAIMED");
}

TEST_F(ClaimWaitTest, AWaitingClaimIsWokenByTheTaskThatBecomesClaimable) {
  // Given an empty queue and a claim waiting 20 s, we should claim a task created meanwhile:
  // nothing rechecks, so only the queue signal can have woken it.
  auto answer = answer_of(
      api_.handle(claim_next({{"worker_id", "worker-wait"}, {"wait_ms", 20000}}, agent_token_)));
  ASSERT_EQ(answer.wait_for(0ms), std::future_status::timeout);

  create_task("wait-woken");

  const Json body = body_of(answer);
  EXPECT_EQ(body["claim"]["task_id"], "wait-woken");
  EXPECT_EQ(view("wait-woken")["claimed_by"], "worker-wait");
}

TEST_F(ClaimWaitTest, AWaiterWhoseCallerWentAwayClaimsNothing) {
  // Given a waiting claim whose connection closed (the server marks its Later abandoned), we
  // should answer it without claiming the task that arrives, which stays QUEUED for others.
  auto response =
      api_.handle(claim_next({{"worker_id", "worker-wait"}, {"wait_ms", 20000}}, agent_token_));
  ASSERT_NE(response.later, nullptr);
  response.later->abandon();
  auto answer = answer_of(std::move(response));

  create_task("wait-gone");

  EXPECT_EQ(body_of(answer), (Json{{"claim", nullptr}}));
  EXPECT_EQ(view("wait-gone")["status"], "QUEUED");
}

TEST_F(ClaimWaitTest, ASignalBetweenTheFirstAttemptAndTheWaitIsNotLost) {
  // Given a task that became claimable after the caller's own attempt but before its waiter
  // was in (the signal already taken), we should claim it at once, not at the next signal:
  // nothing rechecks and the wait is 20 s.
  ClaimWaiters waiters(plane_, std::chrono::milliseconds(0));
  const auto agent = plane_.authenticate_agent(agent_token_);
  ASSERT_TRUE(agent.has_value());
  const auto before = waiters.before_attempt();
  create_task("wait-raced");
  waiters.notify();  // the signal of that task, with no waiter in yet
  // Time for the waiters' thread to take that signal with nobody to try for.
  std::this_thread::sleep_for(50ms);
  std::promise<std::vector<Json>> claimed;

  waiters.wait(*agent, "worker-wait", 1, std::chrono::steady_clock::now() + 20s, before, nullptr,
               [&](std::vector<Json> claims, const Error*) { claimed.set_value(claims); });

  const auto claims = claimed.get_future().get();
  ASSERT_EQ(claims.size(), 1U);
  EXPECT_EQ(claims[0]["task_id"], "wait-raced");
}

// The tries of waiting claims that claimed nothing, as /metrics reports them.
std::string empty_wakeups(TaskApiMetrics& metrics) {
  const std::string text = metrics.render({}, 0, 0);
  const std::string name = "\naios_claim_wakeups_empty_total ";
  const auto at = text.find(name);
  if (at == std::string::npos) return "absent";
  return text.substr(at + name.size(), text.find('\n', at + 1) - at - name.size());
}

TEST_F(ClaimWaitTest, ATaskWakesOneWaiterAndTheRestSleepOn) {
  // Given five idle workers each waiting on claim-next, one task should wake one of them (the
  // first in line), claim it, and leave the other four asleep without a try; the next task
  // wakes the next one.
  const auto agent = plane_.authenticate_agent(agent_token_);
  ASSERT_TRUE(agent.has_value());
  // Every worker registers before any waits: a registration wakes its own worker's waiters,
  // and one the waiters' thread took late would be a try for nothing, not the task's.
  for (int i = 0; i < 5; ++i) {
    register_worker(*agent, "worker-idle-" + std::to_string(i), {{"max_concurrency", 1}});
  }
  std::vector<std::future<http::Response>> waiting;
  for (int i = 0; i < 5; ++i) {
    const std::string worker = "worker-idle-" + std::to_string(i);
    waiting.push_back(answer_of(
        api_.handle(claim_next({{"worker_id", worker}, {"wait_ms", 20000}}, agent_token_))));
  }

  create_task("wake-one");
  ASSERT_EQ(waiting[0].wait_for(5s), std::future_status::ready);
  EXPECT_EQ(Json::parse(waiting[0].get().body)["claim"]["task_id"], "wake-one");
  for (std::size_t i = 1; i < waiting.size(); ++i) {
    EXPECT_EQ(waiting[i].wait_for(100ms), std::future_status::timeout) << i;
  }
  EXPECT_EQ(empty_wakeups(metrics_), "0");

  create_task("wake-next");
  ASSERT_EQ(waiting[1].wait_for(5s), std::future_status::ready);
  EXPECT_EQ(Json::parse(waiting[1].get().body)["claim"]["task_id"], "wake-next");
  EXPECT_EQ(waiting[2].wait_for(100ms), std::future_status::timeout);
  EXPECT_EQ(empty_wakeups(metrics_), "0");
  api_.stop_waiting();
}

TEST_F(ClaimWaitTest, AWaiterThatCannotClaimPassesTheWakeUpOn) {
  // Given a waiting worker that does not run the task's adapter first in line and an eligible
  // one behind it, a task should be claimed by the second at once, the first should wait on,
  // and its empty try should be counted.
  const auto agent = plane_.authenticate_agent(agent_token_);
  ASSERT_TRUE(agent.has_value());
  register_worker(*agent, "worker-other", {{"allowed_adapters", {"deterministic"}}});
  auto ineligible = answer_of(
      api_.handle(claim_next({{"worker_id", "worker-other"}, {"wait_ms", 20000}}, agent_token_)));
  auto eligible = answer_of(
      api_.handle(claim_next({{"worker_id", "worker-wait"}, {"wait_ms", 20000}}, agent_token_)));

  create_task("wake-passed");

  ASSERT_EQ(eligible.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(Json::parse(eligible.get().body)["claim"]["task_id"], "wake-passed");
  EXPECT_EQ(ineligible.wait_for(100ms), std::future_status::timeout);
  EXPECT_EQ(empty_wakeups(metrics_), "1");
  api_.stop_waiting();
  EXPECT_EQ(body_of(ineligible), (Json{{"claim", nullptr}}));
}

TEST_F(ClaimWaitTest, AWaiterIsWokenWhenItsWorkersCircuitCooldownEnds) {
  // Given a queued task and a worker whose circuit is open for one more second (written to the
  // store directly: no transition announces its end), a claim waiting 20 s should claim the
  // task once the cooldown ends, woken by its claim window alone.
  const double now = to_epoch_seconds(clock_.now());
  store_.write(
      [&](store::Transaction& tx) { tx.note_worker_failure("worker-wait", now, 1, now + 1.0); });
  create_task("wait-cooldown");
  EXPECT_EQ(claimed_once_the_window_ends(), "wait-cooldown");
}

TEST_F(ClaimWaitTest, AWindowThatEndedBetweenTheFirstAttemptAndTheWaitIsNotLost) {
  // Given a worker whose circuit cooldown ended after the caller's own attempt but before its
  // waiter was in (no transition announces it), we should claim at once, not at the deadline:
  // nothing rechecks and the wait is 20 s.
  // Declared first: the waiters answer (at the latest when they stop) into it.
  std::promise<std::vector<Json>> claimed;
  auto found = claimed.get_future();
  ClaimWaiters waiters(plane_, std::chrono::milliseconds(0));
  const auto agent = plane_.authenticate_agent(agent_token_);
  ASSERT_TRUE(agent.has_value());
  const double now = to_epoch_seconds(clock_.now());
  store_.write(
      [&](store::Transaction& tx) { tx.note_worker_failure("worker-wait", now, 1, now + 1.0); });
  create_task("wait-window-passed");
  const auto before = waiters.before_attempt();
  clock_.advance(2s);  // the window ends while the caller goes from its attempt to its wait

  waiters.wait(*agent, "worker-wait", 1, std::chrono::steady_clock::now() + 20s, before, nullptr,
               [&](std::vector<Json> claims, const Error*) { claimed.set_value(claims); });

  ASSERT_EQ(found.wait_for(5s), std::future_status::ready);
  const auto claims = found.get();
  ASSERT_EQ(claims.size(), 1U);
  EXPECT_EQ(claims[0]["task_id"], "wait-window-passed");
}

TEST_F(ClaimWaitTest, AWaiterIsWokenWhenItsTaskQuarantineEnds) {
  // Given a queued task the worker is quarantined from for one more second, a claim waiting
  // 20 s should claim it once the quarantine ends, woken by its claim window alone.
  create_task("wait-quarantine");
  const double now = to_epoch_seconds(clock_.now());
  store_.write([&](store::Transaction& tx) {
    tx.quarantine_task("wait-quarantine", "worker-wait", "agent_failed", now + 1.0);
  });
  EXPECT_EQ(claimed_once_the_window_ends(), "wait-quarantine");
}

TEST_F(ClaimWaitTest, ARecheckFindsWhatNobodyAnnounced) {
  // Given a quarantined worker and a queued task, and the worker's quarantine lifted by a
  // store write that announces nothing (a writer outside the suite), a claim waiting 20 s
  // should claim the task at the next recheck (50 ms) when one is set.
  // The owner's quarantine of the worker, written past the plane: nothing announces it.
  const auto quarantine_silently = [&](bool quarantined) {
    store_.write([&](store::Transaction& tx) {
      tx.configure_worker({.worker_id = "worker-wait",
                           .max_slots = 1,
                           .failure_domain = "",
                           .labels = {},
                           .quarantined = quarantined,
                           .updated_at = 0});
    });
  };
  quarantine_silently(true);
  create_task("wait-silent");
  TaskApiMetrics metrics;
  TaskApi rechecking(plane_, kOwnerToken, metrics, std::chrono::milliseconds(50));
  auto rechecked = answer_of(rechecking.handle(
      claim_next({{"worker_id", "worker-wait"}, {"wait_ms", 20000}}, agent_token_)));
  ASSERT_EQ(rechecked.wait_for(0ms), std::future_status::timeout) << "the worker is quarantined";

  quarantine_silently(false);

  ASSERT_EQ(rechecked.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(body_of(rechecked)["claim"]["task_id"], "wait-silent");
}

TEST_F(ClaimWaitTest, AWaitEndsWithNoClaimAtItsDeadline) {
  // Given nothing to claim, we should answer {"claim": null} once wait_ms has passed, and
  // {"claim": null} at once for wait_ms 0.
  auto waited = answer_of(
      api_.handle(claim_next({{"worker_id", "worker-wait"}, {"wait_ms", 50}}, agent_token_)));
  auto immediate = api_.handle(claim_next({{"worker_id", "worker-wait"}}, agent_token_));

  EXPECT_EQ(body_of(waited), (Json{{"claim", nullptr}}));
  EXPECT_EQ(immediate.later, nullptr);
  EXPECT_EQ(Json::parse(immediate.body), (Json{{"claim", nullptr}}));
}

TEST_F(ClaimWaitTest, StoppingAnswersEveryWaiterWithNoClaim) {
  // Given two waiting claims, we should answer both with no claim when the API stops waiting,
  // and answer a later one at once.
  auto first = answer_of(
      api_.handle(claim_next({{"worker_id", "worker-wait"}, {"wait_ms", 20000}}, agent_token_)));
  auto second = answer_of(
      api_.handle(claim_next({{"worker_id", "worker-wait"}, {"wait_ms", 20000}}, agent_token_)));

  api_.stop_waiting();
  auto after = answer_of(
      api_.handle(claim_next({{"worker_id", "worker-wait"}, {"wait_ms", 20000}}, agent_token_)));

  EXPECT_EQ(body_of(first), (Json{{"claim", nullptr}}));
  EXPECT_EQ(body_of(second), (Json{{"claim", nullptr}}));
  EXPECT_EQ(body_of(after), (Json{{"claim", nullptr}}));
}

TEST_F(ClaimWaitTest, AResultWithClaimNextAlsoClaimsTheNextTask) {
  // Given two queued tasks, we should accept the first one's result and claim the second in
  // the same answer; with nothing left, the claim is null; a malformed claim_next is refused
  // before the result is taken.
  create_task("next-a");
  create_task("next-b");
  const Json first = Json::parse(
      api_.handle(claim_next({{"worker_id", "worker-wait"}}, agent_token_)).body)["claim"];
  const Json next_of = {{"claim_next", {{"worker_id", "worker-wait"}}}};

  const auto refused = api_.handle(
      post("/v1/tasks/next-a/result",
           result_for(first, {{"claim_next", {{"worker_id", "worker-wait"}, {"wait_ms", 5}}}}),
           agent_token_));
  const auto answered =
      api_.handle(post("/v1/tasks/next-a/result", result_for(first, next_of), agent_token_));

  EXPECT_EQ(Json::parse(refused.body), (Json{{"error", "REQUEST_FIELDS_INVALID"}}));
  ASSERT_EQ(answered.status, 201) << answered.body;
  const Json body = Json::parse(answered.body);
  EXPECT_EQ(body["status"], "VERIFYING");
  EXPECT_EQ(body["claim"]["task_id"], "next-b");
  EXPECT_EQ(view("next-b")["claimed_by"], "worker-wait");
  const auto last = api_.handle(
      post("/v1/tasks/next-b/result", result_for(body["claim"], next_of), agent_token_));
  EXPECT_EQ(Json::parse(last.body)["claim"], nullptr);
}

TEST_F(ClaimWaitTest, MalformedBodiesAndTheOwnerAreRefused) {
  // Given a bad wait, an unknown field, a missing worker or the owner's token, we should refuse
  // with the specific code and claim nothing.
  create_task("wait-refused");
  const auto code = [&](const Json& body, const std::string& token) {
    return Json::parse(api_.handle(claim_next(body, token)).body).value("error", "");
  };

  EXPECT_EQ(code({{"worker_id", "worker-wait"}, {"wait_ms", 30001}}, agent_token_),
            "CLAIM_WAIT_INVALID");
  EXPECT_EQ(code({{"worker_id", "worker-wait"}, {"wait_ms", -1}}, agent_token_),
            "CLAIM_WAIT_INVALID");
  EXPECT_EQ(code({{"worker_id", "worker-wait"}, {"wait_ms", "5"}}, agent_token_),
            "CLAIM_WAIT_INVALID");
  EXPECT_EQ(code({{"worker_id", "worker-wait"}, {"limit", 1}}, agent_token_),
            "REQUEST_FIELDS_INVALID");
  EXPECT_EQ(code(Json::object(), agent_token_), "WORKER_ID_INVALID");
  EXPECT_EQ(code({{"worker_id", "worker-else"}}, agent_token_), "WORKER_NOT_FOUND");
  EXPECT_EQ(code({{"worker_id", "worker-wait"}}, kOwnerToken), "FORBIDDEN");
  EXPECT_EQ(view("wait-refused")["status"], "QUEUED");
}

}  // namespace
}  // namespace aios::fleet_test
