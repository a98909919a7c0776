"""The same evaluation through both index stores: the index directory and PostgreSQL.

- SciFact test (BEIR): the index bench/dense.py builds in bench/.work-dense/scifact
  (reused; built by the same `ingest` call when missing) is loaded into PostgreSQL
  *without embedding it again*: `PostgresTarget.write` is given the directory build's
  chunks and an embedder that answers with the directory build's own vectors, so both
  stores hold the same chunks, terms and vectors. bm25, dense, hybrid (RRF) and the
  default plan are scored (nDCG@10, recall@10, recall@100, MRR@10, as
  `evaluate.beir.retrieve_run`/`score_run` do) through the directory (exact vectors),
  PostgreSQL with exact vector search (`ann="never"`) and PostgreSQL through its HNSW
  index (`ann="always"`); the queries whose top-10 chunks differ between stores are
  counted and the differences explained; HNSW's recall@10 against exact search over
  the same vectors; query latency p50/p95 per store and retriever.
- The bundled example corpus (examples/regpack and its probes): ingested into a
  directory and into PostgreSQL with plain `ingest`, then `groundqa eval --json` on
  each; recall@k, MRR and refusals per retriever, and whether every probe's outcome
  is identical.

A private PostgreSQL 18 + pgvector (tests/pgserver.py, fsync off) runs for the
benchmark only, in a temporary directory, and is stopped at the end.

    python bench/postgres_eval.py
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

import pg
import report
import sets
from _common import (
    ROOT,
    WORK,
    latency_summary,
    machine,
    new_search,
    time_each,
    write_result,
)
from report import PLAN_LABELS

sys.path.insert(0, str(ROOT))

PLANS = ("bm25", "dense", "hybrid", "hybrid+weighted=0.5/0.5+defs")
STORES = ("directory", "pg-exact", "pg-hnsw")
STORE_LABELS = {
    "directory": "index directory (exact vectors)",
    "pg-exact": 'PostgreSQL, exact vectors (`ann="never"`)',
    "pg-hnsw": 'PostgreSQL, HNSW (`ann="always"`)',
}
METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
DEPTH = 100  # documents per query, as `groundqa eval --beir` (chunks: 3x, see retrieve_run)
LATENCY_QUERIES = 50  # PostgreSQL BM25 takes tens to hundreds of ms a query here
PROBE_KEYS = ("recall@1", "recall@5", "recall@10", "mrr")
REFUSAL_KEYS = ("refused_out_of_scope", "refused_near_miss", "false_refusal")
PG_WORK = WORK / "postgres"


# ---------------------------------------------------------------- the server


# ---------------------------------------------------------------- loading without embedding


class StoredVectors:
    """An `Embedder` that answers with the vectors a directory build already holds.

    `PostgresTarget.write` embeds the chunks' index texts in chunk order; each text
    gets the stored vector of the next chunk with that text, so even chunks that
    share a text get their own row's vector. `embed(["dimension probe"])` (the one-off
    call that sizes the vector column) gets a unit vector of the right dimension.
    """

    def __init__(self, texts: Sequence[str], vectors: np.ndarray, name: str, model_id: str):
        self.name = name
        self._model_id = model_id
        self.dim = int(vectors.shape[1])
        self.queue: dict[str, deque[np.ndarray]] = defaultdict(deque)
        for text, row in zip(texts, vectors, strict=True):
            self.queue[text].append(row)
        self.served = 0

    @property
    def model_id(self) -> str:
        return self._model_id

    def embed(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        if list(texts) == ["dimension probe"] and "dimension probe" not in self.queue:
            probe = np.zeros((1, self.dim), np.float32)
            probe[0, 0] = 1.0
            return probe
        rows = [self.queue[t].popleft() for t in texts]  # KeyError/IndexError: not this build
        self.served += len(rows)
        if progress is not None:
            progress(len(rows))
        return np.stack(rows).astype(np.float32)


def load_into_postgres(store: Any, url: str) -> dict[str, Any]:
    """Write the directory build `store` into the database at `url`, vectors reused."""
    from groundqa.chunking import ChunkerSettings
    from groundqa.index.manifest import new_build_id
    from groundqa.index.postgres import PostgresTarget
    from groundqa.text import Analyzer

    manifest = store.manifest
    with_path = ChunkerSettings.from_dict(manifest.chunker).section_path
    chunks = store.chunks
    texts = [c.index_text(with_path) for c in chunks]
    vectors = store.vectors.vectors
    embedder = StoredVectors(
        texts, vectors, str(manifest.dense["embedder"]), str(manifest.dense["model_id"])
    )
    # Chunks sharing an index text whose stored vectors differ (batch effects of the model).
    by_text: dict[str, list[int]] = defaultdict(list)
    for i, text in enumerate(texts):
        by_text[text].append(i)
    shared = [rows for rows in by_text.values() if len(rows) > 1]
    differing = sum(1 for rows in shared if not np.array_equal(vectors[rows[0]], vectors[rows]))
    doc_text: dict[str, Any] = defaultdict(hashlib.sha256)
    for c in chunks:
        doc_text[c.doc_id].update(c.index_text(with_path).encode("utf-8") + b"\0")

    def make_manifest(build_id: str, dense_entry: dict[str, Any]) -> Any:
        return replace(manifest, build_id=build_id or new_build_id(), dense=dense_entry, files={})

    def dense_entry(dim: int) -> dict[str, Any]:
        assert dim == manifest.dense["dim"], (dim, manifest.dense)
        return dict(manifest.dense)

    target = PostgresTarget(url)
    t = time.perf_counter()
    with target.lock():
        written, stats = target.write(
            chunks,
            {d: h.hexdigest() for d, h in doc_text.items()},
            analyzer=Analyzer(),
            with_path=with_path,
            heading_weight=float(manifest.lexical.get("heading_weight", 0.0)),
            embedder=embedder,
            make_manifest=make_manifest,
            dense_entry=dense_entry,
            acronyms=dict(store.acronyms),
        )
    seconds = time.perf_counter() - t
    assert embedder.served == len(chunks), (embedder.served, len(chunks))
    return {
        "build_id": written.build_id,
        "seconds": round(seconds, 1),
        "timings_s": {k: round(v, 2) for k, v in stats.timings_s.items()},
        "shared_index_texts": len(shared),
        "shared_texts_with_differing_vectors": differing,
    }


def check_same_build(directory: Any, pg: Any) -> dict[str, Any]:
    """The PostgreSQL build holds the directory build's chunks and vectors, bit for bit."""
    same_chunks = [c.to_dict() for c in pg.chunks] == [c.to_dict() for c in directory.chunks]
    # Read as real[] rather than through `vectors_of`, which fails with pgvector-python 0.5.1
    # (its loader returns `pgvector.Vector` objects, which np.asarray cannot convert).
    from groundqa.index.postgres.schema import _sql

    with pg._cursor() as cur:
        cur.execute(_sql("SELECT embedding::real[] FROM {t} ORDER BY row", t=pg.info.chunk_table))
        stored = np.asarray([r[0] for r in cur.fetchall()], dtype=np.float32)
    return {
        "chunks_identical": same_chunks,
        "vectors_identical": bool(np.array_equal(stored, directory.vectors.vectors)),
        "max_abs_vector_diff": float(np.abs(stored - directory.vectors.vectors).max()),
        "hnsw": {k: pg.manifest.dense.get(k) for k in ("hnsw_m", "ef_construction", "ef_search")},
        "ann_threshold": pg.manifest.dense.get("ann_threshold"),
    }


