#pragma once
// The task plane's integrated scheduler: agents and workers, task projection into the store,
// fleet ranking (priority, then cross-scope fairness, then queue order), the claim CAS with the
// fleet's capacity, circuit and quarantine checks inside the same transaction, and every later
// transition (heartbeat, result, release, verification, cancel, lease expiry).
//
// Every public call is one store::Store transaction that commits the transition with its
// task_events row, or throws aios::Error and changes nothing. Thread-safe.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aios/environment.hpp"
#include "aios/gateway.hpp"
#include "aios/resolution.hpp"
#include "aios/store.hpp"
#include "aios/sys.hpp"
#include "aios/task.hpp"

namespace aios {

namespace fleet {
class AgentCache;
class TaskViewCache;
struct WorkerState;
}  // namespace fleet

struct TaskPlaneOptions {
  std::chrono::seconds lease{120};
  std::chrono::seconds worker_online_window{90};
  int circuit_threshold = 3;                   // consecutive failures that open a circuit
  std::chrono::seconds circuit_cooldown{300};  // then one claim may probe (half-open)
  std::chrono::seconds task_quarantine{600};   // a worker that failed a task skips it this long
  std::size_t max_result_bytes = 256 * 1024;
};

// An authenticated agent: the holder of a token issued by create_agent.
struct Agent {
  std::string agent_id;
  store::Names granted_capabilities;
  store::Names granted_tenants;  // empty: every tenant
  // The client certificate its workers must present (a subjectAltName URI and/or the SHA-256
  // of the DER); both empty: none recorded.
  std::string certificate_uri{};
  std::string certificate_sha256{};
};

// Why a worker could not take a task now; empty when it could.
struct Eligibility {
  std::string worker_id;
  std::vector<std::string> reasons;  // capability_missing, adapter_not_allowed, offline, ...
};

namespace fleet {

// The release class of a worker that refuses a task it claimed (its envelope did not validate
// on the worker): the task goes back and the worker skips it for the quarantine period, but the
// refusal does not count against the worker's circuit.
inline constexpr std::string_view kRefusedReleaseClass = "envelope_refused";

// The body's worker_id, or WORKER_ID_INVALID when it is missing, empty or not a string.
std::string worker_id_of(const nlohmann::json& body);

// The bodies of the task plane's calls, typed. The Task API parses each request body once, at
// its edge, with the function beside its type, which refuses a malformed body with the single
// call's code before anything is looked up; the plane takes only these.
struct PollRequest {
  std::string worker_id;
  std::size_t limit = 10;  // 1..100 (LIMIT_INVALID)
};
PollRequest poll_request_of(const nlohmann::json& body);

// A claim is a compare-and-swap on the revision and the envelope digest the worker saw.
struct ClaimRequest {
  std::string worker_id;
  std::int64_t expected_revision = 0;
  std::string execution_digest;
};
ClaimRequest claim_request_of(const nlohmann::json& body);

struct Heartbeat {
  std::string lease_token;
  std::string stage;  // at most 64 bytes (STAGE_INVALID), echoed
};
Heartbeat heartbeat_of(const nlohmann::json& body);

struct ResultSubmission {
  task::LeaseProof proof;
  std::string idempotency_key{};
  std::string result_json{};     // canonical, at most max_result_bytes (RESULT_TOO_LARGE)
  std::string request_sha256{};  // what a replay must match (the token left out)
  // The result's model_usage (gateway::parse_usage; any other shape is RESULT_INVALID) and the
  // runtime it ran on (its agent_runtime or engineering_backend, "other" when neither names
  // one): the submission event and /metrics count them.
  std::optional<gateway::Usage> model_usage{};
  std::string runtime{};
};
ResultSubmission result_submission_of(const nlohmann::json& body, std::size_t max_result_bytes);

struct Release {
  std::string lease_token;
  std::string failure_class;  // an identifier (FAILURE_CLASS_INVALID)
  std::string reason;
};
Release release_of(const nlohmann::json& body);

struct Verification {
  std::int64_t expected_revision = 0;
  std::string decision;  // PASS, NEEDS_REWORK or FAIL (VERIFICATION_DECISION_INVALID)
  std::string reason;
};
Verification verification_of(const nlohmann::json& body);

struct Cancellation {
  std::optional<std::int64_t> expected_revision;  // none: whatever the revision
  std::string reason;
};
Cancellation cancellation_of(const nlohmann::json& body);

// POST /v1/tasks/{id}/requeue: {expected_revision, idempotency_key, additional_attempts (1..10,
// default 1), reason}.
struct Requeue {
  std::int64_t expected_revision = 0;
  std::string idempotency_key;
  std::int64_t additional_attempts = 1;
  std::string reason;
};
Requeue requeue_of(const nlohmann::json& body);

// A task as its owner submits it (POST /v1/tasks), projected and validated once: the binding,
// the task document and its execution envelope with its digest, made into the row it is stored
// as (the plane sets its times) and the execution the resolution checks.
struct TaskSubmission {
  store::TaskRow row;
  nlohmann::json execution;
};
TaskSubmission task_submission_of(const nlohmann::json& body);

// The client certificate an agent's workers must present, as stored: the URI as given, the
// fingerprint as lower-case hex without the colons openssl prints between its bytes; both
// empty: none. {uri?, sha256?} (AGENT_CERTIFICATE_BINDING_INVALID).
struct CertificateBinding {
  std::string uri;
  std::string sha256;
};
CertificateBinding certificate_binding_of(const nlohmann::json& value);

// The lists below are sorted, without duplicates, each name checked.
struct AgentGrant {
  std::string agent_id;               // AGENT_ID_INVALID
  store::Names granted_capabilities;  // worker-vocabulary names, sorted
  store::Names granted_tenants;       // sorted; empty: every tenant
  CertificateBinding client_certificate;
};
AgentGrant agent_grant_of(const nlohmann::json& body);

// A worker as its agent registers it; the grant it must lie inside is the plane's to check.
struct WorkerRegistration {
  std::string worker_id;          // WORKER_ID_INVALID
  store::Names capabilities;      // sorted
  store::Names allowed_adapters;  // known adapters (WORKER_ADAPTER_UNKNOWN), sorted
  std::int64_t max_concurrency = 1;
  std::string failure_domain = "default";
  store::Labels labels;  // at most 32
  store::Names tenants;  // sorted; none: the agent's grant
};
WorkerRegistration worker_registration_of(const nlohmann::json& body);

// The owner's settings of a worker; each absent field stays as it is.
struct WorkerConfiguration {
  std::optional<std::int64_t> max_slots;
  std::optional<std::string> failure_domain;
  std::optional<store::Labels> labels;
  std::optional<bool> quarantined;
  bool reset_circuit = false;
};
WorkerConfiguration worker_configuration_of(const nlohmann::json& body);

// Terminal tasks last updated longer ago than this (3600 s to 100 years, PRUNE_AGE_INVALID).
struct PruneRequest {
  std::chrono::seconds older_than{0};
};
PruneRequest prune_request_of(const nlohmann::json& body);

}  // namespace fleet

class TaskPlane {
 public:
  // Lease time and every recorded time come from the store's clock; tokens, lease tokens and
  // claim ids from the environment's randomness, fault points from its plan. With `resolver`
  // (the scheduler's; it must outlive the plane), a claim answers with the envelope it
  // resolves and passes over a task whose envelope does not resolve, a create refuses a task
  // that never could, and eligibility says whether a queued task resolves; without one (the
  // plane alone, in tests), a claim carries no envelope.
  TaskPlane(store::Store& store, const Environment& environment, TaskPlaneOptions options = {},
            const resolution::Resolver* resolver = nullptr);
  ~TaskPlane();
  const TaskPlaneOptions& options() const { return options_; }
  TaskPlane(const TaskPlane&) = delete;
  TaskPlane& operator=(const TaskPlane&) = delete;

