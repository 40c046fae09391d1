# The executor module (credential-isolated external agent runtime), its engineering runtime
# broker mode (seed 004, src/executor/broker/) and the process runner both spawn children with.
target_sources(aios_core PRIVATE
  executor/broker/contract.cpp
  executor/broker/execute.cpp
  executor/broker/self_test.cpp
  executor/command_line.cpp
  executor/credentials.cpp
  executor/exchange.cpp
  executor/execute.cpp
  executor/output.cpp
  executor/profile.cpp
  executor/request.cpp
  executor/seal.cpp
  executor/rules.cpp
  executor/sandbox.cpp
  executor/serve.cpp
  executor/watch.cpp
  process/confine.cpp
  process/relay.cpp
  process/remote.cpp
  process/run.cpp
  process/sandbox_plan.cpp
  process/spawn.cpp
)
