// How many times a crash or kill loop goes round. The release pass runs the count that makes a
// test's claim (20 kills at every phase, 200 random kills); the sanitizer pass, whose
// instrumented daemons start several times slower, runs a few rounds: enough to walk every
// recovery path under ASan and UBSan, which is what that pass is there to check.
#pragma once

namespace aios::test {

// GCC says so with __SANITIZE_ADDRESS__; clang 14 (the sanitizer pass's compiler) only through
// __has_feature.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

constexpr int rounds(int release, int sanitized) {
  return kSanitized ? sanitized : release;
}

}  // namespace aios::test
