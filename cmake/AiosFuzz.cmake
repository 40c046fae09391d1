# The libFuzzer targets (-DAIOS_FUZZ=ON, clang only): everything compiled with libFuzzer's
# coverage instrumentation, ASan and UBSan. Two trees build them:
# - the sanitizer test tree (scripts/test --sanitize: clang, AIOS_SANITIZE, tests on), whose
#   fuzzers CI runs (scripts/fuzz --ci), so one clang build serves both;
# - scripts/fuzz's own tree (build-fuzz/, tests off), which adds source-based coverage
#   (AIOS_FUZZ_COVERAGE) so a replay of the corpus reports line coverage (llvm-cov).
# Off: nothing here changes the normal build.
option(AIOS_FUZZ "Build the libFuzzer targets in fuzz/ (clang only)" OFF)
option(AIOS_FUZZ_COVERAGE "With AIOS_FUZZ: source-based coverage for the corpus replay" OFF)
if(AIOS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "AIOS_FUZZ needs clang: -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  if(NOT AIOS_SANITIZE)
    add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                        -fno-omit-frame-pointer)
    add_link_options(-fsanitize=address,undefined)
  endif()
  if(AIOS_FUZZ_COVERAGE)
    add_compile_options(-fprofile-instr-generate -fcoverage-mapping)
    add_link_options(-fprofile-instr-generate)
  endif()
endif()