  // Owner: {agent_id, granted_capabilities, granted_tenants, client_certificate} and the token.
  // The token is returned only here; the store keeps its SHA-256. AGENT_ALREADY_EXISTS.
  nlohmann::json create_agent(const fleet::AgentGrant& grant);
  // GET /v1/agents: every agent (revoked ones with their revoked_at), its grant, certificate
  // binding and workers; never a token or its digest.
  nlohmann::json agents();
  // Owner: records the client certificate the agent must present from now on (none: none).
  // AGENT_NOT_FOUND. {agent_id, client_certificate}.
  nlohmann::json bind_agent_certificate(const std::string& agent_id,
                                        const fleet::CertificateBinding& binding);
  // The agent whose token this is, unless the owner revoked or rotated it.
  std::optional<Agent> authenticate_agent(const std::string& token);
  // The agent whose token the request carries (nullopt: none, or not a live agent token), held
  // to the certificate rule: an agent bound to a certificate, or any agent on a listener that
  // verifies clients, must present a verified client certificate
  // (TLS_CLIENT_CERTIFICATE_REQUIRED) that is the one recorded for it
  // (AGENT_CERTIFICATE_MISMATCH; an agent with none recorded matches no certificate).
  std::optional<Agent> authenticate_agent(const http::Request& request);
  // Owner: the token refused from now on, and every claim a worker of the agent holds released
  // in the same transaction (TASK_RELEASED, reason AGENT_TOKEN_REVOKED; back to the queue, or
  // FAILED with no attempt left), since whoever holds a leaked token may hold its lease tokens
  // too. rotate_agent_token also issues a new token (revoked or not). AGENT_NOT_FOUND.
  // {agent_id, revoked_at | token, released_tasks}.
  nlohmann::json revoke_agent_token(const std::string& agent_id);
  nlohmann::json rotate_agent_token(const std::string& agent_id);

