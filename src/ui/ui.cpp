#include "aios/ui.hpp"

#include <algorithm>

#include "aios/envelope.hpp"
#include "ui/embedded.hpp"

namespace aios::ui {
namespace {

std::string_view content_type_of(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

void add_security_headers(http::Response& response) {
  response.headers.emplace_back("Content-Security-Policy", std::string(kContentSecurityPolicy));
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("X-Frame-Options", "DENY");
  response.headers.emplace_back("Referrer-Policy", "no-referrer");
  response.headers.emplace_back("Cross-Origin-Opener-Policy", "same-origin");
  response.headers.emplace_back("Cross-Origin-Resource-Policy", "same-origin");
}

}  // namespace

std::optional<http::Response> file(std::string_view path) {
  if (path == "/ui") {
    http::Response response;
    response.status = 308;
    response.content_type = "text/plain; charset=utf-8";
    response.headers.emplace_back("Location", "/ui/");
    add_security_headers(response);
    return response;
  }
  if (!path.starts_with("/ui/")) return std::nullopt;
  auto name = path.substr(4);
  if (name.empty()) name = "index.html";
  const auto files = embedded_files();
  const auto found = std::find_if(files.begin(), files.end(), [&](const EmbeddedFile& embedded) {
    return embedded.name == name;
  });
  if (found == files.end()) envelope::fail(ErrorCode::NOT_FOUND);
  http::Response response;
  response.body = std::string(found->content);
  response.content_type = std::string(content_type_of(name));
  add_security_headers(response);
  return response;
}

}  // namespace aios::ui
