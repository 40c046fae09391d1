# The process runner (src/process/): spawning with bounded output and timeouts, the bubblewrap
# sandbox and the socket-activated sandbox service, with real child processes.
aios_test(process_tests
  process/process_test.cpp
  process/sandbox_test.cpp
  process/sandbox_service_test.cpp)