def vector_plan(pg: Any, query: np.ndarray, k: int) -> str:
    """EXPLAIN of the store's own vector statement under its own settings."""
    from psycopg import sql

    from groundqa.index.postgres.store import EXACT_SETTINGS, ann_settings

    ann = pg._uses_ann(False)
    statement, params = pg._vector_sql(query, k, None, ann)
    with pg._cursor() as cur:
        for setting in ann_settings(max(pg.ef_search, k)) if ann else EXACT_SETTINGS:
            cur.execute(*setting)
        cur.execute(sql.SQL("EXPLAIN ") + statement, params)
        text = "\n".join(r[0] for r in cur.fetchall())
    return re.sub(r"'\[[^\]]*\]'::vector", "$query::vector", text)


# ---------------------------------------------------------------- SciFact


def _search_all(engine: Any, queries: dict[str, str], chunk_depth: int) -> dict[str, Any]:
    """Every plan's ranked chunks for every query: question by question, every plan in
    turn, so the engine embeds each question once (it keeps the last query's vector)."""
    out: dict[str, dict[str, list[tuple[str, str, float]]]] = {p: {} for p in PLANS}
    for qid, text in queries.items():
        for plan in PLANS:
            hits = engine.search(text, depth=chunk_depth, retriever=plan)
            out[plan][qid] = [(h.chunk.chunk_id, h.chunk.section_id, h.score) for h in hits]
    return out


