# The executor module (credential-isolated external agent runtime) and the process runner it
# spawns children with.
target_sources(aios_core PRIVATE
  executor/credentials.cpp
  executor/exchange.cpp
  executor/execute.cpp
  executor/files.cpp
  executor/output.cpp
  executor/profile.cpp
  executor/request.cpp
  executor/rules.cpp
  executor/serve.cpp
  executor/watch.cpp
  process/run.cpp
  process/spawn.cpp
)
