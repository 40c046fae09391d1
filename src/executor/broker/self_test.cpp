// The disposable broker self-test the seed asks for before an autonomous worker is enabled:
// the backend must change the requested worktree while HEAD stays at the base commit.
#include <fstream>

#include "aios/canonical.hpp"
#include "aios/executor.hpp"
#include "aios/files.hpp"
#include "aios/git.hpp"
#include "aios/sys.hpp"

namespace aios::broker {

namespace fs = std::filesystem;
using nlohmann::json;

inline constexpr std::string_view kSelfTestFile = "SELFTEST.md";

json self_test(std::string_view backend, const BrokerOptions& options,
               const executor::ExecuteOptions& execute) {
  const files::PrivateDirectory scratch(options.temporary_root, "aios-broker-self-test-");
  const fs::path authority = scratch.path() / "authority.git";
  const std::string base = git::create_repository(
      authority, {{std::string(kSelfTestFile), false, "before the broker self-test\n"}},
      "aios: broker self-test base", {"aios broker self-test", "self-test@aios.invalid", 0});
  BrokerOptions local = options;
  local.worktree_root = scratch.path() / "worktrees";
  const fs::path worktree = local.worktree_root / "self-test" / "worktree";
  fs::create_directories(worktree.parent_path());
  git::create_worktree(authority, base, worktree);

  const json request = validate_request(
      {{"schema", kRequestSchema},
       {"request_id", "broker-self-test-" + executor::environment_of(execute).random.hex(8)},
       {"backend", std::string(backend)},
       {"task_id", "broker-self-test"},
       {"execution_digest", sha256_hex("aios broker self-test")},
       {"base_oid", base},
       {"worktree", worktree.string()},
       {"goal", "Replace the contents of " + std::string(kSelfTestFile) +
                    " with a short note saying that the broker self-test ran."},
       {"instructions", "Change only that file. Do not commit."},
       {"success_criteria", json::array()},
       {"constraints", json::object()}});
  const fs::path request_path = scratch.path() / "request.json";
  files::write_atomic(request_path, canonical_json(request));
  const json result = execute_request(request_path, scratch.path() / "result.json", local, execute);

  // What the backend left is read as the worker reads it: its refs by git in a sandbox, its
  // files against the base.
  const auto refs = git::read_backend_refs(
      worktree / ".git", executor::child_sandbox({}, execute, {}), [&](const process::Spec& spec) {
        return executor::environment_of(execute).spawner.run(spec);
      });
  json changed = json::array();
  for (const auto& change : git::worktree_changes(authority, base, worktree)) {
    changed.push_back(change.path);
  }
  const auto failed = [](const std::string& why) {
    throw Error(ErrorCode::RUNTIME_BROKER_SELF_TEST_FAILED, why);
  };
  if (!refs.unreadable.empty()) failed("the refs cannot be read: " + refs.unreadable);
  if (refs.head != base) failed("HEAD moved away from the base commit");
  if (!refs.refs.empty()) failed("a ref changed");
  if (changed.empty()) failed("the backend changed nothing in the worktree");
  return {{"backend", backend},
          {"base_oid", base},
          {"head_oid", *refs.head},
          {"changed_files", changed},
          {"runtime_result", result["runtime_result"]},
          {"duration_ms", result["duration_ms"]}};
}

}  // namespace aios::broker
