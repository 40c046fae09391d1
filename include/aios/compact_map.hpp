#pragma once
// The compact interface map: the read-only core of the worker's `source_capture` /
// `compact_interface_map` adapter (seed: aios_online_agent_compact_map.py and the worker's
// build_compact_interface_map_result). docs/compact-interface-map.md is the full contract.
//
// Given a checked-out worktree of the repository at the envelope's base_oid and the envelope's
// source_signals, it ranks candidate files by signal-term hits, lists their symbols (Python,
// C/C++, JavaScript/TypeScript, Go, Rust, Java) with line numbers, cuts bounded and redacted
// excerpts, maps the profile's contracts onto the symbols, states the profile's invariants,
// failure windows and reuse points, and trims the whole map to a byte budget.
//
// Reading the tree: never follows a symlink (file or directory), skips `.git` and a few
// dependency/cache directories, files over Limits::max_file_bytes, binary or non-UTF-8 files,
// and stops after Limits::max_entries directory entries or Limits::max_total_bytes read.
// Directories are visited in byte order of their names, so the output depends only on the
// tree's content: the same tree, signals, commit and options give byte-identical canonical
// JSON.
//
// All functions are thread-safe (no shared state) and throw aios::Error on refusal.

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aios::compact_map {

inline constexpr std::string_view kSchema = "aios.engineering.interface-map.v1";
inline constexpr std::string_view kProfileFleet = "fleet";
inline constexpr std::string_view kProfileModelGovernance = "model_governance";
inline constexpr std::string_view kClassificationFleet = "P2_INTERFACE_MAP_CAPTURED";
inline constexpr std::string_view kClassificationModelGovernance =
    "MODEL_GOVERNANCE_INTERFACE_MAP_CAPTURED";

// The map's default byte budget (canonical JSON, result_bytes included); it leaves room for
// the result envelope around it inside kMaxResultBytes.
inline constexpr std::size_t kDefaultBudgetBytes = 96 * 1024;
// Below this a map cannot hold its fixed part (contracts, invariants, failure windows).
inline constexpr std::size_t kMinBudgetBytes = 8 * 1024;
// The largest source-capture result build_compact_interface_map_result returns.
inline constexpr std::size_t kMaxResultBytes = 192 * 1024;

struct Limits {
  std::size_t max_entries = 20000;                 // directory entries looked at
  std::size_t max_file_bytes = 256 * 1024;         // larger files are skipped
  std::size_t max_total_bytes = 16 * 1024 * 1024;  // bytes read over the whole tree
  std::size_t max_candidates = 24;                 // ranked files kept
  std::size_t max_symbols_per_file = 200;
  std::size_t max_excerpts = 24;
  std::size_t max_excerpts_per_file = 3;
  std::size_t max_excerpt_lines = 40;
  std::size_t max_excerpt_bytes = 1200;  // bounded_text limit of one excerpt
};

struct Options {
  // nullopt: chosen from the signals as the seed does (select_profile). Otherwise "fleet" or
  // "model_governance"; anything else is INTERFACE_MAP_PROFILE_INVALID.
  std::optional<std::string> profile;
  // Byte budget of the map, from kMinBudgetBytes to kMaxResultBytes, else
  // INTERFACE_MAP_BUDGET_INVALID.
  std::size_t budget_bytes = kDefaultBudgetBytes;
  Limits limits;
};

// The seed's _profile: "model_governance" when the signals' tokens
// ([A-Za-z][A-Za-z0-9_.-]{2,63}, lower-cased) hold at least two model markers, else "fleet".
std::string select_profile(const std::vector<std::string>& source_signals);

// The classification a profile must carry; INTERFACE_MAP_PROFILE_INVALID for another profile.
std::string_view classification_for(std::string_view profile);

// Builds the map of `worktree` at `source_commit` (40 lower-case hex). JSON shape:
//   {schema, profile, classification, source_commit, signal_terms: [term],
//    implementation_map: {modules: [{path, language, score, hits: [term], lines, symbols}],
//                         classes: [symbol], functions: [symbol], tests: [symbol]},
//    gap_evidence: {invariants: [text], failure_windows: [text], reuse_points: [text]},
//    bounded_excerpts: [{path, symbol, line_start, line_end, text}],
//    contracts: {CONTRACT: {status: "MAPPED"|"GAP", surfaces: [ref], modules: [path]}},
//    tree_scan_truncated: bool, trimmed_to_budget: bool, result_bytes}
// where symbol = {name, kind, language, path, line} and ref = "path:name"; modules are in rank
// order (score descending, then path), symbols in file then line order; result_bytes is the
// canonical size of the map without result_bytes.
// Throws INTERFACE_MAP_SOURCE_COMMIT_INVALID, INTERFACE_MAP_ROOT_INVALID,
// INTERFACE_MAP_PROFILE_INVALID, INTERFACE_MAP_BUDGET_INVALID,
// INTERFACE_MAP_CANDIDATES_EMPTY (no file hits a term), INTERFACE_MAP_BUDGET_EXCEEDED (even
// the fixed part does not fit).
nlohmann::json build_compact_interface_map(const std::filesystem::path& worktree,
                                           const std::vector<std::string>& source_signals,
                                           std::string_view source_commit,
                                           const Options& options = {});

// The worker's source-capture result around an interface map (seed:
// build_compact_interface_map_result). `envelope` is the task's validated execution envelope,
// `execution` is {"interface_map": map}. Revalidates the map's profile/classification pair and
// its source commit against envelope.base_oid, then returns the read-only result (status
// SUCCEEDED, writer_lease NONE, no changed files, every credential flag false, result_bytes).
// Throws COMPACT_INTERFACE_MAP_RESULT_INVALID, COMPACT_INTERFACE_MAP_PROFILE_BINDING_INVALID,
// COMPACT_INTERFACE_MAP_SOURCE_COMMIT_MISMATCH, COMPACT_INTERFACE_MAP_RESULT_TOO_LARGE.
nlohmann::json build_compact_interface_map_result(std::string_view task_id,
                                                  const nlohmann::json& envelope,
                                                  const nlohmann::json& execution);

}  // namespace aios::compact_map
