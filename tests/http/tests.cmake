# http tests: pure rules (url, dispatch) and loopback sockets (server, connections, client).
aios_test(http_tests
  http/url_test.cpp
  http/dispatch_test.cpp
  http/server_test.cpp
  http/later_test.cpp
  http/connection_test.cpp
  http/client_test.cpp)
