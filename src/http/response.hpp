#pragma once
// Turning a handler's Response into bytes on the wire, and the one exception boundary between
// a handler and a connection. Internal to src/http.

#include <string>

#include "aios/http.hpp"

namespace aios::http::detail {

// Calls `handler` and returns what to send: the handler's response when it is valid,
// error_response(e) for an aios::Error, and 500 INTERNAL_ERROR for anything else (reported to
// `observer` with its what() text, which never reaches the wire) or for a response that cannot
// be sent (status outside 200-599, a header that would split the response). Never throws.
Response dispatch(const Handler& handler, const Request& request,
                  const UnhandledExceptionObserver& observer) noexcept;

// True when `response` can be serialized as is: status 200-599, token header names, header
// values and content type without CR, LF or NUL, and no extra header the server owns
// (Content-Length, Transfer-Encoding, Connection, Cache-Control, Content-Type).
bool is_sendable(const Response& response);

// True when the status never carries a body (204, 304).
bool is_bodiless(int status);

// Writes the status line and headers of `response` into `head` (cleared first, capacity kept):
// Content-Type, Content-Length, Cache-Control: no-store, the extra headers, and
// "Connection: close" when !keep_alive (or "Connection: keep-alive" for an HTTP/1.0 peer that
// keeps the connection). Requires is_sendable(response).
void write_head(const Response& response, bool keep_alive, bool http10, std::string& head);

}  // namespace aios::http::detail
