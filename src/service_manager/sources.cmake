# The service_manager module: sd_notify readiness, stopping and watchdog pings (libsystemd).
target_sources(aios_core PRIVATE
  service_manager/notify.cpp
)
target_link_libraries(aios_core PRIVATE PkgConfig::SYSTEMD)
