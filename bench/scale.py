"""Scale: the index directory and PostgreSQL side by side, on corpora of real text and
real vectors grown to 100k and 1M chunks.

The corpus (bench/realistic.py, which shows the check of its generator against real
data): SciFact's 7,280 chunks and their all-MiniLM-L6-v2 vectors, then chunks made between
real neighbours (vector and words alike), five per document, each document in one of 200
areas of 8 states. Queries are 200 of SciFact's real queries, with their real vectors.
No model runs at ingest: the vectors are handed in.

Both stores are written through the same code `groundqa ingest` uses after chunking
(`ingestion.DirectoryTarget` and `index.postgres.PostgresTarget`), so ingest rate covers
analysis, writing and index building, not embedding. Each store and size runs in its own
process: peak memory is that process's VmHWM (for PostgreSQL, the client's; the server's
own memory is reported separately). Store latency is one store call for the top 10
(hybrid: each method's top 100 fused, as the engine asks), after warm-up. Then the query
process works as a serving worker does, through the `Retriever`: the default plan (hybrid
with its query steps), and BM25 scoped to an area (the scope hierarchy's masks); its
resident memory after that is the worker RSS.

    python bench/scale.py                       # part of make bench; BENCH_SCALES=10000,100000
    BENCH_SCALES=1000000 BENCH_SCALE_RESULT=scale_1m python bench/scale.py   # hours
    python bench/scale.py --one directory 10000 # one store and size, JSON on stdout
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import pg
from _common import ROOT, latency_summary, machine, write_result
from atscale import (
    DIM,
    QUERIES,
    SCALE_WORK,
    Handed,
    ann_ef,
    ef_sweep,
    realistic,
    synthetic_manifest,
    write_postgres,
)
from serving import peak_rss_mb, pss_mb, rss_mb

sys.path.insert(0, str(ROOT))

SCALES = tuple(int(n) for n in os.environ.get("BENCH_SCALES", "10000,100000").split(","))
# `groundqa serve` over PostgreSQL at the largest size (BENCH_SCALE_SERVE_S=0: not run).
SERVE_WORKERS = 2
SERVE_CLIENTS = 16
SERVE_SECONDS = float(os.environ.get("BENCH_SCALE_SERVE_S", "60"))
# The most one step (one store's build, or its queries, at one size) may take.
STEP_S = int(os.environ.get("BENCH_SCALE_STEP_S", "7200"))
# The results file: `scale` for make bench; the 1M run is written apart (see docs/postgres.md).
RESULT = os.environ.get("BENCH_SCALE_RESULT", "scale")


def _dir_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6, 1)


def _measure(store: Any, queries: list[tuple[list[str], np.ndarray]]) -> dict[str, Any]:
    from groundqa.fusion import Fusion
    from groundqa.retrieve.retriever import fuse
    from groundqa.text import Analyzer

    analyzer = Analyzer()
    terms = [analyzer.terms(" ".join(words)) for words, _ in queries]
    calls = {
        "lexical": lambda i: store.lexical_search(terms[i], 10),
        "vector": lambda i: store.vector_search(queries[i][1], 10),
        "vector_exact": lambda i: store.vector_search(queries[i][1], 10, exact=True),
        # What a hybrid plan runs: each method's best 100, fused (as the Retriever does).
        "hybrid": lambda i: fuse(
            Fusion("rrf"),
            store.lexical_search(terms[i], 100),
            store.vector_search(queries[i][1], 100),
        ),
    }
    out: dict[str, Any] = {}
    for name, call in calls.items():
        for i in range(10):
            call(i)
        ms = []
        for i in range(len(queries)):
            t = time.perf_counter()
            call(i)
            ms.append((time.perf_counter() - t) * 1000)
        out[name] = latency_summary(ms)
    overlap = []
    for _, q in queries:
        exact = {r for r, _ in store.vector_search(q, 10, exact=True)}
        approx = {r for r, _ in store.vector_search(q, 10)}
        overlap.append(len(exact & approx) / max(len(exact), 1))
    out["vector_recall_at_10_of_exact"] = round(float(np.mean(overlap)), 4)
    return out


def one(kind: str, n: int, url: str | None) -> dict[str, Any]:
    """Build and query one store at one size in this process; the figures as a dict."""
    from groundqa.index.dense import DenseSettings
    from groundqa.index.lexical import BM25Settings
    from groundqa.text import Analyzer

    t = time.perf_counter()
    chunks, vectors, queries, tuning, model_id = realistic(n)
    generate_s = time.perf_counter() - t
    texts = [c.index_text(True) for c in chunks]
    embedder = Handed(texts, vectors, model_id)
    dense, bm25, analyzer = DenseSettings(), BM25Settings(), Analyzer()
    timings: dict[str, float] = {}

    make_manifest = synthetic_manifest(n, bm25, analyzer)

    result: dict[str, Any] = {"store": kind, "chunks": n, "generate_s": round(generate_s, 1)}
    t = time.perf_counter()
    if kind == "directory":
        from groundqa.ingestion import BuildInput, DirectoryTarget, NullReporter

        folder = SCALE_WORK / f"directory-{n}"
        shutil.rmtree(folder, ignore_errors=True)
        target = DirectoryTarget(folder)
        with target.lock():
            target.write(
                BuildInput(
                    chunks=chunks,
                    documents=[],
                    analyzer=analyzer,
                    bm25=bm25,
                    dense=dense,
                    embedder=embedder,
                    with_path=True,
                    make_manifest=make_manifest,
                    timings=timings,
                ),
                NullReporter(),
            )
        ingest_s = time.perf_counter() - t
        build = next((folder / "builds").iterdir())
        result.update(
            ingest_s=round(ingest_s, 1),
            index_lexical_s=round(timings.get("index", 0.0), 1),
            # Looking the vectors up is instant; the rest is the faiss graph and the save.
            index_vectors_s=round(timings.get("embed", 0.0), 1),
            disk_mb=_dir_mb(build),
        )
    else:
        import psycopg

        assert url is not None
        stats = write_postgres(url, chunks, bm25, analyzer, make_manifest, embedder, dense)
        ingest_s = time.perf_counter() - t
        with psycopg.connect(url) as conn:
            # Every table of the build (chunks, lexical, terms, facets, versions), with its
            # indexes and TOAST: the database holds this one build only.
            size = conn.execute(
                "SELECT sum(pg_total_relation_size(oid)) FROM pg_class "
                "WHERE relkind = 'r' AND relname LIKE 'groundqa\\_%\\_%'"
            ).fetchone()[0]
        result.update(
            ingest_s=round(ingest_s, 1),
            # The GIN index and, with pg_textsearch, its two BM25 indexes.
            index_lexical_s=round(
                stats.timings_s.get("index_lexical", 0.0) + stats.timings_s.get("index_bm25", 0.0),
                1,
            ),
            index_vectors_s=round(stats.timings_s.get("index_vectors", 0.0), 1),
            disk_mb=round(int(size) / 1e6, 1),
        )
    result["ingest_chunks_per_s"] = round(n / ingest_s, 0)
    result["ingest_peak_mb"] = peak_rss_mb()
    np.savez(
        _queries_file(n),
        words=np.asarray([" ".join(w) for w, _ in queries + tuning]),
        vectors=np.stack([v for _, v in queries + tuning]),
        model_id=np.asarray(model_id),
    )
    return result


def _queries_file(n: int) -> Path:
    return SCALE_WORK / f"queries-{n}.npz"


def query(kind: str, n: int, url: str | None) -> dict[str, Any]:
    """Open the store built by `one` in a fresh process and time the queries: the peak
    memory is what a process that serves this index needs."""
    from groundqa.text import Analyzer

    saved = np.load(_queries_file(n))
    pairs = [(str(w).split(), v) for w, v in zip(saved["words"], saved["vectors"], strict=True)]
    queries, tuning = pairs[:QUERIES], pairs[QUERIES:]
    model_id = str(saved["model_id"])
    t = time.perf_counter()
    if kind == "directory":
        from groundqa.index.directory import load_index

        store: Any = load_index(SCALE_WORK / f"directory-{n}", Analyzer())
    else:
        from groundqa.index.postgres import PostgresStore

        assert url is not None
        store = PostgresStore.open(url)
    result: dict[str, Any] = {"open_s": round(time.perf_counter() - t, 2)}
    result["hnsw"] = _hnsw(store)
    result.update(_measure(store, queries))
    result.update(_worker(store, queries, model_id))
    result["worker_rss_mb"] = rss_mb()
    result["ef_search_sweep"] = ef_sweep(store, tuning, queries)
    store.close()
    result["query_peak_mb"] = peak_rss_mb()
    return result


def _hnsw(store: Any) -> dict[str, Any] | None:
    """The HNSW graph's m and ef_construction as built, and the ef_search the store
    searches it with; None where vector search is exact."""
    ef_search = ann_ef(store)
    if ef_search is None:
        return None
    dense = store.manifest.dense
    built = dense["ef_construction"]
    if hasattr(store, "info"):  # PostgreSQL records what its build used
        built = store.info.stats.get("hnsw_ef_construction", built)
    return {"m": dense["hnsw_m"], "ef_construction": int(built), "ef_search": ef_search}


class QueryVectors:
    """The query embedder of a worker: each query's real vector, looked up by its text."""

    name = Handed.name

    def __init__(self, queries: list[tuple[list[str], np.ndarray]], model_id: str) -> None:
        self.vectors = {" ".join(words): v for words, v in queries}
        self.model_id = model_id

    def embed(self, texts: Any, progress: Any = None) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def _worker(
    store: Any, queries: list[tuple[list[str], np.ndarray]], model_id: str
) -> dict[str, Any]:
    """Latency of what a worker runs per question: the default plan, and BM25 scoped to one
    area (with the state that holds it), top 10, through the `Retriever`."""
    from groundqa.query import Query
    from groundqa.retrieve import Retriever
    from groundqa.text import Analyzer
    from realistic import AREAS

    retriever = Retriever(store, Analyzer(), embedder=QueryVectors(queries, model_id))  # type: ignore[arg-type]
    texts = [" ".join(words) for words, _ in queries]
    plans = {
        "default_plan": lambda i: Query(texts[i]),
        "bm25_area_scope": lambda i: Query(
            texts[i], retriever="bm25", scope={"area": f"Area {i % AREAS}"}
        ),
    }
    out: dict[str, Any] = {}
    for name, make in plans.items():
        for i in range(10):
            retriever.retrieve(make(i), 10)
        ms = []
        for i in range(len(texts)):
            t = time.perf_counter()
            retriever.retrieve(make(i), 10)
            ms.append((time.perf_counter() - t) * 1000)
        out[name] = latency_summary(ms)
    out["default_plan_name"] = retriever.default_plan
    return out