def _run_of(ranked: dict[str, list[tuple[str, str, float]]]) -> dict[str, dict[str, float]]:
    """`evaluate.beir.retrieve_run` over already ranked chunks: a document scores as its best
    chunk, the first `DEPTH` documents."""
    run: dict[str, dict[str, float]] = {}
    for qid, hits in ranked.items():
        scores: dict[str, float] = {}
        for _, doc, score in hits:
            scores.setdefault(doc, score)
            if len(scores) >= DEPTH:
                break
        run[qid] = scores
    return run


def _compare(
    a: dict[str, list[tuple[str, str, float]]], b: dict[str, list[tuple[str, str, float]]]
) -> dict[str, Any]:
    """How two stores' rankings of the same queries differ. For each query whose lists
    differ: where they first part, and how far apart store A scores the two chunks found
    there (a gap at float32 rounding level is a near-tie the stores break differently)."""
    top10_order = top10_set = 0
    max_diff = 0.0
    divergences = []
    examples = []
    for qid in a:
        x, y = a[qid], b[qid]
        ids_x, ids_y = [h[0] for h in x], [h[0] for h in y]
        top10_order += ids_x[:10] != ids_y[:10]
        top10_set += set(ids_x[:10]) != set(ids_y[:10])
        score_x = {h[0]: h[2] for h in x}
        score_y = {h[0]: h[2] for h in y}
        diffs = [abs(s - score_y[c]) for c, s in score_x.items() if c in score_y]
        max_diff = max([max_diff, *diffs])
        if ids_x == ids_y:
            continue
        pairs = enumerate(zip(ids_x, ids_y, strict=False))
        pos = next((i for i, (p, q) in pairs if p != q), min(len(ids_x), len(ids_y)))
        gap = None
        if pos < min(len(ids_x), len(ids_y)):
            first, second = ids_x[pos], ids_y[pos]
            gap = abs(score_x[first] - score_x.get(second, score_y[second]))
        divergences.append({"query": qid, "position": pos + 1, "gap_in_a": gap})
        if ids_x[:10] != ids_y[:10] and len(examples) < 5:
            examples.append(
                {
                    "query": qid,
                    "position": pos + 1,
                    "a": [(h[0], h[2]) for h in x[pos : pos + 2]],
                    "b": [(h[0], h[2]) for h in y[pos : pos + 2]],
                }
            )
    gaps = [d["gap_in_a"] for d in divergences if d["gap_in_a"] is not None]
    return {
        "top10_order_differs": top10_order,
        "top10_set_differs": top10_set,
        "full_list_differs": len(divergences),
        "first_divergence_min_position": min((d["position"] for d in divergences), default=None),
        "max_gap_at_divergence": max(gaps, default=None),
        "max_abs_score_diff": max_diff,
        "divergences": divergences,
        "examples": examples,
    }


