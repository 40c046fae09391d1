#pragma once
// The operator's dashboard: a read-only page the Task API serves under /ui/ from files built
// into the binary (src/ui/assets). The page holds no data of its own: it reads
// GET /v1/dashboard with the owner token the operator types in, which it keeps in its memory
// only. docs/operations.md describes the page, docs/api.md its endpoint.

#include <optional>
#include <string_view>

#include "aios/http.hpp"

namespace aios::ui {

// The Content-Security-Policy of every dashboard file: scripts, styles, images and requests
// from the page's own origin only, nothing inline, no frames, no forms submitted anywhere.
inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// The answer to a GET of `path` when it is the dashboard's ("/ui" redirects to "/ui/", which is
// the page; "/ui/<file>" its script, style and icon; 404 NOT_FOUND for any other file below
// /ui/); nullopt when the path is not the dashboard's.
std::optional<http::Response> file(std::string_view path);

}  // namespace aios::ui
