#pragma once
// Shared pieces of the Bridge integration suites: a fresh aios-task-scheduler per test whose
// authority repository is a real bare git repository in the test's temporary directory, with
// one commit on `main` (the base every binding starts from), plus a client of the Bridge port
// and the calls a deterministic worker makes (claim, writer lease, governed commit).

#include <optional>
#include <string>
#include <vector>

#include "support/run_command.hpp"
#include "taskapi/client.hpp"

namespace aios::bridge_test {

using taskapi_test::ApiClient;
using taskapi_test::describe;
using taskapi_test::Json;
using taskapi_test::Reply;
using taskapi_test::require;

inline const Json kWriterCapabilities = {"git.read", "git.test", "governed.write.branch",
                                         "governed.write.file"};

// Runs `git <args>` (a test-side shell line) and returns its trimmed output; throws on failure.
inline std::string git_ok(const std::string& args) {
  const auto result = test::run_command("git " + args);
  if (result.exit_code != 0) throw std::runtime_error("git " + args + ": " + result.output);
  std::string out = result.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// Makes `repo` a bare repository whose `main` holds one commit (docs/BASE.md, docs/OLD.md),
// committed in the scratch clone `work`; returns the commit's id.
inline std::string seed_authority(const std::string& repo, const std::string& work) {
  return git_ok("init -q --bare " + repo + " && git init -q -b main " + work + " && mkdir -p " +
                work + "/docs && printf 'base\\n' > " + work +
                "/docs/BASE.md && printf 'old\\n' > " + work + "/docs/OLD.md && git -C " + work +
                " add -A && git -C " + work +
                " -c user.name=seed -c user.email=seed@example.invalid commit -q -m base && "
                "git -C " +
                work + " push -q " + repo + " main && git -C " + work + " rev-parse HEAD");
}

// A governed binding of `task_id` from commit `base` to `branch`.
inline Json binding_from(const std::string& base, const std::string& task_id,
                         const std::string& branch, const std::string& mode = "CREATE_NEW",
                         const std::string& expected = "") {
  return {{"task_id", task_id},
          {"job_id", "job-" + task_id},
          {"repository", "aios/aios"},
          {"base_oid", base},
          {"expected_branch_oid", expected.empty() ? base : expected},
          {"target_branch", branch},
          {"branch_mode", mode},
          {"generation", 1},
          {"idempotency_key", task_id + "-binding-v1"}};
}

class BridgeTest : public taskapi_test::SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    repo_ = scheduler().authority_git_dir().string();
    base_ = seed_authority(repo_, (scheduler().dir() / "seed-work").string());
    bridge_.emplace(scheduler().bridge_port(), scheduler().control_token());
    agent_.emplace(client(create_agent("agent-writer", kWriterCapabilities)));
    register_worker(*agent_, "worker-w1", kWriterCapabilities, {"deterministic"}, 4);
    register_worker(*agent_, "worker-w2", kWriterCapabilities, {"deterministic"}, 4);
  }

  static std::string git_ok(const std::string& args) { return bridge_test::git_ok(args); }

  std::string repo_git(const std::string& args) const {
    return git_ok("--git-dir=" + repo_ + " " + args);
  }
  // The branch's commit, or "" when it does not exist.
  std::string branch_oid(const std::string& branch) const {
    const auto result =
        test::run_command("git --git-dir=" + repo_ + " rev-parse --verify -q refs/heads/" + branch);
    if (result.exit_code != 0) return "";
    return result.output.substr(0, 40);
  }

  Json binding(const std::string& task_id, const std::string& branch,
               const std::string& mode = "CREATE_NEW", const std::string& expected = "") const {
    return binding_from(base_, task_id, branch, mode, expected);
  }

  static Json write_file(const std::string& path, const std::string& content) {
    return {{"path", path}, {"operation", "write_file"}, {"content", content}};
  }

  // A deterministic task whose envelope carries `change_set`: it is its own registered plan.
  // (A vector, not a Json: a braced list of one Json would be that element, not an array.)
  Json deterministic_task(const Json& binding_value, const std::vector<Json>& change_set) const {
    return {{"task_id", binding_value.at("task_id")},
            {"goal", "Apply the governed change"},
            {"binding", binding_value},
            {"execution",
             {{"action", "deterministic"},
              {"adapter", "deterministic"},
              {"capability_scope", kWriterCapabilities},
              {"change_set", change_set}}}};
  }

  Json source_capture_task(const Json& binding_value) const {
    return {{"task_id", binding_value.at("task_id")},
            {"goal", "Capture the interface"},
            {"required_capabilities", {"git.read"}},
            {"binding", binding_value},
            {"execution",
             {{"action", "source_capture"},
              {"adapter", "source_capture"},
              {"capability_scope", {"git.read"}},
              {"source_signals", {"scheduler interface"}}}}};
  }

  // A claim of `task_id` by `worker_id`: {lease_token, attempt, ..., execution_digest}.
  Json claim_for(const std::string& task_id, const std::string& worker_id) {
    auto lease = claim(agent(), task_id, worker_id);
    lease["execution_digest"] = task(task_id).at("execution_digest");
    return lease;
  }

  static Json proof_of(const Json& lease) {
    return {{"task_id", lease.at("task_id")},
            {"lease_token", lease.at("lease_token")},
            {"attempt", lease.at("attempt")},
            {"execution_digest", lease.at("execution_digest")}};
  }

  Reply writer_lease(const Json& lease) {
    return agent_bridge().post("/v2/writer-leases", proof_of(lease));
  }

  Reply commit(const Json& lease, const std::string& writer_lease_id) {
    auto body = proof_of(lease);
    body["writer_lease_id"] = writer_lease_id;
    return agent_bridge().post("/v2/governed-commits", body);
  }

  // What a deterministic worker does: claim, writer lease, commit, and (when the commit was
  // applied) the result, which ends the task lease and with it the writer lease. Returns the
  // commit reply.
  Reply claim_and_commit(const std::string& task_id, const std::string& worker_id) {
    const auto lease = claim_for(task_id, worker_id);
    const auto granted = require(writer_lease(lease), 201, "writer lease " + task_id);
    const auto reply = commit(lease, granted.at("writer_lease_id"));
    if (reply.status == 201) {
      require(agent().post("/v1/tasks/" + task_id + "/result",
                           taskapi_test::result_body(
                               lease, lease.at("execution_digest"), "result-" + task_id,
                               {{"commit_oid", reply.body.at("commit_oid")}})),
              201, "result " + task_id);
    }
    return reply;
  }

  ApiClient& agent() { return *agent_; }
  ApiClient& bridge() { return *bridge_; }
  ApiClient agent_bridge() { return {scheduler().bridge_port(), agent().token()}; }
  const std::string& base() const { return base_; }

 private:
  std::string repo_;
  std::string base_;
  std::optional<ApiClient> bridge_;
  std::optional<ApiClient> agent_;
};

}  // namespace aios::bridge_test
