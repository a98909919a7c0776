"""Dense and hybrid retrieval beside BM25, every figure from one run.

- SciFact test (BEIR): nDCG@10 and recall@100 for bm25, dense, hybrid (RRF) and
  hybrid (weighted 0.3/0.7), plus the plan chosen on the *train* split
  (`TUNE_CANDIDATES`, scored on train only, the winner reported once on test);
  query latency p50/p95 per retriever; embedding throughput, index size on disk,
  and the peak memory of a process that opens the index and answers queries; the
  HNSW graph's recall@10 against exact search over the same vectors.
- Natech guidance probes: recall@k and MRR for every retriever, and where
  "What is a Natech accident?" ranks.
- ObliQA dev: recall@10 for every retriever.
- City guides: crowding with and without diversity and the gazetteer, and rank-1
  stability across paraphrase groups.
- The bundled example corpus: every retriever, acronym expansion on and off.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import report
import sets
from _common import (
    ROOT,
    latency_summary,
    machine,
    new_search,
    time_each,
    write_result,
)
from report import PLAN_LABELS

# hybrid is reciprocal-rank fusion; hybrid+weighted the 0.3/0.7 preset; the last is the
# engine's default plan (retrieve.DEFAULT_DENSE_PLAN).
RETRIEVERS = ("bm25", "dense", "hybrid", "hybrid+weighted", "hybrid+weighted=0.5/0.5+defs")
# Plans tried on SciFact *train*; the best by train nDCG@10 is reported on test.
TUNE_CANDIDATES = (
    "hybrid",
    "hybrid+rrf=20",
    "hybrid+rrf=100",
    "hybrid+weighted",
    "hybrid+weighted=0.4/0.6",
    "hybrid+weighted=0.5/0.5",
    "hybrid+weighted=0.6/0.4",
    "hybrid+weighted=0.7/0.3",
    "hybrid+acr",
)
PUBLISHED = {
    "BM25 (BEIR paper)": 0.665,
    "BM25 (Anserini flat)": 0.679,
    "all-MiniLM-L6-v2": 0.645,
    "bge-small-en-v1.5": 0.713,
    "RRF of bm25s and MiniLM (k=60, top 100 each), measured on this machine kind": 0.715,
}


def _dir_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def _peak_memory_mb(index: Path, queries: list[str], retriever: str) -> float:
    """Peak RSS of a fresh process that opens the index and runs the queries: its own
    VmHWM. Not `ru_maxrss`, which on Linux a child inherits from the parent it was forked
    from, so it would report this benchmark's own peak after embedding SciFact."""
    code = (
        "import sys, json; from groundqa.engine import Engine\n"
        "e = Engine.open(sys.argv[1]); qs = json.loads(sys.stdin.read())\n"
        "[e.search(q, depth=100, retriever=sys.argv[2]) for q in qs]\n"
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(index), retriever],
        input=json.dumps(queries),
        text=True,
        check=True,
        capture_output=True,
    )
    return int(proc.stdout.split()[-1]) / 1024


def _new_embedding(engine: Any, query: str) -> Any:
    engine.retriever.forget_queries()
    return engine.retriever.embed(query)


def _ann_recall(engine: Any, queries: list[str]) -> dict[str, Any]:
    """HNSW (faiss) over the index's own vectors against exact search, recall@10."""
    try:
        import faiss  # noqa: F401
    except ImportError:
        return {"skipped": "faiss-cpu not installed (pip install 'groundqa[ann]')"}
    import numpy as np

    from groundqa.index.dense import DenseSettings, VectorIndex
    from groundqa.index.directory import DirectoryStore

    assert isinstance(engine.store, DirectoryStore) and engine.store.vectors is not None
    exact = engine.store.vectors
    t = time.perf_counter()
    ann = VectorIndex.build(exact.vectors, DenseSettings(ann_threshold=0))
    build_s = time.perf_counter() - t
    q = engine.retriever.query_embedder().embed(queries)
    overlap = []
    for row in q:
        a = {i for i, _ in ann.search(row, 10)}
        e = {i for i, _ in exact.search(row, 10, exact=True)}
        overlap.append(len(a & e) / 10)
    ann_ms = time_each(lambda row: ann.search(row, 10), list(q), repeats=3)
    exact_ms = time_each(lambda row: exact.search(row, 10, exact=True), list(q), repeats=3)
    return {
        "vectors": len(exact),
        "recall@10": round(float(np.mean(overlap)), 4),
        "build_s": round(build_s, 2),
        "hnsw_p50_ms": latency_summary(ann_ms)["p50_ms"],
        "exact_p50_ms": latency_summary(exact_ms)["p50_ms"],
    }


