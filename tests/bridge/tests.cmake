# Governed Bridge integration tests: the real aios-task-scheduler with a real bare authority
# repository in the test's temporary directory, driven over HTTP on both of its ports.
aios_integration_test(bridge_integration_tests
  bridge/plans_test.cpp
  bridge/commits_test.cpp
  bridge/fencing_test.cpp
  bridge/repository_pack_test.cpp
  bridge/requeue_test.cpp)

# The crash windows of a governed commit, set up in-process (real SQLite, real repository).
aios_test(bridge_tests bridge/recovery_test.cpp)
