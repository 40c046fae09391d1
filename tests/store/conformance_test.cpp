// The store conformance suite: the contract of every store::Store operation, each fence, and
// bounded races, run against every backend: SQLite, and PostgreSQL on the throwaway server of
// scripts/test (a fresh database per test). A new backend passes this before anything runs on it. A
// write body may be re-run, so a race's body only records what it did and the count is taken after
// write() returns.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <latch>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "aios/store.hpp"
#include "aios/sys.hpp"
#include "support/code_of.hpp"
#include "support/daemon.hpp"
#include "support/postgres.hpp"

namespace aios::store_test {
namespace {

using test::code_of;

// What a backend's store needs kept alive beside it (a test's own database).
using Keep = std::shared_ptr<void>;

// A backend under test: a fresh, empty, migrated store in `dir` on `clock`, or nullptr when the
// backend cannot run here (the test skips).
struct Backend {
  std::string name;
  std::function<std::unique_ptr<store::Store>(const std::filesystem::path& dir, const Clock& clock,
                                              Keep& keep)>
      open;
};

// Names the backend in test output instead of dumping its bytes.
void PrintTo(const Backend& backend, std::ostream* out) {
  *out << backend.name;
}

// Runs body(0) .. body(writers - 1) on their own threads, released at once, and waits for all.
template <typename Body>
void race(int writers, Body body) {
  std::latch start(writers);
  std::vector<std::thread> threads;
  for (int i = 0; i < writers; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      body(i);
    });
  }
  for (auto& thread : threads) thread.join();
}

store::TaskRow queued_task(const std::string& task_id) {
  store::TaskRow row;
  row.task_id = task_id;
  row.status = "QUEUED";
  row.attempt = 1;
  row.max_attempts = 3;
  row.revision = 4;
  row.verification_json = R"({"decision":"NEEDS_REWORK"})";
  row.metadata_json = R"({"execution":{}})";
  row.required_capabilities_json = R"(["git.read"])";
  row.job_id = "job-" + task_id;
  row.action = "source_capture";
  row.adapter = "source_capture";
  row.scope_key = "global";
  row.task_json = "{}";
  row.request_sha256 = std::string(64, 'a');
  row.created_at = "2026-12-02T00:00:00Z";
  row.updated_at = row.created_at;
  row.execution_digest = std::string(64, 'b');
  row.capability_scope = store::Names{"git.read"};
  return row;
}

store::RebindReceipt receipt_for(const std::string& task_id, const std::string& key) {
  return {.task_id = task_id,
          .idempotency_key = key,
          .request_sha256 = std::string(64, 'c'),
          .authorization_id = "owner-rebind",
          .previous_verification_sha256 = std::string(64, 'd'),
          .old_execution_digest = std::string(64, 'b'),
          .new_execution_digest = std::string(64, 'e'),
          .expected_revision = 4,
          .applied_revision = 5,
          .attempt = 1,
          .reason = "plan registered",
          .created_at = "2026-12-02T00:00:01Z"};
}

// The rebind of queued_task(task_id) as it stands.
store::RebindUpdate rebind_of(const std::string& task_id) {
  return {.task_id = task_id,
          .expected_status = "QUEUED",
          .expected_revision = 4,
          .expected_attempt = 1,
          .expected_claimed_by = std::nullopt,
          .metadata_json = R"({"execution":{"action":"deterministic"}})",
          .applied_revision = 5,
          .execution_digest = std::string(64, 'e'),
          .action = "deterministic",
          .adapter = "deterministic",
          .capability_scope = {"git.read", "git.test"},
          .updated_at = "2026-12-02T00:00:01Z"};
}

class StoreConformance : public ::testing::TestWithParam<Backend> {
 protected:
  StoreConformance() : clock_(TimePoint(std::chrono::seconds(1900000000))) {}

  void SetUp() override {
    store_ = GetParam().open(dir_.path(), clock_, keep_);
    if (!store_) AIOS_SKIP_WITHOUT_POSTGRES();
    store_->prepare_rebinds();
  }

  void insert(const store::TaskRow& row) {
    store_->write([&](store::Transaction& tx) { tx.insert_task(row); });
  }
  std::optional<store::TaskRow> load(const std::string& task_id) {
    std::optional<store::TaskRow> row;
    store_->read([&](store::Transaction& tx) { row = tx.load_task(task_id); });
    return row;
  }
  std::optional<store::RebindReceipt> receipt(const std::string& task_id, const std::string& key) {
    std::optional<store::RebindReceipt> found;
    store_->read([&](store::Transaction& tx) { found = tx.rebind_receipt(task_id, key); });
    return found;
  }
  // The code a write transaction of `body` ends with ("OK" when it commits).
  template <typename Body>
  std::string write_code(Body body) {
    return code_of([&] { store_->write(body); });
  }
  bool apply(const store::RebindUpdate& update) {
    bool applied = false;
    store_->write([&](store::Transaction& tx) { applied = tx.apply_rebind(update); });
    return applied;
  }

  test::ScopedTempDir dir_{"aios-store-conformance"};
  ManualClock clock_;
  Keep keep_;  // before store_: outlives it
  std::unique_ptr<store::Store> store_;
};

TEST_P(StoreConformance, NowIsTheStoresClock) {
  // Given the store's clock moved, we should date by it: it is the one source of lease time.
  EXPECT_EQ(store_->now(), clock_.now());
  clock_.advance(std::chrono::seconds(90));
  EXPECT_EQ(store_->now(), clock_.now());
}

TEST_P(StoreConformance, InsertedTaskLoadsWithEveryColumnAndTheNextSequence) {
  // Given two tasks inserted, we should load each exactly as written, numbered in queue order.
  insert(queued_task("task-a"));
  insert(queued_task("task-b"));
  auto a = load("task-a");
  auto b = load("task-b");
  ASSERT_TRUE(a && b);
  EXPECT_LT(a->seq, b->seq);
  store::TaskRow expected = queued_task("task-a");
  expected.seq = a->seq;
  EXPECT_EQ(*a, expected);
  EXPECT_FALSE(load("task-missing"));
}

