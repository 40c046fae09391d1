#pragma once
// Request-target and URL text: percent-decoding, query strings, header tokens. Pure functions.

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aios::http::detail {

// Appends the percent-decoded `text` to `out`; with `plus_is_space`, '+' becomes ' '.
// Returns false (and leaves `out` partly written) on a '%' not followed by two hex digits.
bool percent_decode(std::string_view text, bool plus_is_space, std::string& out);

// Parses "a=1&b=x%20y" into `out` (cleared first): names and values percent-decoded with '+' as
// space, empty segments skipped, a name without '=' maps to "", the first value of a repeated
// name wins. Throws aios::Error REQUEST_INVALID on a malformed escape.
void parse_query(std::string_view query, std::map<std::string, std::string>& out);

// True for a non-empty RFC 9110 token (method names, header names).
bool is_token(std::string_view text);

// True when every byte is visible ASCII (0x21-0x7E); true for "".
bool is_visible_ascii(std::string_view text);

// True when no byte is CR, LF or NUL (header values).
bool is_safe_header_value(std::string_view text);

// ASCII case-insensitive equality.
bool iequals(std::string_view a, std::string_view b);

// The value of the first header named `name` (ASCII case-insensitive), or "" when absent.
std::string_view header_value(const std::vector<std::pair<std::string, std::string>>& headers,
                              std::string_view name);

}  // namespace aios::http::detail
