#!/usr/bin/env python3
"""A loopback TCP proxy between a scheduler and its PostgreSQL server, for the wire-fault tests.

Bytes pass through unchanged until a fault is armed: a mode written into --arm-file arms one
fault on the next send of the client's that holds a COMMIT (a write's: the store ends its
read-only transactions with ROLLBACK). The file is removed when the fault fires.
  mid-pipeline  the messages of that send before the COMMIT go to the server, then both sides
                are closed: what was pipelined ahead ran, the COMMIT never arrived
  drop-answer   the whole send goes to the server, which answers it (the transaction commits),
                then both sides are closed without the answer passed on

Prints {"event": "FAULT_PROXY_LISTENING", "port": N} on stderr once listening, and
{"event": "FAULT_PROXY_FAULTED", "mode": ...} when the fault fires.
"""
import argparse
import json
import os
import socket
import sys
import threading

READY_FOR_QUERY = b"Z\x00\x00\x00\x05"


def log(event, **fields):
    print(json.dumps({"event": event, **fields}), file=sys.stderr, flush=True)


def commit_offset(chunk):
    """Where the message holding a COMMIT starts in `chunk` (whole protocol messages: a type
    byte and a length that counts itself), or None."""
    at = 0
    while at + 5 <= len(chunk):
        length = int.from_bytes(chunk[at + 1:at + 5], "big")
        if b"COMMIT\x00" in chunk[at:at + 1 + length]:
            return at
        at += 1 + length
    return None


def armed_mode(chunk):
    if b"COMMIT\x00" not in chunk or not os.path.exists(ARGS.arm_file):
        return None
    with LOCK:
        try:
            with open(ARGS.arm_file) as armed:
                mode = armed.read().strip()
            os.unlink(ARGS.arm_file)
        except FileNotFoundError:
            return None
    return mode


def close(*sockets):
    for each in sockets:
        try:
            each.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        each.close()


def pump_to_server(client, server, pair):
    while True:
        chunk = client.recv(65536)
        if not chunk:
            break
        mode = armed_mode(chunk)
        if mode == "mid-pipeline":
            cut = commit_offset(chunk) or 0
            server.sendall(chunk[:cut])
            log("FAULT_PROXY_FAULTED", mode=mode, forwarded=cut, of=len(chunk))
            close(client, server)
            return
        if mode == "drop-answer":
            pair["dropping"] = True
            log("FAULT_PROXY_FAULTED", mode=mode)
        server.sendall(chunk)
    close(client, server)


def pump_to_client(server, client, pair):
    answer = b""
    while True:
        try:
            chunk = server.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        if pair.get("dropping"):
            # The whole answer, up to the ReadyForQuery after the COMMIT, then nothing of it.
            answer += chunk
            if READY_FOR_QUERY in answer:
                break
            continue
        client.sendall(chunk)
    close(client, server)


def serve(listener):
    while True:
        client, _ = listener.accept()
        server = socket.create_connection((ARGS.host, ARGS.port))
        pair = {}
        threading.Thread(target=pump_to_server, args=(client, server, pair), daemon=True).start()
        threading.Thread(target=pump_to_client, args=(server, client, pair), daemon=True).start()


def main():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    log("FAULT_PROXY_LISTENING", port=listener.getsockname()[1])
    serve(listener)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", required=True, help="host:port of the PostgreSQL server")
    parser.add_argument("--arm-file", required=True, help="a mode written here arms one fault")
    ARGS = parser.parse_args()
    ARGS.host, _, port = ARGS.upstream.rpartition(":")
    ARGS.port = int(port)
    LOCK = threading.Lock()
    main()