def _ann_recall(hnsw: Any, exact: Any, directory: Any, vectors: list[np.ndarray]) -> dict[str, Any]:
    """|top10 HNSW ∩ top10 exact| / |top10 exact| per query, averaged; and the directory's
    exact top 10 against PostgreSQL's exact top 10."""
    ann, same = [], []
    for q in vectors:
        e = {r for r, _ in exact.vector_search(q, 10)}
        h = {r for r, _ in hnsw.vector_search(q, 10)}
        d = {r for r, _ in directory.vector_search(q, 10, exact=True)}
        ann.append(len(h & e) / len(e))
        same.append(len(d & e) / len(e))
    return {
        "pg_hnsw_recall@10_vs_pg_exact": round(float(np.mean(ann)), 4),
        "pg_hnsw_queries_below_1": int(sum(v < 1 for v in ann)),
        "directory_exact_recall@10_vs_pg_exact": round(float(np.mean(same)), 4),
        "faiss_hnsw": "skipped: the directory build has no faiss graph (7,280 chunks is under "
        "its ann_threshold)"
        if directory.vectors.ann is None
        else "present but not measured here",
    }


def scifact(admin_url: str) -> dict[str, Any] | None:
    if (test := sets.scifact("test")) is None:
        return None
    from groundqa.engine import Engine
    from groundqa.evaluate.beir import score_run
    from groundqa.index.directory import DirectoryStore
    from groundqa.index.postgres import PostgresStore
    from groundqa.ingestion import ingest
    from groundqa.retrieve import DEFAULT_DENSE_PLAN
    from groundqa.text import Analyzer

    assert PLANS[-1] == DEFAULT_DENSE_PLAN, (PLANS, DEFAULT_DENSE_PLAN)
    index = sets.BUILDS / "scifact"
    t = time.perf_counter()
    ingested = ingest([test.corpus], index, fmt="beir")  # a no-op while unchanged
    dir_build_s = time.perf_counter() - t
    directory = Engine.open(index)
    assert isinstance(directory.store, DirectoryStore) and directory.store.vectors is not None

    url = pg.database(admin_url, "scifact")
    loaded = load_into_postgres(directory.store, url)
    opened = Engine.open(url)  # ann="auto": exact below the build's ann_threshold
    auto_uses_ann = opened.store._uses_ann(False)
    opened.store.close()
    engines = {
        "directory": directory,
        "pg-exact": Engine(PostgresStore.open(url, ann="never"), Analyzer()),
        "pg-hnsw": Engine(PostgresStore.open(url, ann="always"), Analyzer()),
    }
    same = check_same_build(directory.store, engines["pg-exact"].store)
    probe_vector = directory.retriever.embed(next(iter(test.queries.values())))
    plans_sql = {
        name: vector_plan(engines[name].store, probe_vector, 10) for name in ("pg-exact", "pg-hnsw")
    }
    same["pg_exact_plan_seq_scan"] = "Seq Scan" in plans_sql["pg-exact"]
    same["pg_hnsw_plan_uses_hnsw"] = "embedding_idx" in plans_sql["pg-hnsw"]
    same["explain"] = plans_sql

    chunk_depth = min(len(directory.chunks), DEPTH * 3)
    ranked: dict[str, dict[str, Any]] = {}
    search_s: dict[str, float] = {}
    for name, engine in engines.items():
        t = time.perf_counter()
        ranked[name] = _search_all(engine, test.queries, chunk_depth)
        search_s[name] = round(time.perf_counter() - t, 1)
    runs: dict[str, dict[str, Any]] = {}
    for plan in PLANS:
        runs[plan] = {}
        for name in STORES:
            s = score_run(_run_of(ranked[name][plan]), test.qrels)
            runs[plan][name] = {k: round(s[k], 4) for k in METRICS}
    differences = {
        plan: {
            "directory vs pg-exact": _compare(ranked["directory"][plan], ranked["pg-exact"][plan]),
            "pg-exact vs pg-hnsw": _compare(ranked["pg-exact"][plan], ranked["pg-hnsw"][plan]),
        }
        for plan in PLANS
    }
    # A fused plan fuses the bm25 and dense plans' own lists (same depth), so a query it
    # ranks differently should be one where bm25 or dense already does.
    parted = {
        plan: {d["query"] for d in differences[plan]["directory vs pg-exact"]["divergences"]}
        for plan in PLANS
    }
    components = parted["bm25"] | parted["dense"]
    fused_explained = {plan: parted[plan] <= components for plan in PLANS[2:]}
    vectors = [directory.retriever.embed(q) for q in test.queries.values()]
    ann = _ann_recall(engines["pg-hnsw"].store, engines["pg-exact"].store, directory.store, vectors)

    sample = list(test.queries.values())[:LATENCY_QUERIES]
    latency: dict[str, dict[str, Any]] = {}
    for plan in PLANS:
        latency[plan] = {}
        for name, engine in engines.items():
            ms = time_each(
                lambda q, e=engine, p=plan: new_search(e, q, p),
                sample,
                warmup=3,
                repeats=3,
            )
            latency[plan][name] = latency_summary(ms)
    for name in ("pg-exact", "pg-hnsw"):
        engines[name].store.close()
    return {
        "queries": len(test.queries),
        "chunks": len(directory.chunks),
        "directory_build": directory.manifest.build_id,
        "directory_rebuilt": ingested.changed,
        "directory_ingest_s": round(dir_build_s, 1),
        "load": loaded,
        "auto_uses_hnsw": auto_uses_ann,
        "same_build": same,
        "search_s": search_s,
        "runs": runs,
        "differences": differences,
        "fused_differences_within_bm25_or_dense_ones": fused_explained,
        "ann": ann,
        "latency": latency,
        "latency_queries": len(sample),
    }


