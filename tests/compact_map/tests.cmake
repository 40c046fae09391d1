# Compact interface map tests: the library against real temporary worktrees.
aios_test(compact_map_tests
  compact_map/profiles_test.cpp
  compact_map/symbols_test.cpp
  compact_map/tree_test.cpp
  compact_map/budget_test.cpp)