// Given an agent with a certificate binding, we should find it by its token with its grant and
// binding as stored, see a new binding replace it, and not find a revoked agent at all.
TEST_P(StoreConformance, AnAgentKeepsItsGrantAndCertificateBinding) {
  const store::AgentRecord agent{"agent-a",
                                 std::string(64, 'a'),
                                 {"git.read", "shell"},
                                 {"tenant-a"},
                                 "2026-12-05T00:00:00Z",
                                 "aios:agent:agent-a",
                                 ""};
  store_->write([&](store::Transaction& tx) { tx.insert_agent(agent); });
  std::optional<store::AgentRecord> found;
  store_->read([&](store::Transaction& tx) { found = tx.live_agent_by_token(agent.token_sha256); });
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->granted_capabilities, agent.granted_capabilities);
  EXPECT_EQ(found->granted_tenants, agent.granted_tenants);
  EXPECT_EQ(found->certificate_uri, "aios:agent:agent-a");
  EXPECT_EQ(found->certificate_sha256, "");
  store_->write([&](store::Transaction& tx) {
    tx.set_agent_certificate("agent-a", "", std::string(64, 'f'));
  });
  store_->read([&](store::Transaction& tx) { found = tx.live_agent_by_token(agent.token_sha256); });
  EXPECT_EQ(found->certificate_uri, "");
  EXPECT_EQ(found->certificate_sha256, std::string(64, 'f'));
  store_->write(
      [&](store::Transaction& tx) { tx.revoke_agent("agent-a", "2026-12-05T00:00:01Z"); });
  store_->read([&](store::Transaction& tx) { found = tx.live_agent_by_token(agent.token_sha256); });
  EXPECT_FALSE(found.has_value());
  // The listing keeps the revoked agent, with its time and without its token's digest.
  std::vector<std::pair<store::AgentRecord, std::string>> listed;
  store_->read([&](store::Transaction& tx) { listed = tx.agents(); });
  ASSERT_EQ(listed.size(), 1U);
  EXPECT_EQ(listed[0].first.agent_id, "agent-a");
  EXPECT_EQ(listed[0].first.token_sha256, "");
  EXPECT_EQ(listed[0].first.granted_capabilities, agent.granted_capabilities);
  EXPECT_EQ(listed[0].first.certificate_sha256, std::string(64, 'f'));
  EXPECT_EQ(listed[0].second, "2026-12-05T00:00:01Z");
}

// Given a worker registered with lists and labels, then its labels configured, we should load
// the values as they were last given (the owner's labels over the registered ones): the fleet
// reads values, never the stored text.
TEST_P(StoreConformance, AWorkerLoadsWithTheListsAndLabelsItWasGiven) {
  const store::WorkerRegistration registration{.worker_id = "worker-a",
                                               .agent_id = "agent-a",
                                               .capabilities = {"git.read", "shell"},
                                               .allowed_adapters = {"codex", "deterministic"},
                                               .labels = {{"rack", "r1"}, {"zone", "b \"q\""}},
                                               .tenants = {"tenant-a", "tenant-b"},
                                               .registered_at = "2026-12-05T00:00:00Z",
                                               .seen_at = 90,
                                               .max_slots = 2,
                                               .failure_domain = "fd"};
  std::optional<store::WorkerRecord> found;
  store_->write([&](store::Transaction& tx) {
    tx.register_worker(registration);
    found = tx.load_worker("worker-a", 90);
  });
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->capabilities, registration.capabilities);
  EXPECT_EQ(found->allowed_adapters, registration.allowed_adapters);
  EXPECT_EQ(found->labels, registration.labels);
  EXPECT_EQ(found->tenants, registration.tenants);
  EXPECT_EQ(found->max_slots, 2);
  store_->write([&](store::Transaction& tx) {
    tx.configure_worker({.worker_id = "worker-a",
                         .max_slots = 3,
                         .failure_domain = "fd",
                         .labels = {{"rack", "r2"}},
                         .quarantined = false,
                         .updated_at = 91});
    found = tx.load_worker("worker-a", 91);
  });
  EXPECT_EQ(found->max_slots, 3);
  EXPECT_EQ(found->labels, (store::Labels{{"rack", "r2"}}));
  // A worker that said it stopped reads so until it registers again.
  EXPECT_EQ(found->stopped_at, 0);
  store_->write([&](store::Transaction& tx) {
    tx.mark_worker_stopped("worker-a", 92.5);
    found = tx.load_worker("worker-a", 93);
  });
  EXPECT_EQ(found->stopped_at, 92.5);
  store_->write([&](store::Transaction& tx) {
    tx.register_worker(registration);
    found = tx.load_worker("worker-a", 94);
  });
  EXPECT_EQ(found->stopped_at, 0);
}

// Given tasks of a tenant, of its project, of another tenant and global ones, a listing by
// tenant should hold the tenant's own and its project's only, in queue order.
TEST_P(StoreConformance, AListingByTenantHoldsItsOwnAndItsProjectsTasks) {
  const std::vector<std::pair<std::string, std::string>> tasks = {
      {"t-acme", "tenant:acme"},
      {"t-acme-web", "project:acme/web"},
      {"t-acmex", "tenant:acmex"},
      {"t-beta", "tenant:beta"},
      {"t-global", "global"}};
  for (const auto& [id, scope] : tasks) {
    auto row = queued_task(id);
    row.scope_key = scope;
    insert(row);
  }
  std::vector<std::string> listed;
  store_->read([&](store::Transaction& tx) {
    for (const auto& row : tx.tasks_matching({"QUEUED", "acme", ""}, 0, 10)) {
      listed.push_back(row.task_id);
    }
  });
  EXPECT_EQ(listed, (std::vector<std::string>{"t-acme", "t-acme-web"}));
  std::size_t all = 0;
  store_->read([&](store::Transaction& tx) { all = tx.tasks_matching({}, 0, 10).size(); });
  EXPECT_EQ(all, tasks.size());
}

// Given tasks whose ids share starts, a listing by id prefix should hold exactly the ids that
// start with it, byte for byte (no case folding, no pattern characters), with the other filters.
TEST_P(StoreConformance, AListingByIdPrefixHoldsTheIdsThatStartWithIt) {
  for (const auto* id : {"deploy-1", "deploy-2", "Deploy-3", "deploy_4", "redeploy-5", "deploy"}) {
    insert(queued_task(id));
  }
  const auto listed = [&](const store::TaskFilter& filter) {
    std::vector<std::string> ids;
    store_->read([&](store::Transaction& tx) {
      for (const auto& row : tx.tasks_matching(filter, 0, 10)) ids.push_back(row.task_id);
    });
    return ids;
  };
  EXPECT_EQ(listed({"", "", "deploy-"}), (std::vector<std::string>{"deploy-1", "deploy-2"}));
  EXPECT_EQ(listed({"", "", "deploy"}),
            (std::vector<std::string>{"deploy-1", "deploy-2", "deploy_4", "deploy"}));
  EXPECT_EQ(listed({"QUEUED", "", "Deploy"}), (std::vector<std::string>{"Deploy-3"}));
  EXPECT_TRUE(listed({"FAILED", "", "deploy"}).empty());
  EXPECT_TRUE(listed({"", "acme", "deploy"}).empty());
}

