#!/usr/bin/env python3
"""Load soak of the whole suite on loopback: the scheduler, the executor and eight workers (four
Hermes, two source-capture, two deterministic) over thousands of mixed tasks with a fake agent,
while workers are SIGKILLed and restarted at random. The owner verifies every result. At the
end: every task terminal, none lost, no agent run twice for one task (each run reports to a
witness), one result event per task, the RSS of the scheduler and the executor sampled every second (start,
middle, end; the run fails when the second half grows more than --rss-growth, 25 %), and the p50
and p99 of claim latency seen by a probe client under the load. Bounded: --tasks and --timeout;
everything listens on 127.0.0.1 only. The RSS samples are left in <state>/rss.json.

    scripts/soak.py                  2,000 tasks, a worker killed every 2 s
    scripts/soak.py --short          CI: 600 tasks (about 8 s on SQLite: long enough for a
                                     worker kill or more and an RSS sampled past warm-up)
    scripts/soak.py --postgresql     the same on a throwaway local PostgreSQL 15 (or --db URL)
    scripts/soak.py --failover       three scheduler replicas on a throwaway PostgreSQL, four
                                     workers given every replica, 300 tasks; the replica leading
                                     the governed commits is SIGKILLed when half are done (a
                                     worker is killed every 2 s throughout). Also checked: every
                                     task SUCCEEDED, no attempt claimed twice, one governed commit
                                     per deterministic task, the lead taken over within 5 s (its
                                     RSS is reported, not bounded: the run is all warm-up)
"""

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quickstart import (BUILD, WRITER, Api, Suite, demo_profile, exchange_key,  # noqa: E402
                        fail, git, open_store, secret_file, seed_authority, store_options)

# The agent runs in its sandbox, which has no file the soak could read afterwards: it reports
# its goal (the task id) to the witness, its one network destination, and goes on only once the
# witness confirmed it stored the record, so every run is counted even if the executor dies.
AGENT = """import json, socket, sys
request = json.load(sys.stdin)
with socket.create_connection(("127.0.0.1", PORT), timeout=30) as witness:
    witness.sendall(request["goal"].encode())
    witness.shutdown(socket.SHUT_WR)
    if witness.recv(2) != b"ok":
        sys.exit("the witness did not confirm")
print(json.dumps({"answer": "done: " + request["goal"]}))
"""


class Witness:
    """A TCP server on 127.0.0.1: each connection is one record, confirmed with "ok" once kept."""

    def __init__(self):
        self.records = []
        self.lock = threading.Lock()
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while chunk := conn.recv(4096):
                    data += chunk
                with self.lock:
                    self.records.append(data.decode())
                conn.sendall(b"ok")

    def counts(self):
        with self.lock:
            runs = {}
            for record in self.records:
                runs[record] = runs.get(record, 0) + 1
            return runs

TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
# The replicas check the lead every LEADER_CHECK_MS; a killed leader's session ends at once, so
# the next check takes it over (docs/operations.md, Running scheduler replicas).
LEADER_CHECK_MS = 500
LEAD_TAKEOVER_BOUND_S = 5.0
# Worker kinds in the order they are added, so any count from 3 keeps the mix.
KINDS = ["hermes", "capture", "writer", "hermes", "hermes", "capture", "writer", "hermes"]


def sql_count(store, query):
    """One integer from the PostgreSQL store (psql, as an operator would look)."""
    return int(subprocess.run(["/usr/lib/postgresql/15/bin/psql", "-X", "-At", "-d", store, "-c",
                               query], capture_output=True, text=True, check=True).stdout.strip())


def leader_among(replicas):
    """The index of the running replica whose /health says it leads, or None."""
    for index, (proc, api) in enumerate(replicas):
        if proc.poll() is not None:
            continue
        try:
            if api.call("GET", "/health").get("leader"):
                return index
        except Exception:  # noqa: BLE001 - a replica going away answers nothing
            continue
    return None


