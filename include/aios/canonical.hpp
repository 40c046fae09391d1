#pragma once
// Canonical JSON and the text helpers every digest, result and log line goes through.
//
// The canonical form is byte-identical to Python's
//   json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
// so that digests computed here equal the digests of the Python deployment we replace.
// All functions are pure and thread-safe.

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace aios {

// Canonical bytes of `value` (UTF-8). Keys sort by code point, `"` `\` and control
// characters are escaped as Python escapes them, everything else (DEL, non-BMP) is raw,
// floats are written as Python's repr, exact integers (see parse_json) as their digits. Throws
// aios::Error CANONICAL_JSON_INVALID for NaN or infinity (Python would write a non-JSON token),
// other binary values, strings or keys that are not valid UTF-8 (no Python str holds them) and
// nesting deeper than 1000 levels.
std::string canonical_json(const nlohmann::json& value);

// The deepest nesting of arrays and objects that any JSON reader of the suite accepts: HTTP
// bodies, profiles, requests, results, plans, runtime results and checkpoints.
inline constexpr std::size_t kMaxJsonDepth = 64;

// Parses `text` as JSON once a scan of the text itself has found arrays and objects nested at
// most `max_depth` deep, so no deeper tree is ever built, copied or walked (a copy or a walk of
// one recurses per level and a hostile body of 200,000 levels overflows a thread's stack).
// Text that is not JSON gives a discarded value, as nlohmann::json::parse without exceptions
// does; so does text that starts with a UTF-8 byte-order mark, as Python's json.loads of a str
// refuses it. Deeper nesting throws aios::Error JSON_NESTING_TOO_DEEP.
// An integer literal outside 64 bits is kept exactly, as Python's json keeps it, in a binary
// value that exact_integer_text reads (nlohmann's own parse would round it to a double); one of
// more than 4300 digits is not JSON, as Python 3.11's int() limit makes it for json.loads.
nlohmann::json parse_json(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

// parse_json keeping each object's members in document order, for the readers that must take
// decisions in the order Python's dict iterates (a profile's environment, its credential_env).
nlohmann::ordered_json parse_json_ordered(std::string_view text,
                                          std::size_t max_depth = kMaxJsonDepth);

// The decimal text ("-" and digits) of an integer parse_json kept exactly; nullopt for any
// other value, including integers that fit in 64 bits.
std::optional<std::string_view> exact_integer_text(const nlohmann::json& value);

// `size` bytes as lower-case hex (digests, MACs, random tokens).
std::string hex_of(const unsigned char* data, std::size_t size);

// Lower-case hex SHA-256 of `data` (OpenSSL).
std::string sha256_hex(std::string_view data);

// The same over data fed in pieces (a stream, a table's rows), never held whole.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view data);
  // Lower-case hex of what was fed; the object is spent afterwards.
  std::string finish();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

// sha256_hex(canonical_json(value)).
std::string digest(const nlohmann::json& value);

// True when `value` is 64 lower-case hex characters.
bool is_sha256_hex(std::string_view value);

// Compares in time independent of where the inputs differ (length still leaks).
bool constant_time_equal(std::string_view a, std::string_view b);

// The marker placed in the middle of truncated text.
inline constexpr std::string_view kTruncationMarker = "\n...[TRUNCATED]...\n";

// Replaces `authorization: bearer X` and `password|passwd|secret|token|api_key = X`
// (case-insensitive, `:` or `=`) with "[REDACTED]", as the seed's SENSITIVE_RE does.
std::string sanitize_text(std::string_view text);

// sanitize_text, then bounded to `limit` UTF-8 bytes: when longer, the first and last
// max(1, floor((limit - 19) / 2)) bytes around kTruncationMarker (19 bytes), so the result can
// exceed a `limit` under 21, as the seed's does; cut sequences become U+FFFD. Invalid input
// bytes become U+FFFD first, so the result is always valid UTF-8.
std::string bounded_text(std::string_view text, std::size_t limit);

// Python's str.strip(): removes leading and trailing Unicode whitespace.
std::string_view python_strip(std::string_view text);

// Python 3.11's str.lower() of UTF-8 `text`: the full lowercase mapping of Unicode 14.0 (U+0130
// becomes two code points), with the final-sigma rule (U+03A3 becomes U+03C2 after a cased
// letter and before none, skipping case-ignorable ones). Bytes that are not UTF-8 are kept.
std::string python_lower(std::string_view text);

// Python's int(text) in base 10: Unicode whitespace around, one optional sign, decimal digits
// of any script (Unicode category Nd) with single underscores between them, leading zeros
// allowed. nullopt where int() raises ValueError; magnitudes past 10^18 come back as 10^18, so
// a caller's range check still refuses them.
std::optional<long long> python_int(std::string_view text);

// Python's text[:n]: the first `n` code points of UTF-8 `text`.
std::string_view prefix_code_points(std::string_view text, std::size_t n);

// Number of code points in UTF-8 `text`.
std::size_t count_code_points(std::string_view text);

// `text` with ASCII letters lower-cased and every other byte kept (C's tolower in the "C"
// locale), for names and signals that are ASCII by contract.
std::string ascii_lower(std::string_view text);
// The same, upper-cased.
std::string ascii_upper(std::string_view text);

// UTF-8 primitives for every module that must treat text exactly as the Python deployment does
// (str.strip, slicing, bytes.decode("utf-8", "replace")).
//
// Invalid input never fails: each maximal invalid subpart (what CPython replaces with one
// U+FFFD) counts as one code point that is not whitespace, so counts and cuts agree with
// Python applied to the decoded text.
namespace utf8 {

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

// True when `text` is well-formed UTF-8 (what bytes.decode("utf-8") accepts).
bool valid(std::string_view text);

// Python's bytes.decode("utf-8", "replace").
std::string decode_replace(std::string_view bytes);

// The implementations behind aios::python_strip, prefix_code_points and count_code_points.
std::string_view python_strip(std::string_view text);
std::string_view prefix_code_points(std::string_view text, std::size_t n);
std::size_t count_code_points(std::string_view text);

}  // namespace utf8
}  // namespace aios