// Given tasks of several statuses, scopes and priorities, the live counts should group only the
// QUEUED, CLAIMED and VERIFYING ones, in order, and the newest tasks should come highest seq
// first, bounded by the limit.
TEST_P(StoreConformance, LiveCountsAndNewestTasksAreTheDashboardsView) {
  const std::vector<std::tuple<std::string, std::string, std::string, std::int64_t>> tasks = {
      {"t-1", "QUEUED", "tenant:acme", 0}, {"t-2", "QUEUED", "tenant:acme", 0},
      {"t-3", "QUEUED", "tenant:acme", 5}, {"t-4", "CLAIMED", "project:acme/web", 0},
      {"t-5", "VERIFYING", "global", 0},   {"t-6", "SUCCEEDED", "tenant:acme", 0},
      {"t-7", "FAILED", "tenant:beta", 0}, {"t-8", "CANCELLED", "tenant:beta", 0}};
  for (const auto& [id, status, scope, priority] : tasks) {
    auto row = queued_task(id);
    row.status = status;
    row.scope_key = scope;
    row.priority = priority;
    insert(row);
  }
  std::vector<store::LiveTaskCount> counts;
  std::vector<std::string> newest;
  store_->read([&](store::Transaction& tx) {
    counts = tx.live_task_counts();
    for (const auto& row : tx.newest_tasks(3)) newest.push_back(row.task_id);
  });
  EXPECT_EQ(counts, (std::vector<store::LiveTaskCount>{{"CLAIMED", "project:acme/web", 0, 1},
                                                       {"QUEUED", "tenant:acme", 0, 2},
                                                       {"QUEUED", "tenant:acme", 5, 1},
                                                       {"VERIFYING", "global", 0, 1}}));
  EXPECT_EQ(newest, (std::vector<std::string>{"t-8", "t-7", "t-6"}));
}

// Given events of several tasks, the feed should give them all in id order with their task,
// from after a given id; pruning should delete only ended tasks' events and results, and the
// integrity check should answer ok.
TEST_P(StoreConformance, TheEventFeedAndPruningKeepTheirBounds) {
  auto ended = queued_task("t-ended");
  ended.status = "SUCCEEDED";
  ended.updated_at = "2026-11-01T00:00:00.000000+00:00";
  auto recent = queued_task("t-recent");
  recent.status = "FAILED";
  recent.updated_at = "2026-12-04T00:00:00.000000+00:00";
  auto live = queued_task("t-live");
  live.updated_at = "2026-11-01T00:00:00.000000+00:00";
  store_->write([&](store::Transaction& tx) {
    for (const auto* row : {&ended, &recent, &live}) {
      tx.insert_task(*row);
      tx.append_event(row->task_id, "TASK_CREATED", "owner", {{"n", 1}}, row->created_at);
    }
    tx.append_event("t-ended", "TASK_SUCCEEDED", "owner", {{"n", 2}}, ended.updated_at);
  });
  std::vector<store::EventRecord> feed;
  std::int64_t last = 0;
  store_->read([&](store::Transaction& tx) {
    feed = tx.events_after(0, 100);
    last = tx.last_event_id();
  });
  ASSERT_EQ(feed.size(), 4u);
  EXPECT_EQ(feed.front().task_id, "t-ended");
  EXPECT_EQ(feed.back().event_type, "TASK_SUCCEEDED");
  EXPECT_EQ(last, feed.back().event_id);
  store_->read([&](store::Transaction& tx) {
    EXPECT_EQ(tx.events_after(feed[1].event_id, 1).front().event_id, feed[2].event_id);
    EXPECT_EQ(tx.integrity(), "ok");
  });
  std::vector<std::string> pruned;
  store_->write([&](store::Transaction& tx) {
    pruned = tx.prune_terminal_tasks("2026-12-01T00:00:00.000000+00:00", 10);
  });
  EXPECT_EQ(pruned, std::vector<std::string>{"t-ended"});
  store_->read([&](store::Transaction& tx) {
    EXPECT_TRUE(tx.task_events("t-ended", 0, 10).empty());
    EXPECT_EQ(tx.task_events("t-recent", 0, 10).size(), 1u);
    EXPECT_EQ(tx.task_events("t-live", 0, 10).size(), 1u);
    EXPECT_TRUE(tx.load_task("t-ended").has_value());  // the task itself stays
  });
  store_->write([&](store::Transaction& tx) {
    pruned = tx.prune_terminal_tasks("2026-12-01T00:00:00.000000+00:00", 10);
  });
  EXPECT_TRUE(pruned.empty());  // nothing left to prune twice
}

TEST_P(StoreConformance, ATaskIdIsInsertedOnce) {
  // Given a task id that exists, we should refuse a second insert and keep the first row.
  insert(queued_task("task-a"));
  store::TaskRow second = queued_task("task-a");
  second.status = "CLAIMED";
  EXPECT_EQ(code_of([&] { insert(second); }), "STORE_FAILURE");
  EXPECT_EQ(load("task-a")->status, "QUEUED");
}

TEST_P(StoreConformance, UpdateIsFencedByRevision) {
  // Given a stale expected revision, we should change nothing; the current one, everything.
  insert(queued_task("task-a"));
  store::TaskRow next = *load("task-a");
  next.status = "CLAIMED";
  next.revision = 5;
  bool updated = true;
  store_->write([&](store::Transaction& tx) { updated = tx.update_task(next, 3, 0); });
  EXPECT_FALSE(updated);
  EXPECT_EQ(load("task-a")->status, "QUEUED");
  store_->write([&](store::Transaction& tx) { updated = tx.update_task(next, 4, 0); });
  EXPECT_TRUE(updated);
  EXPECT_EQ(*load("task-a"), next);
}

TEST_P(StoreConformance, UpdateIsFencedByLeaseGeneration) {
  // Given a heartbeat that advanced the lease generation without a new revision, a sweep that
  // read the task before it should change nothing: its expected generation is stale.
  insert(queued_task("task-a"));
  store::TaskRow heartbeat = *load("task-a");
  heartbeat.lease_generation = 1;
  heartbeat.lease_expires_at = "2026-12-02T00:10:00Z";
  store::TaskRow sweep = *load("task-a");
  sweep.status = "QUEUED";
  sweep.lease_expires_at = "";
  sweep.revision = 5;
  bool updated = false;
  store_->write([&](store::Transaction& tx) { updated = tx.update_task(heartbeat, 4, 0); });
  EXPECT_TRUE(updated);
  store_->write([&](store::Transaction& tx) { updated = tx.update_task(sweep, 4, 0); });
  EXPECT_FALSE(updated) << "a stale generation must not win over the heartbeat";
  EXPECT_EQ(*load("task-a"), heartbeat);
}

