#pragma once
// The fuzz targets of our parsers. Each takes one input and returns 0; an expected refusal (an
// aios::Error) is caught inside, so anything that escapes (another exception, a sanitizer
// report, a failed invariant through std::abort) is a finding. The same functions are the
// libFuzzer entry points of the fuzz build (fuzz/entry.cpp) and are replayed over the committed
// corpus and every past finding by tests/fuzz/replay_test.cpp in the normal builds.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace aios::fuzz {

using Target = int (*)(const std::uint8_t* data, std::size_t size);

int canonical_json(const std::uint8_t* data, std::size_t size);
int envelope(const std::uint8_t* data, std::size_t size);
int http_request_head(const std::uint8_t* data, std::size_t size);
int http_endpoints(const std::uint8_t* data, std::size_t size);
int runtime_profile(const std::uint8_t* data, std::size_t size);
int runtime_request(const std::uint8_t* data, std::size_t size);
int runtime_output(const std::uint8_t* data, std::size_t size);
int credentials_dotenv(const std::uint8_t* data, std::size_t size);
int checkpoint_record(const std::uint8_t* data, std::size_t size);
int rebind_request(const std::uint8_t* data, std::size_t size);

struct NamedTarget {
  std::string_view name;  // the folder under fuzz/corpus and fuzz/regressions
  Target run;
};

inline constexpr NamedTarget kTargets[] = {
    {"canonical_json", canonical_json},       {"envelope", envelope},
    {"http_request_head", http_request_head}, {"http_endpoints", http_endpoints},
    {"runtime_profile", runtime_profile},     {"runtime_request", runtime_request},
    {"runtime_output", runtime_output},       {"credentials_dotenv", credentials_dotenv},
    {"checkpoint_record", checkpoint_record}, {"rebind_request", rebind_request},
};

// Aborts (a finding) with `what` on stderr when `condition` is false: an invariant of a parser
// that must hold for every input.
void require(bool condition, const char* what);

}  // namespace aios::fuzz
