#pragma once
// Reading the worktree safely and ranking its source files by signal-term hits.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "aios/compact_map.hpp"
#include "compact_map/model.hpp"

namespace aios::compact_map {

// The scanner language of a path by its extension ("python", "c", "cpp", "javascript",
// "typescript", "go", "rust", "java"), or "" for a file the map does not read.
std::string_view language_of(std::string_view path);

// True for a file whose symbols are tests (tests/ directories, test_*.py, *_test.go, ...).
bool is_test_path(std::string_view path);

struct RankedFiles {
  std::vector<SourceFile> files;  // score descending, then path; at most max_candidates
  bool truncated = false;         // an entry or byte limit stopped the walk early
};

// Walks `root` (a real directory; INTERFACE_MAP_ROOT_INVALID otherwise) through directory
// descriptors opened with O_NOFOLLOW, so neither a symlink nor a directory swapped for one
// during the walk leads outside it, and scores each readable source file: 3 per term in its
// path, 1 per term in its text (lower-cased substring matches). Files scoring 0 are dropped.
RankedFiles rank_files(const std::filesystem::path& root, const std::vector<std::string>& terms,
                       const Limits& limits);

}  // namespace aios::compact_map
