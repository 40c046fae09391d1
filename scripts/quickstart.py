#!/usr/bin/env python3
"""The suite's main job, locally: the four daemons on loopback under one temporary state root,
and one task of each kind driven through its whole life. Started by scripts/quickstart after the
build; see README.md. Standard library only."""

import argparse
import hashlib
import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# AIOS_BUILD_DIR: another build tree than build/ (the daemons are under its daemons/).
BUILD_TREE = Path(os.environ.get("AIOS_BUILD_DIR", ROOT / "build"))
BUILD = BUILD_TREE / "daemons"
# Every binary this run starts or names, by CMake target: scripts/quickstart builds exactly
# these (python3 scripts/quickstart.py --targets), and the run checks them before it starts.
BINARIES = {
    "aios-task-scheduler": BUILD / "aios-task-scheduler",
    "aios-agent-task-execution-rebind": BUILD / "aios-agent-task-execution-rebind",
    "aios-external-agent-executor": BUILD / "aios-external-agent-executor",
    "aios-online-agent-worker": BUILD / "aios-online-agent-worker",
    "aiosctl": BUILD_TREE / "tools" / "aiosctl",
}
WRITER = ["git.read", "git.test", "governed.write.branch", "governed.write.file"]
T0 = time.monotonic()

DEMO_AGENT = """import json, os, sys, urllib.request
request = json.load(sys.stdin)
goal = request.get("goal", "")
answer = {"answer": "demo agent read the goal: " + goal, "words": len(goal.split())}
# Through the provider gateway: the key here is the run's placeholder, never the provider's.
if "OPENAI_BASE_URL" in os.environ:
    call = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "demo-model", "messages": [{"role": "user", "content": goal}]}).encode(),
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
                 "Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(call, timeout=30) as reply:
        answer["answer"] = json.load(reply)["choices"][0]["message"]["content"]
print(json.dumps(answer))
"""


