# LLVM's lld where it is installed (scripts/bootstrap installs it): it links a sanitized test
# binary in 2 s where ld.bfd takes 8, and a build links some forty of them. The binaries are the
# same either way; without lld the default linker is used.
include(CheckLinkerFlag)
option(AIOS_USE_LLD "Link with lld when the compiler can use it" ON)
if(AIOS_USE_LLD)
  check_linker_flag(CXX -fuse-ld=lld AIOS_HAVE_LLD)
  if(AIOS_HAVE_LLD)
    add_link_options(-fuse-ld=lld)
  endif()
endif()
