# The operator's dashboard (include/aios/ui.hpp): its files are edited in ui/assets and built
# into the library, so the scheduler serves them with nothing installed beside it.
target_sources(aios_core PRIVATE
  ui/ui.cpp
)
aios_embed(aios_core aios::ui ui/embedded.hpp "${CMAKE_CURRENT_SOURCE_DIR}/ui/assets"
  index.html app.js app.css favicon.svg)
