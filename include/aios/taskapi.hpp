#pragma once
// The Task API: HTTP routes of aios-task-scheduler over the TaskPlane, with bearer roles.
// owner = the control token; agent = a token issued by POST /v1/agents. docs/api.md lists
// every route with its role, body and error codes.

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "aios/fleet.hpp"
#include "aios/gateway.hpp"
#include "aios/http.hpp"

namespace aios {

// Prometheus counters of the Task API. Thread-safe.
class TaskApiMetrics {
 public:
  static constexpr std::array<double, 10> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                      0.025,  0.05,  0.1,    0.25,  1.0};
  // The counters' history kept for the dashboard: kHistory slots of kSlotSeconds each.
  static constexpr std::size_t kHistory = 60;
  static constexpr std::int64_t kSlotSeconds = 10;

  // `waited`: a long poll answered when its wait ended, which the history leaves out (its
  // latency is the wait the worker asked for, not the server's).
  void observe(const std::string& route, int status, std::chrono::nanoseconds elapsed,
               bool waited = false);
  void count_claim(std::uint64_t n = 1);
  void count_result(std::uint64_t n = 1);
  void count_expired(std::uint64_t n) { expired_ += n; }
  // A stored result's model calls, by the runtime it ran on (at most kMaxModelRuntimes of them
  // are told apart; the rest count as "other").
  void count_model_usage(const std::string& runtime, const gateway::Usage& usage);
  // A waiting claim-next woken to try that claimed nothing.
  void count_empty_wakeup() { ++empty_wakeups_; }
  // The replica's state, for /health and /metrics: its store (set once before serving; its
  // backend and pool; none: "sqlite" and no pool lines), and whether it holds the lead of the
  // work that has one owner (the Bridge's governed commits).
  void set_store(store::Store* store) { store_ = store; }
  std::string_view store_backend() const { return store_ ? store_->backend() : "sqlite"; }
  void set_leader(bool leads) { leader_ = leads; }
  bool leader() const { return leader_; }

  // The exposition text, with `task_counts` as the aios_tasks gauge.
  // `claims_waiting`: the claim-next calls waiting now (ClaimWaiters::waiting);
  // `envelopes_unresolved`: TaskPlane::envelopes_unresolved.
  std::string render(const std::vector<std::pair<std::string, std::int64_t>>& task_counts,
                     std::size_t claims_waiting, std::uint64_t envelopes_unresolved);
  // The same counters as JSON for the dashboard, with "history": what each of the last
  // kHistory slots of kSlotSeconds added to them ({at: the slot's start in epoch seconds,
  // claims, results, requests, latency_seconds_sum}; requests answered at once), oldest first,
  // idle slots left out.
  nlohmann::json snapshot();

 private:
  struct Slot {
    std::int64_t start = -1;  // epoch seconds; -1: never used
    std::uint64_t claims = 0;
    std::uint64_t results = 0;
    std::uint64_t requests = 0;
    double latency_sum = 0;
  };
  // The slot of the current time, emptied when it last held an older one. Under mutex_.
  Slot& current_slot();
  std::array<Slot, kHistory> history_{};

  std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  static constexpr std::size_t kMaxModelRuntimes = 32;
  std::map<std::string, gateway::Usage> model_usage_;
  std::array<std::uint64_t, kBuckets.size() + 1> latency_buckets_{};
  double latency_sum_ = 0;
  std::uint64_t latency_count_ = 0;
  std::atomic<std::uint64_t> claims_{0};
  std::atomic<std::uint64_t> results_{0};
  std::atomic<std::uint64_t> expired_{0};
  std::atomic<std::uint64_t> empty_wakeups_{0};
  store::Store* store_ = nullptr;
  std::atomic<bool> leader_{true};
};

// The long polls of POST /v1/tasks/claim-next: each waits, holding no io thread, until the
// plane reports a transition that can make a task claimable (TaskPlane::on_queue_change, or
// notify() for another process's announcement) or its worker's claim window comes (a circuit
// cooldown or task quarantine ending, TaskPlane::claim_windows), and then claims; at its
// deadline it is answered with no claim. One thread claims for every waiter, oldest first.
// Thread-safe.
class ClaimWaiters {
 public:
  // The claims (empty: none by the deadline) or the error that ended the wait.
  using Answer = std::function<void(std::vector<nlohmann::json> claims, const Error* error)>;

  // `woken_for_nothing` is called for each try a wake-up made that claimed nothing. `recheck`
  // above zero: every waiter also tries that often, a safety net for writers that announce
  // nothing (none of the suite's own).
  ClaimWaiters(TaskPlane& plane, std::chrono::milliseconds recheck,
               std::function<void()> woken_for_nothing = {});
  ~ClaimWaiters();  // stop()
  ClaimWaiters(const ClaimWaiters&) = delete;
  ClaimWaiters& operator=(const ClaimWaiters&) = delete;