TEST_P(StoreConformance, AWriteReadsTheTaskAsItsOwnUpdatesLeftIt) {
  // Given a write that looks a result up (which may fetch the task and its claimant ahead), then
  // updates the task twice, the second time with a new envelope, we should read each state the
  // write left, and its claimant's agent as registered.
  auto row = queued_task("task-a");
  row.claimed_by = "worker-a";
  insert(row);
  store_->write([&](store::Transaction& tx) {
    store::WorkerRegistration registration;
    registration.worker_id = "worker-a";
    registration.agent_id = "agent-a";
    registration.registered_at = "2026-12-02T00:00:00Z";
    tx.register_worker(registration);
  });
  store::TaskRow claimed = row;
  claimed.status = "CLAIMED";
  claimed.revision = 5;
  store::TaskRow rebound = claimed;
  rebound.revision = 6;
  rebound.metadata_json = R"({"execution":{"action":"deterministic"}})";
  rebound.execution_digest = std::string(64, 'e');
  rebound.action = "deterministic";
  rebound.adapter = "deterministic";
  rebound.capability_scope = store::Names{"git.read", "git.test"};
  std::vector<std::optional<store::TaskRow>> seen;
  std::optional<std::string> agent;
  store_->write([&](store::Transaction& tx) {
    EXPECT_FALSE(tx.load_result("task-a", "result-1"));
    agent = tx.worker_agent("worker-a");
    seen.push_back(tx.load_task("task-a"));
    EXPECT_TRUE(tx.update_task(claimed, 4, 0));
    seen.push_back(tx.load_task("task-a"));
    EXPECT_TRUE(tx.update_task(rebound, 5, 0));
    seen.push_back(tx.load_task("task-a"));
  });
  EXPECT_EQ(agent, "agent-a");
  ASSERT_EQ(seen.size(), 3U);
  ASSERT_TRUE(seen[0] && seen[1] && seen[2]);
  EXPECT_EQ(seen[0]->revision, 4);
  EXPECT_EQ(seen[1]->revision, 5);
  EXPECT_EQ(seen[1]->status, "CLAIMED");
  EXPECT_EQ(seen[2]->metadata_json, rebound.metadata_json);
  rebound.seq = seen[2]->seq;
  EXPECT_EQ(*load("task-a"), rebound);
}

TEST_P(StoreConformance, AnUpdateStoresTheEnvelopeItCarriesWhateverTheWriteReadBefore) {
  // Given updates that change the state alone, the envelope alone, and the envelope from a
  // write that never read the task, we should load exactly the row each wrote.
  insert(queued_task("task-a"));
  auto row = *load("task-a");
  const auto update = [&](const store::TaskRow& next, bool read_first) {
    bool updated = false;
    store_->write([&](store::Transaction& tx) {
      if (read_first) (void)tx.load_task("task-a");
      updated = tx.update_task(next, next.revision - 1, next.lease_generation);
    });
    EXPECT_TRUE(updated);
    EXPECT_EQ(*load("task-a"), next);
  };
  row.status = "CLAIMED";
  row.revision = 5;
  update(row, true);
  row.revision = 6;
  row.metadata_json = R"({"execution":{"action":"deterministic"}})";
  row.execution_digest = std::string(64, 'e');
  update(row, true);
  row.revision = 7;
  row.capability_scope = store::Names{"git.read", "git.test"};
  update(row, true);
  row.revision = 8;
  row.metadata_json = R"({"execution":{}})";
  row.adapter = "codex";
  update(row, false);
}

TEST_P(StoreConformance, AResolutionIsRecordedOnceForItsIdentity) {
  // Given the same resolution recorded twice and two that differ in their worker alone, we
  // should keep one event for each identity.
  insert(queued_task("task-a"));
  const store::Resolution polled{.task_id = "task-a",
                                 .actor = "agent-a",
                                 .attempt = 2,
                                 .worker_id = std::nullopt,
                                 .execution_digest = std::string(64, 'b')};
  auto claimed = polled;
  claimed.worker_id = "worker-a";
  const auto record = [&](const store::Resolution& resolution) {
    store_->write([&](store::Transaction& tx) {
      tx.record_resolution(
          resolution,
          {{"execution_digest", resolution.execution_digest},
           {"attempt", resolution.attempt},
           {"worker_id", resolution.worker_id ? nlohmann::json(*resolution.worker_id)
                                              : nlohmann::json(nullptr)}},
          "2026-12-02T00:00:01Z");
    });
  };
  bool seen = true;
  store_->read([&](store::Transaction& tx) { seen = tx.resolution_recorded(claimed); });
  EXPECT_FALSE(seen);
  record(polled);
  record(polled);
  record(claimed);
  record(claimed);
  std::vector<store::EventRecord> events;
  store_->read([&](store::Transaction& tx) {
    events = tx.task_events("task-a", 0, 10);
    seen = tx.resolution_recorded(claimed);
  });
  EXPECT_TRUE(seen);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].event_type, "BRIDGE_ENVELOPE_RESOLVED");
  EXPECT_EQ(nlohmann::json::parse(events[0].payload_json)["worker_id"], nullptr);
  EXPECT_EQ(nlohmann::json::parse(events[1].payload_json)["worker_id"], "worker-a");
}

TEST_P(StoreConformance, AWriteSeesThePlansQuarantinesAndTasksItAddsAfterReadingTheQueue) {
  // Given a write that loads a worker and reads the queue (which may bring each row's plan, its
  // quarantine and the queue's groups with it), then adds a plan, a quarantine and a task of a
  // new scope, we should read what it added, not what the queue read brought.
  insert(queued_task("task-a"));
  store::WorkerRegistration registration;
  registration.worker_id = "worker-a";
  registration.agent_id = "agent-a";
  registration.registered_at = "2026-12-02T00:00:00Z";
  store_->write([&](store::Transaction& tx) { tx.register_worker(registration); });
  const store::PlanRecord plan{.task_id = "task-a",
                               .plan_sha256 = std::string(64, 'p'),
                               .plan_json = "{}",
                               .execution_digest = std::string(64, 'b'),
                               .created_at = "2026-12-02T00:00:01Z"};
  std::optional<store::PlanRecord> plan_before;
  std::optional<store::PlanRecord> plan_after;
  bool quarantined_before = true;
  bool quarantined_after = false;
  std::vector<std::string> before;
  std::vector<std::string> after;
  store_->write([&](store::Transaction& tx) {
    (void)tx.load_worker("worker-a", 100);
    (void)tx.tasks_failed_in_domain("");
    tx.visit_queued_tasks_in_fleet_order([&](const store::TaskRow& row) {
      before.push_back(row.task_id);
      return true;
    });
    plan_before = tx.load_plan("task-a");
    quarantined_before = tx.task_quarantined("task-a", "worker-a", 100);
    tx.insert_plan(plan);
    tx.quarantine_task("task-a", "worker-a", "agent_failed", 170);
    auto other = queued_task("task-b");
    other.scope_key = "project:tenant/b";
    tx.insert_task(other);
    (void)tx.tasks_failed_in_domain("");
    plan_after = tx.load_plan("task-a");
    quarantined_after = tx.task_quarantined("task-a", "worker-a", 100);
    tx.visit_queued_tasks_in_fleet_order([&](const store::TaskRow& row) {
      after.push_back(row.task_id);
      return true;
    });
  });
  EXPECT_EQ(before, std::vector<std::string>{"task-a"});
  EXPECT_FALSE(plan_before);
  EXPECT_FALSE(quarantined_before);
  ASSERT_TRUE(plan_after);
  EXPECT_EQ(plan_after->plan_sha256, plan.plan_sha256);
  EXPECT_TRUE(quarantined_after);
  EXPECT_EQ(std::set<std::string>(after.begin(), after.end()),
            (std::set<std::string>{"task-a", "task-b"}));
  // The plans read back in pages by task id.
  std::vector<store::PlanRecord> first, rest;
  store_->write([&](store::Transaction& tx) {
    auto second = plan;
    second.task_id = "task-b";
    tx.insert_plan(second);
  });
  store_->read([&](store::Transaction& tx) {
    first = tx.plans_after("", 1);
    rest = tx.plans_after(first.empty() ? "" : first.back().task_id, 10);
  });
  ASSERT_EQ(first.size(), 1U);
  EXPECT_EQ(first[0].task_id, "task-a");
  EXPECT_EQ(first[0].plan_json, plan.plan_json);
  ASSERT_EQ(rest.size(), 1U);
  EXPECT_EQ(rest[0].task_id, "task-b");
}

