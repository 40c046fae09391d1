// Governed commits: the scheduler applies the envelope's change set to the target branch of
// the authority repository, fenced by the task lease and the writer lease, compare-and-swap on
// the branch, idempotent by the envelope's commit key.
//
// The receipt is written PENDING (with the commit id) before the ref moves and APPLIED after,
// so after a crash between the two the ref itself says what happened: at the commit, it is
// finished; at the old value, the same commit object is put in place; elsewhere, refused.
#include <chrono>
#include <optional>
#include <vector>

#include "aios/bridge.hpp"
#include "aios/envelope.hpp"
#include "aios/git.hpp"
#include "aios/log.hpp"
#include "bridge/internal.hpp"

namespace aios {
namespace {

using envelope::fail;

using Receipt = store::CommitReceipt;

// A deterministic plan's change set is in its envelope; an engineering change set is what the
// worker read from the backend's worktree and sends with the commit request.
std::vector<git::FileChange> changes_of(const nlohmann::json& change_set) {
  std::vector<git::FileChange> changes;
  for (const auto& change : change_set) {
    const bool remove = change["operation"] == "delete_file";
    changes.push_back(
        {change["path"], remove, remove ? std::string() : change["content"].get<std::string>()});
  }
  return changes;
}

std::string message_of(const nlohmann::json& envelope, const std::string& key,
                       std::int64_t attempt) {
  return "aios: governed commit for " + envelope["task_id"].get<std::string>() +
         "\n\nJob: " + envelope["job_id"].get<std::string>() +
         "\nExecution-Digest: " + envelope["execution_digest"].get<std::string>() +
         "\nCommit-Key: " + key + "\nAttempt: " + std::to_string(attempt) + "\n";
}

nlohmann::json view_of(const std::string& task_id, const nlohmann::json& envelope,
                       const std::string& key, const Receipt& receipt, bool idempotent) {
  return {{"task_id", task_id},
          {"target_branch", envelope["target_branch"]},
          {"commit_oid", receipt.commit_oid},
          {"old_oid", receipt.old_oid ? nlohmann::json(*receipt.old_oid) : nlohmann::json()},
          {"commit_idempotency_key", key},
          {"execution_digest", receipt.execution_digest},
          {"idempotent", idempotent}};
}

}  // namespace

std::pair<int, nlohmann::json> Bridge::governed_commit(const Agent& agent,
                                                       const nlohmann::json& body) {
  const bool carries_changes = body.is_object() && body.contains("change_set");
  if (carries_changes) {
    envelope::require_exact_keys(
        body,
        {"task_id", "writer_lease_id", "lease_token", "attempt", "execution_digest", "change_set"},
        ErrorCode::REQUEST_FIELDS_INVALID);
  } else {
    envelope::require_exact_keys(
        body, {"task_id", "writer_lease_id", "lease_token", "attempt", "execution_digest"},
        ErrorCode::REQUEST_FIELDS_INVALID);
  }
  const std::string task_id = bridge::task_id_of(body);
  const auto proof = task::lease_proof_of(body);
  const auto& lease_value = body["writer_lease_id"];
  if (!lease_value.is_string()) fail(ErrorCode::WRITER_LEASE_INVALID);
  const std::string writer_lease_id = lease_value;

  const std::lock_guard lock(commit_mutex_);
  const auto now = store_.now();
  const std::string now_iso = format_iso8601(now);
  // The fence, taken again in every transaction that records something: only the attempt that
  // holds a live task lease and this writer lease may move the branch.
  const auto fenced = [&](store::Transaction& tx) {
    auto held = task::fence_attempt(tx, task_id, agent.agent_id, proof, now);
    bridge::check_writer_lease(tx, held.row, writer_lease_id);
    return std::move(held.execution);
  };
  nlohmann::json envelope;
  std::optional<Receipt> receipt;
  store_.read([&](store::Transaction& tx) {
    envelope = fenced(tx);
    receipt = tx.load_commit_receipt(envelope["governance"]["commit_idempotency_key"]);
  });
  // Exactly the engineering action brings its own change set.
  if (carries_changes != (envelope["action"] == "engineering")) {
    fail(ErrorCode::REQUEST_FIELDS_INVALID);
  }
  const nlohmann::json change_set =
      carries_changes ? envelope::normalize_change_set(body["change_set"]) : envelope["change_set"];
  if (change_set.empty()) fail(ErrorCode::CHANGE_SET_INVALID);
  const std::string key = envelope["governance"]["commit_idempotency_key"];
  const std::string branch = envelope["target_branch"];
  if (receipt &&
      (receipt->task_id != task_id || receipt->execution_digest != proof.execution_digest)) {
    fail(ErrorCode::COMMIT_IDEMPOTENCY_CONFLICT);
  }
  if (receipt && receipt->state == "APPLIED")
    return {200, view_of(task_id, envelope, key, *receipt, true)};

  git::Repository repo(options_.authority_git_dir);
  const auto current = repo.branch_oid(branch);
  const auto forget = [&](const char* why) {
    store_.write([&](store::Transaction& tx) {
      tx.drop_commit_receipt(key);
      tx.append_event(task_id, "BRIDGE_COMMIT_REFUSED", agent.agent_id,
                      {{"target_branch", branch},
                       {"reason", why},
                       {"current_oid", current ? nlohmann::json(*current) : nlohmann::json()}},
                      now_iso);
    });
  };
  bool recovered = false;
  if (receipt) {
    // A PENDING receipt: an earlier request stopped between recording and finishing.
    recovered = true;
    if (current != receipt->commit_oid &&
        (current != receipt->old_oid ||
         !repo.update_branch(branch, receipt->commit_oid, receipt->old_oid,
                             "aios: governed commit"))) {
      forget("branch_moved");
      fail(ErrorCode::GOVERNED_COMMIT_CAS_MISMATCH);
    }
  } else {
    const std::string base = envelope["base_oid"];
    std::string parent;
    if (envelope["branch_mode"] == "CREATE_NEW") {
      if (current && *current != base) fail(ErrorCode::GOVERNED_COMMIT_BRANCH_EXISTS);
      parent = base;
    } else {
      if (!current || *current != envelope["expected_branch_oid"]) {
        fail(ErrorCode::GOVERNED_COMMIT_CAS_MISMATCH);
      }
      parent = *current;
    }
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    receipt = Receipt{
        key,
        task_id,
        proof.execution_digest,
        branch,
        current,
        repo.build_commit(parent, changes_of(change_set), message_of(envelope, key, proof.attempt),
                          {options_.committer_name, options_.committer_email,
                           static_cast<std::int64_t>(seconds)}),
        "PENDING",
        proof.attempt,
        now_iso};
    store_.write([&](store::Transaction& tx) {
      fenced(tx);
      tx.insert_commit_receipt(*receipt);
    });
    if (!repo.update_branch(branch, receipt->commit_oid, current, "aios: governed commit")) {
      forget("branch_moved");
      fail(ErrorCode::GOVERNED_COMMIT_CAS_MISMATCH);
    }
  }
  environment_.faults.point("bridge_ref_moved");
  store_.write([&](store::Transaction& tx) {
    // A lease lost while the ref moved leaves the receipt PENDING: this attempt is stale and
    // cannot record the commit; the attempt that holds the task next recovers it.
    fenced(tx);
    tx.mark_commit_applied(key, now_iso);
    tx.append_event(task_id, "BRIDGE_COMMIT_APPLIED", agent.agent_id,
                    {{"target_branch", branch},
                     {"commit_oid", receipt->commit_oid},
                     {"old_oid", current ? nlohmann::json(*current) : nlohmann::json()},
                     {"commit_idempotency_key", key},
                     {"attempt", proof.attempt},
                     {"recovered", recovered}},
                    now_iso);
  });
  log::info("GOVERNED_COMMIT_APPLIED",
            {{"task_id", task_id}, {"target_branch", branch}, {"commit_oid", receipt->commit_oid}});
  receipt->state = "APPLIED";
  return {201, view_of(task_id, envelope, key, *receipt, false)};
}

void Bridge::took_lead() {
  if (options_.authority_git_dir.empty()) return;
  const std::lock_guard lock(commit_mutex_);
  for (const auto& ref : git::remove_ref_locks(options_.authority_git_dir)) {
    log::warn("BRIDGE_STALE_REF_LOCK_REMOVED", {{"ref", ref}});
  }
}

}  // namespace aios
