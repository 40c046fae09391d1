// The worker's loop: register, resume from checkpoints, poll, resolve and validate, claim,
// run the adapter under a heartbeat, submit the result idempotently, release on failure, keep
// the task and retry it from its checkpoint when the Task API or the Bridge is unavailable.
#include <algorithm>
#include <cctype>
#include <set>
#include <thread>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/fleet.hpp"
#include "aios/log.hpp"
#include "worker/engineering.hpp"
#include "worker/internal.hpp"

namespace aios {

namespace {

using worker::Checkpoint;
using worker::JsonService;

bool lease_gone(const Error& error) {
  return error.is_any({ErrorCode::LEASE_INVALID, ErrorCode::LEASE_EXPIRED,
                       ErrorCode::TASK_NOT_CLAIMED, ErrorCode::ATTEMPT_STALE,
                       ErrorCode::TASK_NOT_FOUND});
}

// A peer that could not be reached, did not answer in time or was too busy: the step may or may
// not have happened there, and every step the worker takes is idempotent, so the task is kept.
bool peer_unavailable(const Error& error) {
  return error.is_any({ErrorCode::HTTP_UPSTREAM_UNAVAILABLE, ErrorCode::HTTP_UPSTREAM_TIMEOUT,
                       ErrorCode::STORE_BUSY});
}

// A refusal code as the Task API's failure_class (^[A-Za-z0-9][A-Za-z0-9_]{2,63}$).
std::string failure_class_of(const std::string& code) {
  std::string out;
  for (const char c : code.substr(0, 63)) {
    out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c))
                                                              : '_');
  }
  return out.size() >= 3 ? out : "worker_error";
}

}  // namespace

class Worker::Impl {
 public:
  Impl(WorkerConfig config, const Environment& environment)
      : config_(std::move(config)),
        environment_(environment),
        api_(environment.http, config_.task_api_url, config_.agent_token, config_.http_timeout),
        bridge_(environment.http, config_.bridge_url, config_.agent_token, config_.http_timeout),
        checkpoints_(config_.checkpoint_db, environment.clock, config_.kill_after_phase),
        worker_id_(config_.worker_id.empty() ? config_.agent_id : config_.worker_id),
        claims_(api_, worker_id_),
        results_(api_, worker_id_, claims_) {}

  void start() {
    const nlohmann::json body = {
        {"worker_id", worker_id_},
        {"capabilities", config_.capabilities},
        {"allowed_adapters", config_.allowed_adapters},
        {"max_concurrency", config_.max_concurrency},
        {"labels", {{"agent_type", config_.agent_type}, {"agent_version", config_.agent_version}}}};
    api_.require("POST", "/v1/workers/register", &body);
    log::info("WORKER_REGISTERED", {{"worker_id", worker_id_},
                                    {"capabilities", config_.capabilities},
                                    {"allowed_adapters", config_.allowed_adapters},
                                    {"slots", config_.max_concurrency}});
    for (auto& checkpoint : checkpoints_.all()) resume(checkpoint);
  }

  // Tasks a peer outage interrupted go on from their checkpoints before any new work. A call
  // that fails again leaves the task to the next round.
  std::optional<WorkOutcome> retry_interrupted() {
    for (;;) {
      std::string task_id;
      {
        const std::lock_guard lock(interrupted_mutex_);
        if (interrupted_.empty()) return std::nullopt;
        task_id = *interrupted_.begin();
        interrupted_.erase(interrupted_.begin());
      }
      auto checkpoint = checkpoints_.load(task_id);
      if (!checkpoint) continue;
      try {
        if (auto outcome = resume(*checkpoint)) return outcome;
      } catch (const Error&) {
        keep_interrupted(task_id);
        throw;
      }
    }
  }

  // The next claim of this slot: one in hand (it came with a result), or what claim-next
  // brings (the Task API picks the next tasks this worker may take, claims them and answers with
  // the Bridge's envelopes, waiting up to claim_wait), then run.
  std::optional<WorkOutcome> run_once() {
    // --once (no serve loop) looks once, as a poll did; the serve loop waits at the Task API.
    const auto wait = stop_ != nullptr ? config_.claim_wait : std::chrono::milliseconds(0);
    const auto claim = claims_.next(wait, stop_);
    if (!claim) return std::nullopt;
    return run_claim(*claim);
  }