TEST_P(StoreConformance, ConcurrentInsertsTakeDistinctQueueSequences) {
  // Given eight writers inserting at once, each task should get its own queue number.
  constexpr int kWriters = 8;
  race(kWriters, [&](int i) { insert(queued_task("task-" + std::to_string(i))); });
  std::set<std::int64_t> sequences;
  for (int i = 0; i < kWriters; ++i) sequences.insert(load("task-" + std::to_string(i))->seq);
  EXPECT_EQ(sequences.size(), static_cast<std::size_t>(kWriters));
}

TEST_P(StoreConformance, AFailedWriteBodyLeavesNothingBehind) {
  // Given a body that writes a task, an event and a receipt and then throws, we should find none
  // of them, and the error should be the body's.
  const auto code = code_of([&] {
    store_->write([&](store::Transaction& tx) {
      tx.insert_task(queued_task("task-a"));
      tx.append_event("task-a", "TASK_CREATED", "", {{"n", 1}}, "2026-12-02T00:00:00Z");
      tx.insert_rebind_receipt(receipt_for("task-a", "key-00000001"));
      throw Error(ErrorCode::TASK_NOT_FOUND);
    });
  });
  EXPECT_EQ(code, "TASK_NOT_FOUND");
  EXPECT_FALSE(load("task-a"));
  EXPECT_FALSE(receipt("task-a", "key-00000001"));
}

TEST_P(StoreConformance, WriteThenCommitsBothStepsTogether) {
  // Given two steps that both succeed, we should find both, and no error returned.
  const auto error =
      store_->write_then([&](store::Transaction& tx) { tx.insert_task(queued_task("task-a")); },
                         [&](store::Transaction& tx) { tx.insert_task(queued_task("task-b")); });
  EXPECT_FALSE(error);
  EXPECT_TRUE(load("task-a"));
  EXPECT_TRUE(load("task-b"));
}

TEST_P(StoreConformance, AFailedSecondStepRollsBackAloneAndIsReturned) {
  // Given a second step that writes and then throws, the first step's writes should commit, the
  // second's none, and its error come back instead of being thrown.
  const auto error = store_->write_then(
      [&](store::Transaction& tx) {
        tx.insert_task(queued_task("task-a"));
        tx.insert_rebind_receipt(receipt_for("task-a", "key-00000001"));
      },
      [&](store::Transaction& tx) {
        tx.insert_task(queued_task("task-b"));
        tx.insert_rebind_receipt(receipt_for("task-a", "key-00000002"));
        throw Error(ErrorCode::WORKER_NOT_FOUND);
      });
  EXPECT_EQ(code_of([&] {
              if (error) std::rethrow_exception(error);
            }),
            "WORKER_NOT_FOUND");
  EXPECT_TRUE(load("task-a"));
  EXPECT_TRUE(receipt("task-a", "key-00000001"));
  EXPECT_FALSE(load("task-b"));
  EXPECT_FALSE(receipt("task-a", "key-00000002"));
}

TEST_P(StoreConformance, EachAttemptOfOneWriteStandsOrFallsAlone) {
  // Given one write of four steps (a batch's items), where the second throws after writing and
  // the third fails in the store itself (a task id that exists), we should find the first and
  // fourth steps' writes committed, nothing of the second and third, and each error returned
  // to its own step.
  store_->write([&](store::Transaction& tx) { tx.insert_task(queued_task("taken")); });
  std::vector<std::exception_ptr> errors;
  store_->write([&](store::Transaction& tx) {
    errors.clear();
    errors.push_back(tx.attempt([&](store::Transaction& step) {
      step.insert_task(queued_task("item-1"));
      step.append_event("item-1", "TASK_CREATED", "", {{"n", 1}}, "2026-12-02T00:00:00Z");
    }));
    errors.push_back(tx.attempt([&](store::Transaction& step) {
      step.insert_task(queued_task("item-2"));
      step.insert_rebind_receipt(receipt_for("item-2", "key-00000002"));
      throw Error(ErrorCode::TASK_NOT_CLAIMED);
    }));
    errors.push_back(
        tx.attempt([&](store::Transaction& step) { step.insert_task(queued_task("taken")); }));
    errors.push_back(
        tx.attempt([&](store::Transaction& step) { step.insert_task(queued_task("item-4")); }));
  });
  ASSERT_EQ(errors.size(), 4U);
  const auto code = [](const std::exception_ptr& error) {
    return code_of([&] {
      if (error) std::rethrow_exception(error);
    });
  };
  EXPECT_FALSE(errors[0]);
  EXPECT_EQ(code(errors[1]), "TASK_NOT_CLAIMED");
  EXPECT_EQ(code(errors[2]), "STORE_FAILURE");
  EXPECT_FALSE(errors[3]);
  EXPECT_TRUE(load("item-1"));
  EXPECT_FALSE(load("item-2"));
  EXPECT_FALSE(receipt("item-2", "key-00000002"));
  EXPECT_TRUE(load("item-4"));
  std::size_t events = 0;
  store_->read([&](store::Transaction& tx) { events = tx.task_events("item-1", 0, 10).size(); });
  EXPECT_EQ(events, 1U);
}

