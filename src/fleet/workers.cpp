#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <array>

#include "aios/canonical.hpp"
#include "aios/capability.hpp"
#include "aios/envelope.hpp"
#include "fleet/internal.hpp"

namespace aios {
namespace {

using envelope::fail;
using envelope::kEmptyArray;
using envelope::kEmptyObject;
using envelope::kNull;

constexpr std::array<std::string_view, 6> kAdapters = {
    "deterministic", "source_capture", "compact_interface_map", "codex", "hermes", "openclaw"};
const nlohmann::json kDefaultAdapters = {"deterministic", "source_capture", "compact_interface_map",
                                         "codex"};
const nlohmann::json kOne = 1;
const nlohmann::json kDefaultDomain = "default";

bool is_name(const nlohmann::json& value) {
  return value.is_string() &&
         envelope::is_identifier(value.get_ref<const std::string&>(), "._:-", 0, 127);
}

// Worker-vocabulary names, each known (a name that grants nothing is a typo, not a no-op).
nlohmann::json worker_capability_list(const nlohmann::json& value) {
  if (!value.is_array() || value.size() > 64) fail(ErrorCode::CAPABILITY_INVALID);
  std::set<std::string> names;
  for (const auto& item : value) {
    std::string name = clean_capability(item);
    if (normalize_worker_capabilities(nlohmann::json::array({name})).empty()) {
      fail(ErrorCode::CAPABILITY_UNKNOWN);
    }
    names.insert(std::move(name));
  }
  return nlohmann::json(std::vector<std::string>(names.begin(), names.end()));
}

nlohmann::json name_list(const nlohmann::json& value, ErrorCode code) {
  if (!value.is_array() || value.size() > 64) fail(code);
  std::set<std::string> names;
  for (const auto& item : value) {
    if (!is_name(item)) fail(code);
    names.insert(item.get<std::string>());
  }
  return nlohmann::json(std::vector<std::string>(names.begin(), names.end()));
}

nlohmann::json labels_of(const nlohmann::json& value) {
  if (!value.is_object() || value.size() > 32) fail(ErrorCode::WORKER_REGISTRATION_INVALID);
  for (const auto& item : value.items()) {
    if (!is_name(nlohmann::json(item.key())) || !item.value().is_string() ||
        item.value().get_ref<const std::string&>().size() > 256) {
      fail(ErrorCode::WORKER_REGISTRATION_INVALID);
    }
  }
  return value;
}

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
       now - worker.last_seen <= static_cast<double>(options.worker_online_window.count())},
      {"last_seen_at", format_iso8601(TimePoint(std::chrono::microseconds(
                           static_cast<std::int64_t>(worker.last_seen * 1e6))))},
  };
}

}  // namespace

std::string fleet::new_agent_token() {
  return "aios_" + random_hex(32);
}

TaskPlane::TaskPlane(Database& db, const Clock& clock, TaskPlaneOptions options)
    : db_(db),
      clock_(clock),
      options_(options),
      facts_(std::make_unique<fleet::TaskFactsCache>()),
      views_(std::make_unique<fleet::TaskViewCache>()) {}

TaskPlane::~TaskPlane() = default;

