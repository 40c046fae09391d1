#!/usr/bin/env python3
"""scripts/quickstart.py --keep leaves the suite running and says how to stop it and how to check
it with aiosctl doctor (which then runs every check but the systemd ones, and passes); --stop
STATE ends every process it started (and only those), and a second --stop finds nothing to do.
Run by ctest (label e2e) over this build's daemons."""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = [sys.executable, str(ROOT / "scripts" / "quickstart.py")]
BUILD_TREE = Path(os.environ.get("AIOS_BUILD_DIR", ROOT / "build"))


def check(condition, text):
    if not condition:
        print(f"quickstart_keep: FAILED: {text}", file=sys.stderr, flush=True)
        sys.exit(1)


kept = subprocess.run([*QUICKSTART, "--keep"], capture_output=True, text=True, timeout=300)
check(kept.returncode == 0, f"--keep exited {kept.returncode}:\n{kept.stdout}\n{kept.stderr}")
found = re.search(r"stop it with: scripts/quickstart --stop (\S+)", kept.stdout)
check(found, f"--keep printed no stop command:\n{kept.stdout}")
state = Path(found.group(1))
entries = [line.split(" ", 2) for line in (state / "pids").read_text().splitlines()]
pids = [int(pid) for name, pid, _ in entries if name != "postgresql"]
check(len(pids) >= 5, f"the pids file lists {len(pids)} processes: {entries}")
check(all(Path(f"/proc/{pid}").exists() for pid in pids), "a kept process is not running")

# The doctor line the run printed, against the kept suite: every check runs (none skipped but
# the units, which need systemd), and nothing fails.
doctor = re.search(r"aiosctl (doctor .*)", kept.stdout).group(1).split()
exports = re.search(r"export (.*)", kept.stdout).group(1).split()
env = {**os.environ, **dict(item.split("=", 1) for item in exports)}
ctl = BUILD_TREE / "tools" / "aiosctl"
checked = subprocess.run([str(ctl), "--json", *doctor], capture_output=True, text=True, env=env,
                         timeout=120)
check(checked.returncode == 0, f"doctor exited {checked.returncode}:\n{checked.stdout}{checked.stderr}")
states = {finding["check"]: finding["state"] for finding in json.loads(checked.stdout)}
check(states.get("disk") == "ok" and states.get("profile hermes") == "ok",
      f"doctor on the quickstart's state: {states}")
check(all(state != "skip" for name, state in states.items() if name not in ("units", "credentials")),
      f"doctor skipped a check the quickstart's flags should run: {states}")

# A pids file others may write is never read: it could name anyone's processes.
planted = Path(tempfile.mkdtemp(prefix="aios-quickstart-planted-"))
(planted / "pids").write_text(f"scheduler {pids[0]} {entries[0][2]}\n")
(planted / "pids").chmod(0o666)
refused = subprocess.run([*QUICKSTART, "--stop", str(planted)], capture_output=True, text=True)
check(refused.returncode == 1 and "not yours alone" in refused.stderr,
      f"a planted pids file: {refused.returncode} {refused.stderr}")
check(Path(f"/proc/{pids[0]}").exists(), "a planted pids file stopped a process")

stopped = subprocess.run([*QUICKSTART, "--stop", str(state)], capture_output=True, text=True,
                         timeout=120)
check(stopped.returncode == 0, f"--stop exited {stopped.returncode}:\n{stopped.stderr}")
deadline = time.monotonic() + 5
while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
    time.sleep(0.05)
left = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
check(not left, f"still running after --stop: {left}\n{stopped.stdout}")
check(stopped.stdout.count("stopped ") == len(pids), f"--stop said:\n{stopped.stdout}")
again = subprocess.run([*QUICKSTART, "--stop", str(state)], capture_output=True, text=True)
check(again.returncode == 1 and "stopped already" in again.stderr,
      f"a second --stop: {again.returncode} {again.stderr}")
print(f"quickstart_keep: {len(pids)} processes kept, then stopped")
