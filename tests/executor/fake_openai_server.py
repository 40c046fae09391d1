#!/usr/bin/env python3
"""Fake OpenAI-compatible model server (stdlib only) for offline CLI tests.

Adapted from the proven real-CLI recipes, plus: the Authorization header is logged as
its SHA-256 (authorization-sha256) and a JSON ready line goes to stderr.

Endpoints:
  GET  /v1/models, /models                   -> model list
  POST /v1/chat/completions (stream or not)  -> Chat Completions (SSE when stream:true)
  POST /v1/responses (stream or not)         -> Responses API (SSE when stream:true)
  anything else                              -> 404 JSON (still logged)

Every request is appended as one JSON line to --log (method, path, headers, body).

Scenarios (--scenario):
  text   : always answer with --reply text.
  edit   : first model call -> one tool call that writes --edit-file with
           --edit-content (tool picked from the request's tools array);
           once the request contains a tool result -> final text --reply.

Usage: fake_openai_server.py --port 0 --port-file P --log L [--scenario edit]
"""
import argparse
import hashlib
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
LOCK = threading.Lock()
COUNTER = {"n": 0}


def log_entry(entry):
    with LOCK:
        with open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


# ---------------------------------------------------------------- tool picking
def _tool_name(t):
    if not isinstance(t, dict):
        return None
    if "function" in t and isinstance(t["function"], dict):
        return t["function"].get("name")
    return t.get("name")


def _tool_params(t):
    if "function" in t and isinstance(t["function"], dict):
        return t["function"].get("parameters") or {}
    return t.get("parameters") or {}


def build_edit_call(tools):
    """Return (tool_name, kind, args_or_input) for a file-writing tool call.

    kind: 'function' (JSON args string) or 'custom' (freeform input string).
    """
    path = ARGS.edit_file
    content = ARGS.edit_content
    by_name = {}
    for t in tools or []:
        n = _tool_name(t)
        if n:
            by_name[n] = t
    # 1. a "write"-style function tool: fill the schema's path/content properties
    for cand in ("write", "write_file", "Write", "create_file", "file_write"):
        if cand in by_name:
            props = (_tool_params(by_name[cand]).get("properties") or {})
            pkey = next((k for k in ("path", "file_path", "filePath", "filename", "file") if k in props), "path")
            ckey = next((k for k in ("content", "contents", "text", "data") if k in props), "content")
            return cand, "function", json.dumps({pkey: path, ckey: content})
    # 1b. OpenClaw "Code Mode": a single `exec` tool whose schema requires `code`
    #     (JavaScript); file tools are async globals such as write({path, content}).
    for cand in ("exec",):
        t = by_name.get(cand)
        if t is not None and "code" in (_tool_params(t).get("properties") or {}):
            code = ("const r = await write({path: %s, content: %s});\nreturn r && r.changed;"
                    % (json.dumps(path), json.dumps(content)))
            return cand, "function", json.dumps({"title": "write file", "code": code})
    # 1c. OpenClaw Tool Search proxy: tool_call {id: <deferred tool>, args: {...}}
    if "tool_call" in by_name:
        return "tool_call", "function", json.dumps({"id": "write", "args": {"path": path, "content": content}})
    # 2. apply_patch (Codex): freeform custom tool or function with 'input'
    patch = "*** Begin Patch\n*** Add File: %s\n%s*** End Patch\n" % (
        path, "".join("+" + line + "\n" for line in content.splitlines()))
    if "apply_patch" in by_name:
        t = by_name["apply_patch"]
        if t.get("type") == "custom":
            return "apply_patch", "custom", patch
        props = (_tool_params(t).get("properties") or {})
        key = "input" if "input" in props else (next(iter(props)) if props else "input")
        return "apply_patch", "function", json.dumps({key: patch})
    # 3. shell-style tool
    for cand in ("exec", "shell", "exec_command", "bash", "local_shell"):
        if cand in by_name:
            props = (_tool_params(by_name[cand]).get("properties") or {})
            cmd = "printf '%%s\\n' %s > %s" % (json.dumps(content), path)
            if "command" in props and (props["command"].get("type") == "array"):
                return cand, "function", json.dumps({"command": ["bash", "-lc", cmd]})
            if "cmd" in props:
                return cand, "function", json.dumps({"cmd": cmd})
            return cand, "function", json.dumps({"command": cmd})
    return None, None, None


