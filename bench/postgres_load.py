"""Load on `groundqa serve --store postgresql://... --workers N` from a second process.

The example corpus is ingested (default embedder) into a private PostgreSQL 18 + pgvector
(tests/pgserver.py) and into an index directory. For N = 1, 2 and 4 workers over the
PostgreSQL store, and 1 and 2 workers over the index directory (the named baseline), a
separate client process (this one; the server is a subprocess) runs 32 concurrent clients
with the result cache off for `BENCH_LOAD_SECONDS` (30 s by default), after a short
warm-up. Reported per run: throughput, latency percentiles, errors, the summed peak RSS
(VmHWM) of the worker processes, CPU seconds of the server, PostgreSQL and the client, and
how many distinct workers answer `/health` on fresh connections afterwards. PostgreSQL runs
on the same cores as the server and the client, so its CPU share is part of every figure.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pg
from _common import ROOT, WORK, machine, write_result
from serving import (
    KEEPALIVE_EXPIRY_S,
    SECONDS,
    cpu_seconds,
    example_questions,
    load,
    peak_rss_mb,
    pss_mb,
    server,
)

sys.path.insert(0, str(ROOT))

CLIENTS = 32
PG_WORKERS = (1, 2, 4)
DIR_WORKERS = (1, 2)
WARMUP_S = min(3.0, SECONDS)
HEALTH_PROBES = 48
# Queries one at a time, each on a fresh connection, before the concurrent load: each worker
# loads its query embedder on its first query (see _warm_workers).
WARM_QUERIES = 48
DATABASE = "groundqa_bench"


def _workers(proc: subprocess.Popen[bytes]) -> list[int]:
    """The worker pids: the server's children, or the server itself with one worker."""
    import psutil

    kids = [p.pid for p in psutil.Process(proc.pid).children()]
    return sorted(kids) or [proc.pid]


def _health_workers(url: str) -> list[int]:
    """`worker` from /health, each probe on a fresh connection."""
    import httpx

    return [
        int(httpx.get(f"{url}/health", timeout=10).json()["worker"]) for _ in range(HEALTH_PROBES)
    ]


def _warm_workers(url: str, questions: list[str]) -> None:
    """Give every worker a few queries before the timed load, so each has loaded its query
    embedder (on its first query) and the timed run measures steady serving; the fresh
    connections spread these single queries over the workers sharing the socket.
    """
    import httpx

    for question in questions[:WARM_QUERIES]:
        httpx.post(f"{url}/query", json={"question": question, "k": 5}, timeout=60)


def _machine_busy_s() -> float:
    """CPU seconds all cores spent on anything but idle and I/O wait, machine-wide
    (steal included: time the hypervisor gave to someone else)."""
    import psutil

    t = psutil.cpu_times()
    skip = ("idle", "iowait", "guest", "guest_nice")  # guest time is already in user
    return sum(v for k, v in t._asdict().items() if k not in skip)


def _load(
    store: str,
    target: str,
    workers: int,
    questions: list[str],
    postmaster: int,
    *,
    clients: int = CLIENTS,
    seconds: float = SECONDS,
    log_dir: Path = WORK / "postgres_load",
) -> dict[str, Any]:
    log = log_dir / f"serve-{store}-{workers}.log"
    with server(target, extra=["--workers", str(workers)], log=log) as serve:
        proc, url, ready_s = serve.proc, serve.url, serve.ready_s
        _warm_workers(url, questions)
        asyncio.run(load(url, questions, clients, WARMUP_S))
        pids = _workers(proc)
        failures: Counter[str] = Counter()

        def cpu() -> tuple[float, ...]:
            ours = (cpu_seconds(proc.pid), cpu_seconds(postmaster), time.process_time())
            return (*ours, _machine_busy_s())

        before = cpu()
        started = time.perf_counter()
        result = asyncio.run(load(url, questions, clients, seconds, failures))
        elapsed = time.perf_counter() - started
        after = cpu()
        pids_after = _workers(proc)
        answered = _health_workers(url)
        cores = os.cpu_count() or 1
        server_cpu, pg_cpu, client_cpu, busy = (b - a for a, b in zip(before, after, strict=True))
        other_cpu = max(0.0, busy - server_cpu - pg_cpu - client_cpu)
        shares = {"server": server_cpu, "postgres": pg_cpu, "client": client_cpu}
        shares["other"] = other_cpu
        result.update(
            store=store,
            workers=workers,
            startup_to_first_answer_s=round(ready_s, 2),
            worker_pids=pids,
            workers_replaced=len(set(pids) - set(pids_after)),
            workers_peak_rss_mb=round(sum(peak_rss_mb(p) for p in pids_after), 1),
            workers_pss_mb=pss_mb(pids_after),
            supervisor_peak_rss_mb=peak_rss_mb(proc.pid) if workers > 1 else 0.0,
            workers_answering=len(set(answered)),
            health_probes=len(answered),
            requests_per_cpu_s=round(result["requests"] / max(server_cpu + pg_cpu, 1e-9), 1),
            failures=dict(failures),
            cpu_s={name: round(v, 1) for name, v in shares.items()},
            cpu_share_pct={
                name: round(100 * v / (elapsed * cores), 1) for name, v in shares.items()
            },
        )
    stderr = log.read_text(errors="replace").strip()
    if stderr:
        result["server_stderr_tail"] = stderr[-2000:]
    return result


