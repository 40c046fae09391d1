# The provider gateway: its readings, and a run's gateway in front of a fake upstream on
# loopback (include/aios/gateway.hpp).
aios_test(gateway_tests gateway/usage_test.cpp gateway/gateway_test.cpp)
