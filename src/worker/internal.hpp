#pragma once
// Pieces of the worker: the two JSON services it calls, its checkpoint store, the heartbeat
// thread and the adapters. Each piece is small enough to test on its own.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "aios/environment.hpp"
#include "aios/http.hpp"
#include "aios/store.hpp"
#include "aios/sys.hpp"
#include "aios/worker.hpp"

namespace aios::worker {

// How a long poll is called: its wait lengthens the timeout, and `cancel` (when given) turning
// true gives the call up with HTTP_CLIENT_CANCELLED.
struct CallWait {
  std::chrono::milliseconds extra{0};
  const std::atomic<bool>* cancel = nullptr;
};

// "a, b,,c" -> {a, b, c}: the comma-separated lists the command line and the environment carry.
std::vector<std::string> split_list(const std::string& text);

// One peer service (the Task API or the Bridge) spoken to with a bearer token through
// `transport` (the environment's), which must outlive it. Any thread may call. It has one base
// URL or several (a comma-separated list: scheduler replicas on one store). A call goes to the
// replica the last one reached. A replica that refuses the connection (nothing was sent) or
// answers BRIDGE_NOT_LEADER (nothing was done) passes the call on to the next replica at once;
// one lost after the request went out, or silent past the timeout, fails the call (it may have
// arrived, so it is never re-sent; the caller's own retry decides), and the next call starts at
// the next replica.
class JsonService {
 public:
  JsonService(http::Transport& transport, const std::string& base_urls, std::string token,
              std::chrono::milliseconds timeout);

  // {status, body}; a body that is not JSON is HTTP_UPSTREAM_RESPONSE_INVALID.
  std::pair<int, nlohmann::json> call(std::string_view method, const std::string& path,
                                      const nlohmann::json* body = nullptr,
                                      CallWait wait = {}) const;
  // call() that must answer 2xx; otherwise throws the peer's code (Error::remote).
  nlohmann::json require(std::string_view method, const std::string& path,
                         const nlohmann::json* body = nullptr, CallWait wait = {}) const;
  // require() for an answer that is not JSON (a git pack): its body as received.
  std::string require_bytes(std::string_view method, const std::string& path,
                            const nlohmann::json& body) const;

 private:
  // One exchange with the replicas, moving on as call() describes.
  http::ClientResponse exchange(std::string_view method, const std::string& path,
                                const std::string& body, CallWait wait) const;

  http::Transport& transport_;
  std::vector<std::string> base_urls_;
  mutable std::atomic<std::size_t> current_{0};
  std::string token_;
  std::chrono::milliseconds timeout_;
};

using store::Checkpoint;

// The worker's checkpoints in their SQLite file, dated by `clock` (which must outlive it), each
// save logged (and, for the crash tests, the process killed right after the phase
// `kill_after_phase` is durable: see WorkerConfig::kill_after_phase).
class CheckpointStore {
 public:
  CheckpointStore(const std::filesystem::path& path, const Clock& clock,
                  std::string kill_after_phase = {});
  std::optional<Checkpoint> load(const std::string& task_id) { return store_->load(task_id); }
  std::vector<Checkpoint> all() { return store_->all(); }
  void save(const Checkpoint& checkpoint);
  void remove(const std::string& task_id) { store_->remove(task_id); }

 private:
  std::unique_ptr<store::CheckpointStore> store_;
  std::string kill_after_phase_;
};

// The claims of a worker's slots: one claim-next at a time asks for every slot waiting for
// work then (max_tasks), and the claims a result's claim_next brings wait here for the next
// free slot. A slot that asks while another's claim-next is out waits for that one's answer.
// Thread-safe.
class ClaimQueue {
 public:
  ClaimQueue(const JsonService& api, std::string worker_id);
  // A claim for the calling slot: one in hand, or what one claim-next brings (waiting up to
  // `wait` at the Task API, given up when `cancel` turns true); nullopt when the claim-next
  // it made or waited for brought none for it, or when `cancel` is already true. Throws what
  // its own claim-next met.
  std::optional<nlohmann::json> next(std::chrono::milliseconds wait,
                                     const std::atomic<bool>* cancel);
  // A claim in hand, without asking (a stopping worker runs what it holds).
  std::optional<nlohmann::json> take();
  void add(const nlohmann::json& claims);

