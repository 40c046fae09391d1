#include "compact_map/excerpts.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "aios/canonical.hpp"

namespace aios::compact_map {
namespace {

std::size_t term_hits(const Symbol& symbol, const std::vector<std::string>& terms) {
  const std::string ref = ascii_lower(surface_ref(symbol));
  return static_cast<std::size_t>(std::count_if(
      terms.begin(), terms.end(), [&](const auto& t) { return ref.find(t) != std::string::npos; }));
}

// Lines [first, last] (1-based, inclusive) of `content`.
std::string_view line_span(std::string_view content, std::size_t first, std::size_t last) {
  std::size_t start = 0;
  for (std::size_t line = 1; line < first && start != std::string_view::npos; ++line) {
    start = content.find('\n', start);
    if (start != std::string_view::npos) ++start;
  }
  if (start == std::string_view::npos || start > content.size()) return {};
  std::size_t end = start;
  for (std::size_t line = first; line <= last; ++line) {
    end = content.find('\n', end);
    if (end == std::string_view::npos) return content.substr(start);
    if (line < last) ++end;
  }
  return content.substr(start, end - start);
}

}  // namespace

std::vector<nlohmann::json> file_excerpts(const SourceFile& file,
                                          const std::vector<Symbol>& symbols,
                                          const std::vector<std::string>& terms,
                                          const Limits& limits) {
  std::vector<std::pair<std::size_t, std::size_t>> ranked;  // (hits, index)
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    if (const std::size_t hits = term_hits(symbols[i], terms); hits > 0)
      ranked.emplace_back(hits, i);
  }
  if (ranked.empty() && !symbols.empty()) ranked.emplace_back(0, 0);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (ranked.size() > limits.max_excerpts_per_file) ranked.resize(limits.max_excerpts_per_file);
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });

  const std::size_t last_line = line_count(file.content);
  std::vector<nlohmann::json> excerpts;
  for (const auto& [hits, index] : ranked) {
    const Symbol& symbol = symbols[index];
    std::size_t end = std::min(last_line, symbol.line + limits.max_excerpt_lines - 1);
    const auto next =
        std::find_if(symbols.begin() + static_cast<std::ptrdiff_t>(index) + 1, symbols.end(),
                     [&](const Symbol& s) { return s.line > symbol.line; });
    if (next != symbols.end()) end = std::min(end, next->line - 1);
    end = std::max(end, symbol.line);
    excerpts.push_back({
        {"path", file.path},
        {"symbol", symbol.name},
        {"line_start", symbol.line},
        {"line_end", end},
        {"text", bounded_text(line_span(file.content, symbol.line, end), limits.max_excerpt_bytes)},
    });
  }
  return excerpts;
}

}  // namespace aios::compact_map
