"""A normal client's latency on `groundqa serve` while 50 slow clients hold connections.

Three runs of the same client (one connection, the example corpus's probe questions to
/query in a loop, cache off, as `serve_load.py`'s one-client run) on one server with
its default limits: alone; while 50 connections each send a /query body a byte every
2 s (they never finish; one the server closes is opened again, so 50 are always held);
and while 50 connections each send a request head a line every 2 s. The figure is the
client's p99 under each kind of load against its p99 alone. The slow clients are raw
sockets in a thread of this process; every connection is to 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from _common import machine, write_result
from serving import example_index, example_questions, load, server

SECONDS = float(os.environ.get("BENCH_SLOW_SECONDS", "30"))
SLOW_CLIENTS = 50
EVERY_S = 2.0  # one byte (a body) or one header line (a head) this often, as in the report


def _body_start(port: int) -> bytes:
    head = (
        f"POST /query HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    return head.encode() + b'{"question": "'


def _head_start(port: int) -> bytes:
    return f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()


class SlowClients:
    """`count` connections that send `start`, then `more` every EVERY_S seconds, for ever;
    one the server closes is opened again. Counts what the server did to them."""

    def __init__(self, port: int, count: int, start: bytes, more: bytes) -> None:
        self.port, self.start, self.more = port, start, more
        self.seen: Counter[str] = Counter()
        self._stop = threading.Event()
        self._socks = [self._open() for _ in range(count)]
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()

    def _open(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        sock.sendall(self.start)
        sock.setblocking(False)
        self.seen["opened"] += 1
        return sock

    def _closed(self, sock: socket.socket) -> bool:
        """Whether the server has answered or closed `sock` (recording which)."""
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if data.startswith(b"HTTP/1.1 "):
            self.seen[f"answered {data[9:12].decode()}"] += 1
        else:
            self.seen["closed without an answer"] += 1
        return True

    def _trickle(self) -> None:
        while not self._stop.wait(EVERY_S):
            for i, sock in enumerate(self._socks):
                if self._closed(sock):
                    sock.close()
                    self._socks[i] = self._open()
                    continue
                try:
                    sock.send(self.more)
                except OSError:
                    sock.close()
                    self._socks[i] = self._open()

    def close(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join(10)
        for sock in self._socks:
            sock.close()
        return dict(self.seen)


def _run(url: str, questions: list[str], slow: Callable[[], SlowClients] | None) -> dict[str, Any]:
    clients = slow() if slow is not None else None
    time.sleep(1.0 if clients else 0)  # every slow head or body has started
    failures: Counter[str] = Counter()
    try:
        result = asyncio.run(load(url, questions, 1, SECONDS, failures))
    finally:
        seen = clients.close() if clients is not None else {}
    return {**result, "failures": dict(failures), "slow_clients": seen}


def run() -> dict[str, Any]:
    index = example_index()
    questions = example_questions()
    with server(index) as serve:
        url, port = serve.url, serve.port
        runs = {
            "alone": _run(url, questions, None),
            "50 slow bodies": _run(
                url,
                questions,
                lambda: SlowClients(port, SLOW_CLIENTS, _body_start(port), b"x"),
            ),
            "50 slow heads": _run(
                url,
                questions,
                lambda: SlowClients(port, SLOW_CLIENTS, _head_start(port), b"X-Slow: 1\r\n"),
            ),
        }
    alone = runs["alone"]["p99_ms"]
    data = {
        "machine": machine(),
        "seconds_per_run": SECONDS,
        "slow_clients": SLOW_CLIENTS,
        "every_s": EVERY_S,
        "runs": runs,
        "p99_ratio": {k: round(r["p99_ms"] / alone, 2) for k, r in runs.items() if alone},
    }
    rows = "\n".join(
        f"| {name} | {r['requests']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | "
        f"{data['p99_ratio'].get(name, '')} | {r['errors']} | "
        f"{', '.join(f'{k}: {v}' for k, v in sorted(r['slow_clients'].items())) or '–'} |"
        for name, r in runs.items()
    )
    md = f"""## Serving: a normal client while 50 slow clients hold connections

`python bench/slow_clients.py` (part of `make bench`): one client asks the example corpus's
{len(questions)} probe questions over one connection, {SECONDS:.0f} s per run, cache off, on a
`groundqa serve` with its default limits (`--body-timeout 30`, `--header-timeout 10`,
8 slots and a queue of 32); {machine()["cpus"]} CPUs, server and clients on the same machine.
The slow clients send one byte of a body, or one header line, every {EVERY_S:g} s, and
open a new connection when the server closes one.

| load | requests | p50 ms | p95 ms | p99 ms | p99 / alone | errors | what the slow clients got |
|---|---:|---:|---:|---:|---:|---:|---|
{rows}

A slow body holds a connection, not a slot: a request asks for a slot only once its body is
in, and gets 408 if it is not in within `--body-timeout`. A slow head is closed after
`--header-timeout`. The p99 under load is against the same client alone on the same
server; on {machine()["cpus"]} CPUs the slow clients' own thread shares them.
"""
    write_result("slow_clients", data, md)
    return data


if __name__ == "__main__":
    run()
