// Filling a Request from Beast's parser callbacks.
#include "http/request_parser.hpp"

#include <algorithm>
#include <utility>

#include "http/url.hpp"

namespace aios::http::detail {
namespace {

std::string_view view(beast::string_view text) {
  return {text.data(), text.size()};
}

}  // namespace

RequestParser::RequestParser(Request& request, std::size_t max_body_bytes,
                             std::size_t max_header_bytes,
                             std::function<std::size_t(std::string_view)> body_limit_for)
    : request_(request), body_limit_for_(std::move(body_limit_for)) {
  body_bytes_limit_ = max_body_bytes;
  body_limit(body_bytes_limit_);
  header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(max_header_bytes, UINT32_MAX)));
  request_.method.clear();
  request_.target.clear();
  request_.path.clear();
  request_.query.clear();
  request_.body.clear();
  request_.bearer_token.clear();
}

void RequestParser::on_request_impl(beast::http::verb, beast::string_view method_str,
                                    beast::string_view target, int version, beast::error_code& ec) {
  // Only origin-form: no absolute-form (proxies), no authority-form (CONNECT), no "*".
  if (target.empty() || target.front() != '/') {
    ec = beast::http::error::bad_target;
    return;
  }
  if (version != 10 && version != 11) {
    ec = beast::http::error::bad_version;
    return;
  }
  request_.method.assign(method_str.data(), method_str.size());
  request_.target.assign(target.data(), target.size());
  version_ = version;
  // Before the fields: Beast refuses a Content-Length over the limit as it finishes the header.
  if (body_limit_for_) {
    if (const auto limit = body_limit_for_(request_.target); limit > 0) {
      body_bytes_limit_ = limit;
      body_limit(body_bytes_limit_);
    }
  }
}

void RequestParser::on_field_impl(beast::http::field name, beast::string_view name_string,
                                  beast::string_view value, beast::error_code&) {
  auto& headers = request_.headers;
  if (headers_used_ == headers.size()) headers.emplace_back();
  auto& [key, text] = headers[headers_used_++];
  key.assign(name_string.data(), name_string.size());
  text.assign(value.data(), value.size());
  if (name == beast::http::field::authorization) {
    if (++authorization_count_ == 1) request_.bearer_token = bearer_from_authorization(view(value));
  } else if (name == beast::http::field::expect) {
    expects_continue_ = iequals(view(value), "100-continue");
  }
}

void RequestParser::on_header_impl(beast::error_code& ec) {
  request_.headers.resize(headers_used_);
  if (authorization_count_ > 1) request_.bearer_token.clear();
  const std::string_view target = request_.target;
  const std::size_t question = target.find('?');
  request_.path.assign(target.substr(0, question));
  if (question != std::string_view::npos) {
    try {
      parse_query(target.substr(question + 1), request_.query);
    } catch (const aios::Error&) {
      ec = beast::http::error::bad_target;
    }
  }
}

void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                                      beast::error_code&) {
  // The base parser has already refused a Content-Length over the body limit.
  if (content_length) request_.body.reserve(static_cast<std::size_t>(*content_length));
}

std::size_t RequestParser::on_body_impl(beast::string_view body, beast::error_code&) {
  request_.body.append(body.data(), body.size());
  return body.size();
}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, beast::string_view body,
                                              beast::error_code&) {
  request_.body.append(body.data(), body.size());
  return body.size();
}

}  // namespace aios::http::detail
