#include <algorithm>

#include "aios/canonical.hpp"
#include "aios/capability.hpp"
#include "aios/envelope.hpp"
#include "aios/log.hpp"
#include "fleet/internal.hpp"

namespace aios {
namespace {

using envelope::fail;

nlohmann::json worker_view(const fleet::WorkerState& worker, double now,
                           const TaskPlaneOptions& options) {
  return {
      {"worker_id", worker.worker_id},
      {"agent_id", worker.agent_id},
      {"capabilities", worker.capabilities},
      {"allowed_adapters", worker.allowed_adapters},
      {"tenants", worker.tenants},
      {"labels", worker.labels},
      {"max_slots", worker.max_slots},
      {"used_slots", worker.used_slots},
      {"failure_domain", worker.failure_domain},
      {"circuit_state", worker.circuit_state},
      {"consecutive_failures", worker.consecutive_failures},
      {"quarantined", worker.quarantined},
      {"online",
       worker.stopped_at == 0 &&
           now - worker.last_seen <= static_cast<double>(options.worker_online_window.count())},
      // Ours: present once a worker has said it stopped, until it registers again.
      {"stopped", worker.stopped_at != 0},
      {"last_seen_at", format_iso8601(TimePoint(std::chrono::microseconds(
                           static_cast<std::int64_t>(worker.last_seen * 1e6))))},
  };
}

nlohmann::json binding_view(const fleet::CertificateBinding& binding) {
  if (binding.uri.empty() && binding.sha256.empty()) return nullptr;
  nlohmann::json view = nlohmann::json::object();
  if (!binding.uri.empty()) view["uri"] = binding.uri;
  if (!binding.sha256.empty()) view["sha256"] = binding.sha256;
  return view;
}

}  // namespace

std::string fleet::new_agent_token(Random& random) {
  return "aios_" + random.hex(32);
}

TaskPlane::TaskPlane(store::Store& store, const Environment& environment, TaskPlaneOptions options,
                     const resolution::Resolver* resolver)
    : store_(store),
      environment_(environment),
      options_(options),
      resolver_(resolver),
      views_(std::make_unique<fleet::TaskViewCache>()),
      agents_(std::make_unique<fleet::AgentCache>()) {}

TaskPlane::~TaskPlane() = default;

nlohmann::json TaskPlane::create_agent(const fleet::AgentGrant& grant) {
  const std::string token = fleet::new_agent_token(environment_.random);
  const std::string now = format_iso8601(store_.now());
  const auto& binding = grant.client_certificate;
  store_.write([&](store::Transaction& tx) {
    if (tx.agent_exists(grant.agent_id)) fail(ErrorCode::AGENT_ALREADY_EXISTS);
    tx.insert_agent({grant.agent_id, sha256_hex(token), grant.granted_capabilities,
                     grant.granted_tenants, now, binding.uri, binding.sha256});
  });
  return {{"agent_id", grant.agent_id},
          {"granted_capabilities", grant.granted_capabilities},
          {"granted_tenants", grant.granted_tenants},
          {"client_certificate", binding_view(binding)},
          {"token", token}};
}

nlohmann::json TaskPlane::agents() {
  nlohmann::json listed = nlohmann::json::array();
  store_.read([&](store::Transaction& tx) {
    for (const auto& [agent, revoked_at] : tx.agents()) {
      nlohmann::json workers = tx.workers_of_agent(agent.agent_id);
      listed.push_back(
          {{"agent_id", agent.agent_id},
           {"granted_capabilities", agent.granted_capabilities},
           {"granted_tenants", agent.granted_tenants},
           {"client_certificate", binding_view({agent.certificate_uri, agent.certificate_sha256})},
           {"created_at", agent.created_at},
           {"revoked_at", revoked_at.empty() ? nlohmann::json() : nlohmann::json(revoked_at)},
           {"workers", std::move(workers)}});
    }
  });
  return {{"agents", std::move(listed)}};
}

nlohmann::json TaskPlane::bind_agent_certificate(const std::string& agent_id,
                                                 const fleet::CertificateBinding& binding) {
  store_.write([&](store::Transaction& tx) {
    if (!tx.agent_exists(agent_id)) fail(ErrorCode::AGENT_NOT_FOUND);
    tx.set_agent_certificate(agent_id, binding.uri, binding.sha256);
  });
  agents_->clear();  // the binding holds from this request on, not after a cache entry lapses
  log::info("AGENT_CERTIFICATE_BOUND",
            {{"agent_id", agent_id}, {"client_certificate", binding_view(binding)}});
  return {{"agent_id", agent_id}, {"client_certificate", binding_view(binding)}};
}

std::optional<Agent> fleet::AgentCache::find(const std::string& token_sha256) {
  const std::lock_guard lock(mutex_);
  const auto it = entries_.find(token_sha256);
  if (it == entries_.end()) return std::nullopt;
  if (std::chrono::steady_clock::now() >= it->second.until) {
    entries_.erase(it);
    return std::nullopt;
  }
  return it->second.agent;
}

std::uint64_t fleet::AgentCache::generation() {
  const std::lock_guard lock(mutex_);
  return generation_;
}

void fleet::AgentCache::put(const std::string& token_sha256, const Agent& agent,
                            std::uint64_t generation) {
  const std::lock_guard lock(mutex_);
  if (generation != generation_) return;
  if (entries_.size() >= kMaxEntries) entries_.clear();
  entries_[token_sha256] = {agent, std::chrono::steady_clock::now() + kTtl};
}

void fleet::AgentCache::clear() {
  const std::lock_guard lock(mutex_);
  ++generation_;
  entries_.clear();
}

std::optional<Agent> TaskPlane::authenticate_agent(const std::string& token) {
  if (token.empty()) return std::nullopt;
  const std::string hash = sha256_hex(token);
  if (auto cached = agents_->find(hash)) return cached;
  const auto generation = agents_->generation();
  std::optional<Agent> agent;
  store_.read([&](store::Transaction& tx) {
    const auto record = tx.live_agent_by_token(hash);
    if (record && constant_time_equal(record->token_sha256, hash)) {
      agent = Agent{record->agent_id, record->granted_capabilities, record->granted_tenants,
                    record->certificate_uri, record->certificate_sha256};
    }
  });
  if (agent) agents_->put(hash, *agent, generation);
  return agent;
}

std::optional<Agent> TaskPlane::authenticate_agent(const http::Request& request) {
  auto agent = authenticate_agent(request.bearer_token);
  if (!agent) return agent;
  const auto& uri = agent->certificate_uri;
  const auto& sha256 = agent->certificate_sha256;
  const bool bound = !uri.empty() || !sha256.empty();
  if (!bound && !request.verifies_clients) return agent;
  if (!request.client_certificate) fail(ErrorCode::TLS_CLIENT_CERTIFICATE_REQUIRED);
  const auto& shown = *request.client_certificate;
  const bool uri_holds =
      uri.empty() || std::find(shown.uris.begin(), shown.uris.end(), uri) != shown.uris.end();
  const bool sha256_holds = sha256.empty() || constant_time_equal(sha256, shown.sha256);
  if (!bound || !uri_holds || !sha256_holds) fail(ErrorCode::AGENT_CERTIFICATE_MISMATCH);
  return agent;
}

nlohmann::json TaskPlane::register_worker(const Agent& agent,
                                          const fleet::WorkerRegistration& registration) {
  const auto& worker_id = registration.worker_id;
  const auto effective = normalize_worker_capabilities(nlohmann::json(registration.capabilities));
  const auto grant = normalize_worker_capabilities(nlohmann::json(agent.granted_capabilities));
  if (!std::includes(grant.begin(), grant.end(), effective.begin(), effective.end())) {
    fail(ErrorCode::WORKER_CAPABILITY_NOT_GRANTED);
  }
  auto tenants = registration.tenants;
  // The owner's grant bounds the worker: it may only narrow it, and declaring none takes it.
  if (!agent.granted_tenants.empty()) {
    if (tenants.empty()) tenants = agent.granted_tenants;
    for (const auto& tenant : tenants) {
      if (!fleet::contains(agent.granted_tenants, tenant))
        fail(ErrorCode::WORKER_TENANT_NOT_GRANTED);
    }
  }
  const auto now = store_.now();
  const double now_s = to_epoch_seconds(now);
  nlohmann::json view;
  store_.write([&](store::Transaction& tx) {
    if (const auto owner = tx.worker_agent(worker_id); owner && *owner != agent.agent_id) {
      fail(ErrorCode::WORKER_AGENT_MISMATCH);
    }
    tx.register_worker({.worker_id = worker_id,
                        .agent_id = agent.agent_id,
                        .capabilities = registration.capabilities,
                        .allowed_adapters = registration.allowed_adapters,
                        .labels = registration.labels,
                        .tenants = tenants,
                        .registered_at = format_iso8601(now),
                        .seen_at = now_s,
                        .max_slots = registration.max_concurrency,
                        .failure_domain = registration.failure_domain});
    view = worker_view(*fleet::load_worker(tx, worker_id, now_s), now_s, options_);
  });
  queue_changed({.claims = 0, .worker_id = worker_id});
  return view;
}

nlohmann::json TaskPlane::worker_stopped(const Agent& agent, const std::string& worker_id) {
  const double now = to_epoch_seconds(store_.now());
  nlohmann::json view;
  store_.write([&](store::Transaction& tx) {
    const auto owner = tx.worker_agent(worker_id);
    if (!owner) fail(ErrorCode::WORKER_NOT_FOUND);
    if (*owner != agent.agent_id) fail(ErrorCode::WORKER_AGENT_MISMATCH);
    tx.mark_worker_stopped(worker_id, now);
    view = worker_view(*fleet::load_worker(tx, worker_id, now), now, options_);
  });
  return view;
}

nlohmann::json TaskPlane::configure_worker(const std::string& worker_id,
                                           const fleet::WorkerConfiguration& configuration) {
  const double now = to_epoch_seconds(store_.now());
  nlohmann::json view;
  store_.write([&](store::Transaction& tx) {
    auto worker = fleet::load_worker(tx, worker_id, now);
    if (!worker) fail(ErrorCode::WORKER_NOT_FOUND);
    worker->max_slots = configuration.max_slots.value_or(worker->max_slots);
    worker->failure_domain = configuration.failure_domain.value_or(worker->failure_domain);
    if (configuration.labels) worker->labels = *configuration.labels;
    worker->quarantined = configuration.quarantined.value_or(worker->quarantined);
    tx.configure_worker({worker_id, worker->max_slots, worker->failure_domain, worker->labels,
                         worker->quarantined, now});
    if (configuration.reset_circuit) tx.note_worker_success(worker_id, now);
    view = worker_view(*fleet::load_worker(tx, worker_id, now), now, options_);
  });
  queue_changed({.claims = 0, .worker_id = worker_id});
  return view;
}

nlohmann::json TaskPlane::fleet_view() {
  const double now = to_epoch_seconds(store_.now());
  nlohmann::json view = {{"workers", nlohmann::json::array()},
                         {"scopes", nlohmann::json::array()},
                         {"task_quarantines", nlohmann::json::array()}};
  store_.read([&](store::Transaction& tx) {
    for (const auto& worker : fleet::load_workers(tx, now)) {
      view["workers"].push_back(worker_view(worker, now, options_));
    }
    for (const auto& [scope_key, count] : tx.scope_dispatch_counts()) {
      view["scopes"].push_back({{"scope_key", scope_key}, {"dispatch_count", count}});
    }
    for (const auto& quarantine : tx.live_task_quarantines(now)) {
      view["task_quarantines"].push_back({{"task_id", quarantine.task_id},
                                          {"worker_id", quarantine.worker_id},
                                          {"failure_class", quarantine.failure_class},
                                          {"failures", quarantine.failures}});
    }
  });
  return view;
}

void TaskPlane::record_worker_failure(const std::string& worker_id, const std::string&,
                                      int threshold) {
  const double now = to_epoch_seconds(store_.now());
  store_.write([&](store::Transaction& tx) {
    fleet::note_worker_failure(tx, worker_id, now,
                               threshold > 0 ? threshold : options_.circuit_threshold,
                               options_.circuit_cooldown);
  });
}

void TaskPlane::record_worker_success(const std::string& worker_id) {
  const double now = to_epoch_seconds(store_.now());
  store_.write([&](store::Transaction& tx) { tx.note_worker_success(worker_id, now); });
}

}  // namespace aios
