# The task plane's unit tests.
# Real SQLite in a temporary directory and a ManualClock; the tests read tables directly.
aios_test(fleet_tests
  fleet/fleet_order_test.cpp
  fleet/lifecycle_test.cpp
  fleet/claim_next_test.cpp
  fleet/rebind_compat_test.cpp
  fleet/authorization_test.cpp
  fleet/poll_view_test.cpp
  fleet/batch_test.cpp)
target_link_libraries(fleet_tests PRIVATE SQLite::SQLite3)
