# The provider gateway: a run's model calls leave its sandbox through it, with the key added
# and their usage counted (include/aios/gateway.hpp).
target_sources(aios_core PRIVATE
  gateway/gateway.cpp
  gateway/usage.cpp
)