  // Agent: the worker's view. Its capabilities must lie inside the agent's grant
  // (WORKER_CAPABILITY_NOT_GRANTED), its tenants inside its granted tenants
  // (WORKER_TENANT_NOT_GRANTED; none given: the agent's grant).
  nlohmann::json register_worker(const Agent& agent, const fleet::WorkerRegistration& worker);
  // POST /v1/workers/{id}/stopped: the agent's worker stopped cleanly; it reads stopped (not
  // online) and takes no dispatch until it registers again.
  nlohmann::json worker_stopped(const Agent& agent, const std::string& worker_id);
  // Owner: the worker's view. WORKER_NOT_FOUND.
  nlohmann::json configure_worker(const std::string& worker_id,
                                  const fleet::WorkerConfiguration& configuration);
  nlohmann::json fleet_view();

  // Owner: store a task. {status: 201 new | 200 identical replay, task view}. With a resolver,
  // a new task whose envelope could never resolve is refused with the resolution's code and
  // nothing is written (an identical replay still answers 200).
  std::pair<int, nlohmann::json> create_task(const fleet::TaskSubmission& task);
  // Owner (reader == nullptr) or the agent whose worker holds the claim.
  nlohmann::json task_view(const std::string& task_id, const Agent* reader);
  // Owner: the tasks `filter` keeps, in queue order after seq `after`. TASK_STATUS_INVALID,
  // TASK_TENANT_INVALID and TASK_ID_PREFIX_INVALID for a filter no task could match.
  nlohmann::json list_tasks(const store::TaskFilter& filter, std::size_t limit, std::int64_t after);
  // The task's events after event id `after`, oldest first, at most `limit`; `next_after` is the
  // last id returned (or `after`), for the next page.
  nlohmann::json task_events(const std::string& task_id, const Agent* reader, std::size_t limit,
                             std::int64_t after);
  // Owner: every task's events after event id `after`, oldest first, at most `limit`, each with
  // its task id; `next_after` as above.
  nlohmann::json events_feed(std::size_t limit, std::int64_t after);
  // Owner: the dashboard's figures: tasks by status ("tasks"), the live ones by status, scope
  // and priority ("queue"), the newest tasks as summaries ("recent"), the feed's events after
  // `events_after` (none: the newest 50; at most 200) with "next_after", all in one read; the
  // store's backend, fleet_view() ("fleet") and, for a task, {view, heartbeats, events after
  // task_events_after (at most 500), next_after, eligibility} ("task"; TASK_NOT_FOUND).
  struct DashboardQuery {
    std::size_t recent = 30;
    std::optional<std::int64_t> events_after;
    std::string task_id;  // empty: no task
    std::int64_t task_events_after = 0;
  };
  nlohmann::json dashboard(const DashboardQuery& query);
  // Owner: the events and stored result submissions of terminal tasks last updated longer ago
  // than the request says, deleted in batches; nothing of a live task. {pruned_tasks, before}.
  nlohmann::json prune(const fleet::PruneRequest& request);
  // Owner: the store as an operator checks it: backend, schema version, its own consistency
  // check, task counts by status and the number of workers.
  nlohmann::json store_status();

