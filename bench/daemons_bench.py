#!/usr/bin/env python3
"""The daemons under load, each beside its floor measured in the same run.

  poll    POST /v1/tasks/poll with N queued tasks (two runtimes, three tenants), keep-alive,
          against GET /health of the same scheduler (the HTTP floor)
  memory  VmRSS of each of the four daemons idle, and VmRSS/VmHWM of each under its load: the
          scheduler under the poll load, the rebind service under the rebind loads, and the
          worker and the executor while the worker runs queued Hermes tasks through the
          executor (a fake agent)
  rebind  (with --seed) our rebind service and the seed's Python one on the same database and
          Bridge: the validation path, and complete successful rebinds of fresh tasks

Prints one JSON object on stdout; scripts/bench turns it into docs/performance.md. Every
daemon listens on loopback, on an ephemeral port, with its state in a temporary directory.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from quickstart import secret_file  # noqa: E402

OID = "a" * 40


def vm(pid, field):
    """A /proc/<pid>/status figure (VmRSS, VmHWM) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def log_events(log):
    """The JSON events of a daemon's log, in order; other lines are skipped."""
    for line in log.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


class Suite:
    def __init__(self, state):
        self.state, self.procs = state, []

    def start(self, name, argv, env=None, ready=None):
        log = open(self.state / f"{name}.log", "wb")
        base = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "HOME")}
        proc = subprocess.Popen(argv, stderr=log, stdout=log, env={**base, **(env or {})})
        self.procs.append(proc)
        deadline = time.monotonic() + 30
        while ready and time.monotonic() < deadline:
            for event in log_events(self.state / f"{name}.log"):
                if event.get("event") == ready:
                    return proc, event
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{name} did not report {ready}: see {self.state / (name + '.log')}")

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def call(port, token, method, path, body, context=None):
    """One JSON request to 127.0.0.1:port; over TLS with an ssl `context`."""
    scheme = "https" if context else "http"
    request = urllib.request.Request(f"{scheme}://127.0.0.1:{port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode())
    request.add_header("Authorization", "Bearer " + token)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise RuntimeError(f"{method} {path}: {error.code} {error.read()[:300]!r}") from None


def task_template():
    task = "bench-@I@"
    return json.dumps({
        "task_id": task, "goal": "Benchmark task.", "required_capabilities": ["agent.runtime.@R@"],
        "scope_type": "tenant", "tenant_id": "tenant-@T@", "max_attempts": 3,
        "binding": {"task_id": task, "job_id": "job-" + task, "repository": "aios/bench",
                    "base_oid": OID, "expected_branch_oid": OID, "target_branch": "agent/" + task,
                    "branch_mode": "CREATE_NEW", "generation": 1,
                    "idempotency_key": task + "-binding"},
        "execution": {"action": "agent_runtime", "adapter": "@R@"}})


class Load:
    def __init__(self, build, state):
        self.driver, self.state = build / "bench" / "aios-bench-http", state

    def run(self, port, *args, token_file=None, body=None):
        argv = [str(self.driver), "--port", str(port), *args]
        if token_file:
            argv += ["--token-file", str(token_file)]
        if body is not None:
            (self.state / "body.json").write_text(body)
            argv += ["--body-file", str(self.state / "body.json")]
        out = subprocess.run(argv, capture_output=True, text=True)
        report = json.loads(out.stdout) if out.stdout.strip() else {}
        if out.returncode != 0:
            raise RuntimeError(f"load driver failed: {out.stderr.strip()} {report}")
        return report


# The seed's rebind service imports aios_online_agent_execution, of which the seed ships only a
# diff. This stand-in does what the rebind path relies on it for, as the real module's
# validation ends: the envelope is an object whose execution_digest is the sha256 of its
# canonical JSON without that field, and the new one is bound to the old one's task. It checks
# less than the real module (no per-field rules), which favours the seed in the comparison.
STAND_IN = '''"""Stand-in for the seed's aios_online_agent_execution (bench only)."""
import hashlib
import json

BINDING_FIELDS = ("task_id", "job_id", "repository", "base_oid", "expected_branch_oid",
                  "target_branch", "branch_mode", "generation", "idempotency_key")


class GovernedExecutionBinding:
    def __init__(self, fields):
        self.fields = fields
        self.task_id, self.job_id = fields["task_id"], fields["job_id"]

    @classmethod
    def from_mapping(cls, value):
        if not all(name in value for name in BINDING_FIELDS):
            raise ValueError("BINDING_INVALID")
        return cls({name: value[name] for name in BINDING_FIELDS})

    def __eq__(self, other):
        return isinstance(other, GovernedExecutionBinding) and self.fields == other.fields


def validate_execution_envelope(value, binding=None):
    if not isinstance(value, dict):
        raise ValueError("EXECUTION_ENVELOPE_INVALID")
    body = {key: item for key, item in value.items() if key != "execution_digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if value.get("execution_digest") != hashlib.sha256(canonical.encode("utf-8")).hexdigest():
        raise ValueError("EXECUTION_DIGEST_MISMATCH")
    if binding is not None and GovernedExecutionBinding.from_mapping(value) != binding:
        raise ValueError("EXECUTION_BINDING_MISMATCH")
    return dict(value)
'''

# The owner's deterministic plan registered with the Bridge for each rebound task, as
# tests/rebind/daemon_bridge_test.cpp registers it.
WRITE_SCOPE = ["git.read", "git.test", "governed.write.branch", "governed.write.file"]


def rebind_body():
    return json.dumps({
        "expected_status": "QUEUED", "expected_revision": 1, "expected_attempt": 1,
        "previous_verification_sha256": "1" * 64, "expected_old_execution_digest": "2" * 64,
        "expected_new_execution_digest": "3" * 64, "authorization_id": "bench-rebind",
        "idempotency_key": "bench-rebind-key", "reason": "bench"})


def status_of(port, token, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST",
                                     data=body.encode())
    request.add_header("Authorization", "Bearer " + token)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def canonical_sha(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=False).encode("utf-8")).hexdigest()


