#pragma once
// Shared support for the task-plane suites: a scoped temporary directory, a real SQLite
// Database in it, a ManualClock, the SQLite store over both, a TaskPlane over that, and builders
// for agents, workers and tasks with valid governed bindings. Raw SQL helpers read the tables the
// way the seed's tests do (`SELECT … FROM fleet_dispatches`), through Database::read.

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aios/error.hpp"
#include "aios/fleet.hpp"
#include "aios/store.hpp"
#include "aios/sys.hpp"
#include "store/sqlite/database.hpp"
#include "support/code_of.hpp"
#include "support/recording.hpp"

namespace aios::fleet_test {

using Json = nlohmann::json;
using std::chrono::seconds;

using aios::test::code_of;
using aios::test::kOk;

// A fresh directory under the system temp dir, removed with everything in it.
class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "aios-fleet-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScopedTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// 2030-01-01T00:00:00Z: far from the epoch, so a zero timestamp is never "recent".
inline TimePoint start_time() {
  return TimePoint(std::chrono::sys_days(std::chrono::year(2030) / 1 / 1));
}

// The nine binding fields for `task_id` (a valid CREATE_NEW binding).
inline Json binding_for(const std::string& task_id) {
  const std::string base(40, 'a');
  return {
      {"task_id", task_id},
      {"job_id", "job-" + task_id},
      {"repository", "aios/aios"},
      {"base_oid", base},
      {"expected_branch_oid", base},
      {"target_branch", "agent/" + task_id},
      {"branch_mode", "CREATE_NEW"},
      {"generation", 1},
      {"idempotency_key", task_id + "-binding-v1"},
  };
}

// What a test varies about a task; the rest is a valid source_capture task needing code.read.
struct TaskSpec {
  std::string task_id;
  std::string scope_type = "global";
  std::string tenant_id;
  std::string project_id;
  int priority = 0;
  int max_attempts = 3;
  Json metadata = Json::object();
  Json execution = {{"action", "source_capture"},
                    {"adapter", "source_capture"},
                    {"capability_scope", {"code.read"}}};
};

// The owner's POST /v1/tasks body for `spec`.
inline Json task_body(const TaskSpec& spec) {
  Json body = {
      {"task_id", spec.task_id},
      {"goal", "Read the repository for " + spec.task_id},
      {"required_capabilities", {"code.read"}},
      {"max_attempts", spec.max_attempts},
      {"priority", spec.priority},
      {"scope_type", spec.scope_type},
      {"metadata", spec.metadata},
      {"binding", binding_for(spec.task_id)},
      {"execution", spec.execution},
  };
  if (!spec.tenant_id.empty()) body["tenant_id"] = spec.tenant_id;
  if (!spec.project_id.empty()) body["project_id"] = spec.project_id;
  return body;
}

inline TaskSpec project_task(std::string task_id, std::string tenant, std::string project) {
  TaskSpec spec;
  spec.task_id = std::move(task_id);
  spec.scope_type = "project";
  spec.tenant_id = std::move(tenant);
  spec.project_id = std::move(project);
  return spec;
}

// A temp dir, a Database, a ManualClock, recording fakes of the rest of the environment
// (counting randomness, a fault plan that records the points reached) and a TaskPlane with
// default options.
class PlaneTest : public ::testing::Test {
 protected:
  // Opens another backend's store on the plane's clock, for a case that runs the plane there.
  using StoreOpener = std::function<std::unique_ptr<store::Store>(const Clock&)>;

  PlaneTest() : PlaneTest(StoreOpener()) {}
  // The plane over the store `open` returns (the SQLite one when it returns none).
  explicit PlaneTest(const StoreOpener& open)
      : clock_(start_time()),
        db_(DatabaseOptions{.path = db_path()}),
        store_(db_, clock_),
        other_store_(open ? open(clock_) : nullptr),
        plane_(other_store_ ? *other_store_ : static_cast<store::Store&>(store_), environment_,
               options_) {}

  std::filesystem::path db_path() const { return dir_.path() / "tasks.sqlite3"; }

  // A new agent with `capabilities` granted, authenticated through its token.
  Agent make_agent(const std::string& agent_id, Json capabilities = Json::array({"code.read"})) {
    const Json created = plane_.create_agent(
        fleet::agent_grant_of({{"agent_id", agent_id}, {"granted_capabilities", capabilities}}));
    auto agent = plane_.authenticate_agent(created["token"].get<std::string>());
    if (!agent) throw std::runtime_error("agent token did not authenticate");
    return *agent;
  }

  // Registers `worker_id` for `agent` with code.read and the default adapters; `extra` fields
  // (max_concurrency, tenants, ...) override.
  Json register_worker(const Agent& agent, const std::string& worker_id,
                       const Json& extra = Json::object()) {
    Json body = {{"worker_id", worker_id}, {"capabilities", {"code.read"}}};
    for (const auto& item : extra.items()) body[item.key()] = item.value();
    return plane_.register_worker(agent, fleet::worker_registration_of(body));
  }

  Json create_task(const TaskSpec& spec) {
    auto [status, view] = plane_.create_task(fleet::task_submission_of(task_body(spec)));
    if (status != 201) throw std::runtime_error("create_task did not return 201");
    return view;
  }

