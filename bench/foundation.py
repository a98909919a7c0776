"""Index build time and ask latency on SciFact, against bm25s used directly in the same run.

Baseline: bm25s with its own Tokenizer (Lucene English stopwords, PyStemmer
English), BM25 with the same parameters, saved to disk, queried with
`retrieve(k=5)`. groundqa: `ingest` (load, validate, chunk, index, write a
sealed build) and `Engine.ask` (retrieve, gate, extractive answer, audit) and
`Engine.retrieve` alone, over the first 100 SciFact test queries, warm (each
query's time is the median of 5 rounds; the answer caches are cleared between
rounds so every `ask` analyses its passages afresh).
"""

from __future__ import annotations

import shutil
import time

import sets
from _common import (
    WORK,
    Bm25sBaseline,
    latency_summary,
    machine,
    time_each,
    write_result,
)


def run() -> dict[str, object] | None:
    test = sets.scifact("test")
    if test is None:
        return None
    from groundqa.engine import Engine
    from groundqa.index.lexical import BM25Settings
    from groundqa.ingestion import ingest

    settings = BM25Settings()
    work = WORK / "foundation"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    # --- baseline: bm25s used directly -------------------------------------------
    t0 = time.perf_counter()
    baseline = Bm25sBaseline(test.corpus, settings.k1, settings.b, settings.method)
    baseline.save(work / "bm25s")
    baseline_build = time.perf_counter() - t0
    queries = list(test.queries.values())[:100]
    bare_ms = time_each(lambda q: baseline.search(q, 5), queries)

    # --- groundqa -----------------------------------------------------------------
    t0 = time.perf_counter()
    report = ingest([test.folder], work / "groundqa", dense=None)
    ours_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    engine = Engine.open(work / "groundqa")
    open_s = time.perf_counter() - t0

    def ask(q: str) -> object:
        engine.passage_text.clear()
        return engine.ask(q, k=5)

    ask_ms = time_each(ask, queries)
    retrieve_ms = time_each(lambda q: engine.retrieve(q, k=5), queries)

    base_lat = latency_summary(bare_ms)
    ask_lat = latency_summary(ask_ms)
    ret_lat = latency_summary(retrieve_ms)
    data: dict[str, object] = {
        "dataset": "SciFact (BEIR) corpus 5,183 docs; first 100 test queries, median of 5 rounds each",
        "machine": machine(),
        "bm25": {"k1": settings.k1, "b": settings.b, "method": settings.method},
        "baseline_bm25s": {"build_s": round(baseline_build, 3), "query": base_lat},
        "groundqa": {
            "build_s": round(ours_build, 3),
            "build_stages_s": {k: round(v, 3) for k, v in report.timings_s.items()},
            "chunks": report.counts["chunks"],
            "open_s": round(open_s, 3),
            "ask": ask_lat,
            "retrieve": ret_lat,
        },
        "ratios": {
            "build": round(ours_build / baseline_build, 2),
            "ask_p50": round(ask_lat["p50_ms"] / base_lat["p50_ms"], 2),
            "retrieve_p50": round(ret_lat["p50_ms"] / base_lat["p50_ms"], 2),
        },
    }
    g = data["groundqa"]
    r = data["ratios"]
    assert isinstance(g, dict) and isinstance(r, dict)
    md = f"""## Foundation: SciFact build and query latency (BM25 only)

{data["dataset"]}; {machine()["cpus"]} CPUs; `python bench/foundation.py`.

| | build (s) | query p50 (ms) | query p95 (ms) |
|---|---:|---:|---:|
| bm25s directly (baseline) | {baseline_build:.2f} | {base_lat["p50_ms"]:.2f} | {base_lat["p95_ms"]:.2f} |
| groundqa `Engine.retrieve` | — | {ret_lat["p50_ms"]:.2f} | {ret_lat["p95_ms"]:.2f} |
| groundqa `Engine.ask` (retrieve, gate, extractive answer, audit) | {ours_build:.2f} | {ask_lat["p50_ms"]:.2f} | {ask_lat["p95_ms"]:.2f} |

Ratios to the baseline: build {r["build"]}x, retrieve p50 {r["retrieve_p50"]}x, ask p50 {r["ask_p50"]}x.
groundqa's build includes loading, validation, chunking ({g["chunks"]} chunks), hashing and the atomic
swap: stages {g["build_stages_s"]}. Opening the index takes {open_s:.2f} s.
"""
    write_result("foundation", data, md)
    return data


if __name__ == "__main__":
    run()