# ---------------------------------------------------------------- the example corpus


def _eval_json(location: str, probes: Path) -> dict[str, Any]:
    """`groundqa eval --index LOCATION --probes FILE --json`, as a user runs it."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from groundqa.cli import main; main()",
            "eval",
            "--index",
            location,
            "--probes",
            str(probes),
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"groundqa eval on {location} failed:\n{proc.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def _outcomes(result: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every probe's outcome, without its latency."""
    return {
        r: [{k: v for k, v in x.items() if k != "latency_ms"} for x in xs]
        for r, xs in result["results"].items()
    }


def regpack(admin_url: str) -> dict[str, Any]:
    from groundqa.ingestion import ingest

    corpus, probes = ROOT / "examples" / "regpack", ROOT / "examples" / "regpack.probes.jsonl"
    directory = PG_WORK / "regpack"
    url = pg.database(admin_url, "regpack")
    built = {}
    for name, location in (("directory", str(directory)), ("postgresql", url)):
        t = time.perf_counter()
        ingested = ingest([corpus], location)
        built[name] = {"chunks": ingested.counts["chunks"], "s": round(time.perf_counter() - t, 1)}
    results = {
        "directory": _eval_json(str(directory), probes),
        "postgresql": _eval_json(url, probes),
    }
    keys = (*PROBE_KEYS, *REFUSAL_KEYS)
    metrics = {
        store: {r: {k: m[k] for k in keys if k in m} for r, m in result["metrics"].items()}
        for store, result in results.items()
    }
    all_metrics = {
        store: {
            r: {k: v for k, v in m.items() if not k.startswith("latency")}
            for r, m in result["metrics"].items()
        }
        for store, result in results.items()
    }
    a, b = _outcomes(results["directory"]), _outcomes(results["postgresql"])
    differing = {
        r: [x["id"] for x, y in zip(a[r], b[r], strict=True) if x != y] for r in a if r in b
    }
    return {
        "chunks": built["directory"]["chunks"],
        "build": built,
        "probes": results["directory"]["counts"],
        "gate": {s: r["gate"] for s, r in results.items()},
        "retrievers": list(results["directory"]["metrics"]),
        "metrics": metrics,
        "all_metrics_identical": all_metrics["directory"] == all_metrics["postgresql"],
        "probe_outcomes_identical": a == b,
        "probes_differing": differing,
        "sweep_identical": results["directory"]["sweep"] == results["postgresql"]["sweep"],
    }


# ---------------------------------------------------------------- report


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2g}"


