// JSON responses, the handler exception boundary and the response head.
#include "http/response.hpp"

#include <charconv>
#include <exception>
#include <stdexcept>
#include <string>

#include "aios/canonical.hpp"
#include "http/beast.hpp"
#include "http/url.hpp"

namespace aios::http {

Response json_response(int status, const nlohmann::json& body) {
  Response response;
  response.status = status;
  // Canonical, so integers past 64 bits go out as their digits. A body that has no JSON form is
  // a bug of ours, not the client's: a logic_error, which the boundary answers with 500.
  try {
    response.body = canonical_json(body);
  } catch (const Error& error) {
    throw std::logic_error(std::string("response body: ") + error.what());
  }
  return response;
}

Response error_response(const aios::Error& error) {
  return json_response(error.http_status(), nlohmann::json{{"error", error.code()}});
}

namespace detail {
namespace {

const Response& internal_error() {
  static const Response response = error_response(Error(ErrorCode::INTERNAL_ERROR));
  return response;
}

void report(const UnhandledExceptionObserver& observer, std::string_view what) noexcept {
  if (!observer) return;
  try {
    observer(what);
  } catch (...) {  // a failing log sink must not take the answer with it
  }
}

void append_number(std::string& out, std::size_t value) {
  char digits[24];
  const auto result = std::to_chars(std::begin(digits), std::end(digits), value);
  out.append(digits, result.ptr);
}

}  // namespace

bool is_bodiless(int status) {
  return status == 204 || status == 304;
}

bool is_sendable(const Response& response) {
  if (response.status < 200 || response.status > 599) return false;
  if (!is_safe_header_value(response.content_type)) return false;
  // Framing and caching headers are the server's; a handler that sets them is a bug.
  static constexpr std::string_view kReserved[] = {"Content-Length", "Transfer-Encoding",
                                                   "Connection", "Cache-Control", "Content-Type"};
  for (const auto& [name, value] : response.headers) {
    if (!is_token(name) || !is_safe_header_value(value)) return false;
    for (const auto reserved : kReserved) {
      if (iequals(name, reserved)) return false;
    }
  }
  return true;
}

Response dispatch(const Handler& handler, const Request& request,
                  const UnhandledExceptionObserver& observer) noexcept {
  try {
    try {
      Response response = handler(request);
      if (is_sendable(response)) return response;
      report(observer, "the handler returned a response that cannot be sent");
    } catch (const aios::Error& error) {
      Response response = error_response(error);
      if (is_sendable(response)) return response;
      report(observer, "an aios::Error carries a status outside 200-599");
    } catch (const std::exception& error) {
      report(observer, error.what());
    } catch (...) {
      report(observer, "a handler threw something that is not a std::exception");
    }
  } catch (...) {  // error_response itself failed (a remote code that is not UTF-8)
    report(observer, "an error response could not be built");
  }
  return internal_error();
}

void write_head(const Response& response, bool keep_alive, bool http10, std::string& head) {
  namespace bhttp = beast::http;
  const auto status = static_cast<unsigned>(response.status);
  head.clear();
  head.append("HTTP/1.1 ");
  append_number(head, status);
  head.push_back(' ');
  const auto reason = bhttp::obsolete_reason(bhttp::int_to_status(status));
  if (bhttp::int_to_status(status) != bhttp::status::unknown)
    head.append(reason.data(), reason.size());
  head.append("\r\n");
  if (!is_bodiless(response.status)) {
    head.append("Content-Type: ").append(response.content_type).append("\r\n");
    head.append("Content-Length: ");
    append_number(head, response.body.size());
    head.append("\r\n");
  }
  head.append("Cache-Control: no-store\r\n");
  for (const auto& [name, value] : response.headers) {
    head.append(name).append(": ").append(value).append("\r\n");
  }
  if (!keep_alive) {
    head.append("Connection: close\r\n");
  } else if (http10) {
    head.append("Connection: keep-alive\r\n");
  }
  head.append("\r\n");
}

}  // namespace detail
Later::~Later() {
  if (!done_ && sink_) sink_(detail::internal_error());
}

void Later::complete(Response response) {
  std::function<void(Response)> sink;
  {
    const std::lock_guard lock(mutex_);
    if (done_) return;
    done_ = true;
    if (!sink_) {
      early_ = std::make_unique<Response>(std::move(response));
      return;
    }
    sink = std::move(sink_);
  }
  sink(std::move(response));
}

void Later::on_complete(std::function<void(Response)> sink) {
  std::unique_ptr<Response> early;
  {
    const std::lock_guard lock(mutex_);
    if (!early_) {
      sink_ = std::move(sink);
      return;
    }
    early = std::move(early_);
  }
  sink(std::move(*early));
}

}  // namespace aios::http
