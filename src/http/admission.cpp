// Host checks and the body budget.
#include "http/admission.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace aios::http::detail {
namespace {

std::string lowered(std::string_view text) {
  std::string result(text);
  std::transform(result.begin(), result.end(), result.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return result;
}

// The host part of a Host value: brackets and port removed, lowered, one trailing dot dropped.
std::string host_part(std::string_view value) {
  if (!value.empty() && value.front() == '[') {
    const auto close = value.find(']');
    value = close == std::string_view::npos ? value.substr(1) : value.substr(1, close - 1);
  } else if (const auto colon = value.find(':');
             colon != std::string_view::npos &&
             value.find(':', colon + 1) == std::string_view::npos) {
    value = value.substr(0, colon);
  }
  if (!value.empty() && value.back() == '.') value.remove_suffix(1);
  return lowered(value);
}

bool loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return ::inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

bool listed(const std::string& host, std::string_view list) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    if (host_part(list.substr(0, comma)) == host) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

bool host_allowed(std::string_view host_header, std::string_view listener_hosts,
                  const std::vector<std::string>& allowed) {
  if (host_header.empty()) return true;
  const auto host = host_part(host_header);
  if (host.empty()) return false;
  return loopback(host) || listed(host, listener_hosts) ||
         std::any_of(allowed.begin(), allowed.end(),
                     [&](const std::string& name) { return host_part(name) == host; });
}

bool reserve_body(std::atomic<std::size_t>& held, std::size_t limit, std::size_t bytes) {
  auto now = held.load();
  do {
    if (bytes > limit || now > limit - bytes) return false;
  } while (!held.compare_exchange_weak(now, now + bytes));
  return true;
}

}  // namespace aios::http::detail