def _parting_note(sf: dict[str, Any]) -> str:
    """What the directory and exact PostgreSQL differences amount to, from the figures."""
    pairs = [sf["differences"][p]["directory vs pg-exact"] for p in PLANS]
    top10 = sum(d["top10_order_differs"] for d in pairs)
    first = min((d["first_divergence_min_position"] or 10**9 for d in pairs), default=10**9)
    single = [sf["differences"][p]["directory vs pg-exact"] for p in ("bm25", "dense")]
    gap = max((d["max_gap_at_divergence"] or 0.0 for d in single), default=0.0)
    diff = max(d["max_abs_score_diff"] for d in single)
    parted = [x for d in single for x in d["divergences"]]
    at_cut = sum(x["position"] >= 290 for x in parted)
    same = all(sf["runs"][p]["directory"] == sf["runs"][p]["pg-exact"] for p in PLANS)
    rrf = sf["fused_differences_within_bm25_or_dense_ones"].get("hybrid")
    return (
        f"Directory against exact PostgreSQL: {top10} top-10 lists differ over all four "
        f"retrievers; lists part first at position {first if first < 10**9 else '-'}. BM25 "
        f"and cosine scores agree to {diff:.1g} (float32 sums taken in a different order: "
        "bm25s against SQL, BLAS against pgvector), and where a bm25 or dense list parts "
        f"({len(parted)} queries, {at_cut} of them at the depth-300 cut) the two chunks "
        f"there are within {gap:.1g} of each other: near-ties that the last bit decides. "
        + (
            "Every query RRF ranks differently is one whose bm25 or dense list already "
            "parts (a chunk at rank 300 in one store's list and just past it in the other's "
            "moves its fused score by 1/360)"
            if rrf
            else "Some query RRF ranks differently has identical bm25 and dense lists in both "
            "stores: not explained by the inputs"
        )
        + "; the default plan fuses min-max-normalised scores, so the same last-bit "
        "differences can swap fused near-ties elsewhere. "
        + (
            "Every metric above is identical between the two stores (to 4 decimals)."
            if same
            else "Some metric differs between the two stores: see the table."
        )
    )


