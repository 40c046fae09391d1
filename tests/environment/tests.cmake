# The environment bundle's own pieces (src/environment/): the crash tests' fault plan.
aios_test(environment_tests environment/fault_plan_test.cpp)