  // Agent: {"tasks": [...]} ranked, eligible, reserving nothing.
  nlohmann::json poll(const Agent& agent, const fleet::PollRequest& request);
  // poll's answer as nlohmann's dump() gives it, for the HTTP answer: it is put together from
  // the task views' text, so a poll does not rebuild and re-serialise the queue head each time.
  std::string poll_text(const Agent& agent, const fleet::PollRequest& request);
  // Agent: the claim, with a new lease token.
  nlohmann::json claim(const Agent& agent, const std::string& task_id,
                       const fleet::ClaimRequest& request);
  // The next task this worker may take, claimed in one transaction: the poll's ranking and
  // eligibility, the claim's CAS, reservation and TASK_CLAIMED event together, as a queue's
  // SKIP LOCKED fetch does. With a resolver the answer also holds "envelope" (and a candidate
  // whose envelope does not resolve is passed over). nullopt when none is claimable now,
  // including when the worker is full, quarantined or its circuit is open. `liveness`: the call
  // is the worker's own (a long poll's retries on its behalf are not a sign of life).
  std::optional<nlohmann::json> claim_next(const Agent& agent, const std::string& worker_id,
                                           bool liveness = true);
  // claim_next up to `max_tasks` times in one transaction (1..64; the caller checks the
  // range), each claim seeing the slots and tasks the ones before took; empty when none.
  std::vector<nlohmann::json> claim_next_many(const Agent& agent, const std::string& worker_id,
                                              std::size_t max_tasks, bool liveness = true);
  // What a committed transition may have made claimable: `claims` more claims for any worker
  // (1 for a task created, released or sent back by its verification, the count of tasks swept
  // back to the queue, kAnyClaim when an agent's token was revoked or rotated), or, with
  // `worker_id`, whatever that one worker may claim now (a result or a cancel freed its slot,
  // it registered, or its slots, quarantine or circuit changed).
  static constexpr std::size_t kAnyClaim = static_cast<std::size_t>(-1);
  struct QueueChange {
    std::size_t claims = 0;
    std::string worker_id;
  };
  // Called after every such transition; set once before serving. The long poll (ClaimWaiters)
  // wakes as many waiters as it says.
  void on_queue_change(std::function<void(const QueueChange&)> listener);
  // The plane's clock (the store's).
  TimePoint now() const;
  // Every circuit cooldown and task quarantine that ends after `since`, with its worker: when
  // a worker's claims may widen by the clock alone, so the long polls sleep until then instead
  // of retrying.
  std::vector<store::ClaimWindow> claim_windows(TimePoint since);
  nlohmann::json heartbeat(const Agent& agent, const std::string& task_id,
                           const fleet::Heartbeat& heartbeat);
  // {201 new | 200 the stored answer of an identical replay, the answer}.
  std::pair<int, nlohmann::json> submit_result(const Agent& agent, const std::string& task_id,
                                               const fleet::ResultSubmission& submission);
  // submit_result, then claim_next_many for `worker_id` in the same transaction (one commit,
  // so a busy worker's step from one job to the next costs one fsync): the result stands
  // whatever the claim meets, and the claim's error, if any, is kept apart.
  struct ResultThenClaim {
    int status = 0;
    nlohmann::json response;
    std::vector<nlohmann::json> claims;
    std::exception_ptr claim_error;
  };
  ResultThenClaim submit_result_then_claim(const Agent& agent, const std::string& task_id,
                                           const fleet::ResultSubmission& submission,
                                           const std::string& worker_id, std::size_t max_tasks);

