#pragma once
// What a listener checks of a connection or request before the handler runs: its Host, and
// whether the bodies held in memory across all connections leave room for its body.

#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace aios::http::detail {

// Whether a Host header value (name or IP literal, an optional port, IPv6 in brackets) names
// a loopback name or address, one of `listener_hosts` (the listener's own addresses, as
// ServerOptions::host lists them) or one of `allowed` (ServerOptions::allowed_hosts). ASCII
// case and one trailing dot are ignored; an empty value (no Host header) passes.
bool host_allowed(std::string_view host_header, std::string_view listener_hosts,
                  const std::vector<std::string>& allowed);

// Adds `bytes` to `held` unless that would take it past `limit`: false, and nothing added,
// when it does not fit.
bool reserve_body(std::atomic<std::size_t>& held, std::size_t limit, std::size_t bytes);

}  // namespace aios::http::detail
