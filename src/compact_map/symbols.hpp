#pragma once
// The per-language symbol scanner: definitions with their line numbers, read line by line.

#include <cstddef>
#include <vector>

#include "compact_map/model.hpp"

namespace aios::compact_map {

// The definitions in `file` (by file.language), in line order, at most `max_symbols`:
// - python: class, function, method ("Class.name"); functions nested in functions are skipped.
// - c, cpp: class, struct, union, enum, namespace, macro (#define), and functions whose
//   definition or declaration starts in column 0 (free functions, "Class::method" bodies),
//   plus methods declared in a class body ("Class.name").
// - javascript, typescript: class, function (declarations and arrow/function constants),
//   interface, type, enum, and methods of a class ("Class.name").
// - go: function, method ("Receiver.name"), struct, interface, type.
// - rust: function, method ("Type.name" inside an impl), struct, enum, trait, union, type, mod.
// - java: class, interface, enum, record, annotation, and methods ("Class.name").
// Lines longer than 400 bytes and comment lines are not read. It is a scanner, not a parser:
// a definition inside a string literal can be reported, and an unusual layout can be missed.
std::vector<Symbol> scan_symbols(const SourceFile& file, std::size_t max_symbols);

}  // namespace aios::compact_map