# What a build's `timings_s` holds besides stage seconds: how many chunks it embedded and
# how many kept the vectors of an earlier build with the same text and embedder.
_COUNTS = ("embedded_chunks", "reused_vectors")


def _build_timing(timings: dict[str, float]) -> dict[str, Any]:
    """The index build's seconds (its stages summed, counts left out), its embedding
    seconds, and how many chunks it embedded and reused."""
    embedded = int(timings.get("embedded_chunks", 0))
    embed_s = timings.get("embed", 0.0)
    return {
        "build_s": round(sum(v for k, v in timings.items() if k not in _COUNTS), 1),
        "embed_s": round(embed_s, 1),
        "embedded_chunks": embedded,
        "reused_vectors": int(timings.get("reused_vectors", 0)),
        "chunks_per_s": round(embedded / embed_s, 1) if embedded and embed_s else None,
    }


def _built(part: dict[str, Any]) -> str:
    """ "275.5 s, of which embedding 272.9 s (26.7 chunks/s on 2 cores)", or, when the
    build kept an earlier build's vectors, says so instead of a rate it did not measure."""
    text = f"{part['build_s']} s, of which embedding {part['embed_s']} s"
    if part["reused_vectors"]:
        return (
            f"{text} ({part['embedded_chunks']} chunks embedded, {part['reused_vectors']} "
            "kept the vectors of an earlier build of the same text: no embedding rate "
            "measured; a build from scratch embeds every chunk)"
        )
    rate = part["chunks_per_s"]
    return f"{text} ({rate} chunks/s on 2 cores)" if rate else text


def scifact() -> dict[str, Any] | None:
    test, train = sets.scifact("test"), sets.scifact("train")
    if test is None or train is None:
        return None
    from groundqa.engine import Engine
    from groundqa.evaluate.beir import retrieve_run, score_run
    from groundqa.index.directory import DirectoryStore
    from groundqa.ingestion import ingest

    index = sets.BUILDS / "scifact"
    built = ingest([test.corpus], index, fmt="beir")
    engine = Engine.open(index)
    chunks = built.counts["chunks"]
    timing = _build_timing(engine.manifest.timings_s)

    tuning = {}
    for plan in TUNE_CANDIDATES:
        s = score_run(retrieve_run(engine, train.queries, depth=100, retriever=plan), train.qrels)
        tuning[plan] = round(s["ndcg@10"], 4)
    tuned = max(tuning, key=lambda p: (tuning[p], -TUNE_CANDIDATES.index(p)))

    sample = list(test.queries.values())[:100]
    runs: dict[str, dict[str, Any]] = {}
    for plan in dict.fromkeys([*RETRIEVERS, tuned]):
        s = score_run(retrieve_run(engine, test.queries, depth=100, retriever=plan), test.qrels)
        ms = time_each(lambda q, p=plan: new_search(engine, q, p), sample, repeats=3)
        runs[plan] = {
            "ndcg@10": round(s["ndcg@10"], 4),
            "recall@100": round(s["recall@100"], 4),
            "mrr@10": round(s["mrr@10"], 4),
            **latency_summary(ms),
        }
    embed_ms = time_each(lambda q: _new_embedding(engine, q), sample, repeats=3)
    assert isinstance(engine.store, DirectoryStore)
    build = engine.store.build_dir
    return {
        "queries": len(test.queries),
        "train_queries": len(train.queries),
        "chunks": chunks,
        "runs": runs,
        "tuning_train_ndcg@10": tuning,
        "tuned": tuned,
        "published": PUBLISHED,
        **timing,
        "query_embedding": latency_summary(embed_ms),
        "index_mb": round(_dir_mb(build), 1),
        "vectors_mb": round((build / "vectors.npy").stat().st_size / 1e6, 1),
        "peak_rss_mb": {r: round(_peak_memory_mb(index, sample, r), 1) for r in ("bm25", "hybrid")},
        "ann": _ann_recall(engine, list(test.queries.values())),
    }


