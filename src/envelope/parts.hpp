#pragma once
// Normalizers for the action-specific parts of an envelope. Each returns the canonical form of
// its part or throws aios::Error with the part's code; projection stores the canonical form and
// validation requires the stored part to equal it.

#include <nlohmann/json.hpp>

#include "aios/error.hpp"

namespace aios::envelope {

inline constexpr std::size_t kMaxChangeEntries = 128;
inline constexpr std::size_t kMaxChangeContentBytes = 2 * 1024 * 1024;
inline constexpr std::size_t kMaxVerificationCommands = 32;
inline constexpr std::size_t kMaxSourceSignals = 32;
inline constexpr std::size_t kMaxAgentRuntimeInputBytes = 64 * 1024;

// [{path, operation: write_file, content} | {path, operation: delete_file}], at most 128.
nlohmann::json normalize_change_set(const nlohmann::json& value);

// [{label, argv, cwd, timeout_seconds}], at most 32; argv[0] absolute, no shell, no inline code.
nlohmann::json normalize_verification(const nlohmann::json& value);

// Trimmed, non-blank, de-duplicated strings in their first order, at most 32 of 240 code points.
nlohmann::json normalize_source_signals(const nlohmann::json& value);

// The seed's _agent_runtime_input: {goal, instructions, success_criteria, constraints}.
nlohmann::json normalize_agent_runtime_input(const nlohmann::json& value);

// A sorted, de-duplicated list of trimmed lower-case capability names, each known to the task
// vocabulary; `empty_code` when the list is empty.
nlohmann::json normalize_capability_list(const nlohmann::json& value, ErrorCode invalid_code,
                                         ErrorCode empty_code);

}  // namespace aios::envelope
