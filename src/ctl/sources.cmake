# aiosctl, the operator's command line (tools/aiosctl): a client of the daemons' HTTP APIs.
target_sources(aios_core PRIVATE
  ctl/client.cpp
  ctl/doctor.cpp
  ctl/fleet_commands.cpp
  ctl/prune_files.cpp
  ctl/render.cpp
  ctl/run.cpp
  ctl/task_commands.cpp
  ctl/watch.cpp
)