def scifact_whole() -> dict[str, Any] | None:
    """The published protocol for the model check: one vector per abstract (title and text,
    truncated at 256 word pieces), no splitting, so dense nDCG@10 compares with 0.645."""
    if (test := sets.scifact("test")) is None:
        return None
    from groundqa.chunking import ChunkerSettings
    from groundqa.engine import Engine
    from groundqa.evaluate.beir import retrieve_run, score_run
    from groundqa.ingestion import ingest

    index = sets.BUILDS / "scifact-whole"
    ingest([test.corpus], index, fmt="beir", chunker=ChunkerSettings(max_chars=100_000))
    engine = Engine.open(index)
    s = score_run(retrieve_run(engine, test.queries, depth=100, retriever="dense"), test.qrels)
    return {
        "chunks": len(engine.chunks),
        "ndcg@10": round(s["ndcg@10"], 4),
        "recall@100": round(s["recall@100"], 4),
    }


def _probe_runs(
    corpus: list[Path], probes: list[Any], name: str, plans: tuple[str, ...]
) -> dict[str, Any]:
    from groundqa.engine import Engine
    from groundqa.evaluate import evaluate_probes
    from groundqa.ingestion import ingest

    index = sets.BUILDS / name
    ingest(corpus, index)
    engine = Engine.open(index)
    return {
        plan: evaluate_probes(engine, probes, ks=(1, 2, 3, 5, 10), retriever=plan) for plan in plans
    }


def natech() -> dict[str, Any] | None:
    if (natech := sets.natech()) is None:
        return None
    csv, probes = natech
    plans = (*RETRIEVERS, "bm25+defs", "hybrid+defs", "hybrid+weighted=0.5/0.5")
    reports = _probe_runs([csv], probes, "natech", plans)
    out: dict[str, Any] = {}
    for plan, result in reports.items():
        first = next(r for r in result.results if r.probe.id == "natech-01")
        out[plan] = {
            **{
                k: round(result.metrics[k], 4)
                for k in ("recall@1", "recall@3", "recall@5", "hit@3", "mrr")
            },
            "natech-01 rank": first.rank,
            "natech-01 question": first.probe.question,
        }
    return out


def obliqa() -> dict[str, Any] | None:
    if (dev := sets.obliqa()) is None:
        return None
    from groundqa.engine import Engine
    from groundqa.evaluate.beir import retrieve_run, score_run
    from groundqa.ingestion import ingest

    queries, qrels = dev.queries, dev.qrels
    index = sets.BUILDS / "obliqa"
    built = ingest([dev.documents], index, fmt="obliqa")
    engine = Engine.open(index)
    out: dict[str, Any] = {
        "queries": len(queries),
        "chunks": built.counts["chunks"],
        **_build_timing(engine.manifest.timings_s),
    }
    for plan in RETRIEVERS:
        s = score_run(retrieve_run(engine, queries, depth=10, retriever=plan), qrels, ks=(10,))
        out[plan] = {"recall@10": round(s["recall@10"], 4), "ndcg@10": round(s["ndcg@10"], 4)}
    return out


