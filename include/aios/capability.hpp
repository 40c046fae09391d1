#pragma once
// The single capability decision used by projection, poll, claim and registration, with the
// semantics of the seed's aios_capability_contract.py:
// - task names and worker names map through two alias tables to one semantic vocabulary;
// - an unknown task name stays an explicit requirement "exact:<name>" that nothing grants;
// - a name containing '*' is never a grant (worker) and never a wildcard (task);
// - a worker holding governed.git.write.branch and .file also holds governed.git.write.
//
// `values` is always a JSON array. A non-string or blank item throws aios::Error
// CAPABILITY_INVALID; a value that is not an array throws CAPABILITY_INVALID too.
// Names are trimmed (Python str.strip) and ASCII-lower-cased; see docs/envelope.md for the
// one place this differs from Python (non-ASCII letters are not case-folded).

#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace aios {

inline constexpr std::string_view kUnknownCapabilityPrefix = "exact:";

std::set<std::string> normalize_required_capabilities(const nlohmann::json& values);

std::set<std::string> normalize_worker_capabilities(const nlohmann::json& values);

// True when every requirement is known and held by the worker.
bool has_capabilities(const nlohmann::json& worker, const nlohmann::json& required);

// True when every requirement is known and contained in the (known) grant.
bool required_capabilities_subset(const nlohmann::json& granted, const nlohmann::json& required);

// {"worker_effective": [...], "task_required": [...], "eligible": bool}, sorted lists.
nlohmann::json normalized_capability_matrix(const nlohmann::json& worker,
                                            const nlohmann::json& required);

// True when `name` (already trimmed and lower-cased) is in the task vocabulary.
bool is_known_task_capability(std::string_view name);

// Trims and lower-cases one capability name as the seed does (str.strip, then str.lower: Unicode
// whitespace and the full Unicode lowercase mapping); CAPABILITY_INVALID for a non-string or
// blank.
std::string clean_capability(const nlohmann::json& value);

}  // namespace aios
