#pragma once
// A Beast request parser that writes straight into an aios::http::Request, so a connection
// reuses one Request (and its string capacity) for every request it reads.
//
// A parser reads one message; build a new one for the next (its body limit counts down).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "aios/http.hpp"
#include "http/beast.hpp"

namespace aios::http::detail {

class RequestParser final : public beast::http::basic_parser<true> {
 public:
  // Clears the message fields of `request` (keeping capacity; remote_address/port are left
  // alone) and limits the body and header sizes; `body_limit_for` (may be empty) gives a
  // target's own body limit (ServerOptions::max_body_bytes_for).
  RequestParser(Request& request, std::size_t max_body_bytes, std::size_t max_header_bytes,
                std::function<std::size_t(std::string_view)> body_limit_for = {});

  // True when the client sent "Expect: 100-continue".
  bool expects_continue() const { return expects_continue_; }

  // HTTP version of the request line (10 or 11).
  int version() const { return version_; }

  // The most body bytes this request may bring (its target's limit, once the line is read).
  std::uint64_t body_bytes_limit() const { return body_bytes_limit_; }

 private:
  void on_request_impl(beast::http::verb method, beast::string_view method_str,
                       beast::string_view target, int version, beast::error_code& ec) override;
  void on_response_impl(int, beast::string_view, int, beast::error_code&) override {}
  void on_field_impl(beast::http::field name, beast::string_view name_string,
                     beast::string_view value, beast::error_code& ec) override;
  void on_header_impl(beast::error_code& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         beast::error_code& ec) override;
  std::size_t on_body_impl(beast::string_view body, beast::error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t remain, beast::string_view body,
                                 beast::error_code& ec) override;
  void on_finish_impl(beast::error_code&) override {}

  Request& request_;
  std::function<std::size_t(std::string_view)> body_limit_for_;
  std::uint64_t body_bytes_limit_ = 0;
  std::size_t headers_used_ = 0;
  int authorization_count_ = 0;
  int version_ = 11;
  bool expects_continue_ = false;
};

}  // namespace aios::http::detail