  // Where things stood before a claim attempt: how many notify() calls there were and the
  // plane's time.
  struct Attempt {
    std::uint64_t version = 0;
    TimePoint at;
  };
  // Read before the caller's own first claim attempt and given to wait(), so a task that
  // became claimable in between (a signal, or a claim window that ended) is tried for at once.
  Attempt before_attempt();
  // `gone` says the caller went away: then the waiter is answered (unheard) without a claim.
  // A woken waiter claims up to `max_tasks` at once (TaskPlane::claim_next_many).
  void wait(const Agent& agent, std::string worker_id, std::size_t max_tasks,
            std::chrono::steady_clock::time_point deadline, Attempt before,
            std::function<bool()> gone, Answer answer);
  // Something may have become claimable for `claims` claims: waiters try again now, in the
  // order they came, until that many claimed; one that claims nothing (not eligible, full)
  // passes the wake-up on to the next at once, and the rest sleep on. TaskPlane::kAnyClaim:
  // every waiter tries.
  void notify(std::size_t claims = TaskPlane::kAnyClaim);
  // What `worker_id` may claim changed: its waiters try again now.
  void notify_worker(const std::string& worker_id);
  // Answers every waiter with no claim and refuses new ones (each is answered at once).
  // Idempotent.
  void stop();
  std::size_t waiting();

 private:
  struct Waiter {
    Agent agent;
    std::string worker_id;
    std::size_t max_tasks = 1;
    std::chrono::steady_clock::time_point deadline;
    std::function<bool()> gone;
    Answer answer;
    bool missed = false;  // a signal came between its own attempt and its wait
    TimePoint tried_at;   // the plane's time before its last claim attempt
  };
  enum class Settled { kClaimed, kAnswered, kWaiting };
  void run();
  // Claims for the waiter when `try_claim` (how many in `claimed`), answers it when it claimed,
  // failed, went away or reached its deadline.
  Settled settle(Waiter& waiter, bool try_claim, std::chrono::steady_clock::time_point now,
                 std::size_t& claimed);
  // Reads the claim windows of the waiters' workers (TaskPlane::claim_windows) into windows_.
  void refresh_windows(const std::vector<Waiter>& waiting);
  // The soonest of the waiters' deadlines, their workers' claim windows and the recheck.
  std::chrono::steady_clock::time_point next_wake(
      std::chrono::steady_clock::time_point next_recheck) const;

  TaskPlane& plane_;
  std::chrono::milliseconds recheck_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Waiter> waiters_;
  std::size_t in_hand_ = 0;  // waiters the thread is settling outside the lock
  std::function<void()> woken_for_nothing_;
  std::uint64_t version_ = 0;
  std::size_t owed_ = 0;           // wake-ups owed since the thread last took them
  bool everyone_ = false;          // a kAnyClaim signal since then
  std::set<std::string> workers_;  // workers signalled since then
  // When each worker with a claim window may claim more by the clock alone; the thread's own.
  std::map<std::string, std::chrono::steady_clock::time_point> windows_;
  bool arrived_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

class TaskApi {
 public:
  // The longest wait_ms a claim-next may ask for.
  static constexpr std::int64_t kMaxClaimWaitMs = 30000;
  // The most claims one claim-next (or a result's claim_next) may ask for with max_tasks.
  static constexpr std::int64_t kMaxClaimTasks = 64;
  // The batch endpoints' bounds: items per request, and the body (the single calls keep the
  // server's limit).
  static constexpr std::size_t kMaxBatchItems = 1000;
  static constexpr std::size_t kMaxBatchBodyBytes = 16 * 1024 * 1024;
  // For ServerOptions::max_body_bytes_for: the batch endpoints' limit, 0 for every other target.
  static std::size_t body_limit_for(std::string_view target);

  // `owner` is the owner's bearer token (at least 32 characters) and where it counts. A
  // claim-next answers with the envelope it resolves when the plane has a resolver (the
  // scheduler's does). `claim_recheck`: ClaimWaiters' recheck.
  TaskApi(TaskPlane& plane, http::OwnerToken owner, TaskApiMetrics& metrics,
          std::chrono::milliseconds claim_recheck = std::chrono::milliseconds(0));
  ~TaskApi();
  TaskApi(const TaskApi&) = delete;
  TaskApi& operator=(const TaskApi&) = delete;

  // Answers every waiting claim-next (no claim) before the listener stops.
  void stop_waiting();
  // Every waiting claim-next tries again now: another process on the store announced a change.
  void wake_waiters();

  // The request handler for http::Server.
  http::Response handle(const http::Request& request);
  // For ServerOptions::admits: the bearer token is the owner's (from where it counts) or an
  // issued agent's with the client certificate its binding asks for.
  bool admits(const http::Request& request);

 private:
  http::Response route(const http::Request& request, std::string& route_name);
  http::Response claim_next(const Agent& agent, const nlohmann::json& body);
  http::Response result(const Agent& agent, const std::string& task_id, nlohmann::json body);
  http::Response results(const Agent& agent, nlohmann::json body);
  // Logs a result request's claim refusal (the results stand).
  static void note_claim_error(const std::string& worker_id, const std::exception_ptr& error);
  // GET /v1/dashboard (src/taskapi/dashboard.cpp).
  http::Response dashboard(const http::Request& request);
  // Adds which daemon answered to an owner's view: service, version, whether it leads.
  void identify(nlohmann::json& view) const;

  TaskPlane& plane_;
  http::OwnerToken owner_;
  TaskApiMetrics& metrics_;
  ClaimWaiters waiters_;
};

}  // namespace aios
