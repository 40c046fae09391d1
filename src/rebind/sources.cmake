# The rebind module: the owner-controlled execution rebind (request, store transaction, Bridge
# resolver, HTTP routes) served by aios-agent-task-execution-rebind.
target_sources(aios_core PRIVATE
  rebind/bridge_resolver.cpp
  rebind/request.cpp
  rebind/router.cpp
  rebind/store.cpp
  rebind/task_snapshot.cpp
)
