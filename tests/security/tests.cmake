# Security hardening (issues 11, 19): the authorization matrix over every endpoint of the three
# servers, a hostile agent and a hostile verification command trying every escape from their
# sandboxes, bodies nested past the JSON depth bound, and the secret canary through a full
# worker + executor run.
aios_integration_test(security_integration_tests
  security/authorization_matrix_test.cpp
  security/escape_test.cpp
  security/verification_escape_test.cpp
  security/hostile_json_test.cpp
  security/hostile_clients_test.cpp
  security/secret_canary_test.cpp)
add_dependencies(security_integration_tests aios-agent-task-execution-rebind
  aios-online-agent-worker aios-external-agent-executor)

# Storage fault injection over the task plane in-process (real SQLite): the n-th write failing,
# a SQLITE_BUSY storm, a full disk; and every file and row reader given JSON nested 10^5 and
# 10^6 deep.
aios_test(security_tests security/storage_faults_test.cpp security/deep_readers_test.cpp)
target_link_libraries(security_tests PRIVATE SQLite::SQLite3)

# The crash-point matrix: the scheduler, the rebind daemon and the executor killed at each named
# fault point (include/aios/environment.hpp) 20 times, and the scheduler killed at random 200 times
# (AIOS_CRASH_RANDOM_KILLS) under traffic.
aios_integration_test(crash_matrix_tests security/crash_matrix_test.cpp)
add_dependencies(crash_matrix_tests aios-agent-task-execution-rebind aios-external-agent-executor)
aios_on_postgres(crash_matrix_tests 300)
