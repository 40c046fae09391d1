// The task plane after an owner execution rebind done the seed's way: the rebind daemon (the
// seed's Python one, or any process that keeps its contract) rewrites only metadata_json (the
// envelope and its projection) and the revision. metadata.execution is authoritative, so the
// fleet's eligibility must follow the new envelope, not the one the task was created with: the
// fleet reads the narrow columns, which schema 10's trigger moves with the metadata.

#include <SQLiteCpp/SQLiteCpp.h>

#include <string>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "fleet/fleet_fixture.hpp"

namespace aios::fleet_test {
namespace {

const Json kWriteScope = {"git.read", "git.test", "governed.write.branch", "governed.write.file"};

class RebindCompatTest : public PlaneTest {
 protected:
  void SetUp() override {
    Json grant = kWriteScope;
    grant.push_back("code.read");
    agent_ = make_agent("agent-rebind", grant);
    register_worker(agent_, "worker-reader",
                    {{"capabilities", {"code.read", "git.read"}},
                     {"allowed_adapters", {"compact_interface_map", "source_capture"}}});
    Json writer_capabilities = kWriteScope;
    writer_capabilities.push_back("code.read");
    register_worker(
        agent_, "worker-writer",
        {{"capabilities", writer_capabilities}, {"allowed_adapters", {"deterministic"}}});

    TaskSpec spec;
    spec.task_id = "rebind-1";
    spec.execution = {{"action", "source_capture"},
                      {"adapter", "compact_interface_map"},
                      {"capability_scope", {"code.read", "git.read"}}};
    create_task(spec);
  }

  // The seed's ExecutionRebindService write: the deterministic plan's envelope into metadata,
  // revision + 1, under its CAS. Returns the new execution digest.
  std::string rebind_to_deterministic() {
    const auto binding = GovernedBinding::from_mapping(binding_for("rebind-1"));
    const Json request = {
        {"action", "deterministic"},
        {"adapter", "deterministic"},
        {"capability_scope", kWriteScope},
        {"change_set",
         {{{"path", "app/example.py"}, {"operation", "write_file"}, {"content", "VALUE=1\n"}}}},
        {"verification",
         {{{"label", "unit"},
           {"argv", {"/usr/bin/python3", "-m", "pytest", "-q"}},
           {"cwd", "."},
           {"timeout_seconds", 120}}}},
        {"governance", {{"commit_idempotency_key", "rebind-1-commit-v1"}}},
    };
    const Json envelope = project_execution_envelope(binding, request);
    Json metadata = view("rebind-1")["metadata"];
    metadata["execution"] = envelope;
    metadata["execution_projection"]["execution_digest"] = envelope["execution_digest"];
    int changed = 0;
    db_.write([&](SQLite::Database& db) {
      SQLite::Statement cas(db,
                            "UPDATE tasks SET \"metadata_json\"=?, revision=?, claimed_by=NULL, "
                            "lease_token_hash=NULL, lease_expires_at=NULL "
                            "WHERE task_id=? AND status=? AND revision=? AND attempt=? "
                            "AND claimed_by IS ? AND lease_token_hash IS NULL AND "
                            "lease_expires_at IS NULL");
      cas.bind(1, canonical_json(metadata));
      cas.bind(2, 2);
      cas.bind(3, "rebind-1");
      cas.bind(4, "QUEUED");
      cas.bind(5, 1);
      cas.bind(6, 0);
      cas.bind(7);
      changed = cas.exec();
    });
    if (changed != 1) throw std::runtime_error("rebind CAS did not apply");
    return envelope["execution_digest"];
  }

  std::vector<std::string> offered(const std::string& worker) {
    std::vector<std::string> ids;
    const Json polled = plane_.poll(agent_, fleet::poll_request_of({{"worker_id", worker}}));
    for (const auto& task : polled["tasks"]) {
      ids.push_back(task["task_id"]);
    }
    return ids;
  }

  Agent agent_;
};

TEST_F(RebindCompatTest, BeforeTheRebindOnlyTheReaderIsEligible) {
  // Given the task as created (source_capture, compact_interface_map), we should offer it to
  // the reader and not to the deterministic-only writer (the control for the next test).
  EXPECT_EQ(offered("worker-reader"), (std::vector<std::string>{"rebind-1"}));
  EXPECT_EQ(offered("worker-writer"), (std::vector<std::string>{}));
}

TEST_F(RebindCompatTest, ReboundTaskIsKeptFromTheReadOnlyWorker) {
  // Given the task rebound to a deterministic plan needing governed writes, we should keep the
  // read-only worker (no governed write, no deterministic adapter) away from it.
  const std::string digest = rebind_to_deterministic();
  ASSERT_EQ(view("rebind-1")["execution_digest"], digest);

  EXPECT_EQ(reasons("rebind-1", "worker-reader"),
            (std::vector<std::string>{"capability_missing", "adapter_not_allowed"}));
  EXPECT_EQ(offered("worker-reader"), (std::vector<std::string>{}));
  EXPECT_EQ(code_of([&] {
              plane_.claim(agent_, "rebind-1",
                           fleet::claim_request_of({{"worker_id", "worker-reader"},
                                                    {"expected_revision", 2},
                                                    {"execution_digest", digest}}));
            }),
            "WORKER_CAPABILITY_MISSING");
}

TEST_F(RebindCompatTest, ReboundTaskIsOfferedToTheGovernedWriter) {
  // Given the same rebind, we should offer the task to the worker holding the new scope and
  // the deterministic adapter, and let it claim with the new digest.
  const std::string digest = rebind_to_deterministic();

  EXPECT_EQ(reasons("rebind-1", "worker-writer"), (std::vector<std::string>{}));
  EXPECT_EQ(offered("worker-writer"), (std::vector<std::string>{"rebind-1"}));
  EXPECT_EQ(code_of([&] {
              plane_.claim(agent_, "rebind-1",
                           fleet::claim_request_of({{"worker_id", "worker-writer"},
                                                    {"expected_revision", 2},
                                                    {"execution_digest", digest}}));
            }),
            kOk);
}

}  // namespace
}  // namespace aios::fleet_test
