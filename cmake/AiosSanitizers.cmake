# One switch for ASan + UBSan so CI can run the same tests in a second build tree.
if(AIOS_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all -Wno-maybe-uninitialized)
  add_link_options(-fsanitize=address,undefined)
endif()
