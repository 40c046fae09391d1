// The libFuzzer entry point of one target; the fuzz build compiles this file once per target
// with AIOS_FUZZ_FUNCTION naming it (fuzz/CMakeLists.txt).
#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return AIOS_FUZZ_FUNCTION(data, size);
}
