// Task-plane throughput and claim latency, each beside its floor measured in the same run:
//   floor       raw SQLite: BEGIN IMMEDIATE; UPDATE … WHERE revision=?; INSERT event; COMMIT
//   store       TaskPlane in-process: claim + result + verification per task
//   http-1/8    the same lifecycle over the Task API with 1 and 8 concurrent workers
//   claim@N     claim latency p50/p90/p99 with N queued tasks (1,000 and 100,000)
// Prints one JSON object; scripts/bench turns it into docs/performance.md. Seconds, not
// assertions: absolute numbers vary between machines, the ratios are the figures.
#include <SQLiteCpp/SQLiteCpp.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/fleet.hpp"
#include "aios/http.hpp"
#include "aios/store.hpp"
#include "aios/taskapi.hpp"
#include "store/sqlite/database.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
namespace fs = std::filesystem;

const std::string kOid(40, 'a');
const std::string kControlToken(40, 'c');

fs::path temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "aios-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
  return pattern;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

json create_body(const std::string& id, const std::string& tenant) {
  return {{"task_id", id},
          {"goal", "Benchmark task."},
          {"required_capabilities", {"agent.runtime.hermes"}},
          {"scope_type", "tenant"},
          {"tenant_id", tenant},
          {"max_attempts", 3},
          {"binding",
           {{"task_id", id},
            {"job_id", "job-" + id},
            {"repository", "aios/bench"},
            {"base_oid", kOid},
            {"expected_branch_oid", kOid},
            {"target_branch", "agent/" + id},
            {"branch_mode", "CREATE_NEW"},
            {"generation", 1},
            {"idempotency_key", id + "-binding"}}},
          {"execution", {{"action", "agent_runtime"}, {"adapter", "hermes"}}}};
}

// Inserts `count` queued tasks in one transaction (the bench needs volume, not create speed):
// the rows are exactly those create_task would write.
void bulk_queue(aios::TaskPlane& plane, aios::Database& db, const std::string& prefix,
                std::size_t count) {
  const auto template_view = plane
                                 .create_task(aios::fleet::task_submission_of(
                                     create_body(prefix + "-template", "tenant-0")))
                                 .second;
  db.write([&](SQLite::Database& sql) {
    auto row = *aios::store::load_task(sql, prefix + "-template");
    for (std::size_t i = 0; i < count; ++i) {
      const std::string id = prefix + "-" + std::to_string(i);
      auto projected = aios::project_online_task(
          aios::GovernedBinding::from_mapping(create_body(id, "t")["binding"]),
          [&] {
            auto task = create_body(id, "tenant-" + std::to_string(i % 3));
            task.erase("binding");
            task.erase("execution");
            return task;
          }(),
          {{"action", "agent_runtime"}, {"adapter", "hermes"}});
      row.task_id = id;
      row.job_id = "job-" + id;
      row.metadata_json = aios::canonical_json(projected["metadata"]);
      row.execution_digest = projected["metadata"]["execution"]["execution_digest"];
      row.scope_key = "tenant:tenant-" + std::to_string(i % 3);
      projected.erase("metadata");
      row.task_json = aios::canonical_json(projected);
      aios::store::insert_task(sql, row);
    }
  });
  (void)template_view;
}

