#pragma once
// The compact map's internal records: a file read from the worktree, and a symbol in it.

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace aios::compact_map {

struct Symbol {
  std::string name;  // qualified by its enclosing class where the scanner knows it
  std::string kind;  // function, method, class, struct, interface, enum, trait, type, ...
  std::string language;
  std::string path;      // relative to the worktree, '/'-separated
  std::size_t line = 0;  // 1-based
};

// The seed's _surface_ref: what contracts, failure windows and reuse points match against.
inline std::string surface_ref(const Symbol& symbol) {
  return symbol.path + ":" + symbol.name;
}

// Lines of `content`, a last line without '\n' included.
inline std::size_t line_count(std::string_view content) {
  const auto newlines = static_cast<std::size_t>(std::count(content.begin(), content.end(), '\n'));
  return !content.empty() && content.back() != '\n' ? newlines + 1 : newlines;
}

struct SourceFile {
  std::string path;      // relative, '/'-separated
  std::string language;  // "" for a document without symbols
  std::string content;   // valid UTF-8, at most Limits::max_file_bytes
  std::size_t score = 0;
  std::vector<std::string> hits;  // the terms found, sorted
};

}  // namespace aios::compact_map
