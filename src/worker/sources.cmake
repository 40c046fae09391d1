# The online agent worker: its loop, checkpoint store, heartbeat and adapters, and the
# engineering worktree it reads a backend's work from.
target_sources(aios_core PRIVATE
  git/backend_refs.cpp
  git/worktree.cpp
  worker/agent_runtime.cpp
  worker/command_line.cpp
  worker/deterministic.cpp
  worker/engineering.cpp
  worker/engineering_checks.cpp
  worker/governed.cpp
  worker/repository.cpp
  worker/results.cpp
  worker/services.cpp
  worker/slots.cpp
  worker/source_capture.cpp
  worker/worker.cpp
)
# The command lines are declared where their configuration is assembled (CLI11 is header-only).
target_link_libraries(aios_core PRIVATE CLI11::CLI11)