def rss_kib(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--short", action="store_true", help="CI size: 600 tasks")
    parser.add_argument("--kill-every", type=float, default=2.0, help="seconds between kills")
    parser.add_argument("--timeout", type=float, default=1500, help="give up after this long")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--rss-growth", type=float, default=0.25,
                        help="fail when a daemon's RSS grows more than this fraction between the "
                             "middle and the end of the run")
    parser.add_argument("--workers", type=int, default=8, help="how many workers (at least 3)")
    parser.add_argument("--replicas", type=int, default=1,
                        help="scheduler replicas on the one store (more than one needs PostgreSQL)")
    parser.add_argument("--kill-leader", action="store_true",
                        help="SIGKILL the replica leading the governed commits when half the tasks "
                             "are done")
    parser.add_argument("--failover", action="store_true",
                        help="the failover run: --postgresql --replicas 3 --workers 4 --tasks 300 "
                             "--kill-leader")
    store_options(parser)
    args = parser.parse_args()
    if args.short:
        # 200 tasks once took 11 s; at 3 s the run killed no worker and its RSS "halves" were
        # one warm-up sample each (a 25 -> 32 MiB step failed the bound once).
        args.tasks = 600
    if args.failover:
        args.tasks, args.replicas, args.workers, args.kill_leader = 300, 3, 4, True
        # Twenty seconds are the daemons' warm-up (pools, caches), not a leak: the soak's own
        # runs bound the RSS.
        args.rss_growth = None
        if not args.db:
            args.postgresql = True
    if args.workers < 3:
        fail("--workers: at least 3 (one of each kind)")
    if args.kill_leader and args.replicas < 2:
        fail("--kill-leader needs --replicas 2 or more")
    rng = random.Random(args.seed)
    state = Path(subprocess.run(["mktemp", "-d", "/tmp/aios-soak-XXXXXX"], capture_output=True,
                                text=True, check=True).stdout.strip())
    suite = Suite(state)
    workers = {}
    store, server = open_store(args, state)
    try:
        report = run(args, rng, state, suite, workers, store)
    finally:
        for proc, _ in workers.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc, _ in workers.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        suite.stop()
        if server:
            server.stop()
    print(json.dumps(report, indent=2))
    print(f"state and logs: {state}")
    if report["lost"] or report["duplicated_runs"] or report["duplicated_results"]:
        fail("tasks lost or duplicated")
    if args.replicas > 1:
        if report["terminal"] != {"SUCCEEDED": args.tasks}:
            fail(f"not every task SUCCEEDED: {report['terminal']}")
        if report["attempts_claimed_twice"] or report["writer_tasks_without_one_commit"]:
            fail("an attempt claimed twice, or a deterministic task without exactly one commit")
    if args.kill_leader and not (report["lead_taken_over_s"] is not None
                                 and report["lead_taken_over_s"] <= LEAD_TAKEOVER_BOUND_S):
        fail(f"the lead was not taken over within {LEAD_TAKEOVER_BOUND_S} s: "
             f"{report['lead_taken_over_s']}")
    for name, rss in report["rss_kib"].items():
        if args.rss_growth is not None and rss["second_half_growth"] > args.rss_growth:
            fail(f"{name} RSS grew {rss['second_half_growth']:.0%} in the second half of the run "
                 f"({rss['middle']} -> {rss['end']} KiB; bound {args.rss_growth:.0%})")
    print(f"soak: {report['tasks']} tasks, 0 lost, 0 duplicated, {report['worker_kills']} worker kills")


