"""ObliQA dev with and without the clause hierarchy, for every retriever, from one run.

The ObliQA loader reads the clause hierarchy from passage ids and puts the parent
headings into each section's path (`Title > 1. INTRODUCTION > 1.2 Application >
1.2.1.(1)`). The hierarchy can enter retrieval three ways, and this measures each:

- in the chunk text (the default): the breadcrumb is the first line of what BM25's
  body field and the embedder see;
- not at all (`ChunkerSettings(section_path=False)`): both see the document title
  and the text only; citations still show the breadcrumb;
- in the text and again in BM25's breadcrumb field at `heading_weight` 1 (BM25
  only; the ObliQA default weight is 0, `ingestion.default_bm25`).

Recall@10, MAP@10, nDCG@10 and MRR@10 over passages (`evaluate.beir.score_run`)
for bm25, dense, hybrid (RRF) and the default plan. The indexes are kept in
bench/.work-dense (bench/retrieval.py clears bench/.work): the default one is the
index bench/dense.py builds, reused while its corpus and settings are unchanged
(ingest is a no-op then), so a rerun embeds nothing.

    python bench/regulatory.py
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import report
import sets
from _common import machine, write_result
from report import PLAN_LABELS

PLANS = ("bm25", "dense", "hybrid", "hybrid+weighted=0.5/0.5+defs")
METRICS = ("recall@10", "map@10", "ndcg@10", "mrr@10")
HIERARCHY = "in the chunk text (default)"
FLAT = "none (`section_path=False`)"
FIELD = "in the text and the breadcrumb field (`heading_weight` 1)"


def _variant(
    sources: Path,
    index: Path,
    plans: tuple[str, ...],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    **settings: Any,
) -> dict[str, Any]:
    from groundqa.engine import Engine
    from groundqa.evaluate.beir import retrieve_run, score_run
    from groundqa.ingestion import ingest

    t = time.perf_counter()
    ingested = ingest([sources], index, fmt="obliqa", **settings)
    build_s = time.perf_counter() - t
    engine = Engine.open(index)
    t = time.perf_counter()
    # Question by question, every plan in turn: the engine keeps the last query's vector,
    # so each question is embedded once rather than once per plan.
    found: dict[str, dict[str, dict[str, float]]] = {plan: {} for plan in plans}
    for qid, text in queries.items():
        for plan in plans:
            found[plan].update(retrieve_run(engine, {qid: text}, depth=10, retriever=plan))
    runs: dict[str, dict[str, float]] = {}
    for plan in plans:
        s = score_run(found[plan], qrels, ks=(10,))
        runs[plan] = {k: round(s[k], 4) for k in METRICS}
    return {
        "index": index.name,
        "rebuilt": ingested.changed,
        "chunks": ingested.counts["chunks"],
        "build_s": round(build_s, 1),
        "embed_s": round(engine.manifest.timings_s.get("embed", 0.0), 1),
        "query_s": round(time.perf_counter() - t, 1),
        "runs": runs,
    }


def obliqa() -> dict[str, Any] | None:
    if (dev := sets.obliqa()) is None:
        return None
    from groundqa.chunking import ChunkerSettings
    from groundqa.index.lexical import BM25Settings

    queries, qrels, sources = dev.queries, dev.qrels, dev.documents
    return {
        "queries": len(queries),
        HIERARCHY: _variant(sources, sets.BUILDS / "obliqa", PLANS, queries, qrels),
        FLAT: _variant(
            sources,
            sets.BUILDS / "obliqa-no-section-path",
            PLANS,
            queries,
            qrels,
            chunker=ChunkerSettings(section_path=False),
        ),
        FIELD: _variant(
            sources,
            sets.BUILDS / "obliqa-heading-field",
            ("bm25",),
            queries,
            qrels,
            bm25=BM25Settings(heading_weight=1.0),
            dense=None,
        ),
    }


def _delta(value: float, base: float) -> str:
    return f"{value - base:+.4f}"


def markdown(data: dict[str, Any]) -> str:
    seconds = data["seconds"]
    md = [
        "## ObliQA: the clause hierarchy in retrieval",
        "",
        "`python bench/regulatory.py`; embedder `minilm` (all-MiniLM-L6-v2, int8 ONNX), "
        "fusion over each retriever's top 100; seconds per part: "
        + ", ".join(f"{k} {v}" for k, v in seconds.items())
        + ".",
        "",
    ]
    ob = data["obliqa"]
    if not ob:
        return "\n".join(md)
    base = ob[HIERARCHY]
    md += [
        f"**ObliQA dev** ({ob['queries']} questions, {base['chunks']} passages), passage "
        "level; the hierarchy is the clause path the loader reads from passage ids. "
        "Differences are against the same retriever with the hierarchy in the chunk text:",
        "",
        report.row(
            [
                "retriever",
                "hierarchy",
                "recall@10",
                "MAP@10",
                "nDCG@10",
                "MRR@10",
                "Δ recall@10",
                "Δ MAP@10",
            ]
        ),
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for plan in PLANS:
        for variant in (HIERARCHY, FLAT, FIELD):
            r = ob[variant]["runs"].get(plan)
            if r is None:
                continue
            b = base["runs"][plan]
            same = variant == HIERARCHY
            md.append(
                report.row(
                    [PLAN_LABELS.get(plan, plan), variant]
                    + [f"{r[k]:.4f}" for k in METRICS]
                    + (
                        ["", ""]
                        if same
                        else [
                            _delta(r["recall@10"], b["recall@10"]),
                            _delta(r["map@10"], b["map@10"]),
                        ]
                    )
                )
            )
    md += [""]
    builds = []
    for variant in (HIERARCHY, FLAT, FIELD):
        v = ob[variant]
        embed = f", embedding {v['embed_s']} s" if v["embed_s"] else ""
        if v["rebuilt"]:
            state = f"built in {v['build_s']} s{embed}"
        else:
            state = (
                f"up to date, checked in {v['build_s']} s (its build: {embed[2:] or 'no vectors'})"
            )
        builds.append(f"{v['index']} ({state}; queries {v['query_s']} s)")
    md += ["Indexes (bench/.work-dense): " + "; ".join(builds) + ".", ""]
    return "\n".join(md)


def run() -> dict[str, Any]:
    sets.BUILDS.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"machine": machine()}
    seconds: dict[str, float] = {}
    for name, fn in (("obliqa", obliqa),):
        t = time.perf_counter()
        data[name] = fn()
        seconds[name] = round(time.perf_counter() - t, 1)
    data["seconds"] = seconds
    write_result("regulatory", data, markdown(data))
    return data


if __name__ == "__main__":
    run()
