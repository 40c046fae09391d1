// The store conformance suite: the contract of every store::Store operation, each fence, and
// bounded races, run against every backend (only SQLite so far). A new backend passes this
// before anything runs on it.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "aios/store.hpp"
#include "aios/sys.hpp"
#include "support/code_of.hpp"
#include "support/daemon.hpp"

namespace aios::store_test {
namespace {

using test::code_of;

// A backend under test: a fresh, empty, migrated store in `dir` on `clock`.
struct Backend {
  std::string name;
  std::function<std::unique_ptr<store::Store>(const std::filesystem::path& dir, const Clock& clock)>
      open;
};

// The SQLite backend with the Database it runs over.
class OwnedSqliteStore final : public store::Store {
 public:
  OwnedSqliteStore(const std::filesystem::path& dir, const Clock& clock)
      : db_({.path = dir / "state.sqlite3"}), store_(db_, clock) {}
  void write(const std::function<void(store::Transaction&)>& body) override { store_.write(body); }
  void read(const std::function<void(store::Transaction&)>& body) override { store_.read(body); }
  TimePoint now() const override { return store_.now(); }
  void prepare_rebinds() override { store_.prepare_rebinds(); }

 private:
  Database db_;
  store::SqliteStore store_;
};

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
  row.capability_scope_json = R"(["git.read"])";
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
          .capability_scope_json = R"(["git.read","git.test"])",
          .updated_at = "2026-12-02T00:00:01Z"};
}

class StoreConformance : public ::testing::TestWithParam<Backend> {
 protected:
  StoreConformance() : clock_(TimePoint(std::chrono::seconds(1900000000))) {}

  void SetUp() override {
    store_ = GetParam().open(dir_.path(), clock_);
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
  bool apply(const store::RebindUpdate& update) {
    bool applied = false;
    store_->write([&](store::Transaction& tx) { applied = tx.apply_rebind(update); });
    return applied;
  }

  test::ScopedTempDir dir_{"aios-store-conformance"};
  ManualClock clock_;
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
  store_->write([&](store::Transaction& tx) { updated = tx.update_task(next, 3); });
  EXPECT_FALSE(updated);
  EXPECT_EQ(load("task-a")->status, "QUEUED");
  store_->write([&](store::Transaction& tx) { updated = tx.update_task(next, 4); });
  EXPECT_TRUE(updated);
  EXPECT_EQ(*load("task-a"), next);
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
  EXPECT_EQ(code_of([&] {
              store_->write([&](store::Transaction& tx) { tx.insert_rebind_receipt(second); });
            }),
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
  EXPECT_EQ(after.capability_scope_json, update.capability_scope_json);
  EXPECT_EQ(after.updated_at, update.updated_at);
  EXPECT_FALSE(apply(rebind_of("task-a"))) << "a second apply of the same CAS";
}

TEST_P(StoreConformance, ConcurrentRebindsOfOneTaskApplyOnce) {
  // Given eight writers racing the same rebind CAS, each with its own receipt key, we should
  // apply exactly one and keep exactly one receipt.
  insert(queued_task("task-a"));
  constexpr int kWriters = 8;
  std::atomic<int> applied{0};
  std::latch start(kWriters);
  std::vector<std::thread> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      start.arrive_and_wait();
      store_->write([&](store::Transaction& tx) {
        if (!tx.apply_rebind(rebind_of("task-a"))) return;
        tx.insert_rebind_receipt(receipt_for("task-a", "key-0000000" + std::to_string(i)));
        ++applied;
      });
    });
  }
  for (auto& writer : writers) writer.join();
  EXPECT_EQ(applied.load(), 1);
  int receipts = 0;
  for (int i = 0; i < kWriters; ++i) {
    if (receipt("task-a", "key-0000000" + std::to_string(i))) ++receipts;
  }
  EXPECT_EQ(receipts, 1);
  EXPECT_EQ(load("task-a")->revision, 5);
}

INSTANTIATE_TEST_SUITE_P(
    Backends, StoreConformance,
    ::testing::Values(Backend{"sqlite",
                              [](const std::filesystem::path& dir, const Clock& clock) {
                                return std::make_unique<OwnedSqliteStore>(dir, clock);
                              }}),
    [](const ::testing::TestParamInfo<Backend>& backend) { return backend.param.name; });

}  // namespace
}  // namespace aios::store_test