double raw_sqlite_floor(const fs::path& dir, std::size_t transitions) {
  SQLite::Database db((dir / "floor.sqlite3").string(),
                      SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  db.exec("PRAGMA journal_mode=WAL");
  db.exec("PRAGMA synchronous=FULL");
  db.exec("CREATE TABLE t(id TEXT PRIMARY KEY, revision INTEGER NOT NULL)");
  db.exec("CREATE TABLE e(id INTEGER PRIMARY KEY AUTOINCREMENT, t TEXT, payload TEXT)");
  db.exec("INSERT INTO t VALUES ('x', 0)");
  SQLite::Statement update(db, "UPDATE t SET revision=revision+1 WHERE id='x' AND revision=?");
  SQLite::Statement event(db, "INSERT INTO e(t,payload) VALUES ('x', ?)");
  const auto start = Clock::now();
  for (std::size_t i = 0; i < transitions; ++i) {
    db.exec("BEGIN IMMEDIATE");
    update.bind(1, static_cast<std::int64_t>(i));
    update.exec();
    update.reset();
    event.bind(1, "{\"revision\":" + std::to_string(i) + "}");
    event.exec();
    event.reset();
    db.exec("COMMIT");
  }
  return static_cast<double>(transitions) / seconds_since(start);
}

struct Fixture {
  fs::path dir = temp_dir();
  aios::SystemClock clock;
  aios::Database db{{.path = dir / "state.sqlite3", .connections = 10}};
  aios::store::SqliteStore store{db, clock};
  aios::TaskPlane plane{store, aios::system_environment(), {}};
  json agent_token;
  aios::Agent agent;

  Fixture() {
    agent_token = plane.create_agent(
        aios::fleet::agent_grant_of({{"agent_id", "bench-agent"},
                                     {"granted_capabilities", {"agent.runtime.hermes"}}}))["token"];
    agent = *plane.authenticate_agent(agent_token);
  }
  void add_worker(const std::string& id) {
    plane.register_worker(
        agent, aios::fleet::worker_registration_of({{"worker_id", id},
                                                    {"capabilities", {"agent.runtime.hermes"}},
                                                    {"allowed_adapters", {"hermes"}},
                                                    {"max_concurrency", 64}}));
  }
  ~Fixture() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

// One lifecycle = claim + result + verification: three transitions.
void lifecycle_in_process(Fixture& f, const json& view, const std::string& worker) {
  const auto claim = f.plane.claim(
      f.agent, view["task_id"],
      aios::fleet::claim_request_of({{"worker_id", worker},
                                     {"expected_revision", view["revision"]},
                                     {"execution_digest", view["execution_digest"]}}));
  const auto result = f.plane.submit_result(
      f.agent, view["task_id"],
      aios::fleet::result_submission_of(
          {{"lease_token", claim["lease_token"]},
           {"attempt", claim["attempt"]},
           {"execution_digest", claim["execution_digest"]},
           {"idempotency_key", "result-" + view["task_id"].get<std::string>()},
           {"result", {{"status", "SUCCEEDED"}}}},
          f.plane.options().max_result_bytes));
  f.plane.verify(view["task_id"],
                 aios::fleet::verification_of({{"expected_revision", result.second["revision"]},
                                               {"decision", "PASS"},
                                               {"reason", "bench"}}));
}

double store_lifecycles(std::size_t tasks) {
  Fixture f;
  f.add_worker("w-0");
  std::vector<json> views;
  for (std::size_t i = 0; i < tasks; ++i) {
    views.push_back(f.plane
                        .create_task(aios::fleet::task_submission_of(
                            create_body("s-" + std::to_string(i), "t")))
                        .second);
  }
  const auto start = Clock::now();
  for (const auto& view : views) lifecycle_in_process(f, view, "w-0");
  return static_cast<double>(tasks) / seconds_since(start);
}

json call(aios::http::Connection& connection, const std::string& target, const std::string& token,
          const json& body) {
  const auto response = connection.request("POST", target, token, body.dump());
  if (response.status >= 300) throw std::runtime_error(target + " " + response.body);
  return json::parse(response.body);
}

double http_lifecycles(std::size_t workers, std::size_t tasks_per_worker) {
  Fixture f;
  aios::TaskApiMetrics metrics;
  aios::TaskApi api(f.plane, kControlToken, metrics);
  aios::http::ServerOptions options;
  options.threads = 8;
  aios::http::Server server(options,
                            [&api](const aios::http::Request& r) { return api.handle(r); });
  server.start();
  std::vector<std::vector<json>> assigned(workers);
  for (std::size_t w = 0; w < workers; ++w) {
    f.add_worker("w-" + std::to_string(w));
    for (std::size_t i = 0; i < tasks_per_worker; ++i) {
      const auto id = "h" + std::to_string(w) + "-" + std::to_string(i);
      assigned[w].push_back(
          f.plane.create_task(aios::fleet::task_submission_of(create_body(id, "t"))).second);
    }
  }
  std::atomic<bool> failed{false};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        aios::http::Connection connection("127.0.0.1", server.port(), std::chrono::seconds(30));
        const std::string token = f.agent_token;
        const std::string worker = "w-" + std::to_string(w);
        for (const auto& view : assigned[w]) {
          const std::string base = "/v1/tasks/" + view["task_id"].get<std::string>();
          const auto claim = call(connection, base + "/claim", token,
                                  {{"worker_id", worker},
                                   {"expected_revision", view["revision"]},
                                   {"execution_digest", view["execution_digest"]}});
          const auto result =
              call(connection, base + "/result", token,
                   {{"lease_token", claim["lease_token"]},
                    {"attempt", claim["attempt"]},
                    {"execution_digest", claim["execution_digest"]},
                    {"idempotency_key", "result-" + view["task_id"].get<std::string>()},
                    {"result", {{"status", "SUCCEEDED"}}}});
          call(connection, base + "/verification", kControlToken,
               {{"expected_revision", result["revision"]}, {"decision", "PASS"}, {"reason", "b"}});
        }
      } catch (const std::exception& error) {
        std::cerr << "http worker failed: " << error.what() << '\n';
        failed = true;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const double rate = static_cast<double>(workers * tasks_per_worker) / seconds_since(start);
  server.stop();
  return failed ? 0.0 : rate;
}

// Each sample claims a different task (the stride is coprime with `queued`, samples <= queued):
// a worker that released a task is kept away from it by the task quarantine.
json claim_latency(std::size_t queued, std::size_t samples) {
  Fixture f;
  f.add_worker("w-0");
  bulk_queue(f.plane, f.db, "q", queued);
  std::vector<double> micros;
  for (std::size_t i = 0; i < samples; ++i) {
    const auto id = "q-" + std::to_string((i * 7919) % queued);
    const auto view = f.plane.task_view(id, nullptr);
    const auto start = Clock::now();
    const auto claim = f.plane.claim(
        f.agent, id,
        aios::fleet::claim_request_of({{"worker_id", "w-0"},
                                       {"expected_revision", view["revision"]},
                                       {"execution_digest", view["execution_digest"]}}));
    micros.push_back(seconds_since(start) * 1e6);
    f.plane.release(f.agent, id,
                    aios::fleet::release_of({{"lease_token", claim["lease_token"]},
                                             {"failure_class", "bench_release"}}));
    f.plane.record_worker_success("w-0");  // keep the circuit closed between samples
  }
  std::sort(micros.begin(), micros.end());
  const auto at = [&](std::size_t percent) {
    return micros[std::min(micros.size() - 1, micros.size() * percent / 100)];
  };
  return {{"queued", queued},
          {"samples", samples},
          {"p50_us", at(50)},
          {"p90_us", at(90)},
          {"p99_us", at(99)}};
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  // --smoke: tiny sizes, one run, so CI keeps the driver working without measuring anything.
  const bool smoke = argc > 1 && std::string(argv[1]) == "--smoke";
  // --store N: only N in-process lifecycles, for a profiler to record (scripts/bench).
  if (argc > 2 && std::string(argv[1]) == "--store") {
    const auto rate = store_lifecycles(std::stoul(argv[2])) * 3;
    std::cout << json{{"store_in_process", rate}}.dump() << '\n';
    return 0;
  }
  // --claim N: only the claim latency with N queued, so two builds can be compared round by
  // round on a shared machine.
  if (argc > 2 && std::string(argv[1]) == "--claim") {
    std::cout << claim_latency(std::stoul(argv[2]), 1000).dump() << '\n';
    return 0;
  }
  const std::size_t runs = smoke ? 1 : 3;
  const std::size_t tasks = smoke ? 20 : 300;
  const fs::path dir = temp_dir();
  std::vector<double> floor, store, http1, http8;
  for (std::size_t run = 0; run < runs; ++run) {
    floor.push_back(raw_sqlite_floor(dir, tasks * 3));
    fs::remove(dir / "floor.sqlite3");
    fs::remove(dir / "floor.sqlite3-wal");
    fs::remove(dir / "floor.sqlite3-shm");
    store.push_back(store_lifecycles(tasks) * 3);
    http1.push_back(http_lifecycles(1, tasks) * 3);
    http8.push_back(http_lifecycles(8, tasks / 8 + 1) * 3);
  }
  fs::remove_all(dir);
  const json report = {{"runs", runs},
                       {"transitions_per_second",
                        {{"raw_sqlite_floor", median(floor)},
                         {"store_in_process", median(store)},
                         {"http_1_worker", median(http1)},
                         {"http_8_workers", median(http8)}}},
                       {"claim_latency",
                        {claim_latency(smoke ? 100 : 1000, smoke ? 20 : 1000),
                         claim_latency(smoke ? 1000 : 100000, smoke ? 20 : 1000)}}};
  std::cout << report.dump(2) << '\n';
  return 0;
}