def demo_model(key):
    """A stand-in OpenAI-compatible model on loopback that answers only the provider's `key`
    (what the gateway sets): Chat Completions with a usage count. Returns (server, port)."""
    import http.server
    import threading

    class Model(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if self.headers.get("Authorization") != "Bearer " + key:
                return self.reply(401, {"error": "not the provider key"})
            words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
            self.reply(200, {"choices": [{"message": {"role": "assistant",
                                                      "content": f"demo model read {words} words"}}],
                             "usage": {"prompt_tokens": words, "completion_tokens": 4,
                                       "total_tokens": words + 4}})

        def reply(self, status, document):
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


# The live "waiting: N/5 done" line is redrawn in place on a terminal only; piped output (CI, a
# log file) gets whole lines.
LIVE = sys.stdout.isatty()
CLEAR = f"\r{' ' * 30}\r" if LIVE else ""


def say(task, text):
    print(f"{CLEAR}{time.monotonic() - T0:7.2f}s  {task:<22} {text}", flush=True)


def agent_answer(result):
    """The agent's answer in its runtime's JSON (the demo's "answer", OpenClaw's payload text),
    else the output text as the executor bounded it."""
    output = result.get("output_json")
    if isinstance(output, dict):
        if isinstance(output.get("answer"), str):
            return output["answer"]
        texts = [p.get("text") for p in output.get("payloads") or [] if isinstance(p, dict)]
        if texts and all(isinstance(t, str) for t in texts):
            return " ".join(texts)
    return str(result.get("output_text") or "")


def summary(view):
    """The result column: what the agent answered, the commit, or the output digest."""
    result = view.get("result") or {}
    if view["metadata"]["execution"]["action"] == "agent_runtime":
        text = " ".join(agent_answer(result).split())
        shown = json.dumps(text[:57] + "..." if len(text) > 60 else text, ensure_ascii=False)
        usage = result.get("model_usage")
        if isinstance(usage, dict):
            shown += f" ({usage['requests']} model call, {usage['total']} used)"
        return shown
    extra = result.get("commit_oid") or result.get("output_sha256") or result.get("classification")
    return str(extra)[:40]


def fail(text):
    print(f"quickstart: FAILED: {text}", file=sys.stderr, flush=True)
    sys.exit(1)


PIDS = "pids"


def stop_kept(state):
    """--stop [STATE]: ends what a --keep run left running, by its state root's pids file (the
    newest kept run under /tmp when no root is given). A pid whose process is no longer the
    program the run started is left alone: the kernel may have given it to another. /tmp is
    everyone's: a state root, a pids file or a process not this user's own (or that another user
    may write) is never trusted, so a planted file cannot make root signal someone else's."""
    def trusted(path):
        info = path.lstat()
        return info.st_uid == os.geteuid() and not info.st_mode & 0o022 and not path.is_symlink()

    if state is None:
        kept = sorted((p for p in Path("/tmp").glob(f"aios-quickstart-*/{PIDS}")
                       if trusted(p.parent) and trusted(p)), key=lambda p: p.stat().st_mtime)
        if not kept:
            fail("no kept quickstart run of yours under /tmp: give its state root")
        state = kept[-1].parent
    pids = Path(state) / PIDS
    if not pids.is_file():
        fail(f"{state} holds no {PIDS} file: not a kept quickstart run, or it was stopped already")
    if not (trusted(Path(state)) and trusted(pids)):
        fail(f"{pids} is not yours alone (owner or mode): it is not read")
    entries = [line.split(" ", 2) for line in pids.read_text().splitlines() if line.strip()]
    ours = []
    for name, pid, program in reversed(entries):
        if name == "postgresql":
            continue
        try:
            running = os.readlink(f"/proc/{pid}/exe")
            if os.stat(f"/proc/{pid}").st_uid != os.geteuid():
                print(f"  {name:<34} pid {pid} is another user's: left alone")
                continue
        except OSError:
            print(f"  {name:<34} was not running")
            continue
        if running.removesuffix(" (deleted)") != os.path.realpath(program):
            print(f"  {name:<34} pid {pid} is another program now: left alone")
            continue
        os.kill(int(pid), signal.SIGTERM)
        ours.append((name, int(pid)))
    for name, pid in ours:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)
            print(f"  stopped {name:<26} (killed after 30 s)")
        else:
            print(f"  stopped {name}")
    for name, _, directory in entries:
        if name == "postgresql":
            subprocess.run([str(ROOT / "scripts" / "postgres-for-tests"), "stop", directory],
                           check=False)
            print(f"  stopped PostgreSQL in {directory}")
    pids.rename(pids.with_name(PIDS + ".stopped"))
    print(f"the state stays in {state}")


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class Api:
    def __init__(self, port, token):
        self.base, self.token = f"http://127.0.0.1:{port}", token

    def call(self, method, path, body=None, ok=(200, 201)):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", "Bearer " + self.token)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        value = json.loads(raw or b"{}")
        if status not in ok:
            fail(f"{method} {path} answered {status} {value}")
        return value


class Suite:
    def __init__(self, state):
        self.state, self.procs = state, []

    def start(self, name, argv, env=None, ready=None):
        log = open(self.state / f"{name}.log", "wb")
        # Only what a daemon needs: the executor refuses to start beside secret-looking variables.
        base = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "HOME")}
        proc = subprocess.Popen(argv, stderr=log, stdout=log, env={**base, **(env or {})})
        self.procs.append((name, proc))
        # What `--stop` reads to end a --keep run: name, pid and program, one process a line.
        with open(self.state / PIDS, "a") as pids:
            pids.write(f"{name} {proc.pid} {argv[0]}\n")
        if ready is None:
            return None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for line in (self.state / f"{name}.log").read_text(errors="replace").splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("event") == ready:
                    return event
            if proc.poll() is not None:
                fail(f"{name} exited: see {self.state / (name + '.log')}")
            time.sleep(0.05)
        fail(f"{name} did not report {ready}")

    def stop(self):
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in self.procs:
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = "killed"
            print(f"  stopped {name:<18} exit {code}")


