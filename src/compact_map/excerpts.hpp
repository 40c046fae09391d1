#pragma once
// Bounded, redacted source excerpts around the symbols that hit the signal terms.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "aios/compact_map.hpp"
#include "compact_map/model.hpp"

namespace aios::compact_map {

// For one file (its symbols in line order): up to limits.max_excerpts_per_file excerpts of the
// symbols whose "path:name" holds the most terms (ties by line), or of its first symbol when
// none does. Each runs from the symbol's line to the line before the file's next symbol, at
// most limits.max_excerpt_lines lines, redacted and bounded by bounded_text to
// limits.max_excerpt_bytes: {path, symbol, line_start, line_end, text}.
std::vector<nlohmann::json> file_excerpts(const SourceFile& file,
                                          const std::vector<Symbol>& symbols,
                                          const std::vector<std::string>& terms,
                                          const Limits& limits);

}  // namespace aios::compact_map
