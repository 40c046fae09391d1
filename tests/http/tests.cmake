# http tests: pure rules (url, dispatch) and loopback sockets (server, connections, client, TLS
# with certificates made at test time).
aios_test(http_tests
  http/url_test.cpp
  http/dispatch_test.cpp
  http/admission_test.cpp
  http/server_test.cpp
  http/later_test.cpp
  http/connection_test.cpp
  http/client_test.cpp
  http/tls_test.cpp)
target_link_libraries(http_tests PRIVATE OpenSSL::SSL OpenSSL::Crypto)
