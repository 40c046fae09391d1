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
    """fill_bytes into `fill`, in files of at most fill_file_bytes (each within its own bound)."""
    written = 0
    per_file = known.get("fill_file_bytes", known["fill_bytes"])
    while written < known["fill_bytes"]:
        with open("%s.%d" % (known["fill"], written // per_file), "wb") as file:
            for _ in range(per_file >> 20):
                file.write(b"x" * (1 << 20))
                written += 1 << 20
    time.sleep(known.get("fill_hold", 0))
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


def supplementary_groups():
    """A group of the daemon's user (the exchanges, gitops) still held: what it grants, we have."""
    groups = os.getgroups()
    if not groups:
        raise PermissionError("none")
    return groups


if known.get("groups"):
    attempt("groups", supplementary_groups)


# The kernel's larger surfaces, by raw syscall (x86_64 and aarch64 numbers): every one should be
# refused by the sandbox's syscall filter. "ok" when the call succeeded or failed for a reason of
# its own (EINVAL, EFAULT, ...), which means it reached the kernel; "refused" only for the
# filter's answers (EPERM, ENOSYS for clone3, EAFNOSUPPORT for the socket families).
SYSCALLS = {
    "x86_64": {"unshare": 272, "setns": 308, "clone": 56, "clone3": 435, "add_key": 248,
               "keyctl": 250, "request_key": 249, "io_uring_setup": 425, "bpf": 321,
               "perf_event_open": 298, "userfaultfd": 323, "ptrace": 101, "mount": 165,
               "umount2": 166, "pivot_root": 155, "fsopen": 430, "open_tree": 428,
               "init_module": 175, "finit_module": 313, "kexec_load": 246, "reboot": 169,
               "open_by_handle_at": 304, "process_vm_readv": 310},
    "aarch64": {"unshare": 97, "setns": 268, "clone": 220, "clone3": 435, "add_key": 217,
                "keyctl": 219, "request_key": 218, "io_uring_setup": 425, "bpf": 280,
                "perf_event_open": 241, "userfaultfd": 282, "ptrace": 117, "mount": 40,
                "umount2": 39, "pivot_root": 41, "fsopen": 430, "open_tree": 428,
                "init_module": 105, "finit_module": 273, "kexec_load": 104, "reboot": 142,
                "open_by_handle_at": 265, "process_vm_readv": 270},
}
FILTERED = {1: "EPERM", 38: "ENOSYS", 97: "EAFNOSUPPORT"}


def kernel_attempts():
    import ctypes
    import platform
    libc = ctypes.CDLL(None, use_errno=True)
    numbers = SYSCALLS[platform.machine()]
    long = ctypes.c_long

    def syscall(name, *args):
        def call():
            result = libc.syscall(long(numbers[name]), *[long(a) for a in args])
            error = ctypes.get_errno()
            if result == 0 and name == "clone":
                os._exit(0)  # a child the filter let through
            if result > 0 and name == "clone":
                os.waitpid(result, 0)
            if result == -1 and error in FILTERED:
                raise OSError(error, FILTERED[error])
            return "returned %d errno %d" % (result, error if result == -1 else 0)
        attempt("kernel:" + name, call)

    clone_newuser, clone_newnet, clone_newns = 0x10000000, 0x40000000, 0x00020000
    syscall("unshare", clone_newuser)
    syscall("unshare", clone_newns)
    # A new user namespace by clone: the child (if there were one) exits at once.
    syscall("clone", clone_newuser | 17, 0, 0, 0, 0)
    syscall("setns", 0, clone_newnet)
    syscall("clone3", 0, 0)
    syscall("add_key", 0, 0, 0, 0, -2)
    syscall("keyctl", 0, -3, 0)
    syscall("request_key", 0, 0, 0, 0)
    syscall("io_uring_setup", 1, 0)
    syscall("bpf", 0, 0, 0)
    syscall("perf_event_open", 0, 0, -1, -1, 0)
    syscall("userfaultfd", 0)
    syscall("ptrace", 0, 0, 0, 0)  # PTRACE_TRACEME
    syscall("process_vm_readv", 1, 0, 0, 0, 0, 0)
    syscall("mount", 0, 0, 0, 0, 0)
    syscall("umount2", 0, 0)
    syscall("pivot_root", 0, 0)
    syscall("fsopen", 0, 0)
    syscall("open_tree", -100, 0, 0)
    syscall("init_module", 0, 0, 0)
    syscall("finit_module", -1, 0, 0)
    syscall("kexec_load", 0, 0, 0, 0)
    syscall("reboot", 0, 0, 0, 0)
    syscall("open_by_handle_at", -1, 0, 0)
    for family, name in ((socket.AF_NETLINK, "netlink"), (socket.AF_PACKET, "packet")):
        attempt("kernel:socket_" + name,
                lambda family=family: socket.socket(family, socket.SOCK_RAW, 0).close())

    def seccomp_mode():
        for line in read("/proc/self/status").splitlines():
            if line.startswith("Seccomp:"):
                if line.split()[1] == "2":
                    raise PermissionError("filtered")
                return line
        raise OSError("no Seccomp line")
    attempt("kernel:seccomp_status", seccomp_mode)


if known.get("kernel"):
    kernel_attempts()
if known.get("survive"):
    attempt("survive", survive)
if known.get("fork_bomb"):
    attempt("fork_bomb", fork_bomb)
def hog():
    """Several processes each holding memory within any per-process bound, all at once."""
    hog_known = known["hog"]
    children = []
    for _ in range(hog_known["processes"] - 1):
        pid = os.fork()
        if pid == 0:
            held = b"h" * (hog_known["mib"] << 20)  # noqa: F841 (held while it sleeps)
            time.sleep(60)
            os._exit(0)
        children.append(pid)
    held = b"h" * (hog_known["mib"] << 20)  # noqa: F841
    time.sleep(5)
    return "held %d MiB" % (hog_known["processes"] * hog_known["mib"])


if known.get("fill"):
    attempt("fill_disk", fill_disk)
if known.get("hog"):
    attempt("hog", hog)

print(json.dumps({"escapes": report}))
