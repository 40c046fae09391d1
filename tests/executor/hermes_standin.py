#!/usr/bin/python3
"""A stand-in for the Hermes Agent CLI (0.19-0.21), for the executor's Hermes tests.

The real CLI is published for Python only and cannot be installed from the registries CI
reaches, so this follows its documented interface where a profile depends on it:

- one-shot mode is the top-level `-z <prompt>` (prints only the final answer); `--provider`
  needs `-m` (else exit 2); an unknown flag or subcommand exits 2 (argparse), so
  `hermes run --non-interactive` does; `-t` names toolsets, an unknown one exits 2;
- the provider's base URL and key variable come from $HERMES_HOME/config.yaml
  (`providers.<name>.base_url`, `key_env`); OPENAI_BASE_URL is ignored; stdin is never read;
- it writes state.db, logs/, sessions/ and cron/ under HERMES_HOME, and a read-only
  HERMES_HOME is fatal (`Permission denied: '<HERMES_HOME>/cron'`);
- `--usage-file` gets {completed, failed, model, provider, session_id, api_calls, token counts,
  estimated_cost_usd} after a run that reached the provider, also a failed one;
- a provider that cannot be reached gives `API call failed after 3 retries: ...` on stdout
  and exit 0 (the usage file says failed: true).

Stricter than the real CLI in one place: where Hermes would try `pip install` of an optional
package (lazy installs, unless HERMES_DISABLE_LAZY_INSTALLS=1 or the config's
security.allow_lazy_installs is false), the stand-in stops with exit 3, since a sandboxed run
must never reach for a package index.
"""
import argparse
import json
import os
import sys
import urllib.error
import urllib.request
import uuid

VERSION = "Hermes Agent v0.21.0 (stand-in)"
TOOLSETS = {"terminal", "file", "web", "memory", "browser", "code_execution", "delegation"}


def parse_yaml(text):
    """The block-mapping subset of YAML the shipped config.yaml uses (no lists, no flow)."""
    root = {}
    stack = [(-1, root)]
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        key, _, value = line.strip().partition(":")
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        value = value.strip()
        if value == "":
            parent[key] = {}
            stack.append((indent, parent[key]))
        else:
            if value[0] in "\"'" and value[-1] == value[0]:
                value = value[1:-1]
            elif value in ("true", "false"):
                value = value == "true"
            parent[key] = value
    return root


def fail(message, code=1):
    sys.stderr.write(message + "\n")
    sys.exit(code)


def main():
    parser = argparse.ArgumentParser(prog="hermes")
    parser.add_argument("--version", action="version", version=VERSION)
    parser.add_argument("-z", "--oneshot", metavar="PROMPT")
    parser.add_argument("-m", "--model")
    parser.add_argument("--provider")
    parser.add_argument("-t", "--toolsets")
    parser.add_argument("--usage-file")
    parser.add_argument("--no-restore-cwd", action="store_true")
    parser.add_argument("--ignore-user-config", action="store_true")
    parser.add_argument("--ignore-rules", action="store_true")
    parser.add_argument("--safe-mode", action="store_true")
    sub = parser.add_subparsers(dest="command")
    for name in ("chat", "doctor", "model", "tools", "sessions"):
        sub.add_parser(name)
    args = parser.parse_args()
    if args.command is not None or args.oneshot is None:
        fail("hermes: the stand-in answers one-shot mode (-z) only; interactive needs a TTY", 2)
    if args.provider and not args.model:
        parser.error("--provider requires -m/--model")
    toolsets = None
    if args.toolsets is not None:
        toolsets = [name for name in args.toolsets.split(",") if name in TOOLSETS]
        if not toolsets:
            fail("hermes -z: --toolsets did not contain any valid toolsets.", 2)

    home = os.environ.get("HERMES_HOME") or os.path.join(os.path.expanduser("~"), ".hermes")
    try:
        for name in ("cron", "logs", "sessions", "memories"):
            os.makedirs(os.path.join(home, name), exist_ok=True)
        open(os.path.join(home, "state.db"), "ab").close()
    except OSError as error:
        fail("Error: %s: %r" % (error.strerror, error.filename))
    config = {}
    config_path = os.path.join(home, "config.yaml")
    if os.path.exists(config_path) and not args.ignore_user_config:
        with open(config_path, encoding="utf-8") as handle:
            config = parse_yaml(handle.read())
    model_config = config.get("model", {})
    provider_name = args.provider or model_config.get("provider")
    provider = config.get("providers", {}).get(provider_name) if provider_name else None
    if provider is None or "base_url" not in provider:
        fail("hermes: no provider configured (hermes model); provider %r" % provider_name, 1)
    model = args.model or model_config.get("name") or provider.get("default_model")
    lazy = config.get("security", {}).get("allow_lazy_installs", True)
    if os.environ.get("HERMES_DISABLE_LAZY_INSTALLS") != "1" and lazy is not False:
        fail("hermes: lazy install of an optional package attempted (pip install); set "
             "HERMES_DISABLE_LAZY_INSTALLS=1", 3)

    session_id = uuid.uuid4().hex[:12]
    key = os.environ.get(provider.get("key_env", "OPENAI_API_KEY"), "")
    body = {"model": model, "messages": [{"role": "user", "content": args.oneshot}]}
    if toolsets:
        body["tools"] = [{"type": "function", "function": {"name": name}} for name in toolsets]
    request = urllib.request.Request(
        provider["base_url"].rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
        method="POST", headers={"Authorization": "Bearer " + key,
                                "Content-Type": "application/json"})
    usage = {"completed": False, "failed": True, "model": None, "provider": provider_name,
             "session_id": session_id, "api_calls": 0, "input_tokens": 0, "output_tokens": 0,
             "total_tokens": 0, "estimated_cost_usd": 0.0}
    answer = None
    error_text = ""
    for _ in range(3):
        usage["api_calls"] += 1
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                reply = json.loads(response.read().decode())
            answer = reply["choices"][0]["message"]["content"]
            counts = reply.get("usage") or {}
            usage.update(completed=True, failed=False, model=model,
                         input_tokens=counts.get("prompt_tokens", 0),
                         output_tokens=counts.get("completion_tokens", 0),
                         total_tokens=counts.get("total_tokens", 0))
            break
        except urllib.error.HTTPError as error:
            error_text = "HTTP %d: %s" % (error.code, error.read().decode("utf-8", "replace"))
        except (OSError, ValueError, KeyError, IndexError) as error:
            error_text = "Connection error. (%s)" % error
    with open(os.path.join(home, "sessions", session_id + ".json"), "w") as handle:
        json.dump({"id": session_id, "prompt_chars": len(args.oneshot)}, handle)
    with open(os.path.join(home, "logs", "agent.log"), "a") as handle:
        handle.write("session %s %s\n" % (session_id, "ok" if answer is not None else "failed"))
    if args.usage_file:
        with open(args.usage_file, "w") as handle:
            json.dump(usage, handle)
    if answer is None:
        print("API call failed after 3 retries: " + error_text)
    else:
        print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