def run(args, rng, state, suite, workers, store):
    control = os.urandom(24).hex()
    secret_file(state / "control.token", control)
    authority = state / "authority.git"
    base = seed_authority(state, {
        "README.md": "soak\n",
        "scheduler.py": "class FleetScheduler:\n    def claim_lease(self, worker):\n"
                        "        return self.queue.dispatch(worker)\n"}, "soak")

    if args.replicas > 1 and not store.startswith("postgresql://"):
        fail("--replicas needs a PostgreSQL store (--postgresql or --db postgresql://...)")
    replicas, bridges = [], []
    for index in range(args.replicas):
        ready = suite.start("scheduler" if index == 0 else f"scheduler-{index}", [
            str(BUILD / "aios-task-scheduler"), "--db", store,
            "--control-token-file", str(state / "control.token"),
            "--api-port", "0", "--bridge-port", "0", "--authority-git-dir", str(authority),
            "--lease-seconds", "10", "--sweep-interval-ms", "500",
            "--leader-check-ms", str(LEADER_CHECK_MS),
            "--verification-executables", "/usr/bin/true"], ready="TASK_API_LISTENING")
        replicas.append((suite.procs[-1][1], Api(ready["port"], control)))
        bridges.append(Api(ready["bridge_port"], control))
    deadline = time.monotonic() + 10
    while (leader := leader_among(replicas)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if leader is None:
        fail("no replica took the lead")
    # The owner talks to a replica that stays up when the leader is killed.
    owner = next((i for i in range(len(replicas)) if i != leader), leader)
    api = replicas[owner][1]
    scheduler_pid = replicas[owner][0].pid

    witness = Witness()
    profiles, exchange = state / "profiles", state / "exchange"
    for path in (profiles, exchange, state / "executor-tmp"):
        path.mkdir()
    (state / "agent.py").write_text(AGENT.replace("PORT", str(witness.port)))
    (state / "agent.py").chmod(0o644)
    (profiles / "hermes.json").write_text(
        demo_profile("hermes", state / "agent.py", network=[f"127.0.0.1:{witness.port}"]))
    key = exchange_key(state)
    suite.start("executor", [str(BUILD / "aios-external-agent-executor"), "--root", str(exchange),
                             "--profile-root", str(profiles), "--concurrency", "4",
                             "--exchange-key-file", str(key)],
                env={"TMPDIR": str(state / "executor-tmp")}, ready="EXTERNAL_AGENT_EXECUTOR_SERVING")
    executor_pid = suite.procs[-1][1].pid

    kinds_of = {"hermes": (["agent.runtime.hermes"], "hermes"),
                "capture": (["git.read"], "source_capture"), "writer": (WRITER, "deterministic")}
    flavours = [(kind, *kinds_of[kind]) for kind in (KINDS * 2)[:args.workers]]
    for index, (kind, caps, adapters) in enumerate(flavours):
        name = f"{kind}-{index}"
        token = api.call("POST", "/v1/agents", {"agent_id": f"agent-{name}",
                                                "granted_capabilities": caps})["token"]
        secret_file(state / f"{name}.token", token)
        argv = [str(BUILD / "aios-online-agent-worker"),
                "--api-url", ",".join(replica.base for _, replica in replicas),
                "--bridge-url", ",".join(bridge.base for bridge in bridges),
                "--agent-token-file", str(state / f"{name}.token"),
                "--agent-id", name, "--capabilities", ",".join(caps),
                "--allowed-adapters", adapters, "--authority-git-dir", str(authority),
                "--executor-root", str(exchange), "--exchange-key-file", str(key),
                "--state-root", str(state / f"worker-{name}"), "--heartbeat-ms", "1000"]
        workers[name] = (start_worker(state, name, argv, 0), argv)
    daemons = {"scheduler": scheduler_pid, "executor": executor_pid}
    samples, sampling = [], threading.Event()
    sampler = threading.Thread(target=sample_rss, args=(daemons, samples, sampling))
    sampler.start()

    def binding(task_id):
        return {"task_id": task_id, "job_id": "job-" + task_id, "repository": "aios/aios",
                "base_oid": base, "expected_branch_oid": base, "target_branch": "agent/" + task_id,
                "branch_mode": "CREATE_NEW", "generation": 1, "idempotency_key": task_id + "-v1"}

    kinds = {}
    for i in range(args.tasks):
        task_id = f"soak-{i:05d}"
        roll = rng.random()
        if roll < 0.5:
            # The goal is the task id: the witness counts runs per task.
            body = {"goal": task_id, "required_capabilities": ["agent.runtime.hermes"],
                    "execution": {"action": "agent_runtime", "adapter": "hermes"}}
            kinds[task_id] = "hermes"
        elif roll < 0.8:
            body = {"goal": f"Capture part {i}", "required_capabilities": ["git.read"],
                    "execution": {"action": "source_capture", "adapter": "source_capture",
                                  "capability_scope": ["git.read"],
                                  "source_signals": ["scheduler claim lease"]}}
            kinds[task_id] = "capture"
        else:
            body = {"goal": f"Write note {i}", "execution": {
                "action": "deterministic", "adapter": "deterministic", "capability_scope": WRITER,
                "change_set": [{"path": f"notes/{i}.md", "operation": "write_file",
                                "content": f"note {i}\n"}]}}
            kinds[task_id] = "writer"
        api.call("POST", "/v1/tasks", {"task_id": task_id, "max_attempts": 5,
                                       "binding": binding(task_id), **body})
    print(f"== {args.tasks} tasks queued for {args.workers} workers on {args.replicas} "
          f"scheduler replica(s)", flush=True)

    latencies, stop = [], threading.Event()
    probe = threading.Thread(target=probe_claims, args=(api, base, latencies, stop))
    probe.start()
    kills, deadline, next_kill = 0, time.monotonic() + args.timeout, time.monotonic() + args.kill_every
    terminal = {}
    lead_taken_over = None
    try:
        while len(terminal) < args.tasks and time.monotonic() < deadline:
            if args.kill_leader and lead_taken_over is None and len(terminal) >= args.tasks // 2:
                lead_taken_over = kill_the_leader(replicas)
            if time.monotonic() >= next_kill:
                name = rng.choice(sorted(workers))
                proc, argv = workers[name]
                proc.kill()
                proc.wait()
                kills += 1
                workers[name] = (start_worker(state, name, argv, kills), argv)
                next_kill = time.monotonic() + args.kill_every
            for status in ("VERIFYING",):
                listed = api.call("GET", f"/v1/tasks?status={status}&limit=1000")
                for view in listed["tasks"]:
                    if not view["task_id"].startswith("soak-"):
                        continue
                    api.call("POST", f"/v1/tasks/{view['task_id']}/verification",
                             {"expected_revision": view["revision"], "decision": "PASS",
                              "reason": "soak"}, ok=(200, 409))
            for status in TERMINAL:
                after = 0
                while True:
                    page = api.call("GET", f"/v1/tasks?status={status}&limit=1000&after={after}")
                    for view in page["tasks"]:
                        if view["task_id"].startswith("soak-"):
                            terminal[view["task_id"]] = status
                    if len(page["tasks"]) < 1000:
                        break
                    after = page.get("next_after", after + 1000)
            print(f"\r   {len(terminal)}/{args.tasks} terminal, {kills} kills", end="", flush=True)
            time.sleep(0.5)
    finally:
        stop.set()
        probe.join()
        sampling.set()
        sampler.join()
        (state / "rss.json").write_text(json.dumps(samples))
    print()
    runs = witness.counts()
    results = {}
    for task_id in kinds:
        events = api.call("GET", f"/v1/tasks/{task_id}/events")["events"]
        results[task_id] = sum(1 for e in events if e["event_type"] == "TASK_RESULT_SUBMITTED")
    statuses = {}
    for status in terminal.values():
        statuses[status] = statuses.get(status, 0) + 1
    replicated = {}
    if args.replicas > 1:
        writers = [task_id for task_id, kind in kinds.items() if kind == "writer"]
        replicated = {
            "replicas": args.replicas,
            "lead_taken_over_s": lead_taken_over,
            "attempts_claimed_twice": sql_count(store, "SELECT COUNT(*) FROM (SELECT task_id, "
                                                "attempt FROM claims GROUP BY task_id, attempt "
                                                "HAVING COUNT(*) > 1) AS twice"),
            "writer_tasks": len(writers),
            "writer_tasks_without_one_commit": sum(
                1 for task_id in writers
                if git("--git-dir", str(authority), "rev-list", "--count",
                       f"{base}..agent/{task_id}") != "1"
                or sql_count(store, "SELECT COUNT(*) FROM bridge_commits WHERE "
                                    f"task_id='{task_id}' AND state='APPLIED'") != 1),
        }
    return {**replicated,
        "tasks": args.tasks,
        "terminal": statuses,
        "lost": args.tasks - len(terminal),
        "duplicated_runs": sum(1 for n in runs.values() if n > 1),
        "agent_runs": sum(runs.values()),
        "duplicated_results": sum(1 for task_id, n in results.items()
                                  if n > 1 and terminal.get(task_id) == "SUCCEEDED"),
        "worker_kills": kills,
        "rss_kib": rss_summary(samples, daemons),
        "probe_claims": len(latencies),
        "claim_p50_ms": round(statistics.median(latencies) * 1000, 2) if latencies else None,
        "claim_p99_ms": round(percentile(latencies, 0.99) * 1000, 2) if latencies else None,
    }


def kill_the_leader(replicas):
    """SIGKILLs the replica leading the governed commits; seconds until another one leads."""
    leader = leader_among(replicas)
    if leader is None:
        fail("no replica leads")
    replicas[leader][0].kill()
    replicas[leader][0].wait()
    killed = time.monotonic()
    print(f"\n== SIGKILLed the leading replica {leader}", flush=True)
    while time.monotonic() - killed < 30:
        if leader_among(replicas) is not None:
            return round(time.monotonic() - killed, 2)
        time.sleep(0.05)
    return None


def sample_rss(daemons, samples, stop):
    """RSS of each daemon once a second from the first task queued to the last one terminal."""
    started = time.monotonic()
    while True:
        samples.append({"t": round(time.monotonic() - started, 1),
                        **{name: rss_kib(pid) for name, pid in daemons.items()}})
        if stop.wait(1.0):
            return


def rss_summary(samples, daemons):
    """Start, middle and end of the run per daemon, and how much the second half grew. Middle and
    end are the lowest of a few samples around that point: an answer being built is a spike of
    a second, not growth."""
    width = max(1, min(5, len(samples) // 4))
    middle = samples[max(0, len(samples) // 2 - width // 2):][:width]
    end = samples[-width:]
    summary = {}
    for name in daemons:
        levels = (samples[0][name], min(s[name] for s in middle), min(s[name] for s in end))
        summary[name] = {"start": levels[0], "middle": levels[1], "end": levels[2],
                         "second_half_growth": round((levels[2] - levels[1]) / levels[1], 3)}
    return summary


def start_worker(state, name, argv, generation):
    log = open(state / f"worker-{name}.{generation}.log", "wb")
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "HOME")}
    return subprocess.Popen(argv, stdout=log, stderr=log, env=base)


def probe_claims(api, base, latencies, stop):
    """A client of its own capability class claiming under the soak's load, timing each claim."""
    token = api.call("POST", "/v1/agents", {"agent_id": "agent-probe",
                                            "granted_capabilities": ["code.read"]})["token"]
    agent = Api(int(api.base.rsplit(":", 1)[1]), token)
    agent.call("POST", "/v1/workers/register", {"worker_id": "probe", "capabilities": ["code.read"],
                                                "allowed_adapters": ["source_capture"]})
    n = 0
    while not stop.is_set():
        task_id = f"probe-{n:05d}"
        n += 1
        view = api.call("POST", "/v1/tasks", {
            "task_id": task_id, "goal": "probe", "required_capabilities": ["code.read"],
            "binding": {"task_id": task_id, "job_id": "job-" + task_id, "repository": "aios/aios",
                        "base_oid": base, "expected_branch_oid": base,
                        "target_branch": "agent/" + task_id, "branch_mode": "CREATE_NEW",
                        "generation": 1, "idempotency_key": task_id + "-v1"},
            "execution": {"action": "source_capture", "adapter": "source_capture",
                          "capability_scope": ["code.read"]}})
        started = time.perf_counter()
        agent.call("POST", f"/v1/tasks/{task_id}/claim", {
            "worker_id": "probe", "expected_revision": view["revision"],
            "execution_digest": view["execution_digest"]})
        latencies.append(time.perf_counter() - started)
        api.call("POST", f"/v1/tasks/{task_id}/cancel", {"reason": "probe"})
        stop.wait(0.2)


if __name__ == "__main__":
    main()
