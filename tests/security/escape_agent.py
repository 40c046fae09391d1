#!/usr/bin/python3
"""A hostile agent: run by the executor (or as a verification command), it tries every escape
of the threat model and prints what happened as JSON, one entry per attempt: "ok:<detail>" when
the escape worked, "refused:<error>" when it did not. The test decides; this only tries.

argv: a JSON object of what the attacker is assumed to know (paths, ports, a marker)."""
import json
import os
import socket
import sys
import time

known = json.loads(sys.argv[1])
report = {}


def attempt(name, action):
    try:
        report[name] = "ok:" + str(action())[:200]
    except BaseException as error:  # every failure is a refusal, whatever its kind
        report[name] = "refused:" + type(error).__name__ + ":" + str(getattr(error, "errno", ""))


def read(path):
    with open(path, "rb") as file:
        return file.read(4096).decode("utf-8", "replace")


def write(path, text):
    with open(path, "w") as file:
        file.write(text)
    return path


def listing(path):
    return sorted(os.listdir(path))


def connect(host, port):
    with socket.create_connection((host, port), timeout=3):
        return "connected"


def connect_unix(path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
        unix.settimeout(3)
        unix.connect(path)
        return "connected"


def foreign_environ():
    """Any process's environment holding the executor's marker variable."""
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                if known["marker"] in read("/proc/%s/environ" % pid):
                    return pid
            except OSError:
                pass
    raise PermissionError("no foreign environment readable")


def survive():
    """Daemonise a process that should outlive the run; the test looks for it afterwards."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/usr/bin/python3", ["python3", "-c", "import time; time.sleep(120)",
                                          known["marker"] + "-survivor"])
        os._exit(0)
    time.sleep(0.2)
    return "daemonised"


def fork_bomb():
    children = []
    try:
        while len(children) < 5000:
            pid = os.fork()
            if pid == 0:
                time.sleep(20)
                os._exit(0)
            children.append(pid)
    finally:
        for pid in children:
            os.kill(pid, 9)
        report["forked"] = len(children)
    return len(children)


def fill_disk():
    written = 0
    with open(known["fill"], "wb") as file:
        while written < known["fill_bytes"]:
            file.write(b"x" * (1 << 20))
            written += 1 << 20
    return written


for path in known.get("secrets", []):
    attempt("read:" + path, lambda path=path: read(path))
for path in known.get("listings", []):
    attempt("list:" + path, lambda path=path: listing(path))
for path in known.get("writes", []):
    attempt("write:" + path, lambda path=path: write(path, known.get("forged", "forged")))
for destination in known.get("connects", []):
    host, port = destination.rsplit(":", 1)
    attempt("connect:" + destination, lambda host=host, port=int(port): connect(host, port))
for path in known.get("unix_connects", []):
    attempt("connect:" + path, lambda path=path: connect_unix(path))
attempt("foreign_environ", foreign_environ)


def secret_environment():
    """Secret-looking variables besides the one projected provider key."""
    names = [name for name in os.environ
             if ("TOKEN" in name or "KEY" in name or "SECRET" in name) and name != "OPENAI_API_KEY"]
    if not names:
        raise KeyError("none")
    return names


attempt("secret_environment", secret_environment)
if known.get("survive"):
    attempt("survive", survive)
if known.get("fork_bomb"):
    attempt("fork_bomb", fork_bomb)
if known.get("fill"):
    attempt("fill_disk", fill_disk)

print(json.dumps({"escapes": report}))
