#!/usr/bin/env python3
"""Fleet scale: what idle workers cost the scheduler, and how fast one of them picks up work.

For each fleet size N (default 8, 100 and 400): a fresh scheduler on SQLite (WAL,
synchronous=FULL) in a temporary directory, N workers of one slot each registered through the
Task API, and N long polls (`claim-next`, `wait_ms` 30000) held open by this client, one kept-alive
connection each, as N idle worker daemons would hold them. Then the scheduler's CPU while the
fleet sits idle, and `--tasks` tasks created `--gap-ms` apart by the owner: each is picked up by
one waiting worker, which submits its result and waits again. Reported per N: the scheduler's
idle CPU (percent of a core), its CPU per task over the whole run of tasks (creates, claims,
results and every wake-up), and the pickup latency (the create's answer to the claim's answer,
both seen by this client) at p50 and p99, with the wake-ups that claimed nothing from /metrics.
Prints one JSON object. --smoke runs N=4 with 5 tasks (CI: the driver keeps working).
"""
import argparse
import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from daemons_bench import Suite, call, secret_file  # noqa: E402
from peers.run import cpu_seconds  # noqa: E402

OID = "a" * 40


def task_body(task_id):
    return {"task_id": task_id, "goal": "Fleet scale probe.",
            "required_capabilities": ["agent.runtime.hermes"],
            "binding": {"task_id": task_id, "job_id": "job-" + task_id, "repository": "aios/bench",
                        "base_oid": OID, "expected_branch_oid": OID,
                        "target_branch": "agent/" + task_id, "branch_mode": "CREATE_NEW",
                        "generation": 1, "idempotency_key": task_id + "-binding"},
            "execution": {"action": "agent_runtime", "adapter": "hermes"}}


class Worker(threading.Thread):
    """One idle worker's long poll, on a kept-alive connection: claim, submit, wait again."""

    def __init__(self, port, token, worker_id, picked, stop):
        super().__init__(daemon=True)
        self.port, self.token, self.worker_id = port, token, worker_id
        self.picked, self.stop = picked, stop
        self.failures = 0

    def post(self, connection, path, body):
        connection.request("POST", path, json.dumps(body), {
            "Authorization": "Bearer " + self.token, "Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())

    def run(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=40)
        while not self.stop.is_set():
            try:
                status, body = self.post(connection, "/v1/tasks/claim-next",
                                         {"worker_id": self.worker_id, "wait_ms": 30000})
            except (OSError, http.client.HTTPException):
                self.failures += 1
                connection.close()
                time.sleep(0.05)
                continue
            claim = body.get("claim") if status == 200 else None
            if not claim:
                continue
            self.picked[claim["task_id"]] = time.monotonic()
            self.post(connection, f"/v1/tasks/{claim['task_id']}/result", {
                "lease_token": claim["lease_token"], "attempt": claim["attempt"],
                "execution_digest": claim["execution_digest"],
                "idempotency_key": "result-" + claim["task_id"], "result": {"ok": True}})
        connection.close()


def empty_wakeups(port, control):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/metrics", headers={"Authorization": "Bearer " + control})
    text = connection.getresponse().read().decode()
    connection.close()
    for line in text.splitlines():
        if line.startswith("aios_claim_wakeups_empty_total "):
            return int(float(line.split()[1]))
    return None


def measure(build, n, tasks, gap_ms, idle_seconds):
    with tempfile.TemporaryDirectory(prefix="aios-fleet-scale-") as directory:
        state = Path(directory)
        control = "c" * 48
        secret_file(state / "control.token", control)
        suite = Suite(state)
        try:
            scheduler, ready = suite.start("scheduler", [
                str(build / "daemons" / "aios-task-scheduler"), "--db", str(state / "tasks.sqlite3"),
                "--control-token-file", str(state / "control.token"), "--api-port", "0",
                "--bridge-port", "0", "--authority-git-dir", str(state / "authority.git")],
                ready="TASK_API_LISTENING")
            port = ready["port"]
            agent = call(port, control, "POST", "/v1/agents",
                         {"agent_id": "fleet", "granted_capabilities": ["agent.runtime.hermes"]})
            for w in range(n):
                call(port, agent["token"], "POST", "/v1/workers/register", {
                    "worker_id": f"idle-{w}", "capabilities": ["agent.runtime.hermes"],
                    "allowed_adapters": ["hermes"], "max_concurrency": 1})
            picked, stop = {}, threading.Event()
            workers = [Worker(port, agent["token"], f"idle-{w}", picked, stop) for w in range(n)]
            for worker in workers:
                worker.start()
            time.sleep(1)
            before = cpu_seconds(scheduler.pid)
            time.sleep(idle_seconds)
            idle_core = (cpu_seconds(scheduler.pid) - before) / idle_seconds
            empty_before = empty_wakeups(port, control)
            created = {}
            before = cpu_seconds(scheduler.pid)
            for i in range(tasks):
                task_id = f"scale-{i}"
                call(port, control, "POST", "/v1/tasks", task_body(task_id))
                created[task_id] = time.monotonic()
                time.sleep(gap_ms / 1000)
            deadline = time.monotonic() + 30
            while len(picked) < tasks and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.2)  # the last results
            per_task_ms = 1000 * (cpu_seconds(scheduler.pid) - before) / tasks
            empty_after = empty_wakeups(port, control)
            stop.set()
            pickups = sorted(1000 * (picked[t] - created[t]) for t in created if t in picked)
        finally:
            suite.stop()
    return {"workers": n, "tasks": tasks, "picked_up": len(pickups),
            "idle_scheduler_percent_of_a_core": round(100 * idle_core, 2),
            "scheduler_cpu_ms_per_task": round(per_task_ms, 3),
            "pickup_p50_ms": round(statistics.median(pickups), 2) if pickups else None,
            "pickup_p99_ms": round(pickups[min(len(pickups) - 1, int(0.99 * len(pickups)))], 2)
            if pickups else None,
            "wakeups_that_claimed_nothing": None if empty_before is None or empty_after is None
            else empty_after - empty_before,
            "client_connection_failures": sum(worker.failures for worker in workers)}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", type=Path, required=True, help="the build directory")
    parser.add_argument("--workers", default="8,100,400", help="fleet sizes, comma-separated")
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=20)
    parser.add_argument("--idle-seconds", type=float, default=5)
    parser.add_argument("--smoke", action="store_true", help="4 workers, 5 tasks")
    args = parser.parse_args()
    sizes = [4] if args.smoke else [int(n) for n in args.workers.split(",")]
    tasks = 5 if args.smoke else args.tasks
    idle = 0.5 if args.smoke else args.idle_seconds
    rows = [measure(args.build, n, tasks, args.gap_ms, idle) for n in sizes]
    for row in rows:
        if row["picked_up"] != tasks:
            print(json.dumps({"fleet": rows}), file=sys.stderr)
            sys.exit(f"fleet_scale: {row['workers']} workers picked up {row['picked_up']} of "
                     f"{tasks} tasks")
    base = rows[0]["scheduler_cpu_ms_per_task"]
    for row in rows:
        row["cpu_per_task_vs_smallest"] = round(row["scheduler_cpu_ms_per_task"] / base, 2) \
            if base else None
    print(json.dumps({"fleet": rows}, indent=1))


if __name__ == "__main__":
    main()