TEST_P(StoreConformance, AFailedFirstStepRunsNoSecondAndCommitsNothing) {
  // Given a first step that throws, the second should not run and the error should propagate.
  bool second_ran = false;
  const auto code = code_of([&] {
    store_->write_then(
        [&](store::Transaction& tx) {
          tx.insert_task(queued_task("task-a"));
          throw Error(ErrorCode::TASK_NOT_FOUND);
        },
        [&](store::Transaction&) { second_ran = true; });
  });
  EXPECT_EQ(code, "TASK_NOT_FOUND");
  EXPECT_FALSE(second_ran);
  EXPECT_FALSE(load("task-a"));
}

TEST_P(StoreConformance, ConcurrentTwoStepWritesKeepEachSecondStepApart) {
  // Given eight writers at once, each with a second step that fails for the odd ones, every
  // first step should commit and exactly the even second steps.
  constexpr int kWriters = 8;
  std::vector<char> returned(kWriters, 0);  // not vector<bool>: each thread sets its own
  race(kWriters, [&](int i) {
    const auto n = std::to_string(i);
    const auto error = store_->write_then(
        [&](store::Transaction& tx) { tx.insert_task(queued_task("first-" + n)); },
        [&](store::Transaction& tx) {
          tx.insert_task(queued_task("second-" + n));
          if (i % 2 == 1) throw Error(ErrorCode::WORKER_NOT_FOUND);
        });
    returned[static_cast<std::size_t>(i)] = error != nullptr ? 1 : 0;
  });
  for (int i = 0; i < kWriters; ++i) {
    const auto n = std::to_string(i);
    EXPECT_TRUE(load("first-" + n)) << i;
    EXPECT_EQ(load("second-" + n).has_value(), i % 2 == 0) << i;
    EXPECT_EQ(returned[static_cast<std::size_t>(i)] == 1, i % 2 == 1) << i;
  }
}

TEST_P(StoreConformance, RebindTaskShowsEachColumnAsStored) {
  // Given a task whose claimant is "" (not NULL) and which has no lease, we should see exactly
  // that: the CAS predicate tells the two apart.
  store::TaskRow row = queued_task("task-a");
  insert(row);
  std::optional<store::RebindTask> task;
  store_->read([&](store::Transaction& tx) { task = tx.load_rebind_task("task-a"); });
  ASSERT_TRUE(task);
  EXPECT_EQ(task->status, "QUEUED");
  EXPECT_EQ(task->revision, 4);
  EXPECT_EQ(task->attempt, 1);
  EXPECT_EQ(task->metadata_json, row.metadata_json);
  EXPECT_EQ(task->verification_json, row.verification_json);
  EXPECT_EQ(task->required_capabilities_json, row.required_capabilities_json);
  store_->read([&](store::Transaction& tx) { task = tx.load_rebind_task("task-missing"); });
  EXPECT_FALSE(task);
}

TEST_P(StoreConformance, RebindReceiptRoundTripsAndIsKeptOnce) {
  // Given a receipt, we should read it back whole by (task, key), refuse a second one for the
  // same pair and keep the first.
  insert(queued_task("task-a"));
  const auto first = receipt_for("task-a", "key-00000001");
  store_->write([&](store::Transaction& tx) { tx.insert_rebind_receipt(first); });
  EXPECT_EQ(receipt("task-a", "key-00000001"), first);
  EXPECT_FALSE(receipt("task-a", "key-00000002"));
  EXPECT_FALSE(receipt("task-b", "key-00000001"));
  auto second = first;
  second.request_sha256 = std::string(64, 'f');
  EXPECT_EQ(write_code([&](store::Transaction& tx) { tx.insert_rebind_receipt(second); }),
            "STORE_FAILURE");
  EXPECT_EQ(receipt("task-a", "key-00000001"), first);
}

TEST_P(StoreConformance, RebindAppliesOnlyWhereEveryFenceHolds) {
  // Given the task as the rebind checked it, we should apply it once; any fence that moved
  // (status, revision, attempt, the claimant, a lease) should leave the row as it was.
  struct Fence {
    const char* name;
    std::function<void(store::TaskRow&)> move_task;
  };
  const std::vector<Fence> fences = {
      {"status", [](store::TaskRow& r) { r.status = "NEEDS_REWORK"; }},
      {"revision", [](store::TaskRow& r) { r.revision = 5; }},
      {"attempt", [](store::TaskRow& r) { r.attempt = 2; }},
      {"claimant", [](store::TaskRow& r) { r.claimed_by = "worker-1"; }},
      {"lease token", [](store::TaskRow& r) { r.lease_token_hash = std::string(64, '1'); }},
      {"lease expiry", [](store::TaskRow& r) { r.lease_expires_at = "2026-12-02T00:02:00Z"; }},
  };
  int n = 0;
  for (const auto& fence : fences) {
    const std::string task_id = "task-fence-" + std::to_string(++n);
    store::TaskRow row = queued_task(task_id);
    fence.move_task(row);
    insert(row);
    EXPECT_FALSE(apply(rebind_of(task_id))) << fence.name;
    EXPECT_EQ(load(task_id)->metadata_json, row.metadata_json) << fence.name;
  }

  insert(queued_task("task-a"));
  ASSERT_TRUE(apply(rebind_of("task-a")));
  const auto after = *load("task-a");
  const auto update = rebind_of("task-a");
  EXPECT_EQ(after.revision, 5);
  EXPECT_EQ(after.metadata_json, update.metadata_json);
  EXPECT_EQ(after.execution_digest, update.execution_digest);
  EXPECT_EQ(after.action, "deterministic");
  EXPECT_EQ(after.adapter, "deterministic");
  EXPECT_EQ(after.capability_scope, update.capability_scope);
  EXPECT_EQ(after.updated_at, update.updated_at);
  EXPECT_FALSE(apply(rebind_of("task-a"))) << "a second apply of the same CAS";
}

TEST_P(StoreConformance, ConcurrentRebindsOfOneTaskApplyOnce) {
  // Given eight writers racing the same rebind CAS, each with its own receipt key, we should
  // apply exactly one and keep exactly one receipt.
  insert(queued_task("task-a"));
  constexpr int kWriters = 8;
  std::atomic<int> applied{0};
  race(kWriters, [&](int i) {
    bool won = false;
    store_->write([&](store::Transaction& tx) {
      won = tx.apply_rebind(rebind_of("task-a"));
      if (won) tx.insert_rebind_receipt(receipt_for("task-a", "key-0000000" + std::to_string(i)));
    });
    if (won) ++applied;
  });
  EXPECT_EQ(applied.load(), 1);
  int receipts = 0;
  for (int i = 0; i < kWriters; ++i) {
    if (receipt("task-a", "key-0000000" + std::to_string(i))) ++receipts;
  }
  EXPECT_EQ(receipts, 1);
  EXPECT_EQ(load("task-a")->revision, 5);
}

