#pragma once
// The one error registry: every fail-closed wire code with its HTTP status and operator text,
// and the exception type that carries a code across module boundaries.
//
// Codes are listed once, in error_codes.inc; docs/errors.md lists the same table and a test
// keeps the two in step. A failure without a code of its own becomes INTERNAL_ERROR (500).

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace aios {

enum class ErrorCode : std::uint16_t {
#define AIOS_ERROR(name, status, text) name,
#include "aios/error_codes.inc"
#undef AIOS_ERROR
};

struct ErrorInfo {
  ErrorCode code;
  std::string_view wire;  // e.g. "EXECUTION_REBIND_CAS_MISMATCH"
  int http_status;        // the status an HTTP handler answers with
  std::string_view text;  // one line for operators; never holds request data
};

// Every registered code, in declaration order.
std::span<const ErrorInfo> error_registry();

const ErrorInfo& error_info(ErrorCode code);

// The registered code spelled `wire`, or nullptr.
const ErrorInfo* find_error(std::string_view wire);

// Thrown by every module for a refusal or failure that has a wire code. `what()` is the code.
// `detail` is for logs and must never hold secret material or request bodies.
class Error : public std::exception {
 public:
  explicit Error(ErrorCode code, std::string detail = {});

  // A code received from a peer service (for instance the Bridge), kept verbatim.
  static Error remote(std::string code, int http_status);

  const std::string& code() const noexcept { return code_; }
  // True when the code is `code`'s wire spelling (a remote code spelled the same counts too).
  bool is(ErrorCode code) const noexcept;
  bool is_any(std::initializer_list<ErrorCode> codes) const noexcept;
  int http_status() const noexcept { return http_status_; }
  const std::string& detail() const noexcept { return detail_; }
  const char* what() const noexcept override { return code_.c_str(); }

 private:
  Error(std::string code, int http_status, std::string detail);

  std::string code_;
  int http_status_;
  std::string detail_;
};

}  // namespace aios