def has_tool_result_chat(messages):
    return any(isinstance(m, dict) and m.get("role") == "tool" for m in messages or [])


def has_tool_result_responses(inp):
    if not isinstance(inp, list):
        return False
    return any(isinstance(i, dict) and i.get("type") in (
        "function_call_output", "custom_tool_call_output", "local_shell_call_output")
        for i in inp)


def decide(tools, has_result):
    """-> ('text', reply) or ('tool', (name, kind, args))."""
    if ARGS.scenario == "edit" and not has_result:
        name, kind, args = build_edit_call(tools)
        if name:
            return "tool", (name, kind, args)
        return "text", "FAKE-ERROR: no usable write tool in request"
    return "text", ARGS.reply


# ---------------------------------------------------------------- handler
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):  # quiet
        pass

    def _read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not n and self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            raw = b"".join(chunks)
        enc = (self.headers.get("Content-Encoding") or "").lower()
        if enc in ("gzip", "deflate") and raw:
            import zlib
            raw = zlib.decompress(raw, 16 + zlib.MAX_WBITS if enc == "gzip" else zlib.MAX_WBITS)
        elif enc == "zstd" and raw:
            raw = b'{"_undecodable":"zstd"}'
        try:
            return raw, json.loads(raw.decode("utf-8")) if raw else None
        except Exception:
            return raw, None

    def _log(self, body_json, raw):
        COUNTER["n"] += 1
        hdrs = {k: v for k, v in self.headers.items()
                if k.lower() not in ("authorization", "cookie")}
        hdrs["authorization-present"] = bool(self.headers.get("Authorization"))
        # A digest, never the value: tests check which key the client sent without logging it.
        if self.headers.get("Authorization"):
            hdrs["authorization-sha256"] = hashlib.sha256(
                self.headers["Authorization"].encode("utf-8")).hexdigest()
        log_entry({"n": COUNTER["n"], "t": time.time(), "method": self.command,
                   "path": self.path, "headers": hdrs,
                   "body": body_json if body_json is not None else raw.decode("utf-8", "replace")})

    def _json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _sse(self, obj, event=None):
        s = ""
        if event:
            s += "event: %s\n" % event
        s += "data: %s\n\n" % (obj if isinstance(obj, str) else json.dumps(obj))
        self.wfile.write(s.encode())
        self.wfile.flush()

    def do_GET(self):
        raw, body = b"", None
        self._log(body, raw)
        p = self.path.split("?")[0].rstrip("/")
        if p in ("/v1/models", "/models"):
            return self._json(200, {"object": "list", "data": [
                {"id": ARGS.model, "object": "model", "created": 0, "owned_by": "fake"}]})
        if p.startswith("/v1/models/") or p.startswith("/models/"):
            return self._json(200, {"id": p.rsplit("/", 1)[1], "object": "model", "created": 0, "owned_by": "fake"})
        return self._json(404, {"error": {"message": "not found: " + self.path, "type": "invalid_request_error"}})

    def do_POST(self):
        raw, body = self._read_body()
        self._log(body, raw)
        p = self.path.split("?")[0].rstrip("/")
        body = body or {}
        if p.endswith("/chat/completions"):
            return self.chat(body)
        if p.endswith("/responses"):
            return self.responses_api(body)
        return self._json(404, {"error": {"message": "not found: " + self.path, "type": "invalid_request_error"}})

    # ----------------------------------------------------------- chat completions
    def chat(self, body):
        model = body.get("model") or ARGS.model
        kind, payload = decide(body.get("tools"), has_tool_result_chat(body.get("messages")))
        cid = "chatcmpl-" + uuid.uuid4().hex[:12]
        created = int(time.time())
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if kind == "tool":
            name, _k, args = payload
            call = {"id": "call_" + uuid.uuid4().hex[:8], "type": "function",
                    "function": {"name": name, "arguments": args}}
            finish = "tool_calls"
            msg = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            finish = "stop"
            msg = {"role": "assistant", "content": payload}
        if not body.get("stream"):
            return self._json(200, {"id": cid, "object": "chat.completion", "created": created,
                                    "model": model, "choices": [{"index": 0, "message": msg,
                                                                 "finish_reason": finish}],
                                    "usage": usage})
        self._sse_start()
        base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
        self._sse(dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                       "finish_reason": None}]))
        if kind == "tool":
            c = msg["tool_calls"][0]
            self._sse(dict(base, choices=[{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": c["id"], "type": "function",
                 "function": {"name": c["function"]["name"], "arguments": ""}}]}, "finish_reason": None}]))
            self._sse(dict(base, choices=[{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "function": {"arguments": c["function"]["arguments"]}}]}, "finish_reason": None}]))
        else:
            text = payload
            for i in range(0, len(text), 16):
                self._sse(dict(base, choices=[{"index": 0, "delta": {"content": text[i:i + 16]},
                                               "finish_reason": None}]))
        self._sse(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
        if (body.get("stream_options") or {}).get("include_usage"):
            self._sse(dict(base, choices=[], usage=usage))
        self._sse("[DONE]")

    # ----------------------------------------------------------- responses API
    def responses_api(self, body):
        model = body.get("model") or ARGS.model
        kind, payload = decide(body.get("tools"), has_tool_result_responses(body.get("input")))
        rid = "resp_" + uuid.uuid4().hex[:12]
        created = int(time.time())
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 15}
        if kind == "tool":
            name, k, args = payload
            cid = "call_" + uuid.uuid4().hex[:8]
            if k == "custom":
                item = {"type": "custom_tool_call", "id": "ctc_" + cid, "call_id": cid,
                        "name": name, "input": args, "status": "completed"}
            else:
                item = {"type": "function_call", "id": "fc_" + cid, "call_id": cid,
                        "name": name, "arguments": args, "status": "completed"}
        else:
            item = {"type": "message", "id": "msg_" + uuid.uuid4().hex[:8], "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": payload, "annotations": []}]}
        resp = {"id": rid, "object": "response", "created_at": created, "status": "completed",
                "model": model, "output": [item], "usage": usage, "error": None,
                "incomplete_details": None}
        if not body.get("stream"):
            return self._json(200, resp)
        self._sse_start()
        seq = [0]

        def ev(t, **kw):
            kw["type"] = t
            kw["sequence_number"] = seq[0]
            seq[0] += 1
            self._sse(kw, event=t)

        inprog = dict(resp, status="in_progress", output=[], usage=None)
        ev("response.created", response=inprog)
        ev("response.in_progress", response=inprog)
        if item["type"] == "message":
            empty = dict(item, status="in_progress", content=[])
            ev("response.output_item.added", output_index=0, item=empty)
            ev("response.content_part.added", item_id=item["id"], output_index=0, content_index=0,
               part={"type": "output_text", "text": "", "annotations": []})
            ev("response.output_text.delta", item_id=item["id"], output_index=0, content_index=0,
               delta=payload)
            ev("response.output_text.done", item_id=item["id"], output_index=0, content_index=0,
               text=payload)
            ev("response.content_part.done", item_id=item["id"], output_index=0, content_index=0,
               part=item["content"][0])
        elif item["type"] == "function_call":
            ev("response.output_item.added", output_index=0, item=dict(item, arguments="", status="in_progress"))
            ev("response.function_call_arguments.delta", item_id=item["id"], output_index=0,
               delta=item["arguments"])
            ev("response.function_call_arguments.done", item_id=item["id"], output_index=0,
               arguments=item["arguments"])
        else:
            ev("response.output_item.added", output_index=0, item=dict(item, input="", status="in_progress"))
            ev("response.custom_tool_call_input.delta", item_id=item["id"], output_index=0,
               delta=item["input"])
            ev("response.custom_tool_call_input.done", item_id=item["id"], output_index=0,
               input=item["input"])
        ev("response.output_item.done", output_index=0, item=item)
        ev("response.completed", response=resp)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log", required=True)
    ap.add_argument("--model", default="fake-model")
    ap.add_argument("--scenario", choices=["text", "edit"], default="text")
    ap.add_argument("--reply", default="FAKE-REPLY-OK")
    ap.add_argument("--edit-file", default="EDITED.txt")
    ap.add_argument("--edit-content", default="edited by fake model")
    ARGS = ap.parse_args()
    srv = ThreadingHTTPServer((ARGS.host, ARGS.port), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if ARGS.port_file:
        tmp = ARGS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        import os
        os.replace(tmp, ARGS.port_file)
    sys.stderr.write("fake server on 127.0.0.1:%d scenario=%s\n" % (port, ARGS.scenario))
    # One JSON line for test launchers that wait for a ready event (tests/support/daemon.hpp).
    sys.stderr.write(json.dumps({"event": "FAKE_OPENAI_LISTENING", "port": port}) + "\n")
    sys.stderr.flush()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