  void run(const std::atomic<bool>& stop) {
    // A stop gives up the waiting claim-next at once; the scheduler sees the connection close
    // and claims nothing for it.
    stop_ = &stop;
    std::vector<std::jthread> slots;
    for (int slot = 1; slot < config_.max_concurrency; ++slot) {
      slots.emplace_back([this, &stop] { serve_slot(stop); });
    }
    serve_slot(stop);
    slots.clear();
    // Said, so the fleet reads this worker stopped rather than online for its next 90 s; one
    // that cannot say it reads offline once its last contact is that old.
    try {
      api_.require("POST", "/v1/workers/" + worker_id_ + "/stopped", nullptr);
    } catch (const Error& error) {
      log::warn("WORKER_STOP_UNREPORTED", {{"worker_id", worker_id_}, {"error", error.code()}});
    }
    log::info("WORKER_STOPPED", {{"worker_id", worker_id_}});
  }

 private:
  // The claim's envelope is checked here before anything runs; one that fails is given back as
  // a refusal, which does not count against this worker's circuit.
  WorkOutcome run_claim(const nlohmann::json& claim) {
    const std::string task_id = claim.at("task_id");
    log::info("TASK_CLAIMED", {{"task_id", task_id}, {"attempt", claim.at("attempt")}});
    auto checkpoint = checkpoints_.load(task_id);
    // A checkpoint of the task's earlier requeue generation is that generation's: the new one
    // starts afresh (its agent run under a new request id).
    const std::int64_t requeues = claim.value("requeues", std::int64_t{0});
    if (!checkpoint || checkpoint->execution_digest != claim.at("execution_digest") ||
        checkpoint->state.value("requeues", std::int64_t{0}) != requeues) {
      nlohmann::json state = nlohmann::json::object();
      if (requeues > 0) state["requeues"] = requeues;
      checkpoint = Checkpoint{task_id, claim.at("execution_digest"), 0, "", "claimed", state};
    }
    checkpoint->attempt = claim.at("attempt");
    checkpoint->lease_token = claim.at("lease_token");
    nlohmann::json envelope;
    try {
      envelope = validated(claim);
    } catch (const Error& error) {
      log::warn("TASK_ENVELOPE_REFUSED",
                {{"task_id", task_id}, {"error", error.code()}, {"detail", error.detail()}});
      give_back(task_id, checkpoint->lease_token, std::string(fleet::kRefusedReleaseClass),
                error.code());
      return WorkOutcome{task_id, "REFUSED", error.code()};
    }
    return work(envelope, *checkpoint);
  }

