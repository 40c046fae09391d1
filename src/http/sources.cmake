# The http module: Boost.Beast server and client (header-only Boost; see beast.hpp), over
# plaintext or TLS (OpenSSL 3; see tls.hpp).
target_sources(aios_core PRIVATE
  http/client.cpp
  http/client_connection.cpp
  http/admission.cpp
  http/listener.cpp
  http/proxy.cpp
  http/request.cpp
  http/request_parser.cpp
  http/response.cpp
  http/server.cpp
  http/session.cpp
  http/tls.cpp
  http/url.cpp
)
