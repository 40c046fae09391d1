# The worker end to end: the real scheduler (Task API + Bridge with a real bare repository),
# the real executor with a Python agent profile, and the real worker binary; network faults go
# through tests/support/fault_proxy.py.
aios_integration_test(worker_e2e_tests worker/worker_e2e_test.cpp worker/crash_test.cpp
  worker/rebind_e2e_test.cpp worker/network_faults_test.cpp)
add_dependencies(worker_e2e_tests aios-agent-task-execution-rebind)
add_dependencies(worker_e2e_tests aios-online-agent-worker aios-external-agent-executor)

# The result documents and derived ids, as pure functions, the command line's configuration, and
# the peer calls and verification children against the recording fakes of the environment, and
# how the slots' claims and results are gathered into requests.
aios_test(worker_tests worker/results_test.cpp worker/command_line_test.cpp
  worker/services_test.cpp worker/slots_test.cpp)
target_link_libraries(worker_tests PRIVATE CLI11::CLI11)
