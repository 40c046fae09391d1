// The one bounded entry point for JSON text (see aios/canonical.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aios/canonical.hpp"
#include "aios/error.hpp"

namespace aios {
namespace {

using Json = nlohmann::json;

// A binary value can only come from CBOR, MessagePack, BSON or UBJSON, which the suite never
// reads, so a binary of this subtype can only be an exact integer parse_json made.
constexpr std::uint64_t kExactIntegerSubtype = 0x696e74;  // "int"

// Python 3.11's int(text) limit (sys.get_int_max_str_digits()): json.loads refuses a longer
// literal with ValueError, so such text has no value in the seed either.
constexpr std::size_t kMaxIntegerDigits = 4300;

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// An integer literal past 64 bits: the how-many-th number of the text it is, and its text.
struct ExactInteger {
  std::size_t number_index;
  std::string_view literal;
};

struct Scan {
  bool too_deep = false;
  bool too_long = false;  // an integer past Python's digit limit
  std::vector<ExactInteger> exact;
};

// True for the spelling of a JSON integer (-?(0|[1-9][0-9]*)) that neither int64 nor uint64
// holds.
bool is_integer_past_64_bits(std::string_view token) {
  const bool negative = token.front() == '-';
  const std::string_view digits = token.substr(negative ? 1 : 0);
  if (digits.empty() ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  if (digits.size() > 1 && digits.front() == '0') return false;  // not JSON; the parser refuses
  const std::string_view limit = negative ? "9223372036854775808" : "18446744073709551615";
  return digits.size() > limit.size() || (digits.size() == limit.size() && digits > limit);
}

// One pass over the text outside strings: the nesting depth, and every integer literal past 64
// bits. Text that is not JSON may be misread; the parser refuses it anyway, and no rewrite below
// can make it JSON (only tokens spelled as valid integers are replaced, by another integer).
Scan scan(std::string_view text, std::size_t max_depth) {
  Scan result;
  std::size_t depth = 0;
  std::size_t numbers = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        result.too_deep = true;
        return result;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const std::size_t end = text.find_first_not_of("0123456789+-.eE", pos);
      const std::string_view token = text.substr(pos, end - pos);
      if (is_integer_past_64_bits(token)) {
        if (token.size() - (token.front() == '-' ? 1 : 0) > kMaxIntegerDigits) {
          result.too_long = true;
          return result;
        }
        result.exact.push_back({numbers, token});
      }
      ++numbers;
      pos += token.size() - 1;
    }
  }
  return result;
}

// nlohmann reads an integer past 64 bits as a double (and one past the double range not at all),
// so the text it parses has each such literal replaced by 0, and this DOM builder puts the exact
// integer back where that number arrives.
template <typename Document>
class ExactIntegerDom : public nlohmann::detail::json_sax_dom_parser<Document> {
  using Base = nlohmann::detail::json_sax_dom_parser<Document>;

 public:
  ExactIntegerDom(Document& document, const std::vector<ExactInteger>& exact)
      : Base(document, false), exact_(exact) {}

  bool number_integer(typename Document::number_integer_t value) {
    return exact_here() || Base::number_integer(value);
  }
  bool number_unsigned(typename Document::number_unsigned_t value) {
    return exact_here() || Base::number_unsigned(value);
  }
  bool number_float(typename Document::number_float_t value, const std::string& literal) {
    return exact_here() || Base::number_float(value, literal);
  }

 private:
  // True (and the exact integer added) when the number arriving now was one past 64 bits.
  bool exact_here() {
    const std::size_t index = numbers_++;
    if (next_ == exact_.size() || exact_[next_].number_index != index) return false;
    const std::string_view literal = exact_[next_++].literal;
    typename Document::binary_t bytes(std::vector<std::uint8_t>(literal.begin(), literal.end()),
                                      kExactIntegerSubtype);
    Base::binary(bytes);
    return true;
  }

  const std::vector<ExactInteger>& exact_;
  std::size_t next_ = 0;
  std::size_t numbers_ = 0;
};

std::string with_exact_integers_zeroed(std::string_view text,
                                       const std::vector<ExactInteger>& exact) {
  std::string out;
  out.reserve(text.size());
  std::size_t copied = 0;
  for (const auto& integer : exact) {
    const auto at = static_cast<std::size_t>(integer.literal.data() - text.data());
    out.append(text.substr(copied, at - copied));
    out += '0';
    copied = at + integer.literal.size();
  }
  out.append(text.substr(copied));
  return out;
}

template <typename Document>
Document parse_bounded(std::string_view text, std::size_t max_depth) {
  const Scan found = scan(text, max_depth);
  if (found.too_deep) throw Error(ErrorCode::JSON_NESTING_TOO_DEEP);
  const Document discarded(Document::value_t::discarded);
  // nlohmann skips a UTF-8 byte-order mark; json.loads of the decoded str refuses it, and the
  // seed decodes every file and body to str before it parses. (Checked after the scan, so a
  // deep document is JSON_NESTING_TOO_DEEP whatever its first bytes.)
  if (found.too_long || text.starts_with(kByteOrderMark)) return discarded;
  Document root;
  ExactIntegerDom<Document> dom(root, found.exact);
  const bool parsed =
      found.exact.empty()
          ? Document::sax_parse(text, &dom)
          : Document::sax_parse(with_exact_integers_zeroed(text, found.exact), &dom);
  if (!parsed || dom.is_errored()) return discarded;
  return root;
}

}  // namespace

nlohmann::json parse_json(std::string_view text, std::size_t max_depth) {
  return parse_bounded<Json>(text, max_depth);
}

nlohmann::ordered_json parse_json_ordered(std::string_view text, std::size_t max_depth) {
  return parse_bounded<nlohmann::ordered_json>(text, max_depth);
}

std::optional<std::string_view> exact_integer_text(const nlohmann::json& value) {
  if (!value.is_binary()) return std::nullopt;
  const auto& bytes = value.get_binary();
  if (!bytes.has_subtype() || bytes.subtype() != kExactIntegerSubtype) return std::nullopt;
  return std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace aios