  // One slot's loop: a task at a time, until `stop`.
  void serve_slot(const std::atomic<bool>& stop) {
    auto backoff = config_.idle_backoff_min;
    while (!stop.load()) {
      std::optional<WorkOutcome> outcome;
      const auto round = std::chrono::steady_clock::now();
      bool failed = false;
      try {
        outcome = retry_interrupted();
        if (!outcome) outcome = run_once();
      } catch (const Error& error) {
        if (error.is(ErrorCode::HTTP_CLIENT_CANCELLED)) break;
        failed = true;
        log::warn("POLL_FAILED", {{"error", error.code()}});
      }
      // An interrupted task waits out the backoff like an idle round, so an outage is not
      // hammered. An idle round that waited at the Task API goes straight into the next wait.
      if (outcome && outcome->outcome != "INTERRUPTED") {
        backoff = config_.idle_backoff_min;
        continue;
      }
      if (!outcome && !failed &&
          std::chrono::steady_clock::now() - round >= config_.claim_wait / 2 &&
          config_.claim_wait.count() > 0) {
        continue;
      }
      for (auto waited = std::chrono::milliseconds(0); waited < backoff && !stop.load();
           waited += std::chrono::milliseconds(50)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      backoff = std::min(backoff * 2, config_.idle_backoff_max);
    }
    // Claims that came with the last results are in hand: they are run, not left to their
    // leases.
    while (const auto claim = claims_.take()) {
      try {
        run_claim(*claim);
      } catch (const Error& error) {
        log::warn("POLL_FAILED", {{"error", error.code()}});
      }
    }
  }

  void keep_interrupted(const std::string& task_id) {
    const std::lock_guard lock(interrupted_mutex_);
    interrupted_.insert(task_id);
  }

  // The claim's envelope (the Bridge's, resolved in the claim's transaction), checked against
  // the binding the task persisted, this worker's capabilities and adapters, and the digest the
  // claim was made on.
  nlohmann::json validated(const nlohmann::json& claim) const {
    if (!claim.contains("envelope") || !claim.contains("execution")) {
      throw Error(ErrorCode::TASK_PERSISTED_BINDING_UNVERIFIED, "the claim carries no envelope");
    }
    const auto binding = GovernedBinding::from_mapping(claim.at("execution"));
    const nlohmann::json capabilities = config_.capabilities;
    auto envelope = validate_execution_envelope(
        claim.at("envelope"), {.binding = &binding, .worker_capabilities = &capabilities});
    if (envelope.at("execution_digest") != claim.at("execution_digest")) {
      throw Error(ErrorCode::TASK_ENVELOPE_DRIFT);
    }
    if (!config_.allowed_adapters.contains(envelope.at("adapter").get<std::string>())) {
      throw Error(ErrorCode::WORKER_ADAPTER_NOT_ALLOWED, envelope.at("adapter").get<std::string>());
    }
    return envelope;
  }

  // Gives a claimed task back to the queue; a failure to do so leaves it to the lease sweeper.
  void give_back(const std::string& task_id, const std::string& lease_token,
                 const std::string& failure_class, const std::string& reason) {
    const nlohmann::json body = {
        {"lease_token", lease_token}, {"failure_class", failure_class}, {"reason", reason}};
    try {
      api_.require("POST", "/v1/tasks/" + task_id + "/release", &body);
    } catch (const Error& release_error) {
      log::warn("TASK_RELEASE_FAILED", {{"task_id", task_id}, {"error", release_error.code()}});
    }
  }

  // A checkpoint left by an earlier run or an outage: go on with the same lease if it still
  // holds; else keep it for when the task is claimed again, or drop it when the task has moved
  // on.
  std::optional<WorkOutcome> resume(Checkpoint& checkpoint) {
    const nlohmann::json body = {{"lease_token", checkpoint.lease_token}, {"stage", "resume"}};
    const auto [status, reply] =
        api_.call("POST", "/v1/tasks/" + checkpoint.task_id + "/heartbeat", &body);
    if (status == 200) {
      const auto task = api_.require("GET", "/v1/tasks/" + checkpoint.task_id);
      log::info("TASK_RESUMED", {{"task_id", checkpoint.task_id}, {"phase", checkpoint.phase}});
      return work(task.at("metadata").at("execution"), checkpoint);
    }
    if (reply.value("error", "") == error_info(ErrorCode::TASK_NOT_FOUND).wire ||
        checkpoint.phase == "result_submitted") {
      checkpoints_.remove(checkpoint.task_id);
      return std::nullopt;
    }
    log::info("TASK_CHECKPOINT_KEPT", {{"task_id", checkpoint.task_id},
                                       {"phase", checkpoint.phase},
                                       {"error", reply.value("error", "")}});
    return std::nullopt;
  }

  WorkOutcome work(const nlohmann::json& envelope, Checkpoint& checkpoint) {
    const std::string task_id = checkpoint.task_id;
    checkpoints_.save(checkpoint);
    worker::Heartbeat heartbeat(api_, task_id, checkpoint.lease_token, config_.heartbeat_interval);
    worker::RunContext run{config_,    environment_,           bridge_,
                           envelope,   checkpoint.lease_token, checkpoint.attempt,
                           checkpoint, checkpoints_,           heartbeat};
    try {
      const std::string adapter = envelope.at("adapter");
      // Every kind but an external agent's reads the repository at the base.
      if (envelope.at("action") != "agent_runtime") worker::ensure_base(run);
      nlohmann::json result;
      if (envelope.at("action") == "engineering") {
        result = worker::run_engineering(run);
      } else if (adapter == "deterministic") {
        result = worker::run_deterministic(run);
      } else if (adapter == "hermes" || adapter == "openclaw") {
        result = worker::run_agent_runtime(run);
      } else if (adapter == "source_capture" || adapter == "compact_interface_map") {
        result = worker::run_source_capture(run);
      } else {
        throw Error(ErrorCode::RUNTIME_ADAPTER_UNSUPPORTED, adapter);
      }
      checkpoint.state["result"] = result;
      checkpoint.phase = "result_pending";
      checkpoints_.save(checkpoint);
      heartbeat.alive("result");
      const nlohmann::json body = {
          {"lease_token", checkpoint.lease_token},
          {"attempt", checkpoint.attempt},
          {"execution_digest", envelope.at("execution_digest")},
          {"idempotency_key",
           result_idempotency_key(task_id, checkpoint.attempt, envelope.at("execution_digest"))},
          {"result", result}};
      // In the serve loop, the answer also carries the slot's next claim, so a busy worker
      // makes one request between two jobs (and one for the results its slots finish
      // together); --once and a stopping worker take no more.
      results_.submit(task_id, body, stop_ != nullptr && !stop_->load());
      checkpoint.phase = "result_submitted";
      checkpoints_.save(checkpoint);
      checkpoints_.remove(task_id);
      log::info("TASK_RESULT_SUBMITTED", {{"task_id", task_id}, {"attempt", checkpoint.attempt}});
      return {task_id, "SUBMITTED", result.value("status", "")};
    } catch (const Error& error) {
      if (lease_gone(error) || heartbeat.lost()) {
        log::warn("TASK_LEASE_LOST", {{"task_id", task_id}, {"error", error.code()}});
        return {task_id, "LOST_LEASE", error.code()};
      }
      if (peer_unavailable(error)) {
        // Nothing is released and the checkpoint stays: run() takes the task up again from
        // its last durable phase once the peer answers.
        log::warn("TASK_INTERRUPTED",
                  {{"task_id", task_id}, {"error", error.code()}, {"phase", checkpoint.phase}});
        keep_interrupted(task_id);
        return {task_id, "INTERRUPTED", error.code()};
      }
      nlohmann::json fields = {
          {"task_id", task_id}, {"error", error.code()}, {"phase", checkpoint.phase}};
      // The worker's own file work or its sandbox service failed: which path and why is what the
      // operator needs.
      if (error.is_any({ErrorCode::WORKER_WORKSPACE_FAILED, ErrorCode::ENGINEERING_WORKTREE_FAILED,
                        ErrorCode::SANDBOX_SERVICE_UNAVAILABLE})) {
        fields["detail"] = bounded_text(error.detail(), 512);
      }
      log::warn("TASK_FAILED", fields);
      give_back(task_id, checkpoint.lease_token, failure_class_of(error.code()), error.code());
      checkpoints_.remove(task_id);
      return {task_id, "RELEASED", error.code()};
    }
  }

  WorkerConfig config_;
  Environment environment_;
  JsonService api_;
  JsonService bridge_;
  worker::CheckpointStore checkpoints_;
  std::string worker_id_;
  worker::ClaimQueue claims_;
  worker::ResultSender results_;
  std::mutex interrupted_mutex_;
  std::set<std::string> interrupted_;
  const std::atomic<bool>* stop_ = nullptr;  // run()'s stop, once it runs
};

Worker::Worker(WorkerConfig config, const Environment& environment)
    : impl_(std::make_unique<Impl>(std::move(config), environment)) {}
Worker::~Worker() = default;
void Worker::start() {
  impl_->start();
}
std::optional<WorkOutcome> Worker::run_once() {
  return impl_->run_once();
}
void Worker::run(const std::atomic<bool>& stop) {
  impl_->run(stop);
}

}  // namespace aios
