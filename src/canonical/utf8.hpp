#pragma once
// UTF-8 primitives shared by the canonical module and by every module that must treat text
// exactly as the Python deployment does (str.strip, slicing, bytes.decode("utf-8", "replace")).
//
// Invalid input never fails: each maximal invalid subpart (what CPython replaces with one
// U+FFFD) counts as one code point that is not whitespace, so counts and cuts agree with
// Python applied to the decoded text.

#include <cstddef>
#include <string>
#include <string_view>

namespace aios::utf8 {

inline constexpr char32_t kReplacement = 0xFFFD;

struct Decoded {
  char32_t code_point;  // kReplacement when !valid
  std::size_t length;   // bytes consumed, at least 1
  bool valid;
};

// Decodes the sequence starting at text[pos] (pos < text.size()). An invalid sequence
// consumes its maximal subpart, as CPython's decoder does before it emits one U+FFFD.
Decoded decode(std::string_view text, std::size_t pos);

// True for exactly the code points where Python's str.isspace() (and re's \s) is true.
bool is_python_space(char32_t code_point);

// Python's re.IGNORECASE on str for an ASCII `word` at text[pos]: each letter matches both
// ASCII cases and the code points whose simple case mapping reaches it (U+0130 and U+0131 for
// i, U+017F for s, U+212A for k; checked against CPython 3.11 for every letter); anything else
// only itself. On a match `pos` moves past it; otherwise it is left where it was.
bool match_ignore_case(std::string_view text, std::size_t& pos, std::string_view word);

// Appends the UTF-8 encoding of a valid scalar value.
void append(std::string& out, char32_t code_point);

// Python's bytes.decode("utf-8", "replace").
std::string decode_replace(std::string_view bytes);

// The implementations behind aios::python_strip, prefix_code_points and count_code_points.
std::string_view python_strip(std::string_view text);
std::string_view prefix_code_points(std::string_view text, std::size_t n);
std::size_t count_code_points(std::string_view text);

}  // namespace aios::utf8
