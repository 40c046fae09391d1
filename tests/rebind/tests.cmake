# The execution rebind: rebind_tests are unit tests of the request, the store transaction (on
# the seed's minimal schema and on the task plane's), the Bridge resolver and the HTTP routes;
# rebind_integration_tests start the real aios-agent-task-execution-rebind next to the real
# aios-task-scheduler (the database, the tasks and the Bridge) over HTTP.
aios_test(rebind_tests
  rebind/seed_port_test.cpp
  rebind/request_test.cpp
  rebind/store_test.cpp
  rebind/bridge_resolver_test.cpp
  rebind/router_test.cpp
  rebind/task_plane_test.cpp)
aios_integration_test(rebind_integration_tests
  rebind/daemon_test.cpp
  rebind/daemon_bridge_test.cpp)
add_dependencies(rebind_integration_tests aios-agent-task-execution-rebind)
aios_on_postgres(rebind_integration_tests 300 "-RebindStartup.*:RebindDaemonOnSeedSchema.*")
