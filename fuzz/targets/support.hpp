#pragma once
// Helpers shared by the fuzz targets: the input as text or JSON, a process-wide scratch
// directory, and the one place that decides which exceptions are expected.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace aios::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input parsed as JSON, or nullopt when it is not JSON (nothing to fuzz further then).
std::optional<nlohmann::json> json_of(std::string_view text);

// A directory made once per process under $TMPDIR (else /tmp) and removed at exit.
const std::filesystem::path& scratch_dir();

// Writes `content` to `path` (truncating).
void write_file(const std::filesystem::path& path, std::string_view content);

// Runs `body`; an aios::Error is an expected refusal and is swallowed, anything else escapes.
template <typename F>
void refusal_ok(F&& body);

}  // namespace aios::fuzz

#include "aios/error.hpp"

template <typename F>
void aios::fuzz::refusal_ok(F&& body) {
  try {
    body();
  } catch (const aios::Error&) {
  }
}
