# The fuzz build (-DAIOS_FUZZ=ON, clang only): everything compiled with libFuzzer's coverage
# instrumentation, ASan and UBSan, plus source-based coverage so a replay of the corpus reports
# line coverage (llvm-cov). Off: nothing here changes the normal build.
option(AIOS_FUZZ "Build the libFuzzer targets in fuzz/ (clang only)" OFF)
if(AIOS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "AIOS_FUZZ needs clang: -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -fprofile-instr-generate -fcoverage-mapping
                      # the error registry deduces a std::array from every code at once
                      -fbracket-depth=1024)
  add_link_options(-fsanitize=address,undefined -fprofile-instr-generate)
endif()