  Json create_task(const std::string& task_id) {
    TaskSpec spec;
    spec.task_id = task_id;
    return create_task(spec);
  }

  // The owner's view of a task.
  Json view(const std::string& task_id) { return plane_.task_view(task_id, nullptr); }

  // The claim body a worker sends for the task's current revision and digest.
  Json claim_body(const std::string& task_id, const std::string& worker_id) {
    const Json current = view(task_id);
    return {{"worker_id", worker_id},
            {"expected_revision", current["revision"]},
            {"execution_digest", current["execution_digest"]}};
  }

  Json claim(const Agent& agent, const std::string& task_id, const std::string& worker_id) {
    return plane_.claim(agent, task_id, fleet::claim_request_of(claim_body(task_id, worker_id)));
  }

  std::pair<int, Json> submit(const Agent& agent, const Json& claimed,
                              const std::string& key = "result-key-0001") {
    return plane_.submit_result(
        agent, claimed["task_id"].get<std::string>(),
        fleet::result_submission_of({{"lease_token", claimed["lease_token"]},
                                     {"attempt", claimed["attempt"]},
                                     {"execution_digest", claimed["execution_digest"]},
                                     {"idempotency_key", key},
                                     {"result", {{"summary", "done"}}}},
                                    plane_.options().max_result_bytes));
  }

  Json release(const Agent& agent, const Json& claimed) {
    return plane_.release(agent, claimed["task_id"].get<std::string>(),
                          fleet::release_of({{"lease_token", claimed["lease_token"]},
                                             {"failure_class", "runtime_crash"},
                                             {"reason", "the runtime crashed"}}));
  }

  // The worker's entry in fleet_view().
  Json worker_entry(const std::string& worker_id) {
    // Keep the view alive: a range-for over a member of a temporary would dangle.
    const Json fleet = plane_.fleet_view();
    for (const auto& worker : fleet["workers"]) {
      if (worker["worker_id"] == worker_id) return worker;
    }
    throw std::runtime_error("worker not in fleet view: " + worker_id);
  }

  // The reasons eligibility() gives for `worker_id` on `task_id`.
  std::vector<std::string> reasons(const std::string& task_id, const std::string& worker_id) {
    const Json eligibility = plane_.eligibility(task_id);
    for (const auto& worker : eligibility["workers"]) {
      if (worker["worker_id"] == worker_id) {
        return worker["reasons"].get<std::vector<std::string>>();
      }
    }
    throw std::runtime_error("worker not in eligibility: " + worker_id);
  }

  // Every row of `sql` (bound to `params` as text), each column as text ("NULL" for NULL).
  std::vector<std::vector<std::string>> rows(const std::string& sql,
                                             const std::vector<std::string>& params = {}) {
    std::vector<std::vector<std::string>> out;
    db_.read([&](SQLite::Database& db) {
      SQLite::Statement query(db, sql);
      for (std::size_t i = 0; i < params.size(); ++i) {
        query.bind(static_cast<int>(i + 1), params[i]);
      }
      while (query.executeStep()) {
        std::vector<std::string> row;
        for (int c = 0; c < query.getColumnCount(); ++c) {
          const auto column = query.getColumn(c);
          row.push_back(column.isNull() ? std::string("NULL") : column.getString());
        }
        out.push_back(std::move(row));
      }
    });
    return out;
  }

  std::int64_t count(const std::string& sql, const std::vector<std::string>& params = {}) {
    const auto result = rows(sql, params);
    if (result.size() != 1 || result[0].size() != 1) throw std::runtime_error("not a count");
    return std::stoll(result[0][0]);
  }

  std::vector<std::string> event_types(const std::string& task_id) {
    std::vector<std::string> types;
    for (const auto& row :
         rows("SELECT event_type FROM task_events WHERE task_id=? ORDER BY event_id", {task_id})) {
      types.push_back(row[0]);
    }
    return types;
  }

  ScopedTempDir dir_;
  ManualClock clock_;
  test::RecordingSpawner spawner_;
  test::RecordingTransport http_;
  test::CountingRandom random_;
  test::RecordingFaultPlan faults_;
  Environment environment_{clock_, spawner_, http_, random_, faults_};
  TaskPlaneOptions options_;
  Database db_;
  store::SqliteStore store_;
  std::unique_ptr<store::Store> other_store_;
  TaskPlane plane_;
};

// A plane with one agent and one worker of it, where most transition tests start.
class OneWorkerTest : public PlaneTest {
 protected:
  OneWorkerTest(std::string agent_id, std::string worker_id, int max_concurrency)
      : agent_id_(std::move(agent_id)),
        worker_id_(std::move(worker_id)),
        max_concurrency_(max_concurrency) {}

  void SetUp() override {
    agent_ = make_agent(agent_id_);
    register_worker(agent_, worker_id_, {{"max_concurrency", max_concurrency_}});
  }

  Agent agent_;

 private:
  std::string agent_id_;
  std::string worker_id_;
  int max_concurrency_;
};

}  // namespace aios::fleet_test