CITY_PLANS = (
    "bm25",
    "hybrid",
    "hybrid+weighted=0.5/0.5+defs",
    "hybrid+cap=2",
    "hybrid+mmr=0.7",
    "hybrid+places=boost",
    "hybrid+places=filter",
    "hybrid+cap=2+places=boost",
)
CITY_KEYS = (
    "recall@1",
    "recall@3",
    "mrr",
    "crowding@5",
    "same_doc_crowding@5",
    "paraphrase_rank1_all",
    "paraphrase_rank1_any",
)


def city_guides() -> dict[str, Any] | None:
    if (city := sets.city_guides()) is None:
        return None
    guides, probes, _ = city
    reports = _probe_runs([guides], probes, "city_guides", CITY_PLANS)
    return {
        plan: {k: round(r.metrics[k], 4) for k in CITY_KEYS if k in r.metrics}
        for plan, r in reports.items()
    }


REGPACK_PLANS = (
    "bm25",
    "bm25+acr",
    "dense",
    "hybrid",
    "hybrid+acr",
    "hybrid+weighted",
    "hybrid+weighted=0.5/0.5",
    "hybrid+weighted=0.5/0.5+defs",
)


def regpack() -> dict[str, Any]:
    from groundqa.evaluate import load_probes

    probes = load_probes(ROOT / "examples" / "regpack.probes.jsonl")
    reports = _probe_runs([ROOT / "examples" / "regpack"], probes, "regpack", REGPACK_PLANS)
    keys = ("recall@1", "recall@3", "mrr", "ndcg@10", "false_refusal", "refused_out_of_scope")
    return {plan: {k: round(r.metrics[k], 4) for k in keys} for plan, r in reports.items()}


def _label(plan: str, tuned: str = "") -> str:
    label = PLAN_LABELS.get(plan, plan)
    return f"{label} (chosen on train)" if plan == tuned else label


