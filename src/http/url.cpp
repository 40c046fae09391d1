// Percent-decoding, query strings and http(s):// URLs.
#include "http/url.hpp"

#include <charconv>

#include "aios/error.hpp"
#include "aios/http.hpp"

namespace aios::http {
namespace detail {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

}  // namespace

bool percent_decode(std::string_view text, bool plus_is_space, std::string& out) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return false;
      const int high = hex_value(text[i + 1]);
      const int low = hex_value(text[i + 2]);
      if (high < 0 || low < 0) return false;
      out.push_back(static_cast<char>(high * 16 + low));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return true;
}

void parse_query(std::string_view query, std::map<std::string, std::string>& out) {
  out.clear();
  std::string name;
  std::string value;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view segment = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (segment.empty()) continue;
    const std::size_t eq = segment.find('=');
    name.clear();
    value.clear();
    if (!percent_decode(segment.substr(0, eq), true, name) ||
        (eq != std::string_view::npos && !percent_decode(segment.substr(eq + 1), true, value))) {
      throw Error(ErrorCode::REQUEST_INVALID, "malformed percent escape in the query string");
    }
    out.try_emplace(name, value);
  }
}

bool is_token(std::string_view text) {
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  if (text.empty()) return false;
  for (const char c : text) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum && kSpecials.find(c) == std::string_view::npos) return false;
  }
  return true;
}

bool is_visible_ascii(std::string_view text) {
  for (const char c : text) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

bool is_safe_header_value(std::string_view text) {
  return text.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

std::string_view header_value(const std::vector<std::pair<std::string, std::string>>& headers,
                              std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return value;
  }
  return {};
}

}  // namespace detail

namespace {

[[noreturn]] void invalid_url(const char* why) {
  throw Error(ErrorCode::HTTP_URL_INVALID, why);
}

bool is_host_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
         c == '-' || c == '_' || c == '~';
}

}  // namespace

Endpoint parse_http_url(std::string_view url) {
  static constexpr std::string_view kHttp = "http://";
  static constexpr std::string_view kHttps = "https://";
  const bool https =
      url.size() >= kHttps.size() && detail::iequals(url.substr(0, kHttps.size()), kHttps);
  if (!https &&
      (url.size() < kHttp.size() || !detail::iequals(url.substr(0, kHttp.size()), kHttp))) {
    invalid_url("the URL does not start with http:// or https://");
  }
  if (!detail::is_visible_ascii(url)) invalid_url("the URL has spaces or non-ASCII characters");
  std::string_view rest = url.substr(https ? kHttps.size() : kHttp.size());
  const std::size_t authority_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, authority_end);
  std::string_view target =
      authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);
  if (authority.find('@') != std::string_view::npos) invalid_url("the URL has user info");
  if (target.find('#') != std::string_view::npos) invalid_url("the URL has a fragment");

  Endpoint endpoint;
  endpoint.https = https;
  endpoint.port = https ? 443 : 80;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos || close < 2) invalid_url("the URL has a bad IPv6 host");
    endpoint.host = std::string(authority.substr(1, close - 1));
    for (const char c : endpoint.host) {
      if (detail::hex_value(c) < 0 && c != ':' && c != '.') invalid_url("bad IPv6 host");
    }
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') invalid_url("the URL has text after the IPv6 host");
      port_text = after.substr(1);
      if (port_text.empty()) invalid_url("the URL has an empty port");
    }
  } else {
    const std::size_t colon = authority.find(':');
    endpoint.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) invalid_url("the URL has an empty port");
    }
    for (const char c : endpoint.host) {
      if (!is_host_char(c)) invalid_url("the URL host has characters outside [A-Za-z0-9._~-]");
    }
  }
  if (endpoint.host.empty()) invalid_url("the URL has no host");
  if (!port_text.empty()) {
    unsigned value = 0;
    const auto [end, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc{} || end != port_text.data() + port_text.size() || value == 0 ||
        value > 65535) {
      invalid_url("the URL port is not a number from 1 to 65535");
    }
    endpoint.port = static_cast<std::uint16_t>(value);
  }
  // Built by append: GCC 12 at -O3 reports a false -Wrestrict for `"/" + std::string(...)`.
  endpoint.target.clear();
  if (target.empty() || target.front() == '?') endpoint.target.push_back('/');
  endpoint.target.append(target);
  return endpoint;
}

}  // namespace aios::http
