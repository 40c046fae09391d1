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
// state, checkpoints, token, other workspaces, the authority repository or the exchanges).
// Returns {label, argv, exit_code, timed_out, passed, duration_ms, output}.
nlohmann::json run_verification(const WorkerConfig& config, const std::filesystem::path& run_root,
                                const std::filesystem::path& worktree,
                                const nlohmann::json& command);

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
