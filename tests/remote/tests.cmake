# Workers on other hosts: the real scheduler over mutual TLS (agents bound to certificates, every
# refusal, a reload on SIGHUP), and a worker, executor and broker in a network namespace of
# their own across a veth link, reading the repository through the Bridge (root).
aios_integration_test(remote_tests remote/tls_api_test.cpp remote/remote_worker_test.cpp)
target_link_libraries(remote_tests PRIVATE OpenSSL::SSL OpenSSL::Crypto)
add_dependencies(remote_tests aios-online-agent-worker aios-external-agent-executor)