def returned_task(port, bridge_port, control, agent_token, task_id):
    """A source_capture task run once and sent back by NEEDS_REWORK (QUEUED, attempt 1), with
    its deterministic plan registered: the rebind's one request line, `PATH<TAB>BODY`."""
    binding = {"task_id": task_id, "job_id": "job-" + task_id, "repository": "aios/bench",
               "base_oid": OID, "expected_branch_oid": OID, "target_branch": "agent/" + task_id,
               "branch_mode": "CREATE_NEW", "generation": 1,
               "idempotency_key": task_id + "-binding"}
    view = call(port, control, "POST", "/v1/tasks", {
        "task_id": task_id, "goal": "Benchmark rebind.", "binding": binding,
        "execution": {"action": "source_capture", "adapter": "source_capture",
                      "capability_scope": ["git.read"]}})
    lease = call(port, agent_token, "POST", f"/v1/tasks/{task_id}/claim", {
        "worker_id": "bench-rebinder", "expected_revision": view["revision"],
        "execution_digest": view["execution_digest"]})
    call(port, agent_token, "POST", f"/v1/tasks/{task_id}/result", {
        "lease_token": lease["lease_token"], "attempt": lease["attempt"],
        "execution_digest": view["execution_digest"], "idempotency_key": task_id + "-result",
        "result": {"summary": "read"}})
    revision = call(port, control, "GET", f"/v1/tasks/{task_id}", None)["revision"]
    call(port, control, "POST", f"/v1/tasks/{task_id}/verification", {
        "expected_revision": revision, "decision": "NEEDS_REWORK", "reason": "bench"})
    plan = call(bridge_port, control, "POST", "/v2/plans", {
        "task_id": task_id, "capability_scope": WRITE_SCOPE,
        "change_set": [{"path": "docs/NOTE.md", "operation": "write_file",
                        "content": "rebound\n"}]})
    view = call(port, control, "GET", f"/v1/tasks/{task_id}", None)
    body = {"expected_status": view["status"], "expected_revision": view["revision"],
            "expected_attempt": view["attempt"],
            "previous_verification_sha256": canonical_sha(view["verification"]),
            "expected_old_execution_digest": view["execution_digest"],
            "expected_new_execution_digest": plan["execution_digest"],
            "authorization_id": "bench-rebind", "idempotency_key": task_id + "-rebind",
            "reason": "bench"}
    return f"/v1/tasks/{task_id}/execution-rebind\t{json.dumps(body)}"