nlohmann::json TaskPlane::create_agent(const nlohmann::json& body) {
  envelope::require_known_keys(body, {"agent_id", "granted_capabilities", "granted_tenants"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  if (!body.contains("granted_capabilities")) fail(ErrorCode::REQUEST_FIELDS_INVALID);
  if (!is_name(envelope::get_or(body, "agent_id", kNull))) fail(ErrorCode::AGENT_ID_INVALID);
  const std::string agent_id = body["agent_id"];
  const auto granted = worker_capability_list(body["granted_capabilities"]);
  const auto tenants = name_list(envelope::get_or(body, "granted_tenants", kEmptyArray),
                                 ErrorCode::AGENT_TENANTS_INVALID);
  const std::string token = fleet::new_agent_token();
  const std::string now = format_iso8601(clock_.now());
  db_.write([&](SQLite::Database& db) {
    store::Prepared exists(db, "SELECT 1 FROM agents WHERE agent_id=?");
    exists->bind(1, agent_id);
    if (exists->executeStep()) fail(ErrorCode::AGENT_ALREADY_EXISTS);
    store::Prepared insert(db,
                           "INSERT INTO agents(agent_id,token_sha256,granted_capabilities_json,"
                           "granted_tenants_json,created_at) VALUES (?,?,?,?,?)");
    insert->bind(1, agent_id);
    insert->bind(2, sha256_hex(token));
    insert->bind(3, canonical_json(granted));
    insert->bind(4, canonical_json(tenants));
    insert->bind(5, now);
    insert->exec();
  });
  return {{"agent_id", agent_id},
          {"granted_capabilities", granted},
          {"granted_tenants", tenants},
          {"token", token}};
}

std::optional<Agent> TaskPlane::authenticate_agent(const std::string& token) {
  if (token.empty()) return std::nullopt;
  const std::string hash = sha256_hex(token);
  std::optional<Agent> agent;
  db_.read([&](SQLite::Database& db) {
    store::Prepared query(db,
                          "SELECT agent_id, granted_capabilities_json, token_sha256, "
                          "granted_tenants_json FROM agents "
                          "WHERE token_sha256=? AND revoked_at IS NULL");
    query->bind(1, hash);
    if (query->executeStep() && constant_time_equal(query->getColumn(2).getString(), hash)) {
      const auto empty = nlohmann::json::array();
      agent = Agent{query->getColumn(0).getString(),
                    fleet::parse_column(query->getColumn(1).getString(), empty),
                    fleet::parse_column(query->getColumn(3).getString(), empty)};
    }
  });
  return agent;
}

nlohmann::json TaskPlane::register_worker(const Agent& agent, const nlohmann::json& body) {
  envelope::require_known_keys(body,
                               {"worker_id", "capabilities", "allowed_adapters", "max_concurrency",
                                "failure_domain", "labels", "tenants"},
                               ErrorCode::REQUEST_FIELDS_INVALID);
  const auto& id = envelope::get_or(body, "worker_id", kNull);
  if (!is_name(id)) fail(ErrorCode::WORKER_ID_INVALID);
  const std::string worker_id = id;
  const auto capabilities =
      worker_capability_list(envelope::get_or(body, "capabilities", kEmptyArray));
  const auto effective = normalize_worker_capabilities(capabilities);
  const auto grant = normalize_worker_capabilities(agent.granted_capabilities);
  if (!std::includes(grant.begin(), grant.end(), effective.begin(), effective.end())) {
    fail(ErrorCode::WORKER_CAPABILITY_NOT_GRANTED);
  }
  const auto adapters = name_list(envelope::get_or(body, "allowed_adapters", kDefaultAdapters),
                                  ErrorCode::WORKER_ADAPTER_UNKNOWN);
  for (const auto& adapter : adapters) {
    if (std::find(kAdapters.begin(), kAdapters.end(), adapter.get<std::string>()) ==
        kAdapters.end()) {
      fail(ErrorCode::WORKER_ADAPTER_UNKNOWN);
    }
  }
  const auto slots = envelope::require_int(envelope::get_or(body, "max_concurrency", kOne), 1, 64,
                                           ErrorCode::WORKER_REGISTRATION_INVALID);
  const auto& domain = envelope::get_or(body, "failure_domain", kDefaultDomain);
  if (!is_name(domain)) fail(ErrorCode::WORKER_REGISTRATION_INVALID);
  const auto labels = labels_of(envelope::get_or(body, "labels", kEmptyObject));
  auto tenants = name_list(envelope::get_or(body, "tenants", kEmptyArray),
                           ErrorCode::WORKER_REGISTRATION_INVALID);
  // The owner's grant bounds the worker: it may only narrow it, and declaring none takes it.
  if (!agent.granted_tenants.empty()) {
    if (tenants.empty()) tenants = agent.granted_tenants;
    for (const auto& tenant : tenants) {
      if (std::find(agent.granted_tenants.begin(), agent.granted_tenants.end(), tenant) ==
          agent.granted_tenants.end()) {
        fail(ErrorCode::WORKER_TENANT_NOT_GRANTED);
      }
    }
  }
  const auto now = clock_.now();
  const double now_s = to_epoch_seconds(now);
  nlohmann::json view;
  db_.write([&](SQLite::Database& db) {
    store::Prepared owner(db, "SELECT agent_id FROM workers WHERE worker_id=?");
    owner->bind(1, worker_id);
    if (owner->executeStep() && owner->getColumn(0).getString() != agent.agent_id) {
      fail(ErrorCode::WORKER_AGENT_MISMATCH);
    }
    store::Prepared upsert(
        db,
        "INSERT INTO workers(worker_id,agent_id,capabilities_json,allowed_adapters_json,"
        "labels_json,tenants_json,registered_at,last_seen_at) VALUES (?,?,?,?,?,?,?,?) "
        "ON CONFLICT(worker_id) DO UPDATE SET capabilities_json=excluded.capabilities_json, "
        "allowed_adapters_json=excluded.allowed_adapters_json, labels_json=excluded.labels_json,"
        " tenants_json=excluded.tenants_json, last_seen_at=excluded.last_seen_at");
    upsert->bind(1, worker_id);
    upsert->bind(2, agent.agent_id);
    upsert->bind(3, canonical_json(capabilities));
    upsert->bind(4, canonical_json(adapters));
    upsert->bind(5, canonical_json(labels));
    upsert->bind(6, canonical_json(tenants));
    upsert->bind(7, format_iso8601(now));
    upsert->bind(8, now_s);
    upsert->exec();
    store::Prepared capacity(
        db,
        "INSERT INTO fleet_worker_capacity(worker_id,max_slots,failure_domain,labels_json,"
        "updated_at) VALUES (?,?,?,?,?) ON CONFLICT(worker_id) DO UPDATE SET "
        "max_slots=excluded.max_slots, failure_domain=excluded.failure_domain, "
        "labels_json=excluded.labels_json, updated_at=excluded.updated_at");
    capacity->bind(1, worker_id);
    capacity->bind(2, slots);
    capacity->bind(3, domain.get<std::string>());
    capacity->bind(4, canonical_json(labels));
    capacity->bind(5, now_s);
    capacity->exec();
    view = worker_view(*fleet::load_worker(db, worker_id, now_s), now_s, options_);
  });
  return view;
}

nlohmann::json TaskPlane::configure_worker(const std::string& worker_id,
                                           const nlohmann::json& body) {
  envelope::require_known_keys(
      body, {"max_slots", "failure_domain", "labels", "quarantined", "reset_circuit"},
      ErrorCode::REQUEST_FIELDS_INVALID);
  const double now = to_epoch_seconds(clock_.now());
  nlohmann::json view;
  db_.write([&](SQLite::Database& db) {
    auto worker = fleet::load_worker(db, worker_id, now);
    if (!worker) fail(ErrorCode::WORKER_NOT_FOUND);
    if (body.contains("max_slots")) {
      worker->max_slots =
          envelope::require_int(body["max_slots"], 1, 256, ErrorCode::WORKER_REGISTRATION_INVALID);
    }
    if (body.contains("failure_domain")) {
      if (!is_name(body["failure_domain"])) fail(ErrorCode::WORKER_REGISTRATION_INVALID);
      worker->failure_domain = body["failure_domain"];
    }
    if (body.contains("labels")) worker->labels = labels_of(body["labels"]);
    if (body.contains("quarantined")) {
      if (!body["quarantined"].is_boolean()) fail(ErrorCode::WORKER_REGISTRATION_INVALID);
      worker->quarantined = body["quarantined"];
    }
    store::Prepared update(db,
                           "UPDATE fleet_worker_capacity SET max_slots=?, failure_domain=?, "
                           "labels_json=?, quarantined=?, updated_at=? WHERE worker_id=?");
    update->bind(1, worker->max_slots);
    update->bind(2, worker->failure_domain);
    update->bind(3, canonical_json(worker->labels));
    update->bind(4, worker->quarantined ? 1 : 0);
    update->bind(5, now);
    update->bind(6, worker_id);
    update->exec();
    if (body.contains("reset_circuit")) {
      if (!body["reset_circuit"].is_boolean()) fail(ErrorCode::WORKER_REGISTRATION_INVALID);
      if (body["reset_circuit"] == true) fleet::note_worker_success(db, worker_id, now);
    }
    view = worker_view(*fleet::load_worker(db, worker_id, now), now, options_);
  });
  return view;
}

nlohmann::json TaskPlane::fleet_view() {
  const double now = to_epoch_seconds(clock_.now());
  nlohmann::json view = {{"workers", nlohmann::json::array()},
                         {"scopes", nlohmann::json::array()},
                         {"task_quarantines", nlohmann::json::array()}};
  db_.read([&](SQLite::Database& db) {
    for (const auto& worker : fleet::load_workers(db, now)) {
      view["workers"].push_back(worker_view(worker, now, options_));
    }
    store::Prepared scopes(
        db, "SELECT scope_key, dispatch_count FROM fleet_scope_state ORDER BY scope_key");
    while (scopes->executeStep()) {
      view["scopes"].push_back({{"scope_key", scopes->getColumn(0).getString()},
                                {"dispatch_count", scopes->getColumn(1).getInt64()}});
    }
    store::Prepared quarantines(
        db,
        "SELECT task_id, worker_id, failure_class, failures FROM fleet_task_quarantine "
        "WHERE quarantined_until>? ORDER BY task_id, worker_id");
    quarantines->bind(1, now);
    while (quarantines->executeStep()) {
      view["task_quarantines"].push_back({{"task_id", quarantines->getColumn(0).getString()},
                                          {"worker_id", quarantines->getColumn(1).getString()},
                                          {"failure_class", quarantines->getColumn(2).getString()},
                                          {"failures", quarantines->getColumn(3).getInt64()}});
    }
  });
  return view;
}

void TaskPlane::record_worker_failure(const std::string& worker_id, const std::string&,
                                      int threshold) {
  const double now = to_epoch_seconds(clock_.now());
  db_.write([&](SQLite::Database& db) {
    fleet::note_worker_failure(db, worker_id, now,
                               threshold > 0 ? threshold : options_.circuit_threshold,
                               options_.circuit_cooldown);
  });
}

void TaskPlane::record_worker_success(const std::string& worker_id) {
  const double now = to_epoch_seconds(clock_.now());
  db_.write([&](SQLite::Database& db) { fleet::note_worker_success(db, worker_id, now); });
}

}  // namespace aios
