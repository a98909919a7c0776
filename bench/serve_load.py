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
import time
from pathlib import Path
from typing import Any

from _common import latency_summary, machine, write_result
from serving import SECONDS, example_index, example_questions, load, peak_rss_mb, server

CLIENTS = (1, 8, 32)


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
    index = example_index()
    questions = example_questions()
    runs: list[dict[str, Any]] = []
    startup: dict[str, float] = {}
    for cache in ("off", "memory"):
        with server(index, cache) as serve:
            startup[cache] = round(serve.ready_s, 2)
            for clients in CLIENTS:
                result = asyncio.run(load(serve.url, questions, clients, SECONDS))
                result["cache"] = cache
                result["server_peak_rss_mb"] = peak_rss_mb(serve.proc.pid)
                runs.append(result)
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