  // Batches, for owners fanning out work and workers with many slots: every item is checked
  // as its single call checks it, then applied under a savepoint of its own, all in one
  // transaction, so an item goes through whole or is refused alone with its code. Answers
  // are in request order: each the single call's own answer, or {"task_id", "error"}.
  // One item: its task id and its call, or the refusal its parse met at the edge (an
  // aios::Error; the item is then answered with that code alone).
  template <class Call>
  struct BatchItem {
    std::string task_id;
    std::optional<Call> call;
    std::exception_ptr refused;
    // The item of `task_id` whose `body` `parse` (one of fleet's `*_of`) makes into its call.
    template <class Parse>
    static BatchItem of(std::string task_id, const nlohmann::json& body, const Parse& parse) {
      BatchItem item{.task_id = std::move(task_id), .call = std::nullopt, .refused = nullptr};
      try {
        item.call = parse(body);
      } catch (const Error&) {
        item.refused = std::current_exception();
      }
      return item;
    }
  };
  // Owner: create_task for each (a task id a second time in one batch: TASK_ALREADY_EXISTS).
  // {"tasks": [...]}.
  nlohmann::json create_tasks(const std::vector<BatchItem<fleet::TaskSubmission>>& tasks);
  // Agent: submit_result for each, then, with a `worker_id`, claim_next_many for it in the
  // same transaction (its error kept apart, as submit_result_then_claim keeps it).
  struct ResultsThenClaims {
    nlohmann::json results = nlohmann::json::array();
    std::size_t stored = 0;                 // new submissions (not replays)
    std::vector<std::size_t> stored_items;  // their places in the batch
    std::vector<nlohmann::json> claims;
    std::exception_ptr claim_error;
  };
  ResultsThenClaims submit_results(const Agent& agent,
                                   const std::vector<BatchItem<fleet::ResultSubmission>>& results,
                                   const std::string& worker_id, std::size_t max_tasks);
  // Owner: verify for each. {"verifications": [...]}.
  nlohmann::json verify_many(const std::vector<BatchItem<fleet::Verification>>& verifications);
  nlohmann::json release(const Agent& agent, const std::string& task_id,
                         const fleet::Release& release);

  // Owner transitions.
  nlohmann::json verify(const std::string& task_id, const fleet::Verification& verification);
  nlohmann::json cancel(const std::string& task_id, const fleet::Cancellation& cancellation);
  // A FAILED or CANCELLED task QUEUED again under the same envelope, its attempts counting on and
  // its requeue generation one more; idempotent by key (a replay answers the task as it is).
  nlohmann::json requeue(const std::string& task_id, const fleet::Requeue& requeue);

  // Returns every CLAIMED task whose lease has expired to QUEUED (or FAILED when its attempts
  // are spent), one transaction each; the number swept.
  std::size_t sweep_expired_leases();

  // Owner: for each registered worker, whether it could take the task now and why not. With a
  // resolver, a queued task's "envelope" says whether it resolves as a claim would resolve it
  // ({"resolves": true}, or false with the "code" a claim-next passes it over with, when every
  // worker's reasons end with "envelope_unresolved").
  nlohmann::json eligibility(const std::string& task_id);
  // The worker of `agent` that holds the task's claim, or else the first of its workers that
  // could claim it now (the poll's eligibility); nothing when none does. TASK_NOT_FOUND.
  struct AgentHold {
    std::string worker_id;
    std::int64_t attempt = 0;  // the task's attempt count as stored
  };
  std::optional<AgentHold> agent_hold(const Agent& agent, const std::string& task_id);