TEST_P(StoreConformance, AReadSeesOneSnapshotWhileAWriteCommits) {
  // Given a read that found no receipt and a rebind (its receipt with it) committing before the
  // read goes on, we should go on seeing the task as it was: a reader that saw the new revision
  // without its receipt would refuse an identical request as a conflict instead of replaying it.
  insert(queued_task("task-a"));
  std::optional<store::RebindReceipt> before;
  std::optional<store::TaskRow> task;
  store_->read([&](store::Transaction& tx) {
    before = tx.rebind_receipt("task-a", "key-00000000");
    std::thread([&] {
      store_->write([&](store::Transaction& writer) {
        ASSERT_TRUE(writer.apply_rebind(rebind_of("task-a")));
        writer.insert_rebind_receipt(receipt_for("task-a", "key-00000000"));
      });
    }).join();
    task = tx.load_task("task-a");
  });
  EXPECT_FALSE(before.has_value());
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(task->revision, 4);
  EXPECT_EQ(load("task-a")->revision, 5) << "the write committed";
}

store::ClaimRecord claim_for(int n, double now, double expires_at) {
  const std::string id = std::to_string(n);
  return {.claim_id = "claim-" + id,
          .reservation_id = "reservation-" + id,
          .task_id = "task-" + id,
          .worker_id = "worker-a",
          .agent_id = "agent-a",
          .attempt = 1,
          .task_revision = 4,
          .scope_key = "global",
          .failure_domain = "domain-a",
          .max_slots = 1,
          .score = 1,
          .lease_expires_at = expires_at,
          .now = now,
          .created_at = "2026-12-02T00:00:00Z"};
}

TEST_P(StoreConformance, ConcurrentClaimsOfOneTaskGrantOne) {
  // Given eight workers racing to claim one queued task (the claim CAS, then the claim row on
  // each one's own slot), we should grant exactly one and leave the task with that worker.
  insert(queued_task("task-0"));
  constexpr int kWriters = 8;
  std::atomic<int> granted{0};
  race(kWriters, [&](int i) {
    bool won = false;
    store_->write([&](store::Transaction& tx) {
      won = false;
      auto row = tx.load_task("task-0");
      if (!row || row->status != "QUEUED") return;
      row->status = "CLAIMED";
      row->claimed_by = "worker-" + std::to_string(i);
      row->revision = 5;
      if (!tx.update_task(*row, 4, 0)) return;
      auto claim = claim_for(0, 100, 200);
      claim.claim_id = "claim-" + std::to_string(i);
      claim.reservation_id = "reservation-" + std::to_string(i);
      claim.worker_id = row->claimed_by;
      tx.insert_claim(claim);
      won = true;
    });
    if (won) ++granted;
  });
  EXPECT_EQ(granted.load(), 1);
  const auto row = load("task-0");
  EXPECT_EQ(row->status, "CLAIMED");
  EXPECT_EQ(row->revision, 5);
}

TEST_P(StoreConformance, EveryConcurrentDispatchCountsTowardItsScopesTurn) {
  // Given a task queued in scope a before one in scope b, and eight claims in scope a committing
  // at once, we should count all eight and offer b's task first: a has been served more.
  auto a = queued_task("task-a");
  a.scope_key = "project:tenant/a";
  auto b = queued_task("task-b");
  b.scope_key = "project:tenant/b";
  insert(a);
  insert(b);
  constexpr int kWriters = 8;
  race(kWriters, [&](int i) {
    auto claim = claim_for(100 + i, 100, 200);
    claim.scope_key = a.scope_key;
    claim.worker_id = "worker-" + std::to_string(i);
    store_->write([&](store::Transaction& tx) { tx.insert_claim(claim); });
  });
  std::vector<std::pair<std::string, std::int64_t>> counts;
  std::vector<std::string> order;
  store_->read([&](store::Transaction& tx) {
    counts = tx.scope_dispatch_counts();
    tx.visit_queued_tasks_in_fleet_order([&](const store::TaskRow& row) {
      order.push_back(row.task_id);
      return true;
    });
  });
  EXPECT_EQ(counts, (std::vector<std::pair<std::string, std::int64_t>>{{a.scope_key, kWriters}}));
  EXPECT_EQ(order, (std::vector<std::string>{"task-b", "task-a"}));
}

TEST_P(StoreConformance, AHeartbeatAndASweepOfOneLeaseCommitOne) {
  // Given a heartbeat and a sweep that read the same claimed task and then write at once, both
  // expecting its current generation, exactly one should commit; whichever it is, the task is
  // either extended (generation 1) or requeued (revision 5), never a mix.
  for (int round = 0; round < 20; ++round) {
    const std::string task_id = "task-" + std::to_string(round);
    store::TaskRow claimed = queued_task(task_id);
    claimed.status = "CLAIMED";
    claimed.lease_expires_at = "2026-12-02T00:01:00Z";
    insert(claimed);
    store::TaskRow heartbeat = *load(task_id);
    heartbeat.lease_generation = 1;
    heartbeat.lease_expires_at = "2026-12-02T00:05:00Z";
    store::TaskRow sweep = *load(task_id);
    sweep.status = "QUEUED";
    sweep.lease_expires_at = "";
    sweep.revision = 5;
    std::atomic<int> committed{0};
    race(2, [&](int i) {
      const store::TaskRow& row = i == 0 ? heartbeat : sweep;
      bool won = false;
      store_->write([&](store::Transaction& tx) { won = tx.update_task(row, 4, 0); });
      if (won) ++committed;
    });
    EXPECT_EQ(committed.load(), 1) << "round " << round;
    const auto after = *load(task_id);
    EXPECT_TRUE(after == heartbeat || after == sweep) << "round " << round;
  }
}

TEST_P(StoreConformance, AClaimantSeesTheFailuresOfItsDomainUpToItsOwnWrites) {
  // Given a worker of domain-a loaded to claim (which may fetch its domain's failed tasks with
  // it) and a dispatch of its domain released after, we should count the release.
  store::WorkerRegistration registration;
  registration.worker_id = "worker-a";
  registration.agent_id = "agent-a";
  registration.registered_at = "2026-12-02T00:00:00Z";
  registration.failure_domain = "domain-a";
  std::set<std::string> failed;
  store_->write([&](store::Transaction& tx) {
    tx.register_worker(registration);
    tx.insert_claim(claim_for(1, 100, 200));
  });
  store_->write([&](store::Transaction& tx) {
    const auto worker = tx.load_claimant("worker-a", 150);
    ASSERT_TRUE(worker);
    EXPECT_EQ(worker->failure_domain, "domain-a");
    tx.end_dispatch("task-1", "RELEASED", 150);
    failed = tx.tasks_failed_in_domain(worker->failure_domain);
  });
  EXPECT_EQ(failed, std::set<std::string>{"task-1"});
  store_->read([&](store::Transaction& tx) {
    (void)tx.load_claimant("worker-a", 150);
    failed = tx.tasks_failed_in_domain("domain-a");
  });
  EXPECT_EQ(failed, std::set<std::string>{"task-1"});
}