def run() -> dict[str, Any]:
    import psycopg

    from groundqa.ingestion import ingest

    work = WORK / "postgres_load"
    data_dir = work / "pg"
    shutil.rmtree(work / "regpack", ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with pg.server(data_dir) as admin_url:
        postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])
        url = pg.database(admin_url, DATABASE, vector=False)
        corpus = ROOT / "examples" / "regpack"
        index = work / "regpack"
        t = time.perf_counter()
        ingest([corpus], url)
        ingest_pg_s = time.perf_counter() - t
        # Autovacuum analyzes the new tables a minute or so after the ingest, and the plans
        # change with the statistics: analyze now, so that every run sees the same plans.
        with psycopg.connect(url, autocommit=True) as db:
            db.execute("ANALYZE")
        t = time.perf_counter()
        ingest([corpus], index)
        ingest_dir_s = time.perf_counter() - t
        questions = example_questions()
        runs = [_load("postgres", url, n, questions, postmaster) for n in PG_WORKERS]
        runs += [_load("directory", str(index), n, questions, postmaster) for n in DIR_WORKERS]
    return _report(runs, questions, ingest_pg_s, ingest_dir_s, time.perf_counter() - started)


def _report(
    runs: list[dict[str, Any]],
    questions: list[str],
    ingest_pg_s: float,
    ingest_dir_s: float,
    wall_s: float,
) -> dict[str, Any]:
    cores = machine()["cpus"]
    data = {
        "machine": machine(),
        "seconds_per_run": SECONDS,
        "warmup": f"{WARM_QUERIES} single queries on fresh connections, then {WARMUP_S:.0f} s "
        f"at {CLIENTS} clients",
        "clients": CLIENTS,
        "cache": "off",
        "client_keepalive_expiry_s": KEEPALIVE_EXPIRY_S,
        "questions": len(questions),
        "ingest_s": {"postgres": round(ingest_pg_s, 1), "directory": round(ingest_dir_s, 1)},
        "wall_s": round(wall_s, 1),
        "runs": runs,
    }
    rows = "\n".join(
        f"| {r['store']} | {r['workers']} | {r['requests']} | {r['throughput_rps']} | "
        f"{r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | {r['errors']} | {r['requests_per_cpu_s']} | "
        f"{r['workers_peak_rss_mb']} | {r['workers_pss_mb']} | "
        f"{r['workers_answering']}/{r['workers']} | "
        + " / ".join(str(r["cpu_share_pct"][k]) for k in ("server", "postgres", "client", "other"))
        + " |"
        for r in runs
    )
    failed = [
        f"{r['store']} with {r['workers']} workers: "
        + ", ".join(f"{n} {kind}" for kind, n in r["failures"].items())
        for r in runs
        if r["failures"]
    ]
    notes = f"Failed requests: {'; '.join(failed)}.\n" if failed else ""
    other = max(r["cpu_share_pct"]["other"] for r in runs)
    notes += (
        f"Other processes on the machine took up to {other}% of its CPU during a run, "
        "which lowers these figures.\n"
        if other >= 5
        else ""
    )

    def rps(store: str, workers: int) -> float:
        return float(
            next(r for r in runs if (r["store"], r["workers"]) == (store, workers))[
                "throughput_rps"
            ]
        )

    pg1, pg_best = rps("postgres", 1), max(rps("postgres", n) for n in PG_WORKERS)
    best_n = next(n for n in PG_WORKERS if rps("postgres", n) == pg_best)
    dir1, dir2 = rps("directory", 1), rps("directory", 2)
    md = f"""## PostgreSQL store: API throughput with several workers

`python bench/postgres_load.py` (part of `make bench`): `groundqa serve --store postgresql://...
--workers N --cache off` over the example corpus (default embedder) in a private PostgreSQL 18
+ pgvector, against the named baseline `groundqa serve --index DIR --workers N` over the same
corpus in an index directory. {CLIENTS} concurrent clients in a second process on 127.0.0.1 send
the {len(questions)} probe questions in a loop, {SECONDS:.0f} s per run, {cores} CPUs shared by the
server, PostgreSQL and the client. Before each run, {WARM_QUERIES} single queries on fresh
connections let every worker load its query embedder, then {WARMUP_S:.0f} s of load warms them.
The client drops a connection idle for {KEEPALIVE_EXPIRY_S:.0f} s, before uvicorn closes it at 5 s,
so no request goes out on a connection the server is closing.
The database is analyzed after the ingest (as autovacuum would be a minute later), so every
run sees the plans a running server settles on.

| store | workers | requests | req/s | p50 ms | p95 ms | p99 ms | errors | req per CPU s | workers' peak RSS MB (sum) | workers' PSS MB | workers answering /health | CPU % server / PostgreSQL / client / other |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
{rows}

Peak RSS is the VmHWM of each worker summed, which counts pages the workers share after
`fork()` once per worker; PSS, read after the run, counts them once. "Workers answering" is how
many distinct worker pids {HEALTH_PROBES} `/health` requests on fresh connections reached after
the run. "Req per CPU s" divides requests by the CPU seconds of the server and PostgreSQL
together, which other load on the machine moves less than req/s. CPU % is of all {cores}
cores over the timed run ("other": the rest of the machine);
PostgreSQL's backends do the lexical and vector search for the store, so its share competes
with the workers for the same cores.
{notes}
Best PostgreSQL throughput: {pg_best} req/s with {best_n} worker{"s" if best_n > 1 else ""}
({pg_best / pg1:.2f}x one worker); the index directory goes from {dir1} to {dir2} req/s
with 2 workers.
On {cores} cores, which the workers, PostgreSQL and the load generator all share, workers beyond
the core count cannot add throughput: more workers only queue the same CPU-bound work.
"""
    write_result("postgres_load", data, md)
    return data


if __name__ == "__main__":
    run()
