# `cmake --install` and the .deb (CPack): binaries in /usr/bin, units, tmpfiles and sysusers
# under /usr/lib, root-owned profile templates in /etc/aios, docs in /usr/share/doc. Nothing
# installed is writable by a service user; the services' own directories come from tmpfiles.
include(GNUInstallDirs)

file(GLOB AIOS_UNITS CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/deploy/systemd/*.service"
  "${PROJECT_SOURCE_DIR}/deploy/systemd/*.socket")
file(GLOB AIOS_TMPFILES CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/deploy/tmpfiles.d/*.conf")
file(GLOB AIOS_SYSUSERS CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/deploy/sysusers.d/*.conf")
# Relative paths: Hermes' home template is a directory (hermes-home/config.yaml).
file(GLOB_RECURSE AIOS_PROFILES CONFIGURE_DEPENDS
  RELATIVE "${PROJECT_SOURCE_DIR}/config/external-agent-runtime.d"
  "${PROJECT_SOURCE_DIR}/config/external-agent-runtime.d/*")
file(GLOB AIOS_DOCS CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/docs/*.md")

install(FILES ${AIOS_UNITS} DESTINATION lib/systemd/system)
install(FILES ${AIOS_TMPFILES} DESTINATION lib/tmpfiles.d)
install(FILES ${AIOS_SYSUSERS} DESTINATION lib/sysusers.d)
# The executor unit reads its profiles here whatever the prefix.
set(AIOS_PROFILE_DIR /etc/aios/external-agent-runtime.d)
foreach(profile IN LISTS AIOS_PROFILES)
  get_filename_component(subdirectory "${profile}" DIRECTORY)
  install(FILES "${PROJECT_SOURCE_DIR}/config/external-agent-runtime.d/${profile}"
    DESTINATION "${AIOS_PROFILE_DIR}/${subdirectory}")
endforeach()
# Engineering backend configurations are the operator's to write (/etc/aios/agent-runtime-
# <backend>.conf); the package ships the examples beside the docs.
file(GLOB AIOS_BACKEND_EXAMPLES CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/config/*.conf.example")
install(FILES ${AIOS_BACKEND_EXAMPLES}
  DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/doc/aios-online-agent-runtime/examples")
install(FILES "${PROJECT_SOURCE_DIR}/README.md" ${AIOS_DOCS}
  DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/doc/aios-online-agent-runtime")
# aiosctl's manual page and bash completion.
install(FILES "${PROJECT_SOURCE_DIR}/deploy/man/aiosctl.1"
  DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")
install(FILES "${PROJECT_SOURCE_DIR}/deploy/bash-completion/aiosctl"
  DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions")

# The package: dpkg-shlibdeps computes the library dependencies; systemd provides sysusers and
# tmpfiles for the postinst. Files under /etc are conffiles, so local edits survive upgrades.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME aios-online-agent-runtime)
set(CPACK_PACKAGE_VENDOR "AIOS")
set(CPACK_PACKAGE_CONTACT "AIOS operators <root@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Governed runtime for online AI agents (systemd daemons)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The build keeps its debug information; the package ships stripped binaries, as Debian's do:
# four daemons of 130 MiB each made a .deb whose staging alone could fill a small /tmp.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd, bubblewrap, procps")
set(AIOS_CONFFILES "")
foreach(profile IN LISTS AIOS_PROFILES)
  string(APPEND AIOS_CONFFILES "${AIOS_PROFILE_DIR}/${profile}\n")
endforeach()
file(WRITE "${PROJECT_BINARY_DIR}/debian/conffiles" "${AIOS_CONFFILES}")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  "${PROJECT_BINARY_DIR}/debian/conffiles"
  "${PROJECT_SOURCE_DIR}/deploy/debian/postinst"
  "${PROJECT_SOURCE_DIR}/deploy/debian/prerm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