TEST_P(StoreConformance, AWorkersLastSlotIsTakenOnce) {
  // Given eight claims racing for a worker's one slot, we should grant exactly one and refuse
  // the rest with FLEET_WORKER_CAPACITY_EXHAUSTED; an ended claim frees the slot again.
  constexpr int kWriters = 8;
  std::atomic<int> granted{0};
  std::atomic<int> exhausted{0};
  race(kWriters, [&](int i) {
    const auto code =
        write_code([&](store::Transaction& tx) { tx.insert_claim(claim_for(i, 100, 200)); });
    if (code == test::kOk) ++granted;
    if (code == "FLEET_WORKER_CAPACITY_EXHAUSTED") ++exhausted;
  });
  EXPECT_EQ(granted.load(), 1);
  EXPECT_EQ(exhausted.load(), kWriters - 1);
  EXPECT_EQ(write_code([&](store::Transaction& tx) { tx.insert_claim(claim_for(20, 150, 300)); }),
            "FLEET_WORKER_CAPACITY_EXHAUSTED")
      << "a live lease keeps its slot";
  EXPECT_EQ(write_code([&](store::Transaction& tx) { tx.insert_claim(claim_for(21, 200, 300)); }),
            test::kOk)
      << "a lease that ran out gives its slot up";
  store_->write([&](store::Transaction& tx) { tx.end_claim("claim-21", "SUBMITTED", "now"); });
  EXPECT_EQ(write_code([&](store::Transaction& tx) { tx.insert_claim(claim_for(22, 210, 400)); }),
            test::kOk)
      << "an ended claim frees its slot";
}

TEST_P(StoreConformance, ClaimWindowsAreEveryCooldownAndQuarantineEndingAfterATime) {
  // Given one worker whose circuit is open until 160 and who is quarantined from two tasks
  // until 130 and 170, one quarantined from a task until 100 (already past at 110), and one
  // with a circuit that opened and whose cooldown ended, we should report the first worker's
  // three ends, soonest first, and nothing of the others.
  store_->write([&](store::Transaction& tx) {
    for (const std::string worker : {"worker-a", "worker-b", "worker-c"}) {
      tx.register_worker({.worker_id = worker,
                          .agent_id = "agent",
                          .capabilities = {},
                          .allowed_adapters = {},
                          .labels = {},
                          .tenants = {},
                          .registered_at = "2026-12-02T00:00:00Z",
                          .seen_at = 90,
                          .max_slots = 1,
                          .failure_domain = ""});
    }
    tx.note_worker_failure("worker-a", 100, 1, 160);
    tx.quarantine_task("task-1", "worker-a", "agent_failed", 170);
    tx.quarantine_task("task-2", "worker-a", "agent_failed", 130);
    tx.quarantine_task("task-1", "worker-b", "agent_failed", 100);
    tx.note_worker_failure("worker-c", 50, 1, 105);
  });
  std::vector<store::ClaimWindow> windows;
  const auto ends = [&] {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& window : windows) out.emplace_back(window.worker_id, window.at);
    return out;
  };
  using Ends = std::vector<std::pair<std::string, double>>;
  store_->read([&](store::Transaction& tx) { windows = tx.claim_windows(110); });
  EXPECT_EQ(ends(), (Ends{{"worker-a", 130}, {"worker-a", 160}, {"worker-a", 170}}));

  // Past 130 the cooldown is the soonest; past everything, nothing is left to wait for.
  store_->read([&](store::Transaction& tx) { windows = tx.claim_windows(140); });
  EXPECT_EQ(ends(), (Ends{{"worker-a", 160}, {"worker-a", 170}}));
  store_->read([&](store::Transaction& tx) { windows = tx.claim_windows(170); });
  EXPECT_TRUE(windows.empty());
}

TEST_P(StoreConformance, ABranchHoldsOneOpenWriterLease) {
  // Given eight writer leases racing for one branch, we should open exactly one and refuse the
  // rest with WRITER_LEASE_BRANCH_BUSY; once it ends, the branch takes a new one.
  auto lease_for = [](int n) {
    const std::string id = std::to_string(n);
    return store::WriterLease{.writer_lease_id = "lease-" + id,
                              .target_branch = "refs/heads/main",
                              .task_id = "task-" + id,
                              .claim_id = "claim-" + id,
                              .attempt = 1,
                              .execution_digest = std::string(64, 'b'),
                              .agent_id = "agent-a",
                              .created_at = "2026-12-02T00:00:00Z"};
  };
  constexpr int kWriters = 8;
  std::atomic<int> opened{0};
  std::atomic<int> busy{0};
  race(kWriters, [&](int i) {
    const auto code =
        write_code([&](store::Transaction& tx) { tx.insert_writer_lease(lease_for(i)); });
    if (code == test::kOk) ++opened;
    if (code == "WRITER_LEASE_BRANCH_BUSY") ++busy;
  });
  EXPECT_EQ(opened.load(), 1);
  EXPECT_EQ(busy.load(), kWriters - 1);
  std::vector<store::WriterLease> open;
  store_->read([&](store::Transaction& tx) { open = tx.open_writer_leases("refs/heads/main"); });
  ASSERT_EQ(open.size(), 1U);
  store_->write(
      [&](store::Transaction& tx) { tx.end_writer_lease(open[0].writer_lease_id, "now"); });
  EXPECT_EQ(write_code([&](store::Transaction& tx) { tx.insert_writer_lease(lease_for(30)); }),
            test::kOk);
}

INSTANTIATE_TEST_SUITE_P(
    Backends, StoreConformance,
    ::testing::Values(
        Backend{"sqlite",
                [](const std::filesystem::path& dir, const Clock& clock, Keep&) {
                  return store::open_sqlite_store({.path = dir / "state.sqlite3"}, clock);
                }},
        // On the injected clock, as SQLite is: the database clock is tested on its own.
        Backend{"postgresql",
                [](const std::filesystem::path&, const Clock& clock,
                   Keep& keep) -> std::unique_ptr<store::Store> {
                  const auto admin = test::postgres_admin_url();
                  if (!admin) return nullptr;
                  auto database = std::make_shared<test::ScopedPostgresDatabase>(*admin);
                  keep = database;
                  store::PostgresOptions options;
                  options.url = database->url();
                  options.database_clock = false;
                  return store::open_postgres_store(std::move(options), clock);
                }}),
    [](const ::testing::TestParamInfo<Backend>& backend) { return backend.param.name; });

}  // namespace
}  // namespace aios::store_test