 private:
  const JsonService& api_;
  std::string worker_id_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<nlohmann::json> claims_;
  std::size_t asking_ = 0;   // slots inside next()
  bool polling_ = false;     // one of them has a claim-next out
  std::uint64_t polls_ = 0;  // claim-next calls answered (or failed)
};

// The results of a worker's slots: one submitted while another's request is out goes with the
// next request, together with every other one waiting then (POST /v1/tasks/results), each asking
// for the next task of the slot it frees; one alone goes as POST /v1/tasks/{id}/result. The
// claims that come back go to `claims`. Thread-safe.
class ResultSender {
 public:
  ResultSender(const JsonService& api, std::string worker_id, ClaimQueue& claims);
  // `body`'s answer for `task_id` (the single call's); throws the error the task's result met,
  // its own refusal or the request's. `claim_next`: ask for the next task for the freed slot.
  nlohmann::json submit(const std::string& task_id, nlohmann::json body, bool claim_next);

 private:
  struct Pending {
    std::string task_id;
    nlohmann::json body;
    bool claim_next = false;
    std::promise<nlohmann::json> answer;
  };
  // Sends `batch` as one request and settles each item's answer.
  void send(std::vector<Pending*>& batch);

  const JsonService& api_;
  std::string worker_id_;
  ClaimQueue& claims_;
  std::mutex mutex_;
  std::vector<Pending*> waiting_;
  bool sending_ = false;
};

// Heartbeats a claimed task every `interval` while the work loop keeps calling alive(); a loop
// that stalls for two intervals stops heartbeating, so its lease runs out and the task returns
// to the queue. lost() turns true when the Task API refuses the lease.
class Heartbeat {
 public:
  Heartbeat(const JsonService& api, std::string task_id, std::string lease_token,
            std::chrono::milliseconds interval);
  void alive(const std::string& stage);
  bool lost() const { return lost_.load(); }

 private:
  void beat();

  const JsonService& api_;
  std::string task_id_;
  std::string lease_token_;
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_alive_;
  std::string stage_;
  std::atomic<bool> lost_{false};
  PeriodicThread ticker_;  // last: it calls beat() on the members above
};

// What an adapter needs of the run.
struct RunContext {
  const WorkerConfig& config;
  const Environment& environment;
  const JsonService& bridge;
  const nlohmann::json& envelope;
  const std::string& lease_token;
  std::int64_t attempt;
  Checkpoint& checkpoint;
  CheckpointStore& checkpoints;
  Heartbeat& heartbeat;
};

// Waits for an exchange answer in heartbeat-sized slices: an agent or backend may work for far
// longer than the task lease, and the heartbeat extends the lease only while this loop shows
// the worker alive. `wait(slice)` waits at most `slice` and throws
// EXTERNAL_AGENT_EXCHANGE_TIMEOUT when nothing came; that ends the wait only once `total` is
// spent or the lease is lost.
template <typename Wait>
nlohmann::json await_in_slices(RunContext& run, const std::string& stage,
                               std::chrono::milliseconds total, const Wait& wait) {
  const auto deadline = std::chrono::steady_clock::now() + total;
  for (;;) {
    run.heartbeat.alive(stage);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    try {
      return wait(
          std::max(std::chrono::milliseconds(1), std::min(left, run.config.heartbeat_interval)));
    } catch (const Error& error) {
      if (!error.is(ErrorCode::EXTERNAL_AGENT_EXCHANGE_TIMEOUT) || run.heartbeat.lost() ||
          std::chrono::steady_clock::now() >= deadline) {
        throw;
      }
    }
  }
}

// A disposable checkout of the authority repository at the envelope's base_oid under the
// workspace root (with home/ and tmp/ for commands; its name ends in `random` hex), removed
// with everything in it when the object goes. Reads the repository only;
// WORKER_WORKSPACE_FAILED when it cannot be made.
class Workspace {
 public:
  Workspace(const WorkerConfig& config, const nlohmann::json& envelope, Random& random);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path worktree() const { return root_ / "worktree"; }

 private:
  std::filesystem::path root_;
};

// A worker on another host (WorkerConfig::repository_from_bridge): makes sure its mirror holds
// the envelope's base commit, fetching the history it lacks through the Bridge. Nothing for a
// worker that reads the authority repository from disk. REPOSITORY_FETCH_FAILED.
void ensure_base(RunContext& run);

// Each adapter returns the result document to submit, saving its own phases on the way.
nlohmann::json run_deterministic(RunContext& run);
nlohmann::json run_agent_runtime(RunContext& run);
nlohmann::json run_source_capture(RunContext& run);

}  // namespace aios::worker