def _run_one(kind: str, n: int, url: str | None) -> dict[str, Any]:
    """Build in one process, query in another."""
    result: dict[str, Any] = {"store": kind, "chunks": n}
    for step in ("--one", "--query"):
        args = [sys.executable, __file__, step, kind, str(n)] + ([url] if url else [])
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=STEP_S)
        except subprocess.TimeoutExpired:
            stopped = f"{step[2:]} step stopped by the benchmark's limit of {STEP_S} s"
            return {**result, "error": [f"{stopped} (BENCH_SCALE_STEP_S)"]}
        if proc.returncode != 0:
            return {**result, "error": proc.stderr.strip().splitlines()[-1:]}
        result.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    return result


def _serve_load(url: str, data_dir: Path) -> dict[str, Any]:
    """`groundqa serve --workers SERVE_WORKERS` over the store, SERVE_CLIENTS concurrent
    clients asking the real queries for SERVE_SECONDS (bench/postgres_load.py's harness:
    the server embeds each question itself, with the model the vectors came from)."""
    import postgres_load
    from realistic import base

    questions = base()["queries"][:QUERIES]
    postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])
    log_dir = SCALE_WORK / "serve"
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        return postgres_load._load(
            "postgresql",
            url,
            SERVE_WORKERS,
            questions,
            postmaster,
            clients=SERVE_CLIENTS,
            seconds=SERVE_SECONDS,
            log_dir=log_dir,
        )
    except RuntimeError as exc:  # the server did not start: recorded, not raised
        return {"error": str(exc)[-500:]}


