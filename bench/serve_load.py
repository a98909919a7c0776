"""Load on `groundqa serve` from a second process on 127.0.0.1, against `Engine.ask` in-process.

For N = 1, 8 and 32 concurrent clients, with the result cache off and on, a
separate client process sends the example corpus's probe questions in a loop
for a fixed time (30 s each by default; `BENCH_LOAD_SECONDS` changes it) and
reports throughput, latency percentiles and errors. The server's peak memory
is its VmHWM. The baseline is `Engine.ask` called in-process over the same
questions for the same time, so the HTTP overhead reads as a ratio. Every
request goes to 127.0.0.1; each run is bounded in time and stops by itself.
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import ROOT, WORK, latency_summary, machine, percentile, write_result

SECONDS = float(os.environ.get("BENCH_LOAD_SECONDS", "30"))
CLIENTS = (1, 8, 32)
# Below uvicorn's 5 s keep-alive timeout: a request sent on a connection just as the server
# closes it would fail with a reset before the server read it (a client artefact, not an error).
KEEPALIVE_EXPIRY_S = 2.0


def _questions() -> list[str]:
    lines = (ROOT / "examples" / "regpack.probes.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


async def _client(
    url: str,
    questions: list[str],
    clients: int,
    seconds: float,
    failures: Counter[str] | None = None,
    timeline: list[tuple[float, float]] | None = None,
    t0: float = 0.0,
) -> dict[str, Any]:
    """Load from `clients` concurrent connections for `seconds`; `failures` counts why
    requests failed (an HTTP status or an exception's type), and `timeline` gets each
    request's (start, seconds since `t0`; latency ms)."""
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


def _start_server(
    index: Path | str,
    cache: str,
    extra: Sequence[str] = (),
    log: Path | None = None,
) -> tuple[subprocess.Popen[bytes], str, float]:
    """Start `groundqa serve` (with `extra` arguments; its stderr to `log`, else a pipe);
    return it, its URL, and seconds to the first answered query."""
    import httpx

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    exe = Path(sys.executable).with_name("groundqa")
    started = time.perf_counter()
    # A log file rather than a pipe for long runs: a pipe nobody reads can fill and stall it.
    args = [str(exe), "serve", "--index", str(index), "--port", str(port), "--cache", cache]
    with log.open("wb") if log is not None else contextlib.nullcontext(subprocess.PIPE) as err:
        proc = subprocess.Popen(
            [*args, *extra],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    while True:
        if proc.poll() is not None:
            said = log.read_text(errors="replace") if log is not None else ""
            if proc.stderr:
                said = proc.stderr.read().decode()
            raise RuntimeError(f"serve exited: {said[-2000:]}")
        try:
            r = httpx.post(f"{url}/query", json={"question": "What is a NEER report?"}, timeout=2)
            if r.status_code == 200:
                return proc, url, time.perf_counter() - started
        except httpx.HTTPError:
            pass
        if time.perf_counter() - started > 60:
            proc.kill()
            raise RuntimeError("serve did not answer within 60 s")
        time.sleep(0.05)


def _in_process(index: Path, questions: list[str], seconds: float) -> dict[str, Any]:
    from groundqa.engine import Engine

    engine = Engine.open(index)
    for q in questions[:10]:
        engine.ask(q)
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    i = 0
    while time.perf_counter() < deadline:
        engine.passage_text.clear()  # the same work per call as a cache-off server request
        t = time.perf_counter()
        engine.ask(questions[i % len(questions)], k=5)
        latencies.append((time.perf_counter() - t) * 1000)
        i += 1
    elapsed = time.perf_counter() - started
    return {
        "requests": len(latencies),
        "throughput_rps": round(len(latencies) / elapsed, 1),
        **latency_summary(latencies),
    }


def run() -> dict[str, Any]:
    from groundqa.ingestion import ingest

    index = WORK / "serve" / "regpack"
    ingest([ROOT / "examples" / "regpack"], index)
    questions = _questions()
    runs: list[dict[str, Any]] = []
    startup: dict[str, float] = {}
    for cache in ("off", "memory"):
        proc, url, ready_s = _start_server(index, cache)
        startup[cache] = round(ready_s, 2)
        try:
            for clients in CLIENTS:
                result = asyncio.run(_client(url, questions, clients, SECONDS))
                result["cache"] = cache
                result["server_peak_rss_mb"] = _peak_rss_mb(proc.pid)
                runs.append(result)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    baseline = _in_process(index, questions, min(SECONDS, 10.0))
    one = next(r for r in runs if r["clients"] == 1 and r["cache"] == "off")
    data = {
        "machine": machine(),
        "seconds_per_run": SECONDS,
        "questions": len(questions),
        "startup_to_first_answer_s": startup,
        "runs": runs,
        "in_process": baseline,
        "http_overhead_p50_ratio": round(one["p50_ms"] / baseline["p50_ms"], 2),
    }
    rows = "\n".join(
        f"| {r['cache']} | {r['clients']} | {r['requests']} | {r['throughput_rps']} | "
        f"{r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | {r['errors']} | {r['server_peak_rss_mb']} |"
        for r in runs
    )
    md = f"""## Serving: load from a second process on 127.0.0.1

`python bench/serve_load.py` (part of `make bench`): the example corpus's {len(questions)} probe
questions in a loop, {SECONDS:.0f} s per run, {machine()["cpus"]} CPUs, server and client on the same machine.

| cache | clients | requests | req/s | p50 ms | p95 ms | p99 ms | errors | server peak RSS MB |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
{rows}

Baseline, `Engine.ask` in-process on the same questions: {baseline["throughput_rps"]} answers/s,
p50 {baseline["p50_ms"]} ms, p95 {baseline["p95_ms"]} ms. One client over HTTP with the cache off:
p50 {one["p50_ms"]} ms, {data["http_overhead_p50_ratio"]}x the in-process p50.
`groundqa serve` start-up to its first answered query: {startup["off"]} s (cache off),
{startup["memory"]} s (in-process cache).
"""
    write_result("serve_load", data, md)
    return data


if __name__ == "__main__":
    run()