def run() -> dict[str, Any]:
    sets.BUILDS.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"machine": machine()}
    seconds: dict[str, float] = {}
    for name, fn in (
        ("scifact", scifact),
        ("scifact_whole", scifact_whole),
        ("natech", natech),
        ("obliqa", obliqa),
        ("city_guides", city_guides),
        ("regpack", regpack),
    ):
        t = time.perf_counter()
        data[name] = fn()
        seconds[name] = round(time.perf_counter() - t, 1)
    data["seconds"] = seconds
    md = [
        "## Dense and hybrid retrieval",
        "",
        "`python bench/dense.py` (part of `make bench`); embedder `minilm` (all-MiniLM-L6-v2, "
        "int8 ONNX), fusion over each retriever's top 100; seconds per part: "
        + ", ".join(f"{k} {v}" for k, v in seconds.items())
        + ".",
        "",
    ]
    sf = data["scifact"]
    if sf:
        md += [
            f"**SciFact test** ({sf['queries']} queries, {sf['chunks']} chunks), same run; "
            "latency is one `Engine.search` to depth 10 (hybrid includes embedding the query, "
            "whose vector is not kept from an earlier search):",
            "",
            "| retriever | nDCG@10 | recall@100 | MRR@10 | p50 ms | p95 ms |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for plan, r in sf["runs"].items():
            label = _label(plan, sf["tuned"])
            md.append(
                report.row(
                    [
                        label,
                        f"{r['ndcg@10']:.4f}",
                        f"{r['recall@100']:.4f}",
                        f"{r['mrr@10']:.4f}",
                        f"{r['p50_ms']:.2f}",
                        f"{r['p95_ms']:.2f}",
                    ]
                )
            )
        md += [
            "",
            "Published and reference nDCG@10: "
            + "; ".join(f"{k} {v}" for k, v in sf["published"].items())
            + ".",
            "",
            f"Plans tried on SciFact train ({sf['train_queries']} queries, nDCG@10): "
            + ", ".join(f"{p} {v:.4f}" for p, v in sf["tuning_train_ndcg@10"].items())
            + f". Chosen: `{sf['tuned']}`.",
            "",
            f"Build {_built(sf)}; query embedding p50 "
            f"{sf['query_embedding']['p50_ms']:.1f} ms, p95 {sf['query_embedding']['p95_ms']:.1f} ms. "
            f"Index on disk {sf['index_mb']} MB (vectors {sf['vectors_mb']} MB). Peak memory of a "
            "process that opens the index and runs 100 queries: "
            + ", ".join(f"{r} {v} MB" for r, v in sf["peak_rss_mb"].items())
            + ".",
            "",
        ]
        whole = data.get("scifact_whole")
        if whole:
            md += [
                "Model check, the published protocol (one vector per abstract, title and text "
                f"truncated at 256 word pieces, {whole['chunks']} vectors): dense nDCG@10 "
                f"{whole['ndcg@10']:.4f}, recall@100 {whole['recall@100']:.4f} (published for "
                "all-MiniLM-L6-v2: 0.645). The table's dense row embeds long abstracts in "
                "parts of at most 1,500 characters and scores a paper by its best part.",
                "",
            ]
        ann = sf["ann"]
        if "skipped" in ann:
            md += [f"HNSW: {ann['skipped']}.", ""]
        else:
            md += [
                f"HNSW (faiss, M 32, efConstruction 200, efSearch 128) over the same {ann['vectors']} "
                f"vectors: recall@10 against exact search {ann['recall@10']:.4f} over all test "
                f"queries; search p50 {ann['hnsw_p50_ms']:.3f} ms against {ann['exact_p50_ms']:.3f} ms "
                f"exact; built in {ann['build_s']} s.",
                "",
            ]
    nt = data["natech"]
    if nt:
        md += [
            "**Natech guidance** (the seed system's 12 probes, chapter level):",
            "",
            "| retriever | recall@1 | recall@3 | recall@5 | hit@3 | MRR | rank of natech-01 |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for plan, r in nt.items():
            md.append(
                report.row(
                    [_label(plan)]
                    + [f"{r[k]:.3f}" for k in ("recall@1", "recall@3", "recall@5", "hit@3", "mrr")]
                    + [str(r["natech-01 rank"] or "not in top 30")]
                )
            )
        first = next(iter(nt.values()))
        md += ["", f'natech-01 is "{first["natech-01 question"]}".', ""]
    ob = data["obliqa"]
    if ob:
        md += [
            f"**ObliQA dev** ({ob['queries']} questions, {ob['chunks']} passages; build "
            f"{_built(ob)}): "
            + ", ".join(
                f"{_label(p)} recall@10 {ob[p]['recall@10']:.4f} (nDCG@10 {ob[p]['ndcg@10']:.4f})"
                for p in RETRIEVERS
            )
            + ".",
            "",
        ]
    cg = data["city_guides"]
    if cg:
        keys = [k for k in CITY_KEYS if k in next(iter(cg.values()))]
        md += [
            "**City guides** (`bench/city_guides.probes.jsonl`): crowding (top-5 slots held by "
            "unexpected sections, and by other sections of the expected document) with and "
            "without diversity and the gazetteer, and rank-1 stability across paraphrases:",
            "",
            report.row(["retriever", *keys]),
            "|---|" + "---:|" * len(keys),
        ]
        for plan, r in cg.items():
            md.append(report.row([_label(plan)] + [f"{r[k]:.3f}" for k in keys]))
        md.append("")
    rp = data["regpack"]
    keys = list(next(iter(rp.values())))
    md += [
        "**Example corpus** (`examples/regpack.probes.jsonl`), acronym expansion on and off "
        "(`+acr`), and the default plan:",
        "",
        report.row(["retriever", *keys]),
        "|---|" + "---:|" * len(keys),
    ]
    for plan, r in rp.items():
        md.append(report.row([_label(plan)] + [f"{r[k]:.3f}" for k in keys]))
    write_result("dense", data, "\n".join(md))
    return data


if __name__ == "__main__":
    run()