class ServerMemory:
    """Peak summed PSS of the PostgreSQL server's processes, sampled every half second
    (PSS shares the shared buffers out between processes instead of counting them in each)."""

    def __init__(self, data: Path) -> None:
        import threading

        self.pid = int((data / "postmaster.pid").read_text().split()[0])
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> ServerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        import psutil

        while not self._stop.wait(0.5):
            with contextlib.suppress(psutil.NoSuchProcess):
                kids = [p.pid for p in psutil.Process(self.pid).children()]
                self.peak_mb = max(self.peak_mb, pss_mb([self.pid, *kids]))


def run() -> dict[str, Any]:
    from realistic import check

    SCALE_WORK.mkdir(parents=True, exist_ok=True)
    data_dir = SCALE_WORK / f"pgdata-{RESULT}"
    rows: list[dict[str, Any]] = []
    # The pg_textsearch flavour: PostgreSQL 17 with pgvector and the BM25 index the store
    # uses where the server has it (bench/pg_bm25.py compares it with SQL BM25).
    with pg.server(data_dir, fast=False, flavor="bm25") as admin:
        generator_check = check()  # also makes the real base on first use, before any step
        started = time.perf_counter()
        for n in SCALES:
            rows.append(_run_one("directory", n, None))
            url = pg.database(admin, f"scale_{n}", vector=False)
            with ServerMemory(data_dir) as server:
                row = _run_one("postgresql", n, url)
                if n == max(SCALES) and SERVE_SECONDS > 0 and "error" not in row:
                    row["serve"] = _serve_load(url, data_dir)
            row["server_peak_mb"] = server.peak_mb
            rows.append(row)
    data = {
        "machine": machine(),
        "dim": DIM,
        "queries": QUERIES,
        "generator_check": generator_check,
        "runs": rows,
    }
    data["seconds"] = round(time.perf_counter() - started, 1)
    write_result(RESULT, data, _markdown(rows, generator_check))
    return data


