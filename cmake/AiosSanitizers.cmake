# One switch for ASan + UBSan so CI can run the same tests in a second build tree (gcc or clang;
# with clang and AIOS_FUZZ the same tree also builds the libFuzzer targets, cmake/AiosFuzz.cmake).
if(AIOS_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
  add_link_options(-fsanitize=address,undefined)
endif()
# clang's default of 256 nested brackets is too few for the error registry, which deduces a
# std::array from every code at once.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_compile_options(-fbracket-depth=1024)
endif()
