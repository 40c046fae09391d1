// The authority repository, read by a worker on another host: the history of the base commit of
// a task the agent holds, as one git pack, without what the worker already has.
#include "aios/bridge.hpp"
#include "aios/envelope.hpp"
#include "aios/git.hpp"
#include "bridge/internal.hpp"

namespace aios {
namespace {

using envelope::fail;

// What a worker may name as already held: its newest bases are plenty to cut the pack down.
constexpr std::size_t kMaxHaves = 64;
// The largest answer a worker's client reads (http's response limit).
constexpr std::size_t kMaxPackBytes = 64ull * 1024 * 1024;

bool is_object_id(const std::string& text) {
  return text.size() == 40 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::vector<std::string> haves_of(const nlohmann::json& body) {
  std::vector<std::string> haves;
  const auto found = body.find("have");
  if (found == body.end()) return haves;
  if (!found->is_array() || found->size() > kMaxHaves) fail(ErrorCode::REQUEST_FIELDS_INVALID);
  for (const auto& have : *found) {
    if (!have.is_string() || !is_object_id(have.get<std::string>())) {
      fail(ErrorCode::REQUEST_FIELDS_INVALID);
    }
    haves.push_back(have.get<std::string>());
  }
  return haves;
}

}  // namespace

http::Response Bridge::repository_pack(const Agent& agent, const nlohmann::json& body) {
  envelope::require_known_keys(body, {"task_id", "have"}, ErrorCode::REQUEST_FIELDS_INVALID);
  const std::string task_id = bridge::task_id_of(body);
  const auto haves = haves_of(body);
  // Like an envelope: only for a task one of the agent's workers holds or could claim now.
  if (!plane_.agent_hold(agent, task_id)) fail(ErrorCode::TASK_NOT_FOUND);
  std::string base;
  store_.read(
      [&](store::Transaction& tx) { base = bridge::binding_of(task::load(tx, task_id)).base_oid; });
  http::Response response;
  response.content_type = "application/x-git-packfile";
  response.body = git::pack_history(options_.authority_git_dir, base, haves);
  if (response.body.size() > kMaxPackBytes) {
    throw Error(ErrorCode::REPOSITORY_PACK_TOO_LARGE, task_id);
  }
  response.headers.emplace_back("X-Aios-Base-Oid", base);
  return response;
}

}  // namespace aios
