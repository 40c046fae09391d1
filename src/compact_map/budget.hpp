#pragma once
// Trimming an interface map to its byte budget.

#include <cstddef>
#include <nlohmann/json.hpp>

namespace aios::compact_map {

// Drops list entries from the end (lowest ranked first) in this order until the canonical map,
// with its result_bytes field, fits `budget`: bounded_excerpts, implementation_map.tests,
// .functions, .classes, each contract's surfaces and modules, implementation_map.modules.
// Sets trimmed_to_budget and result_bytes (the canonical size of the map without
// result_bytes, as the seed measures its results). INTERFACE_MAP_BUDGET_EXCEEDED when even
// the untrimmable part (profile, contracts' names and statuses, gap evidence, terms) is over.
void trim_to_budget(nlohmann::json& map, std::size_t budget);

}  // namespace aios::compact_map
