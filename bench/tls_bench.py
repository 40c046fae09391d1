#!/usr/bin/env python3
"""Poll and claim over TLS against plaintext, in one sitting.

Two schedulers on loopback with the same queue: one plaintext, one whose listeners speak TLS
and ask for client certificates (the remote-worker set-up: the agent bound to its certificate).
The load driver keeps one connection per client thread (keep-alive; the threads share one TLS
session cache), as a worker's transport does. Measured on each, interleaved run by run:

  health  GET /health, the floor of each listener
  poll    POST /v1/tasks/poll with the queue, as the agent
  claim   POST /v1/tasks/claim-next, each call claiming one task for one of 64 workers

Prints one JSON object on stdout (scripts/bench writes docs/performance.md from it). The
certificates are made for the run with the openssl command line and removed with it.
"""
import argparse
import json
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from daemons_bench import Load, Suite, call, task_template, secret_file  # noqa: E402

WORKERS = 64  # each with 64 slots: room for every claim of the run


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(root):
    """A CA, the server's certificate for 127.0.0.1 and the agent's client certificate."""
    curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *curve, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=aios bench CA", cwd=root)
    for name, extension in (("server", "subjectAltName=IP:127.0.0.1"),
                            ("agent", "subjectAltName=URI:aios:agent:bench")):
        openssl("req", *curve, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj",
                f"/CN={name}", cwd=root)
        (root / f"{name}.ext").write_text(extension + "\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile",
                f"{name}.ext", cwd=root)
        (root / f"{name}.key").chmod(0o600)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", type=Path, required=True, help="the build directory")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one short run")
    args = parser.parse_args()
    queued = 200 if args.smoke else 6000
    claims = 100 if args.smoke else 2000
    runs = 1 if args.smoke else 5
    seconds = "0.3" if args.smoke else "3"
    clients = "4"
    state = Path(tempfile.mkdtemp(prefix="aios-bench-tls-"))
    suite = Suite(state)
    load = Load(args.build, state)
    pki = state / "pki"
    pki.mkdir()
    make_pki(pki)
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    context.load_cert_chain(str(pki / "agent.pem"), str(pki / "agent.key"))
    tls_args = {"plaintext": [],
                "tls": ["--tls-ca-file", str(pki / "ca.pem"), "--tls-certificate-file",
                        str(pki / "agent.pem"), "--tls-key-file", str(pki / "agent.key")]}
    try:
        control = os.urandom(20).hex()
        secret_file(state / "control.token", control)
        sides = {}
        for side in ("plaintext", "tls"):
            flags = [] if side == "plaintext" else [
                "--tls-certificate-file", str(pki / "server.pem"), "--tls-key-file",
                str(pki / "server.key"), "--tls-client-ca-file", str(pki / "ca.pem")]
            _, ready = suite.start(f"scheduler-{side}", [
                str(args.build / "daemons" / "aios-task-scheduler"), "--db",
                str(state / f"{side}.sqlite3"), "--control-token-file",
                str(state / "control.token"), "--api-port", "0", "--bridge-port", "0",
                "--authority-git-dir", str(state / "authority.git"), *flags],
                ready="TASK_API_LISTENING")
            port = ready["port"]
            side_context = context if side == "tls" else None
            load.run(port, "--method", "POST", "--path", "/v1/tasks", "--threads", "2", "--count",
                     str(queued), "--rotate", "hermes", *tls_args[side],
                     token_file=state / "control.token", body=task_template())
            agent = call(port, control, "POST", "/v1/agents",
                         {"agent_id": "bench-agent", "granted_capabilities": ["agent.runtime.hermes"],
                          **({"client_certificate": {"uri": "aios:agent:bench"}}
                             if side == "tls" else {})}, side_context)
            secret_file(state / f"{side}.token", agent["token"])
            for worker in range(WORKERS):
                call(port, agent["token"], "POST", "/v1/workers/register",
                     {"worker_id": f"w{worker}", "capabilities": ["agent.runtime.hermes"],
                      "allowed_adapters": ["hermes"], "max_concurrency": 64}, side_context)
            sides[side] = port
        results = {side: {"health": [], "poll": [], "claim": []} for side in sides}
        poll_body = json.dumps({"worker_id": "w0", "limit": 10})
        claim_body = json.dumps({"worker_id": "w@R@", "wait_ms": 0})
        workers = ",".join(str(w) for w in range(WORKERS))
        for _ in range(runs):
            for side, port in sides.items():
                measured = results[side]
                measured["health"].append(load.run(port, "--threads", clients, "--seconds",
                                                   seconds, *tls_args[side])["per_second"])
                measured["poll"].append(load.run(
                    port, "--method", "POST", "--path", "/v1/tasks/poll", "--threads", clients,
                    "--seconds", seconds, *tls_args[side], token_file=state / f"{side}.token",
                    body=poll_body)["per_second"])
        for side, port in sides.items():
            # Claims use the queue up, so they are measured once per side, on equal queues.
            results[side]["claim"].append(load.run(
                port, "--method", "POST", "--path", "/v1/tasks/claim-next", "--threads", clients,
                "--count", str(claims), "--rotate", workers, *tls_args[side],
                token_file=state / f"{side}.token", body=claim_body)["per_second"])
        report = {"runs": runs, "clients": int(clients), "seconds_per_run": float(seconds),
                  "queued": queued, "claims": claims}
        for side, measured in results.items():
            report[side] = {name: statistics.median(values) for name, values in measured.items()}
            report[side]["runs"] = measured
        report["ratios"] = {name: report["tls"][name] / report["plaintext"][name]
                            for name in ("health", "poll", "claim")}
        print(json.dumps(report, indent=2))
    finally:
        suite.stop()
        if not os.environ.get("AIOS_BENCH_KEEP"):
            shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
