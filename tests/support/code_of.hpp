#pragma once
// The wire code a call throws, for table tests that assert exact refusals.

#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include "aios/error.hpp"

namespace aios::test {

// What code_of returns when the call did not throw.
inline constexpr std::string_view kOk = "OK";

// The wire code `fn` throws as aios::Error, "OK" when it returns, or a description of any other
// exception, so a table test reports the case instead of aborting on it.
template <typename F>
std::string code_of(F&& fn) {
  try {
    std::forward<F>(fn)();
  } catch (const aios::Error& error) {
    return error.code();
  } catch (const std::exception& other) {
    return std::string("unexpected std::exception: ") + other.what();
  }
  return std::string(kOk);
}

}  // namespace aios::test