def _check_table(checked: dict[str, Any]) -> list[str]:
    sides = [k for k in checked if isinstance(checked[k], dict)]
    stats = list(checked[sides[0]])
    return [
        f"Generator check (bench/realistic.py): {checked['queries']} real SciFact queries "
        f"searched exactly in {checked['size']:,} real chunks, in as many chunks generated "
        "from the other half of the real ones, and in the clustered vectors this benchmark "
        "used before; medians over the queries.",
        "",
        "| corpus | " + " | ".join(stats) + " |",
        "|---|" + "---:|" * len(stats),
        *(
            f"| {side} | " + " | ".join(str(checked[side][m]) for m in stats) + " |"
            for side in sides
        ),
        "",
    ]


def _markdown(rows: list[dict[str, Any]], checked: dict[str, Any]) -> str:
    def cell(r: dict[str, Any], key: str, sub: str | None = None) -> str:
        value = r.get(key, "")
        if sub is not None and isinstance(value, dict):
            value = value.get(sub, "")
        return str(value)

    lines = [
        "## Scale: index directory and PostgreSQL on real text and vectors, grown",
        "",
        f"`BENCH_SCALES={','.join(str(n) for n in SCALES)} BENCH_SCALE_RESULT={RESULT} "
        f"python bench/scale.py` ({'part of `make bench`' if RESULT == 'scale' else 'run apart'}"
        f", {', '.join(f'{n:,}' for n in SCALES)} chunks). SciFact's chunks and MiniLM vectors, "
        "grown with chunks made between real neighbours (bench/realistic.py; its check is "
        "below); queries are real SciFact queries with their real vectors; no embedding at "
        "ingest; both stores written by the code `groundqa ingest` "
        "runs after chunking; each store and size in its own process. PostgreSQL 17.9 with "
        "pgvector 0.8 and pg_textsearch 0.6 (BM25 through its index, see bench/pg_bm25.py) on "
        "the same 2 cores, default server settings (fsync on). Vectors are searched through "
        "HNSW from 100,000 chunks (`ann_threshold`), exactly below; the HNSW column gives the "
        "graph's m / ef_construction as built and the ef_search searched with (both grow "
        "with the index: `index/dense.py`, `index/postgres/target.py`). Latency: one store call, "
        f"{QUERIES} queries, top 10 (hybrid: each method's top 100 fused by RRF). Query peak "
        "MB is the querying process's peak resident set: for the index directory it counts "
        "the pages of its memory-mapped BM25 and vector files that the queries touched, "
        "which the processes serving one index share. Worker: the same process asking "
        "through the `Retriever` as a serving worker does (the default plan, and BM25 scoped "
        "to one area); worker RSS is its resident memory after all of it.",
        "",
        *_check_table(checked),
        "| store | chunks | ingest s | chunks/s | lexical index s | vector index s | disk MB | "
        "open s | lexical p50/p95 ms | vector p50/p95 ms | exact vector p50/p95 ms | "
        "hybrid p50/p95 ms | vector recall@10 of exact | worker default plan p50/p95 ms | "
        "worker BM25 area-scoped p50/p95 ms | ingest peak MB | query peak MB | worker RSS MB |"
        " HNSW m / ef_construction / ef_search |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        "---:|---|",
    ]
    for r in rows:
        if "ingest_s" not in r:
            lines.append(f"| {r['store']} | {r['chunks']:,} | failed: {r.get('error')} |")
            continue
        if "error" in r:  # built, but its queries did not finish: the build's figures only
            unmeasured = "not measured: " + ("; ".join(r["error"]) or "query step stopped")
            server = f" (+ server {r['server_peak_mb']})" if "server_peak_mb" in r else ""
            lines.append(
                f"| {r['store']} | {r['chunks']:,} | {r['ingest_s']} | "
                f"{int(r['ingest_chunks_per_s']):,} | {r['index_lexical_s']} | "
                f"{r['index_vectors_s']} | {r['disk_mb']} | {unmeasured} | | | | | | | | "
                f"{r['ingest_peak_mb']}{server} | | | |"
            )
            continue
        server = f" (+ server {r['server_peak_mb']})" if "server_peak_mb" in r else ""
        lines.append(
            "| "
            + " | ".join(
                [
                    r["store"],
                    f"{r['chunks']:,}",
                    cell(r, "ingest_s"),
                    f"{int(r['ingest_chunks_per_s']):,}",
                    cell(r, "index_lexical_s"),
                    cell(r, "index_vectors_s"),
                    cell(r, "disk_mb"),
                    cell(r, "open_s"),
                    *(
                        f"{r[m]['p50_ms']:.2f} / {r[m]['p95_ms']:.2f}"
                        for m in ("lexical", "vector", "vector_exact", "hybrid")
                    ),
                    cell(r, "vector_recall_at_10_of_exact"),
                    *(
                        f"{r[m]['p50_ms']:.2f} / {r[m]['p95_ms']:.2f}"
                        for m in ("default_plan", "bm25_area_scope")
                    ),
                    cell(r, "ingest_peak_mb") + server,
                    cell(r, "query_peak_mb"),
                    cell(r, "worker_rss_mb"),
                    _hnsw_cell(r.get("hnsw")),
                ]
            )
            + " |"
        )
    return "\n".join(lines + _sweep_table(rows) + _serve_table(rows)) + "\n"


