#include <array>
#include <string>
#include <utility>

#include "aios/error.hpp"

namespace aios {
namespace {

constexpr std::array kRegistry = {
#define AIOS_ERROR(name, status, text) ErrorInfo{ErrorCode::name, #name, status, text},
#include "aios/error_codes.inc"
#undef AIOS_ERROR
};

}  // namespace

std::span<const ErrorInfo> error_registry() {
  return kRegistry;
}

const ErrorInfo& error_info(ErrorCode code) {
  return kRegistry.at(static_cast<std::size_t>(code));
}

const ErrorInfo* find_error(std::string_view wire) {
  for (const auto& info : kRegistry) {
    if (info.wire == wire) return &info;
  }
  return nullptr;
}

Error::Error(ErrorCode code, std::string detail)
    : Error(std::string(error_info(code).wire), error_info(code).http_status, std::move(detail)) {}

Error::Error(std::string code, int http_status, std::string detail)
    : code_(std::move(code)), http_status_(http_status), detail_(std::move(detail)) {}

Error Error::remote(std::string code, int http_status) {
  return Error(std::move(code), http_status, {});
}

bool Error::is(ErrorCode code) const noexcept {
  return code_ == error_info(code).wire;
}

bool Error::is_any(std::initializer_list<ErrorCode> codes) const noexcept {
  for (const ErrorCode code : codes) {
    if (is(code)) return true;
  }
  return false;
}

}  // namespace aios
