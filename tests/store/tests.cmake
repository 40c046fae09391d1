# The store conformance suite, run against every backend (store/conformance_test.cpp), and the
# SQLite backend's own tests: its connection, prepared statements, group commit and query plans
# (real SQLite in a temporary directory and a ManualClock; they read tables directly).
aios_test(store_tests
  store/conformance_test.cpp
  store/postgres_test.cpp
  store/store_test.cpp
  store/prepared_test.cpp
  store/group_commit_test.cpp
  store/query_plan_test.cpp)
target_link_libraries(store_tests PRIVATE SQLite::SQLite3 PkgConfig::LIBPQ)

# Against the real daemons, on the PostgreSQL server scripts/test starts: aios-store migrate (a
# scheduler's SQLite store copied into a fresh database and served from it) and scheduler
# replicas on one database (the lead, wake-ups across replicas, every replica sweeping).
# And wire faults between a scheduler and its server (tests/support/wire_fault_proxy.py).
aios_integration_test(store_integration_tests store/migrate_test.cpp store/replicas_test.cpp
  store/wire_faults_test.cpp)
add_dependencies(store_integration_tests aios-store)