class LocalPostgres:
    """A throwaway PostgreSQL 15 server on a free loopback port (scripts/postgres-for-tests,
    trust authentication for loopback only) holding one database, aios, for the suite's store:
    what --postgresql runs the scheduler and the rebind service on."""

    def __init__(self):
        # Outside the state root: the server runs as the postgres user, who cannot enter it.
        self.dir = Path(tempfile.mkdtemp(prefix="aios-quickstart-pg-", dir="/var/tmp"))
        started = subprocess.run([str(ROOT / "scripts" / "postgres-for-tests"), "start",
                                  str(self.dir)], capture_output=True, text=True)
        if started.returncode != 0:
            fail("could not start a local PostgreSQL 15 (scripts/bootstrap installs it):\n"
                 + started.stderr)
        admin = urllib.parse.urlparse(started.stdout.strip())
        subprocess.run(["/usr/lib/postgresql/15/bin/createdb", "-h", admin.hostname, "-p",
                        str(admin.port), "-U", "postgres", "aios"], check=True)
        self.url = admin._replace(path="/aios").geturl()

    def stop(self):
        subprocess.run([str(ROOT / "scripts" / "postgres-for-tests"), "stop", str(self.dir)],
                       check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


def store_options(parser):
    """--db and --postgresql, shared by the quickstart and the soak."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--db", metavar="URL",
                       help="the task store of the scheduler and the rebind service: a SQLite "
                            "path or postgresql://… URL (default: state.sqlite3 in the state root)")
    group.add_argument("--postgresql", action="store_true",
                       help="run the store on a throwaway local PostgreSQL 15 server, stopped "
                            "with the suite")


def open_store(args, state):
    """The --db value for the suite, and the local server to stop afterwards (or None)."""
    if args.postgresql:
        server = LocalPostgres()
        print(f"== task store: PostgreSQL {server.url} (a throwaway local server)")
        return server.url, server
    if args.db:
        print(f"== task store: {args.db}")
        return args.db, None
    return str(state / "state.sqlite3"), None


def git(*args, cwd=None):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def secret_file(path, text):
    """An owner-only file (the owner token, the exchange key), as the package's install makes."""
    path.write_text(text)
    path.chmod(0o600)
    return path


def exchange_key(state):
    """The exchange key: the executor seals every answer with it and the workers refuse an
    answer without its seal."""
    return secret_file(state / "exchange_result_key", os.urandom(32).hex() + "\n")


def demo_profile(runtime, script, **extra):
    """A runtime profile that runs `script` with the system Python, JSON in and out."""
    return json.dumps({
        "schema": "aios.external-agent-runtime.profile.v1", "runtime": runtime,
        "argv": ["/usr/bin/python3", str(script)], "input_mode": "stdin_json",
        "output_mode": "stdout_json", "timeout_seconds": 60, "max_output_bytes": 65536, **extra})


def seed_authority(state, files, who):
    """A bare authority repository whose main holds `files` (name -> text); returns the base."""
    authority, work = state / "authority.git", state / "seed"
    git("init", "-q", "--bare", str(authority))
    git("init", "-q", "-b", "main", str(work))
    for name, text in files.items():
        (work / name).write_text(text)
    git("add", "-A", cwd=work)
    git("-c", f"user.name={who}", "-c", f"user.email={who}@example.invalid", "commit", "-q",
        "-m", "base", cwd=work)
    git("push", "-q", str(authority), "main", cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", action="store_true",
                        help="leave the suite running (--stop ends it)")
    parser.add_argument("--stop", nargs="?", const="", metavar="STATE",
                        help="stop what a --keep run left running (its state root; default: the "
                             "newest under /tmp) and exit")
    parser.add_argument("--timeout", type=float, default=90, help="seconds per task")
    parser.add_argument("--openclaw-profile", type=Path, metavar="FILE",
                        help="run the openclaw task with this real runtime profile (for example "
                             "/etc/aios/external-agent-runtime.d/openclaw.json) instead of the "
                             "demo agent")
    parser.add_argument("--credentials-directory", type=Path, metavar="DIR",
                        help="the executor's CREDENTIALS_DIRECTORY: the provider credential the "
                             "real profile names (never copied, never logged)")
    parser.add_argument("--executable-root", action="append", default=[], metavar="DIR",
                        help="a directory the real profile's executable may live under "
                             "(repeatable; replaces the executor's built-in list)")
    parser.add_argument("--targets", action="store_true",
                        help="print the CMake targets this run needs, one a line, and exit")
    store_options(parser)
    args = parser.parse_args()
    if args.targets:
        print("\n".join(BINARIES))
        return
    if args.stop is not None:
        stop_kept(args.stop or None)
        return
    missing = [name for name, path in BINARIES.items() if not os.access(path, os.X_OK)]
    if missing:
        fail(f"not built: {', '.join(missing)} (in {BUILD_TREE}; "
             f"cmake --build {BUILD_TREE} --target {' '.join(missing)})")
    state = Path(subprocess.run(["mktemp", "-d", "/tmp/aios-quickstart-XXXXXX"],
                                capture_output=True, text=True, check=True).stdout.strip())
    suite = Suite(state)
    store, server = open_store(args, state)
    try:
        run(args, state, suite, store)
    finally:
        if not args.keep:
            print("\n== stopping the suite")
            suite.stop()
            if server:
                server.stop()
            if (state / PIDS).exists():
                (state / PIDS).rename(state / (PIDS + ".stopped"))
        else:
            if server:
                with open(state / PIDS, "a") as pids:
                    pids.write(f"postgresql - {server.dir}\n")
            print(f"\nthe suite keeps running; stop it with: scripts/quickstart --stop {state}")
        print(f"state, logs and (on SQLite) the audit database: {state} "
              "(task events: GET /v1/tasks/<id>/events)")


def run(args, state, suite, store):
    control = hashlib.sha256(os.urandom(32)).hexdigest()
    secret_file(state / "control.token", control)
    # The demo authority repository holds this project's own tree at its current commit.
    authority = state / "authority.git"
    git("init", "-q", "--bare", str(authority))
    work = state / "seed"
    git("clone", "-q", str(ROOT), str(work))
    git("push", "-q", str(authority), "HEAD:refs/heads/main", cwd=work)
    base = git("rev-parse", "HEAD", cwd=work)
    print(f"== authority repository {authority} at {base[:12]} (this project's tree)")

    ready = suite.start("scheduler", [str(BUILD / "aios-task-scheduler"),
                                      "--db", store,
                                      "--control-token-file", str(state / "control.token"),
                                      "--api-port", "0", "--bridge-port", "0",
                                      "--authority-git-dir", str(authority),
                                      "--lease-seconds", "60",
                                      "--verification-executables", "/usr/bin/true,/usr/bin/test"],
                        ready="TASK_API_LISTENING")
    api, bridge_port = Api(ready["port"], control), ready["bridge_port"]
    bridge = Api(bridge_port, control)
    print(f"== Task API :{ready['port']}, Bridge :{bridge_port}; the dashboard: {api.base}/ui/ "
          f"(sign in with the owner token in {state / 'control.token'})")

    profiles, exchange = state / "profiles", state / "exchange"
    for path in (profiles, exchange, state / "executor-tmp"):
        path.mkdir()
    (state / "demo_agent.py").write_text(DEMO_AGENT)
    # The agents reach their model through the provider gateway: the key stays in the executor.
    credentials = state / "credentials"
    credentials.mkdir(mode=0o700)
    provider_key = "demo-provider-" + os.urandom(12).hex()
    secret_file(credentials / "provider.env", f"DEMO_PROVIDER_KEY={provider_key}\n")
    _, model_port = demo_model(provider_key)
    provider = {"upstream": f"http://127.0.0.1:{model_port}/v1",
                "credential": {"credential": "provider.env", "format": "dotenv",
                               "key": "DEMO_PROVIDER_KEY"}}
    # (An operator's own credential directory for a real profile holds no demo key.)
    extra = {} if args.credentials_directory else {"provider": provider}
    for runtime in ("hermes", "openclaw"):
        (profiles / f"{runtime}.json").write_text(
            demo_profile(runtime, state / "demo_agent.py", **extra))
    key = exchange_key(state)
    executor_argv = [str(BUILD / "aios-external-agent-executor"), "--root", str(exchange),
                     "--profile-root", str(profiles), "--exchange-key-file", str(key)]
    executor_env = {"TMPDIR": str(state / "executor-tmp"), "CREDENTIALS_DIRECTORY": str(credentials)}
    if args.openclaw_profile:
        (profiles / "openclaw.json").write_bytes(args.openclaw_profile.read_bytes())
        print(f"== openclaw runs the real profile {args.openclaw_profile}")
        executor_argv += [item for root in args.executable_root
                          for item in ("--executable-root", root)]
        if args.credentials_directory:
            executor_env["CREDENTIALS_DIRECTORY"] = str(args.credentials_directory)
        # The Python demo stays on the executor's allow list when the list is replaced.
        if args.executable_root:
            executor_argv += ["--executable-root", "/usr/bin"]
    suite.start("executor", executor_argv, env=executor_env, ready="EXTERNAL_AGENT_EXECUTOR_SERVING")
    rebind_ready = suite.start("rebind", [str(BUILD / "aios-agent-task-execution-rebind")], env={
        "AIOS_AGENT_TASK_DB": store,
        "AIOS_AGENT_TASK_CONTROL_TOKEN_FILE": str(state / "control.token"),
        "AIOS_GOVERNED_WRITE_API_URL": f"http://127.0.0.1:{bridge_port}",
        "AIOS_TASK_EXECUTION_REBIND_PORT": "0",
        "AIOS_AGENT_TASK_EXECUTION_REBIND_AUTHORIZATION_ID": "quickstart-rebind-authorization"},
        ready="TASK_EXECUTION_REBIND_LISTENING")

    flavours = {"generic": (WRITER, "deterministic,source_capture,compact_interface_map"),
                "hermes": (["agent.runtime.hermes"], "hermes"),
                "openclaw": (["agent.runtime.openclaw"], "openclaw")}
    for name, (caps, adapters) in flavours.items():
        token = api.call("POST", "/v1/agents", {"agent_id": f"agent-{name}",
                                                "granted_capabilities": caps})["token"]
        secret_file(state / f"{name}.token", token)
        suite.start(f"worker-{name}", [
            str(BUILD / "aios-online-agent-worker"), "--api-url", api.base,
            "--bridge-url", bridge.base, "--agent-token-file", str(state / f"{name}.token"),
            "--agent-id", f"worker-{name}", "--capabilities", ",".join(caps),
            "--allowed-adapters", adapters, "--authority-git-dir", str(authority),
            "--executor-root", str(exchange), "--exchange-key-file", str(key),
            "--state-root", str(state / f"worker-{name}"),
            "--heartbeat-ms", "1000"], ready="WORKER_READY")
    print("== four daemons up: scheduler (Task API + Bridge), executor, rebind, 3 workers\n")

    def binding(task_id):
        return {"task_id": task_id, "job_id": "job-" + task_id, "repository": "aios/aios",
                "base_oid": base, "expected_branch_oid": base, "target_branch": "agent/" + task_id,
                "branch_mode": "CREATE_NEW", "generation": 1, "idempotency_key": task_id + "-v1"}

    tasks = {
        "qs-hermes": {"goal": "Summarize the layout of the repository",
                      "required_capabilities": ["agent.runtime.hermes"],
                      "execution": {"action": "agent_runtime", "adapter": "hermes"}},
        "qs-openclaw": {"goal": "List the daemons of the suite",
                        "required_capabilities": ["agent.runtime.openclaw"],
                        "execution": {"action": "agent_runtime", "adapter": "openclaw"}},
        "qs-capture": {"goal": "Map the fleet scheduler interface", "required_capabilities": ["git.read"],
                       "execution": {"action": "source_capture", "adapter": "compact_interface_map",
                                     "capability_scope": ["git.read"],
                                     "source_signals": ["fleet scheduler lease claim capacity"]}},
        "qs-deterministic": {"goal": "Add the quickstart note", "execution": {
            "action": "deterministic", "adapter": "deterministic", "capability_scope": WRITER,
            "change_set": [{"path": "docs/QUICKSTART-NOTE.md", "operation": "write_file",
                            "content": "Written by the quickstart through the governed commit.\n"}],
            "verification": [{"label": "note exists", "argv": ["/usr/bin/test", "-f",
                              "docs/QUICKSTART-NOTE.md"], "cwd": ".", "timeout_seconds": 30}]}},
        "qs-rebind": {"goal": "Capture, then rework into a change", "required_capabilities": ["git.read"],
                      "execution": {"action": "source_capture", "adapter": "source_capture",
                                    "capability_scope": ["git.read"],
                                    "source_signals": ["execution rebind digest"]}},
    }
    for task_id, body in tasks.items():
        api.call("POST", "/v1/tasks", {"task_id": task_id, "binding": binding(task_id), **body})
        say(task_id, "QUEUED")

    seen, rows = {}, {}
    rebound = False
    deadline = time.monotonic() + args.timeout
    while len(rows) < len(tasks):
        for task_id in tasks:
            if task_id in rows:
                continue
            view = api.call("GET", f"/v1/tasks/{task_id}")
            status = view["status"]
            if seen.get(task_id) != (status, view["attempt"]):
                seen[task_id] = (status, view["attempt"])
                who = f" by {view['claimed_by']}" if view.get("claimed_by") else ""
                say(task_id, f"{status} (attempt {view['attempt']}){who}")
            if status == "VERIFYING":
                result = view["result"] or {}
                line = result.get("classification", "?")
                if result.get("commit_oid"):
                    line += f" commit {result['commit_oid'][:12]}"
                say(task_id, "result: " + line)
                if task_id == "qs-rebind" and not rebound:
                    rebound = True
                    rework(api, bridge, rebind_ready["port"], control, task_id)
                    continue
                decision = "PASS" if result.get("status") == "SUCCEEDED" else "FAIL"
                api.call("POST", f"/v1/tasks/{task_id}/verification",
                         {"expected_revision": view["revision"], "decision": decision,
                          "reason": "checked by the quickstart"})
            if status in ("SUCCEEDED", "FAILED", "CANCELLED"):
                rows[task_id] = (status, view)
                if status != "SUCCEEDED":
                    fail(f"{task_id} ended {status}")
        if time.monotonic() > deadline:
            missing = [t for t in tasks if t not in rows]
            fail(f"not finished in {args.timeout:.0f}s: {', '.join(missing)}")
        if LIVE:
            print(f"\r  waiting: {len(rows)}/{len(tasks)} done", end="", flush=True)
        time.sleep(0.2)
    print(CLEAR)
    for task_id, (status, view) in rows.items():
        counted = isinstance((view.get("result") or {}).get("model_usage"), dict)
        if extra and view["metadata"]["execution"]["action"] == "agent_runtime" and not counted:
            fail(f"{task_id}: its agent's model call was not counted by the provider gateway")
    print(f"{'task':<18} {'status':<10} {'attempt':<8} {'action':<14} result")
    for task_id, (status, view) in rows.items():
        print(f"{task_id:<18} {status:<10} {view['attempt']:<8} "
              f"{view['metadata']['execution']['action']:<14} {summary(view)}")
    # What the dashboard shows of this run: the same tasks and workers, from one request.
    board = api.call("GET", "/v1/dashboard")
    shown = {row["task_id"] for row in board["recent"]} & set(tasks)
    if len(shown) != len(tasks) or len(board["fleet"]["workers"]) != len(flavours):
        fail(f"the dashboard shows {sorted(shown)} and {len(board['fleet']['workers'])} workers")
    print(f"\nthe dashboard ({api.base}/ui/) shows these {len(shown)} tasks and "
          f"{len(board['fleet']['workers'])} workers")
    print(f"\nbranches in {authority}:")
    print(git("--git-dir", str(authority), "branch", "--list", "agent/*", "-v"))
    # The operator's view of the same run, through aiosctl (the Task API, as the owner).
    ctl = [str(BINARIES["aiosctl"]), "--api", api.base, "--bridge", bridge.base,
           "--rebind", f"http://127.0.0.1:{rebind_ready['port']}", "--token-file",
           str(state / "control.token")]
    print("\n$ aiosctl tasks")
    table = subprocess.run([*ctl, "tasks"], capture_output=True, text=True)
    if table.returncode != 0:
        fail(f"aiosctl tasks exited {table.returncode}: {table.stderr.strip()}")
    print(table.stdout, end="")
    print(f"\ninspect it with aiosctl{'' if args.keep else ' (with --keep the suite keeps running)'}:")
    print(f"  alias aiosctl={ctl[0]}")
    print(f"  export AIOS_AGENT_TASK_API_URL={api.base} AIOS_GOVERNED_WRITE_API_URL={bridge.base} "
          f"AIOS_TASK_EXECUTION_REBIND_URL=http://127.0.0.1:{rebind_ready['port']} "
          f"AIOS_AGENT_TASK_CONTROL_TOKEN_FILE={state / 'control.token'}")
    for command in ("tasks", "task show qs-deterministic", "task events qs-rebind",
                    "task why qs-hermes", "workers", "events", "status", "watch",
                    f"doctor --state-dir {state} --profile-root {state / 'profiles'} "
                    f"--executable-root /usr/bin"):
        print(f"  aiosctl {command}")
    if args.keep:
        print(f"\nthe suite keeps running: Task API {api.base} (dashboard {api.base}/ui/), "
              f"Bridge {bridge.base}; "
              f"owner token in {state / 'control.token'}")


def rework(api, bridge, rebind_port, control, task_id):
    """A deterministic plan, NEEDS_REWORK, and the owner's rebind with plain curl. The plan goes
    first: the workers' claim-next then passes the returned task over (its envelope drifted to
    the plan), where it would otherwise claim the capture again before the owner rebinds it."""
    plan = bridge.call("POST", "/v2/plans", {"task_id": task_id, "change_set": [
        {"path": "docs/REBOUND-NOTE.md", "operation": "write_file",
         "content": "Rebound by the owner in the quickstart.\n"}]})
    view = api.call("GET", f"/v1/tasks/{task_id}")
    api.call("POST", f"/v1/tasks/{task_id}/verification",
             {"expected_revision": view["revision"], "decision": "NEEDS_REWORK",
              "reason": "turn the capture into a change"})
    say(task_id, "NEEDS_REWORK -> QUEUED")
    view = api.call("GET", f"/v1/tasks/{task_id}")
    body = {"expected_status": view["status"], "expected_revision": view["revision"],
            "expected_attempt": view["attempt"],
            "previous_verification_sha256": hashlib.sha256(canonical(view["verification"])).hexdigest(),
            "expected_old_execution_digest": view["execution_digest"],
            "expected_new_execution_digest": plan["execution_digest"],
            "authorization_id": "quickstart-rebind-authorization",
            "idempotency_key": "quickstart-rebind-1", "reason": "plan registered after projection"}
    curl = subprocess.run(["curl", "-sS", "-X", "POST", "-H", f"Authorization: Bearer {control}",
                           "-H", "Content-Type: application/json", "-d", json.dumps(body),
                           f"http://127.0.0.1:{rebind_port}/v1/tasks/{task_id}/execution-rebind"],
                          capture_output=True, text=True)
    answer = json.loads(curl.stdout or "{}")
    if answer.get("new_execution_digest") != plan["execution_digest"]:
        fail(f"{task_id}: rebind answered {curl.stdout} {curl.stderr}")
    say(task_id, f"rebound to plan {plan['execution_digest'][:12]} (curl to :{rebind_port})")


if __name__ == "__main__":
    main()
