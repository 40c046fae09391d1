# Executor tests. executor_tests: the library with real child processes (Python helpers run
# by /usr/bin/python3 stand in for the agent; hermes_standin.py for the Hermes CLI).
# executor_integration_tests: the
# aios-external-agent-executor daemon in serve mode on a temporary exchange directory.
# executor_realcli_tests: the real OpenClaw CLI behind it against a fake OpenAI-compatible server
# (installed by scripts/install-realcli, cached between runs).
aios_test(executor_tests
  executor/profile_test.cpp
  executor/request_test.cpp
  executor/credentials_test.cpp
  executor/execute_test.cpp
  executor/exchange_test.cpp
  executor/command_line_test.cpp
  executor/spawn_spec_test.cpp
  executor/gateway_run_test.cpp
  executor/hermes_test.cpp)
target_link_libraries(executor_tests PRIVATE CLI11::CLI11)
aios_integration_test(executor_integration_tests executor/serve_test.cpp)
add_dependencies(executor_integration_tests aios-external-agent-executor)
aios_e2e_test(executor_realcli_tests executor/realcli_test.cpp)
add_dependencies(executor_realcli_tests aios-external-agent-executor)
# The engineering runtime broker is a mode of the same executor; its suites have their own list.
include(engineering/tests.cmake)
