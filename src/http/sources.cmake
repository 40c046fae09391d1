# The http module: Boost.Beast server and client (header-only Boost; see beast.hpp).
target_sources(aios_core PRIVATE
  http/client.cpp
  http/client_connection.cpp
  http/listener.cpp
  http/request.cpp
  http/request_parser.cpp
  http/response.cpp
  http/server.cpp
  http/session.cpp
  http/url.cpp
)
