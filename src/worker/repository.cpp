// A worker on another host reads the authority repository through the Bridge: each task's base
// is fetched into the worker's own mirror, read-only, before the task reads it.
#include <mutex>

#include "aios/git.hpp"
#include "aios/log.hpp"
#include "worker/internal.hpp"

namespace aios::worker {
namespace {

// The newest bases a fetch names as held, so the Bridge sends only what is new.
constexpr std::size_t kHaves = 32;

}  // namespace

void ensure_base(RunContext& run) {
  if (!run.config.repository_from_bridge) return;
  const std::string base = run.envelope.at("base_oid");
  const std::string task_id = run.envelope.at("task_id");
  // Tasks of one worker fill one mirror, one at a time.
  static std::mutex mirror_mutex;
  const std::lock_guard lock(mirror_mutex);
  try {
    git::Mirror mirror(run.config.authority_git_dir);
    if (mirror.has_commit(base)) return;
    run.heartbeat.alive("fetch_base");
    const nlohmann::json body = {{"task_id", task_id}, {"have", mirror.bases(kHaves)}};
    const auto pack = run.bridge.require_bytes("POST", "/v2/repository-pack", body);
    mirror.add(pack, base);
    log::info("REPOSITORY_BASE_FETCHED",
              {{"task_id", task_id}, {"base_oid", base}, {"pack_bytes", pack.size()}});
  } catch (const Error& error) {
    // The Bridge's own refusals and an outage keep their codes (the task is kept on an
    // outage); a pack that does not give the base is this worker's failure to fetch.
    if (!error.is_any({ErrorCode::GIT_OPERATION_FAILED, ErrorCode::GIT_REPOSITORY_UNAVAILABLE})) {
      throw;
    }
    throw Error(ErrorCode::REPOSITORY_FETCH_FAILED, error.detail());
  }
}

}  // namespace aios::worker
