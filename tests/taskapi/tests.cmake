# Task API integration tests against the real daemon: aios-task-scheduler on an ephemeral
# loopback port with a temporary database, driven over HTTP (tests/support/daemon.hpp starts
# and stops it; taskapi/client.hpp speaks JSON to it).
aios_integration_test(taskapi_integration_tests
  taskapi/lifecycle_test.cpp
  taskapi/lease_test.cpp
  taskapi/concurrency_test.cpp
  taskapi/restart_test.cpp
  taskapi/idempotency_test.cpp
  taskapi/errors_test.cpp
  taskapi/eligibility_test.cpp
  taskapi/startup_test.cpp
  taskapi/agents_test.cpp
  taskapi/dashboard_test.cpp
  taskapi/batch_test.cpp)
aios_on_postgres(taskapi_integration_tests 300 "-StartupTest.*")

# The claim-next long poll in process (real SQLite, a ManualClock, the Task API's handler).
aios_test(taskapi_tests taskapi/claim_wait_test.cpp)
target_link_libraries(taskapi_tests PRIVATE SQLite::SQLite3)
