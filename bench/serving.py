"""A `groundqa serve` for one benchmark run: started, put under load, measured, stopped.

Every benchmark that serves (serve_load, slow_clients, routes, postgres_load, soak and
scale's serving step) starts its server with `server`, loads it with `load`, and reads
what a process costs with the helpers at the end, so the wait for a first answer, the
way a server is stopped and the memory figures mean the same in each.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import ROOT, WORK, percentile

# Seconds per load run (serve_load, slow_clients, postgres_load).
SECONDS = float(os.environ.get("BENCH_LOAD_SECONDS", "30"))
# Below uvicorn's 5 s keep-alive timeout: a request sent on a connection just as the server
# closes it would fail with a reset before the server read it (a client artefact, not an error).
KEEPALIVE_EXPIRY_S = 2.0
# The groundqa command of the interpreter running the benchmark.
EXE = Path(sys.executable).with_name("groundqa")
READY_S = 60.0


def example_questions() -> list[str]:
    """The example corpus's probe questions, in file order."""
    lines = (ROOT / "examples" / "regpack.probes.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


def example_index(folder: Path = WORK / "serve" / "regpack") -> Path:
    """The example corpus ingested at `folder` (default embedder); an unchanged build is
    kept."""
    from groundqa.ingestion import ingest

    ingest([ROOT / "examples" / "regpack"], folder)
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Server:
    proc: subprocess.Popen[bytes]
    port: int
    # Seconds from the start of the process to its first answered query.
    ready_s: float

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def server(
    index: Path | str, cache: str = "off", extra: Sequence[str] = (), log: Path | None = None
) -> Iterator[Server]:
    """`groundqa serve` over `index` (a folder or a PostgreSQL URL) on a free port, with
    `extra` arguments, for the `with` block; ready once it has answered a query. Its stderr
    goes to `log` (a file, which nothing has to read while it runs), else to a pipe read if
    it fails to start. Stopped on leaving: terminated, killed after 30 s."""
    import httpx

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = [str(EXE), "serve", "--index", str(index), "--port", str(port)]
    started = time.perf_counter()
    with log.open("wb") if log is not None else contextlib.nullcontext(subprocess.PIPE) as err:
        proc = subprocess.Popen(
            [*args, "--cache", cache, *extra], stdout=subprocess.DEVNULL, stderr=err
        )
    try:
        while True:
            if proc.poll() is not None:
                said = log.read_text(errors="replace") if log is not None else ""
                if proc.stderr:
                    said = proc.stderr.read().decode()
                raise RuntimeError(f"serve exited: {said[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                body = {"question": "What is a NEER report?"}
                if httpx.post(f"{url}/query", json=body, timeout=2).status_code == 200:
                    break
            if time.perf_counter() - started > READY_S:
                raise RuntimeError(f"serve did not answer within {READY_S:.0f} s")
            time.sleep(0.05)
        yield Server(proc, port, time.perf_counter() - started)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


async def load(
    url: str,
    questions: list[str],
    clients: int,
    seconds: float,
    failures: Counter[str] | None = None,
    timeline: list[tuple[float, float]] | None = None,
    t0: float = 0.0,
) -> dict[str, Any]:
    """POST /query from `clients` concurrent connections for `seconds`, each asking the
    questions in turn; `failures` counts why requests failed (an HTTP status or an
    exception's type), and `timeline` gets each request's (start, seconds since `t0`;
    latency ms)."""
    import httpx

    failures = Counter() if failures is None else failures
    latencies: list[float] = []
    errors = 0
    hits = 0
    deadline = time.perf_counter() + seconds

    async def worker(offset: int, http: httpx.AsyncClient) -> None:
        nonlocal errors, hits
        i = offset
        while time.perf_counter() < deadline:
            question = questions[i % len(questions)]
            i += clients
            t = time.perf_counter()
            try:
                response = await http.post(f"{url}/query", json={"question": question, "k": 5})
                ok = response.status_code == 200
                hits += ok and response.json().get("cache") == "hit"
                if not ok:
                    failures[f"HTTP {response.status_code}"] += 1
            except httpx.HTTPError as exc:
                ok = False
                failures[type(exc).__name__] += 1
            latencies.append((time.perf_counter() - t) * 1000)
            if timeline is not None:
                timeline.append((t - t0, latencies[-1]))
            errors += not ok

    limits = httpx.Limits(
        max_connections=clients,
        max_keepalive_connections=clients,
        keepalive_expiry=KEEPALIVE_EXPIRY_S,
    )
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        started = time.perf_counter()
        await asyncio.gather(*(worker(n, http) for n in range(clients)))
        elapsed = time.perf_counter() - started
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": errors,
        "cache_hits": hits,
        "throughput_rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(percentile(latencies, 50), 2),
        "p95_ms": round(percentile(latencies, 95), 2),
        "p99_ms": round(percentile(latencies, 99), 2),
    }


def _status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def peak_rss_mb(pid: int | None = None) -> float:
    """The peak resident set size (VmHWM) of `pid`, this process by default."""
    return _status_mb(os.getpid() if pid is None else pid, "VmHWM")


def rss_mb(pid: int | None = None) -> float:
    """The resident set size now (VmRSS) of `pid`, this process by default."""
    return _status_mb(os.getpid() if pid is None else pid, "VmRSS")


def pss_mb(pids: Iterable[int]) -> float:
    """Proportional set size now, summed: pages shared after fork() counted once."""
    import psutil

    total = 0
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            total += psutil.Process(pid).memory_full_info().pss
    return round(total / 2**20, 1)


def cpu_seconds(pid: int) -> float:
    """User + system seconds of `pid`, its live descendants, and its reaped children."""
    import psutil

    try:
        root = psutil.Process(pid)
        t = root.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        kids = root.children(recursive=True)
    except psutil.NoSuchProcess:
        return 0.0
    for kid in kids:
        with contextlib.suppress(psutil.NoSuchProcess):
            k = kid.cpu_times()
            total += k.user + k.system
    return total