def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_complete_rebinds(load, state, port, bridge_port, services, runs, count, clients):
    """Complete successful rebinds (201) by each service (name: (port, pid)), `count` fresh
    returned tasks per run: requests/s over the run, each request its own task, and the
    service's own CPU time per rebind."""
    control = (state / "control.token").read_text()
    agent = call(port, control, "POST", "/v1/agents",
                 {"agent_id": "bench-rebind-agent", "granted_capabilities": WRITE_SCOPE})
    secret_file(state / "rebind-agent.token", agent["token"])
    call(port, agent["token"], "POST", "/v1/workers/register",
         {"worker_id": "bench-rebinder", "capabilities": ["git.read"],
          "allowed_adapters": ["source_capture"], "max_concurrency": 8})
    rates = {name: [] for name in services}
    cpu = {name: 0.0 for name in services}
    prepared = 0
    started = time.monotonic()
    for run in range(runs):
        for name, (service_port, pid) in services.items():
            ids = [f"bench-rebind-{name}-{run}-{i}" for i in range(count)]
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                lines = list(pool.map(lambda task_id: returned_task(
                    port, bridge_port, control, agent["token"], task_id), ids))
            prepared += len(lines)
            (state / "rebinds.txt").write_text("\n".join(lines) + "\n")
            before = cpu_seconds(pid)
            report = load.run(service_port, "--method", "POST", "--threads", clients,
                              "--requests-file", str(state / "rebinds.txt"), "--expect", "201",
                              token_file=state / "control.token")
            cpu[name] += cpu_seconds(pid) - before
            rates[name].append(report["per_second"])
    return {name: {"status": 201, "per_second": statistics.median(values), "runs": values,
                   "cpu_ms_per_rebind": 1000 * cpu[name] / (runs * count)}
            for name, values in rates.items()} | {
        "tasks_per_run": count, "prepared_per_second": prepared / (time.monotonic() - started)}


def measure_rebind(args, load, state, port, ours_port, ours_pid, bridge_port, runs, seconds,
                   clients):
    """Both rebind services on the same database and Bridge: the validation path (a
    well-formed rebind of a task that does not exist, answered after authentication, request
    validation and the task lookup) and complete successful rebinds of fresh tasks."""
    seed_dir = state / "seed"
    seed_dir.mkdir()
    script = subprocess.run([sys.executable, str(Path(__file__).with_name("extract_seed.py")),
                             str(args.seed), "active-runtime/app/aios_agent_task_execution_rebind.py",
                             str(seed_dir)], check=True, capture_output=True, text=True).stdout.strip()
    (seed_dir / "aios_online_agent_execution.py").write_text(STAND_IN)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        seed_port = probe.getsockname()[1]
    seed = subprocess.Popen(
        ["/usr/bin/python3", "-B", script], cwd=seed_dir,
        stdout=open(state / "seed-rebind.log", "wb"), stderr=subprocess.STDOUT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(seed_dir),
             "AIOS_AGENT_TASK_DB": str(state / "state.sqlite3"),
             "AIOS_AGENT_TASK_CONTROL_TOKEN_FILE": str(state / "control.token"),
             "AIOS_GOVERNED_WRITE_API_URL": f"http://127.0.0.1:{bridge_port}",
             "AIOS_TASK_EXECUTION_REBIND_PORT": str(seed_port),
             "AIOS_AGENT_TASK_EXECUTION_REBIND_AUTHORIZATION_ID": "bench-rebind"})
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{seed_port}/health", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline or seed.poll() is not None:
                    raise RuntimeError("the seed's rebind service did not start")
                time.sleep(0.1)
        token = (state / "control.token").read_text()
        path = "/v1/tasks/bench-missing-task/execution-rebind"
        result = {}
        for name, service_port in (("ours", ours_port), ("seed", seed_port)):
            status, answer = status_of(service_port, token, path, rebind_body())
            rates = [load.run(service_port, "--method", "POST", "--path", path, "--threads", clients,
                              "--seconds", seconds, "--expect", str(status),
                              token_file=state / "control.token",
                              body=rebind_body())["per_second"] for _ in range(runs)]
            result[name] = {"status": status, "error": answer.get("error"),
                            "per_second": statistics.median(rates), "runs": rates}
        complete = measure_complete_rebinds(
            load, state, port, bridge_port,
            {"ours": (ours_port, ours_pid), "seed": (seed_port, seed.pid)}, 3 if runs > 1 else 1,
            300 if runs > 1 else 8, clients)
        return {"validation_path": result, "complete": complete}
    finally:
        seed.send_signal(signal.SIGTERM)
        try:
            seed.wait(timeout=10)
        except subprocess.TimeoutExpired:
            seed.kill()


