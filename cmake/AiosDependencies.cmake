# Every dependency is a Debian 12 package installed by scripts/bootstrap.
find_package(nlohmann_json 3.11 REQUIRED)
find_package(OpenSSL 3 REQUIRED)
find_package(CLI11 2.1 REQUIRED)
find_package(Threads REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(SQLiteCpp REQUIRED)
find_package(spdlog REQUIRED)
# libgit2 ships no CMake package on Debian 12; pkg-config finds it.
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBGIT2 REQUIRED IMPORTED_TARGET libgit2>=1.5)
# The PostgreSQL task store's client (Debian's libpq 15).
pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq>=15)
# sd_notify readiness and watchdog pings for Type=notify units.
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
# The sandboxes' syscall filter (process/syscall_filter.cpp).
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp>=2.5)
if(AIOS_BUILD_TESTS)
  find_package(GTest 1.12 REQUIRED)
endif()
