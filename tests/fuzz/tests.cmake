# The fuzz targets (fuzz/targets) built with the normal compiler and replayed over the committed
# corpus and past findings, so the release and ASan builds keep every fixed crash fixed.
aios_test(fuzz_replay_tests
  fuzz/replay_test.cpp
  ${PROJECT_SOURCE_DIR}/fuzz/targets/support.cpp
  ${PROJECT_SOURCE_DIR}/fuzz/targets/json_targets.cpp
  ${PROJECT_SOURCE_DIR}/fuzz/targets/http_targets.cpp
  ${PROJECT_SOURCE_DIR}/fuzz/targets/file_targets.cpp)
target_include_directories(fuzz_replay_tests PRIVATE "${PROJECT_SOURCE_DIR}/fuzz")