def hot_symbols(load, port, pid, state, body, clients, path="/v1/tasks/poll",
                token_file="agent.token", expect="0"):
    """perf's top self-cost symbols of daemon `pid` while it answers `path`."""
    if shutil.which("perf") is None:
        return ["perf is not installed (Debian: linux-perf)"]
    data = state / f"perf-{pid}.data"
    perf = subprocess.Popen(["perf", "record", "-q", "-g", "-p", str(pid), "-o", str(data)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    load.run(port, "--method", "POST", "--path", path, "--threads", clients, "--seconds", "3",
             "--expect", expect, token_file=state / token_file, body=body)
    perf.send_signal(signal.SIGINT)
    perf.wait(timeout=60)
    report = subprocess.run(["perf", "report", "-i", str(data), "--no-children", "--stdio",
                             "--percent-limit", "2", "-g", "none", "--sort", "dso,symbol"],
                            capture_output=True, text=True).stdout
    return [short_symbol(" ".join(line.split())) for line in report.splitlines()
            if line.strip() and not line.lstrip().startswith("#")][:12]


def short_symbol(line):
    """A profile line with template arguments dropped (nlohmann's run to a kilobyte)."""
    line = line.replace("nlohmann::json_abi_v3_11_2::", "nlohmann::")
    while True:
        shorter = re.sub(r"<[^<>]*>", "\N{HORIZONTAL ELLIPSIS}", line)
        if shorter == line:
            return line.replace("\N{HORIZONTAL ELLIPSIS}", "<…>").removesuffix(" - -")
        line = shorter


# The Hermes profile's agent for the run load: reads its request, answers at once.
AGENT = """import json, sys
request = json.load(sys.stdin)
print(json.dumps({"answer": "done: " + request["goal"]}))
"""


def measure_run_load(suite, state, worker_argv, daemons, seconds):
    """The worker running queued Hermes tasks through the executor for `seconds`: VmRSS of the
    worker and the executor sampled every 0.2 s (the highest sample is "under load"), their
    VmHWM at the end, and the tasks whose result the worker submitted."""
    worker, _ = suite.start("worker-run", worker_argv, ready="WORKER_READY")
    pids = {**daemons, "worker": worker.pid}
    samples = {name: [] for name in pids}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for name, pid in pids.items():
            samples[name].append(vm(pid, "VmRSS"))
        time.sleep(0.2)
    # The kernel updates VmHWM lazily: a sample can read above it.
    peaks = {name: max(vm(pid, "VmHWM"), *samples[name]) for name, pid in pids.items()}
    worker.send_signal(signal.SIGTERM)
    worker.wait(timeout=30)
    submitted = sum(1 for event in log_events(state / "worker-run.log")
                    if event.get("event") == "TASK_RESULT_SUBMITTED")
    return {name: {"under_load_mib": max(samples[name]), "peak_mib": peaks[name]}
            for name in pids}, submitted


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", type=Path, required=True, help="the build directory")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one short run")
    parser.add_argument("--seed", type=Path,
                        help="the seed file: measure its Python rebind service beside ours")
    parser.add_argument("--profile", action="store_true",
                        help="also record the scheduler under one poll run with perf and report "
                             "its hottest symbols")
    args = parser.parse_args()
    queued = 100 if args.smoke else 10000
    runs = 1 if args.smoke else 5
    seconds = "0.3" if args.smoke else "3"
    clients = "4"
    daemons = args.build / "daemons"
    state = Path(tempfile.mkdtemp(prefix="aios-bench-daemons-"))
    suite = Suite(state)
    load = Load(args.build, state)
    try:
        control = os.urandom(20).hex()
        secret_file(state / "control.token", control)
        authority = state / "authority.git"
        subprocess.run(["git", "init", "-q", "--bare", str(authority)], check=True)
        scheduler, ready = suite.start("scheduler", [
            str(daemons / "aios-task-scheduler"),
            "--db", str(state / "state.sqlite3"), "--control-token-file", str(state / "control.token"),
            "--api-port", "0", "--bridge-port", "0", "--authority-git-dir", str(authority)],
            ready="TASK_API_LISTENING")
        port, bridge_port = ready["port"], ready["bridge_port"]
        # The other three daemons, configured as scripts/quickstart.py runs them.
        profiles, exchange = state / "profiles", state / "exchange"
        for path in (profiles, exchange, state / "executor-tmp"):
            path.mkdir()
        (state / "agent.py").write_text(AGENT)
        (profiles / "hermes.json").write_text(json.dumps({
            "schema": "aios.external-agent-runtime.profile.v1", "runtime": "hermes",
            "argv": ["/usr/bin/python3", str(state / "agent.py")], "input_mode": "stdin_json", "output_mode": "stdout_json",
            "timeout_seconds": 60, "max_output_bytes": 65536}))
        exchange_key = state / "exchange_result_key"
        exchange_key.write_text(os.urandom(32).hex() + "\n")
        exchange_key.chmod(0o600)
        executor, _ = suite.start("executor", [
            str(daemons / "aios-external-agent-executor"),
            "--root", str(exchange), "--profile-root", str(profiles),
            "--exchange-key-file", str(exchange_key)],
            env={"TMPDIR": str(state / "executor-tmp")}, ready="EXTERNAL_AGENT_EXECUTOR_SERVING")
        rebind, rebind_ready = suite.start("rebind", [
            str(daemons / "aios-agent-task-execution-rebind")],
            env={"AIOS_AGENT_TASK_DB": str(state / "state.sqlite3"),
                 "AIOS_AGENT_TASK_CONTROL_TOKEN_FILE": str(state / "control.token"),
                 "AIOS_GOVERNED_WRITE_API_URL": f"http://127.0.0.1:{bridge_port}",
                 "AIOS_TASK_EXECUTION_REBIND_PORT": "0",
                 "AIOS_AGENT_TASK_EXECUTION_REBIND_AUTHORIZATION_ID": "bench-rebind"},
            ready="TASK_EXECUTION_REBIND_LISTENING")
        worker_agent = call(port, control, "POST", "/v1/agents",
                            {"agent_id": "bench-worker-agent",
                             "granted_capabilities": ["agent.runtime.hermes"]})
        secret_file(state / "worker.token", worker_agent["token"])
        worker_argv = [
            str(daemons / "aios-online-agent-worker"),
            "--api-url", f"http://127.0.0.1:{port}", "--bridge-url", f"http://127.0.0.1:{bridge_port}",
            "--agent-token-file", str(state / "worker.token"), "--agent-id", "bench-worker",
            "--capabilities", "agent.runtime.hermes", "--allowed-adapters", "hermes",
            "--authority-git-dir", str(authority), "--executor-root", str(exchange),
            "--exchange-key-file", str(exchange_key),
            "--state-root", str(state / "worker-state"), "--heartbeat-ms", "1000"]
        worker, _ = suite.start("worker", worker_argv, ready="WORKER_READY")
        time.sleep(1)
        memory = {name: {"idle_mib": vm(proc.pid, "VmRSS")} for name, proc in (
            ("scheduler", scheduler), ("executor", executor), ("rebind", rebind), ("worker", worker))}
        # The worker would claim the queue below: it is measured idle, then stopped, and runs
        # its share of the queue once the poll and rebind loads are measured.
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)

        # The queue: two runtimes alternating, three tenants, created over the Task API.
        created = load.run(port, "--method", "POST", "--path", "/v1/tasks", "--threads", "2",
                           "--count", str(queued), "--rotate", "hermes,openclaw",
                           token_file=state / "control.token", body=task_template())
        agent = call(port, control, "POST", "/v1/agents",
                     {"agent_id": "bench-agent", "granted_capabilities": ["agent.runtime.hermes"]})
        secret_file(state / "agent.token", agent["token"])
        call(port, agent["token"], "POST", "/v1/workers/register",
             {"worker_id": "bench-poller", "capabilities": ["agent.runtime.hermes"],
              "allowed_adapters": ["hermes"], "max_concurrency": 4})
        poll_body = json.dumps({"worker_id": "bench-poller", "limit": 10})
        health, poll, rss_poll = [], [], []
        for _ in range(runs):
            health.append(load.run(port, "--threads", clients, "--seconds", seconds)["per_second"])
            poll.append(load.run(port, "--method", "POST", "--path", "/v1/tasks/poll", "--threads",
                                 clients, "--seconds", seconds, token_file=state / "agent.token",
                                 body=poll_body)["per_second"])
            rss_poll.append(vm(scheduler.pid, "VmRSS"))
        answer = call(port, agent["token"], "POST", "/v1/tasks/poll", json.loads(poll_body))
        profile = hot_symbols(load, port, scheduler.pid, state, poll_body, clients) \
            if args.profile else []
        memory["scheduler"].update({"under_load_mib": max(rss_poll),
                                    "peak_mib": vm(scheduler.pid, "VmHWM"),
                                    "load": f"poll, {queued:,} queued, {clients} clients"})

        rebind_report = measure_rebind(args, load, state, port, rebind_ready["port"], rebind.pid,
                                       bridge_port, runs, seconds, clients) if args.seed else {}
        if args.profile and rebind_report:
            rebind_report["profile"] = hot_symbols(
                load, rebind_ready["port"], rebind.pid, state, rebind_body(), clients,
                path="/v1/tasks/bench-missing-task/execution-rebind", token_file="control.token",
                expect=str(rebind_report["validation_path"]["ours"]["status"]))

        if rebind_report:
            memory["rebind"].update({"under_load_mib": vm(rebind.pid, "VmRSS"),
                                     "peak_mib": vm(rebind.pid, "VmHWM"),
                                     "load": "the rebind runs above, 4 clients"})
        run_seconds = 2 if args.smoke else 20
        under_run, results = measure_run_load(suite, state, worker_argv,
                                              {"executor": executor.pid}, run_seconds)
        run_load = (f"the worker running Hermes tasks through the executor, {run_seconds} s "
                    f"({results / run_seconds:.1f} tasks/s)")
        for name in ("executor", "worker"):
            memory[name].update({**under_run[name], "load": run_load})

        report = {
            "runs": runs, "clients": int(clients), "seconds_per_run": float(seconds),
            "poll": {"queued": queued, "created_per_second": created["per_second"],
                     "health_floor_per_second": statistics.median(health),
                     "poll_per_second": statistics.median(poll),
                     "poll_answer_tasks": len(answer["tasks"]), "poll_profile": profile,
                     "health_runs": health, "poll_runs": poll},
            "memory": memory, "rebind": rebind_report,
            "run": {"seconds": run_seconds, "results_submitted": results}}
        print(json.dumps(report, indent=2))
    finally:
        suite.stop()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
