# The systemd notify protocol (src/service_manager/) as each real daemon speaks it: READY=1
# once serving, watchdog pings while healthy, STOPPING=1 and a clean exit on SIGTERM.
aios_integration_test(service_manager_tests service_manager/service_manager_test.cpp)
add_dependencies(service_manager_tests aios-task-scheduler aios-agent-task-execution-rebind
  aios-online-agent-worker aios-external-agent-executor)