def markdown(data: dict[str, Any]) -> str:
    seconds = data["seconds"]
    md = [
        "## PostgreSQL store: the same evaluation through both stores",
        "",
        "`python bench/postgres_eval.py` (part of `make bench`): a private PostgreSQL 18 with "
        "pgvector (tests/pgserver.py, started for the run and stopped after; **fsync off**, "
        "synchronous_commit off: benchmark settings, not durable ones). Seconds per part: "
        + ", ".join(f"{k} {v}" for k, v in seconds.items())
        + ".",
        "",
    ]
    sf = data["scifact"]
    if sf:
        same, load, ann = sf["same_build"], sf["load"], sf["ann"]
        hnsw = same["hnsw"]
        md += [
            f"**SciFact test** ({sf['queries']} queries, {sf['chunks']} chunks). The directory "
            "build bench/dense.py keeps is loaded into PostgreSQL with its own chunks and "
            f"vectors (no second embedding; {load['seconds']} s: "
            + ", ".join(f"{k} {v}" for k, v in load["timings_s"].items() if k != "total")
            + f"); chunks identical: {same['chunks_identical']}, vectors bit-identical: "
            f"{same['vectors_identical']}. HNSW parameters are the build's own "
            f"(`DenseSettings` defaults in the manifest): m {hnsw['hnsw_m']}, ef_construction "
            f"{hnsw['ef_construction']}, ef_search {hnsw['ef_search']} (raised to k when k is "
            f'larger). With `ann="auto"` (what `Engine.open(url)` uses) this build is searched '
            f"exactly, being under its ann_threshold of {same['ann_threshold']:,} chunks.",
            "",
            "| retriever | store | nDCG@10 | recall@10 | recall@100 | MRR@10 | p50 ms | p95 ms |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for plan in PLANS:
            for name in STORES:
                r, lat = sf["runs"][plan][name], sf["latency"][plan][name]
                md.append(
                    report.row(
                        [
                            PLAN_LABELS.get(plan, plan),
                            STORE_LABELS[name],
                            *(f"{r[k]:.4f}" for k in METRICS),
                            f"{lat['p50_ms']:.2f}",
                            f"{lat['p95_ms']:.2f}",
                        ]
                    )
                )
        md += [
            "",
            "Latency: one `Engine.search` to depth 10 (dense and hybrid include embedding the "
            f"query), median of 3 rounds per query over the first {sf['latency_queries']} "
            "queries. Metrics as `groundqa eval --beir` computes them (top 100 documents, a "
            "document scoring as its best chunk).",
            "",
            "Queries (of "
            f"{sf['queries']}) whose ranked chunks (to depth 300, as evaluated) differ, by "
            "store pair; where the two lists first part (the best such position over those "
            "queries) and the largest gap, in the first store, between the two chunks found "
            "there; the largest |score difference| over chunks both lists hold:",
            "",
            "| retriever | pair | top-10 order differs | top-10 set differs | "
            "any of the top 300 chunks differs | first parting (best position) | "
            "score gap there (max) | max score diff |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for plan in PLANS:
            for pair, d in sf["differences"][plan].items():
                md.append(
                    report.row(
                        [
                            PLAN_LABELS.get(plan, plan),
                            pair,
                            str(d["top10_order_differs"]),
                            str(d["top10_set_differs"]),
                            str(d["full_list_differs"]),
                            str(d["first_divergence_min_position"] or "-"),
                            _num(d["max_gap_at_divergence"]),
                            _num(d["max_abs_score_diff"]),
                        ]
                    )
                )
        md += [
            "",
            f"Dense top 10 (`vector_search`, k 10): PostgreSQL HNSW against PostgreSQL exact, "
            f"recall@10 **{ann['pg_hnsw_recall@10_vs_pg_exact']:.4f}** "
            f"({ann['pg_hnsw_queries_below_1']} of {sf['queries']} queries below 1); the "
            "directory's exact search "
            f"against PostgreSQL's exact search {ann['directory_exact_recall@10_vs_pg_exact']:.4f}."
            f" faiss HNSW: {ann['faiss_hnsw']}.",
            "",
        ]
        md += [_parting_note(sf), ""]
    rp = data["regpack"]
    md += [
        f"**Example corpus** (examples/regpack, {rp['chunks']} chunks, probes "
        "examples/regpack.probes.jsonl: "
        + ", ".join(f"{k} {v}" for k, v in rp["probes"].items())
        + "), ingested into each store with plain `ingest` and evaluated with "
        "`groundqa eval --index ... --probes ... --json` (extractive generator, "
        "default gate):",
        "",
        "| retriever | store | recall@1 | recall@5 | recall@10 | MRR | refused out-of-scope | "
        "refused near-miss | false refusal |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rp["retrievers"]:
        for store in ("directory", "postgresql"):
            m = rp["metrics"][store][r]
            md.append(
                report.row(
                    [
                        PLAN_LABELS.get(r, r),
                        store,
                        *(f"{m[k]:.4f}" if k in m else "-" for k in (*PROBE_KEYS, *REFUSAL_KEYS)),
                    ]
                )
            )
    md += [
        "",
        f"Every metric identical between the stores: {rp['all_metrics_identical']}; every "
        f"probe's ranking, refusal and answer identical: {rp['probe_outcomes_identical']}"
        + (
            ""
            if rp["probe_outcomes_identical"]
            else " (differing probes: "
            + "; ".join(
                f"{r}: {', '.join(ids)}" for r, ids in rp["probes_differing"].items() if ids
            )
            + ")"
        )
        + ".",
    ]
    return "\n".join(md)


def run() -> dict[str, Any]:
    PG_WORK.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"machine": machine()}
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    with pg.server() as admin_url:
        seconds["server start"] = round(time.perf_counter() - started, 1)
        for name, fn in (("scifact", scifact), ("regpack", regpack)):
            t = time.perf_counter()
            data[name] = fn(admin_url)
            seconds[name] = round(time.perf_counter() - t, 1)
    seconds["total"] = round(time.perf_counter() - started, 1)
    data["seconds"] = seconds
    write_result("postgres_eval", data, markdown(data))
    return data


if __name__ == "__main__":
    run()
