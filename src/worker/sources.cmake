# The online agent worker: its loop, checkpoint store, heartbeat and adapters.
target_sources(aios_core PRIVATE
  worker/agent_runtime.cpp
  worker/deterministic.cpp
  worker/results.cpp
  worker/services.cpp
  worker/source_capture.cpp
  worker/worker.cpp
)
