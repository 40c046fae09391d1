// Request accessors, the JSON body and bearer-token rules.
#include "aios/canonical.hpp"
#include "aios/http.hpp"
#include "http/beast.hpp"
#include "http/url.hpp"

namespace aios::http {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace

std::string_view Request::header(std::string_view name) const {
  return detail::header_value(headers, name);
}

std::string_view bearer_from_authorization(std::string_view value) {
  static constexpr std::string_view kScheme = "bearer";
  value = trim(value);
  if (value.size() <= kScheme.size() ||
      !detail::iequals(value.substr(0, kScheme.size()), kScheme) ||
      !is_blank(value[kScheme.size()])) {
    return {};
  }
  const std::string_view token = trim(value.substr(kScheme.size()));
  // Anything after the token (a second word, a control character) makes the header malformed.
  if (!detail::is_visible_ascii(token)) return {};
  return token;
}

bool bearer_matches(const Request& request, std::string_view expected_token) {
  if (expected_token.empty() || request.bearer_token.empty()) return false;
  return constant_time_equal(request.bearer_token, expected_token);
}

bool is_loopback_address(std::string_view address) {
  boost::system::error_code ec;
  const auto parsed = boost::asio::ip::make_address(std::string(address), ec);
  if (ec) return false;
  if (parsed.is_v6() && parsed.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, parsed.to_v6())
        .is_loopback();
  }
  return parsed.is_loopback();
}

bool OwnerToken::matches(const Request& request) const {
  if (!bearer_matches(request, token_)) return false;
  if (!remote_allowed_ && !is_loopback_address(request.remote_address)) {
    throw Error(ErrorCode::OWNER_NOT_LOOPBACK);
  }
  return true;
}

bool OwnerToken::admits(const Request& request) const {
  return bearer_matches(request, token_) &&
         (remote_allowed_ || is_loopback_address(request.remote_address));
}

nlohmann::json json_object_body(const Request& request) {
  if (request.body.empty()) return nlohmann::json::object();
  auto value = parse_json(request.body);
  if (value.is_discarded() || !value.is_object()) throw Error(ErrorCode::REQUEST_INVALID);
  return value;
}

}  // namespace aios::http
