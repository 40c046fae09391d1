# aiosctl: its pure pieces, and the binary against the real scheduler and rebind service (each
# subcommand's output and exit code, watch in a pseudo-terminal, doctor on a made-up host).
aios_test(ctl_tests ctl/render_test.cpp)
aios_integration_test(ctl_integration_tests ctl/ctl_test.cpp)
add_dependencies(ctl_integration_tests aiosctl aios-agent-task-execution-rebind)
target_link_libraries(ctl_integration_tests PRIVATE util)
