#pragma once
// The governed write path both writing adapters share: allowlisted verification commands run
// in a worktree, then the writer lease and the governed commit through the Bridge.

#include <filesystem>
#include <nlohmann/json.hpp>

#include "worker/internal.hpp"

namespace aios::worker {

// Runs one verification command ({label, argv, cwd, timeout_seconds}, already allowlisted) in
// `worktree` with HOME and TMPDIR under `run_root`: argv, no shell, bounded output, timeout,
// in a sandbox without network that sees the system and `run_root` only (not the worker's
// state, checkpoints, token, other workspaces, the authority repository or the exchanges),
// built here or, with a verification socket, by the sandbox service (both through `spawner`).
// Returns {label, argv, exit_code, timed_out, passed, duration_ms, output}.
nlohmann::json run_verification(const WorkerConfig& config, process::Spawner& spawner,
                                const std::filesystem::path& run_root,
                                const std::filesystem::path& worktree,
                                const nlohmann::json& command);

// Runs `commands` (in order, up to the first that fails) on a clean checkout of exactly the tree
// that will be committed: a fresh Workspace at the envelope's base_oid with `change_set`
// ([{path, operation: write_file, content} | {path, operation: delete_file}]) applied beneath its
// worktree, never through a symlink. Nothing else of any other worktree (files an agent left,
// ignored or excluded ones, its .git) is there to influence them. Returns the tests;
// WORKER_WORKSPACE_FAILED when the checkout cannot be made or the change set not applied.
nlohmann::json verify_change_set(RunContext& run, const nlohmann::json& change_set,
                                 const nlohmann::json& commands);

// Takes the writer lease for the envelope's branch and asks the Bridge for the governed commit,
// idempotent by the envelope's commit key (after a crash the Bridge answers with the commit it
// already made). `change_set` is the engineering adapter's computed change set; nullptr for a
// deterministic plan, whose change set the Bridge reads from the envelope. Returns the
// Bridge's commit view.
nlohmann::json governed_commit(RunContext& run, const nlohmann::json* change_set);

// The fields every governed write result carries: the envelope's binding, the commit (from
// state["commit"], when made), the writer lease it implies, the tests run and the fixed
// governance answers. `mode` is the execution mode ("deterministic", "engineering").
nlohmann::json governed_result(const nlohmann::json& envelope, const nlohmann::json& state,
                               const std::string& mode, const std::string& status,
                               const std::string& classification,
                               const nlohmann::json& changed_files);

}  // namespace aios::worker
