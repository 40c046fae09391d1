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
  process/confine.cpp
  process/relay.cpp
  process/remote.cpp
  process/run.cpp
  process/sandbox_plan.cpp
  process/spawn.cpp
  process/supervise.cpp
  process/syscall_filter.cpp
)
target_link_libraries(aios_core PRIVATE PkgConfig::SECCOMP)
# The first step inside every sandbox (process/sandbox_exec/main.cpp), built into the library as
# bytes that bubblewrap copies into the sandbox: nothing to install or find at run time. It runs
# where there may be no /proc, so none of the build's sanitizer or coverage options apply to it.
add_executable(aios-sandbox-exec process/sandbox_exec/main.cpp)
set_target_properties(aios-sandbox-exec PROPERTIES COMPILE_OPTIONS "" LINK_OPTIONS ""
  UNITY_BUILD OFF)
target_include_directories(aios-sandbox-exec PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
target_link_libraries(aios-sandbox-exec PRIVATE aios_warnings)
target_link_options(aios-sandbox-exec PRIVATE -s -Wl,--as-needed)
aios_embed_program(aios_core aios::process::sandbox_exec process/sandbox_exec/embedded.hpp
  aios-sandbox-exec)
