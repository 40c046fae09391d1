#pragma once
// The governed write path both writing adapters share: allowlisted verification commands run
// in a worktree, then the writer lease and the governed commit through the Bridge.

#include <filesystem>
#include <nlohmann/json.hpp>

#include "aios/process.hpp"
#include "worker/internal.hpp"

namespace aios::worker {

// The sandbox every child the worker starts runs in, before its own paths and limits: no network,
// nothing writable, and the worker's state, checkpoints, token, workspaces, authority repository,
// exchanges and the host's credential stores hidden.
process::Sandbox worker_sandbox(const WorkerConfig& config);

// Runs a sandboxed `spec` through `spawner`: built here or, with a verification socket, by the
// sandbox service (whose output arrives once, at the end, stdout and stderr together).
process::Outcome run_sandboxed(const WorkerConfig& config, process::Spawner& spawner,
                               const process::Spec& spec);

// Runs one verification command ({label, argv, cwd, timeout_seconds}, already allowlisted) in
// `worktree` with HOME and TMPDIR under `run_root`: argv, no shell, bounded output, timeout,
// in worker_sandbox() with `run_root` writable, through run_sandboxed().
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