def _hnsw_cell(hnsw: dict[str, Any] | None) -> str:
    if hnsw is None:
        return "exact search"
    return f"{hnsw['m']} / {hnsw['ef_construction']} / {hnsw['ef_search']}"


def _sweep_table(rows: list[dict[str, Any]]) -> list[str]:
    swept = [r for r in rows if r.get("ef_search_sweep")]
    if not swept:
        return []
    out = [
        "",
        "HNSW `ef_search` (the build's m and ef_construction as above): recall@10 of exact "
        f"search and p50 of one vector search, on {QUERIES} other real queries (to choose by) "
        f"and on the {QUERIES} reported above. Past 1000, PostgreSQL's search width: "
        "pgvector's iterative scan carries the search on past its ef_search limit.",
        "",
        "| store | chunks | ef_search | recall@10, choosing queries | p50 ms | "
        "recall@10, reported queries | p50 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in swept:
        for e in r["ef_search_sweep"]:
            out.append(
                f"| {r['store']} | {r['chunks']:,} | {e['ef_search']} | "
                f"{e['tuning']['recall_at_10']} | {e['tuning']['p50_ms']:.2f} | "
                f"{e['reported']['recall_at_10']} | {e['reported']['p50_ms']:.2f} |"
            )
    return out


def _serve_table(rows: list[dict[str, Any]]) -> list[str]:
    served = [r for r in rows if "serve" in r]
    if not served:
        return []
    out = [
        "",
        f"`groundqa serve --store postgresql://... --workers {SERVE_WORKERS}` at the largest "
        f"size: {SERVE_CLIENTS} concurrent clients for {SERVE_SECONDS:.0f} s, result cache off, "
        "the real queries embedded by the server (bench/postgres_load.py's harness; server, "
        "PostgreSQL and clients on the same 2 cores).",
        "",
        "| chunks | requests | req/s | p50 ms | p99 ms | errors | workers answering | "
        "workers' peak RSS MB (sum) | workers' PSS MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in served:
        v = r["serve"]
        if "error" in v:
            out.append(f"| {r['chunks']:,} | not measured: {v['error']} | | | | | | | |")
            continue
        out.append(
            f"| {r['chunks']:,} | {v['requests']} | {v['throughput_rps']} | {v['p50_ms']} | "
            f"{v['p99_ms']} | {v['errors']} | {v['workers_answering']} | "
            f"{v['workers_peak_rss_mb']} | {v['workers_pss_mb']} |"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--one", nargs="+", metavar=("STORE", "N"))
    parser.add_argument("--query", nargs="+", metavar=("STORE", "N"))
    args = parser.parse_args()
    if args.one or args.query:
        kind, n, *url = args.one or args.query
        step = one if args.one else query
        print(json.dumps(step(kind, int(n), url[0] if url else None)))
    else:
        run()


if __name__ == "__main__":
    main()
