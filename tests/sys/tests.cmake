# Time, secrets and periodic threads (src/sys/).
aios_test(sys_tests sys/sys_test.cpp)
