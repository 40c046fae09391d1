# The store conformance suite, run against every backend (tests/store/conformance_test.cpp).
aios_test(store_tests store/conformance_test.cpp)
