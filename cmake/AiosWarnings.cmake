# Warnings are errors for every target of ours; third-party headers come in as SYSTEM.
add_library(aios_warnings INTERFACE)
target_compile_options(aios_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Werror -Wshadow -Wconversion -Wsign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
