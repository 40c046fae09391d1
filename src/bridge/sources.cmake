# The governed Bridge (plans, envelope resolution, writer leases, governed commits) and the
# authority repository it writes through libgit2.
target_sources(aios_core PRIVATE
  bridge/commits.cpp
  bridge/plans.cpp
  bridge/resolve.cpp
  bridge/router.cpp
  bridge/writer_leases.cpp
  bridge/repository.cpp
  git/mirror.cpp
  git/repository.cpp
)
target_link_libraries(aios_core PRIVATE PkgConfig::LIBGIT2)