  // Task counts by status, for /metrics.
  std::vector<std::pair<std::string, std::int64_t>> status_counts();
  // Queued tasks a claim passed over because their envelope did not resolve, once per task
  // revision (as TASK_ENVELOPE_UNRESOLVED is recorded), since this scheduler started.
  std::uint64_t envelopes_unresolved() const { return envelopes_unresolved_.load(); }

  // Records a worker failure or success directly (circuit breaker), as the seed's scheduler
  // exposes them; `threshold` overrides the configured one when positive.
  void record_worker_failure(const std::string& worker_id, const std::string& failure_class,
                             int threshold = 0);
  void record_worker_success(const std::string& worker_id);

 private:
  store::Store& store_;
  Environment environment_;
  TaskPlaneOptions options_;
  const resolution::Resolver* resolver_;
  std::unique_ptr<fleet::TaskViewCache> views_;
  std::unique_ptr<fleet::AgentCache> agents_;
  std::function<void(const QueueChange&)> queue_changed_;
  void queue_changed(QueueChange change = {.claims = 1, .worker_id = {}}) const;

  // Logs TASK_ENVELOPE_UNRESOLVED for a candidate claim_next passed over.
  void note_unresolved(const store::TaskRow& row, const std::string& worker_id, const Error& error);
  static constexpr std::size_t kMaxUnresolvedLogged = 1024;
  std::mutex unresolved_mutex_;
  std::set<std::pair<std::string, std::int64_t>> unresolved_logged_;
  std::atomic<std::uint64_t> envelopes_unresolved_{0};

  // What a new claim is given: the time it is made and its secrets.
  struct ClaimGrant {
    double now = 0;
    std::string now_iso;
    TimePoint expires;
    std::string lease_token;
    std::string claim_id;
  };
  // Up to `max` grants of one time, each drawn the first time a claim needs it (a claim for
  // up to 64 that finds one task draws two, not 64) and kept, so a re-run body hands out the
  // same ones.
  class ClaimGrants {
   public:
    ClaimGrants(Random& random, TimePoint now, std::chrono::seconds lease, std::size_t max);
    std::size_t max() const { return max_; }
    const ClaimGrant& at(std::size_t i);

   private:
    Random& random_;
    ClaimGrant time_;  // now, now_iso and expires, shared by all
    std::size_t max_;
    std::vector<ClaimGrant> drawn_;
  };
  ClaimGrants new_grants(std::size_t max);
  // claim_next_many's work in the caller's transaction: one claim per grant until none is
  // left to claim.
  std::vector<nlohmann::json> claim_next_in(store::Transaction& tx, const Agent& agent,
                                            const std::string& worker_id, ClaimGrants& grants,
                                            bool liveness);
  std::optional<nlohmann::json> claim_one_in(store::Transaction& tx, const Agent& agent,
                                             const std::string& worker_id, const ClaimGrant& grant,
                                             bool liveness);
  // After a commit: the fault point of claims, and the wake-ups of the workers whose slots
  // results freed.
  void claims_committed(const std::vector<nlohmann::json>& claims);
  void results_committed(const std::vector<std::string>& freed_workers);
  // Resolves `row`'s envelope (with a resolver) and claims it for `worker`; nullopt, logged,
  // when its envelope does not resolve to the task's digest.
  std::optional<nlohmann::json> try_claim(store::Transaction& tx, const fleet::WorkerState& worker,
                                          const store::TaskRow& row, const Agent& agent,
                                          const ClaimGrant& grant);
  // The claim CAS of an eligible QUEUED `row` for `worker`, its reservation and TASK_CLAIMED
  // event, in the caller's transaction; the claim's answer.
  nlohmann::json commit_claim(store::Transaction& tx, const fleet::WorkerState& worker,
                              store::TaskRow row, const Agent& agent, const ClaimGrant& grant);
};

}  // namespace aios
