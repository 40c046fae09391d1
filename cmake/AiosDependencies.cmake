# Every dependency is a Debian 12 package installed by scripts/bootstrap.
find_package(nlohmann_json 3.11 REQUIRED)
find_package(OpenSSL 3 REQUIRED)
find_package(CLI11 2.1 REQUIRED)
find_package(Threads REQUIRED)
if(AIOS_BUILD_TESTS)
  find_package(GTest 1.12 REQUIRED)
endif()
