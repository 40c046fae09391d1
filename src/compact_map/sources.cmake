# The compact interface map: the read-only core of the worker's source_capture /
# compact_interface_map adapter.
target_sources(aios_core PRIVATE
  compact_map/budget.cpp
  compact_map/build.cpp
  compact_map/excerpts.cpp
  compact_map/profiles.cpp
  compact_map/result.cpp
  compact_map/symbols.cpp
  compact_map/tree.cpp
)
