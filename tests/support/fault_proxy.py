#!/usr/bin/env python3
"""A loopback HTTP proxy in front of one of our daemons, for the network-fault tests.

It forwards every request to --upstream. The first --count POST requests whose path matches
--path are faulted: --mode drop closes the connection without an answer (the peer is down);
--mode slow forwards the request only after --delay seconds, so it still reaches the upstream
after the client has given up (the peer is slow, and the step happened anyway).

Prints {"event": "FAULT_PROXY_LISTENING", "port": N} on stderr once listening, and
{"event": "FAULT_PROXY_FAULTED", ...} for each faulted request.
"""
import argparse
import http.client
import http.server
import json
import re
import sys
import threading
import time

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}


def log(event, **fields):
    print(json.dumps({"event": event, **fields}), file=sys.stderr, flush=True)


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _fault(self):
        if self.command != "POST" or not ARGS.path.search(self.path.split("?")[0]):
            return False
        with LOCK:
            if STATE["faulted"] >= ARGS.count:
                return False
            STATE["faulted"] += 1
            n = STATE["faulted"]
        log("FAULT_PROXY_FAULTED", path=self.path, mode=ARGS.mode, n=n)
        return True

    def _forward(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
        if self._fault():
            if ARGS.mode == "drop":
                self.close_connection = True
                self.connection.close()
                return
            time.sleep(ARGS.delay)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        upstream = http.client.HTTPConnection(ARGS.host, ARGS.port, timeout=120)
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            payload = answer.read()
        finally:
            upstream.close()
        try:
            self.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in HOP_BY_HOP:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            self.close_connection = True  # the client gave up on a slow answer

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="host:port of the daemon")
    parser.add_argument("--path", required=True, type=re.compile,
                        help="regular expression a faulted request's path matches")
    parser.add_argument("--mode", choices=["drop", "slow"], required=True)
    parser.add_argument("--count", type=int, default=1, help="how many requests to fault")
    parser.add_argument("--delay", type=float, default=2.0, help="seconds, with --mode slow")
    ARGS = parser.parse_args()
    ARGS.host, port = ARGS.upstream.rsplit(":", 1)
    ARGS.port = int(port)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    server.daemon_threads = True
    log("FAULT_PROXY_LISTENING", port=server.server_address[1])
    server.serve_forever()


ARGS = None
LOCK = threading.Lock()
STATE = {"faulted": 0}

if __name__ == "__main__":
    main()
