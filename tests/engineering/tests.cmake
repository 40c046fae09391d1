# Engineering runtime broker (seed 004). engineering_tests: the contract's documents and the
# worker's checks. engineering_e2e_tests: the real scheduler, the executor in --broker mode with
# a scripted backend and the worker, from task creation to a governed commit or a refusal.
# engineering_realcli_tests: with the real OpenClaw and Codex CLIs (scripts/install-realcli)
# against a fake model, the broker self-test and a task from creation to SUCCEEDED with the
# model's edit committed.
aios_test(engineering_tests engineering/contract_test.cpp)
aios_integration_test(engineering_e2e_tests engineering/engineering_e2e_test.cpp)
add_dependencies(engineering_e2e_tests aios-online-agent-worker aios-external-agent-executor)
aios_e2e_test(engineering_realcli_tests engineering/realcli_broker_test.cpp)
add_dependencies(engineering_realcli_tests aios-online-agent-worker aios-external-agent-executor)
