"""The retrieval plan each index fits for itself, against BM25 and the built-in plan.

For every corpus with questions we can see (the example corpus, the city guides,
Natech, ObliQA dev, ClapNQ's shared half, SciFact test), in one run:

1. build the index with vectors, as `groundqa ingest` does by default;
2. fit its plan (`groundqa.evaluate.planfit.fit_plan`): probes made from the corpus
   alone, every plan of the declared grid asked each of them, the built-in plan kept
   unless another beats it by more than its noise. Twice: with the shipped grid (no
   plan leans further towards BM25 than the built-in one) and with a free grid
   (`FREE_GRID`, BM25-leaning plans and BM25 alone too), which shows why the shipped
   grid is bounded;
3. ask the corpus's real answerable questions of BM25, the built-in plan and both
   fitted plans, and score recall@10 and nDCG@10 over sections (qrels where the set
   has them), each difference with a paired bootstrap interval (95%, questions of one
   paraphrase group resampled together). A difference whose interval excludes 0 is
   called real.

The fit's cost is its time beside the build's own (the seconds the manifest recorded
when the index was built, loading included).

The fit reads the corpus only, never the questions: every figure here is out of
sample for it. The grid and the decision rule were declared before these sets were
run, and are the same for every corpus.

    python bench/planfit.py   # (part of `make bench`)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_result
from groundqa.engine import Engine
from groundqa.evaluate.planfit import K, fit_plan
from groundqa.evaluate.probes import Probe
from groundqa.ingestion import ingest
from groundqa.retrieve import DEFAULT_DENSE_PLAN
from paired import difference, difference_cell, mean, pair, per_question
from sets import BUILDS, built_corpora

BM25 = "bm25"
# Entries of a build's timings that count things rather than seconds.
COUNTS = ("embedded_chunks", "reused_vectors", "copied_documents")
# The grid before it was bounded: BM25-leaning fusions and BM25 alone as well.
FREE_GRID = (
    DEFAULT_DENSE_PLAN,
    "hybrid+weighted=0.7/0.3+defs",
    "hybrid+weighted=0.3/0.7+defs",
    "hybrid+weighted=0.85/0.15+defs",
    "hybrid+rrf=60+defs",
    "bm25+defs",
    "hybrid+weighted=0.5/0.5",
)


def one_set(index_name: str, sources: list[Path], fmt: str, probes: list[Probe]) -> dict[str, Any]:
    index = BUILDS / index_name
    ingest(sources, index, fmt=fmt)
    engine = Engine.open(index, reader="lexical")
    started = time.perf_counter()
    fit = fit_plan(engine)
    fit_s = time.perf_counter() - started
    free = fit_plan(engine, plans=FREE_GRID)
    builtin = engine.retriever.builtin_plan
    fitted = fit.get("plan") or builtin
    freely = free.get("plan") or builtin
    plans = list(dict.fromkeys([BM25, builtin, fitted, freely]))
    scores = per_question(engine, probes, plans)
    groups = [p.group or p.id for p in probes]
    rows = {
        "bm25": scores[BM25],
        "built-in plan": scores[builtin],
        "fitted plan": scores[fitted],
        "free-grid plan": scores[freely],
    }
    build_s = sum(v for k, v in engine.manifest.timings_s.items() if k not in COUNTS)
    out: dict[str, Any] = {
        "chunks": engine.store.num_docs,
        "questions": len(probes),
        "builtin": builtin,
        "fitted": fitted,
        "free_grid_fitted": freely,
        "fit": fit,
        "free_grid_fit": free,
        "fit_s": round(fit_s, 1),
        "build_s": round(build_s, 1),
        "runs": {
            name: {f"recall@{K}": mean(r), f"ndcg@{K}": mean(n)} for name, (r, n) in rows.items()
        },
    }
    pairs = (
        ("fitted plan", "built-in plan"),
        ("fitted plan", "bm25"),
        ("built-in plan", "bm25"),
        ("free-grid plan", "built-in plan"),
    )
    out["differences"] = {
        f"{a} - {b}": {
            f"recall@{K}": difference(rows[a][0], rows[b][0], groups),
            f"ndcg@{K}": difference(rows[a][1], rows[b][1], groups),
        }
        for a, b in pairs
    }
    return out


def _chosen(s: dict[str, Any], fit: str, plan: str) -> str:
    return s[plan] if s[fit].get("plan") else "built-in kept"


def _verdicts(data: dict[str, Any], fit: str) -> list[str]:
    lines = []
    for name, s in data["sets"].items():
        entry = s[fit]
        if "skipped" in entry:
            lines.append(f"- {name}: skipped: {entry['skipped']}")
            continue
        grid = ", ".join(f"{p} {v[f'recall@{K}']:.3f}" for p, v in entry["grid"].items())
        verdict = f"chose {entry['plan']}" if entry.get("plan") else entry["kept"]
        lines.append(f"- {name} ({entry['probes']} probes): {grid}; {verdict}")
    return lines


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# The retrieval plan fitted to each index, from its own text",
        "",
        "`python bench/planfit.py`. Real answerable questions of each set, scored over "
        f"sections at {K}. The fit saw the corpus only. Intervals: paired bootstrap, 95%, "
        'paraphrase groups resampled together; "real" where the interval excludes 0. '
        "The built-in plan is `hybrid+weighted=0.5/0.5+defs` on every set.",
        "",
        f"| set | chunks | questions | fitted plan | fit s / build s | BM25 recall@{K} / "
        f"nDCG@{K} | built-in | fitted | fitted - built-in recall@{K} "
        f"| fitted - built-in nDCG@{K} | fitted - BM25 recall@{K} |",
        "|---|---:|---:|---|---|---|---|---|---|---|---|",
    ]

    for name, s in data["sets"].items():
        runs, diffs = s["runs"], s["differences"]
        lines.append(
            f"| {name} | {s['chunks']} | {s['questions']} | {_chosen(s, 'fit', 'fitted')} "
            f"| {s['fit_s']} / {s['build_s']} "
            f"| {pair(runs['bm25'])} | {pair(runs['built-in plan'])} | {pair(runs['fitted plan'])} "
            f"| {difference_cell(diffs['fitted plan - built-in plan'][f'recall@{K}'])} "
            f"| {difference_cell(diffs['fitted plan - built-in plan'][f'ndcg@{K}'])} "
            f"| {difference_cell(diffs['fitted plan - bm25'][f'recall@{K}'])} |"
        )
    lines += [
        "",
        "## Why the grid leans no further towards BM25 than the built-in plan",
        "",
        "The same fit with a free grid (BM25-leaning fusions and BM25 alone allowed), "
        "scored on the same real questions:",
        "",
        f"| set | free-grid plan | its recall@{K} / nDCG@{K} | free-grid - built-in "
        f"recall@{K} | free-grid - built-in nDCG@{K} |",
        "|---|---|---|---|---|",
    ]
    for name, s in data["sets"].items():
        d = s["differences"]["free-grid plan - built-in plan"]
        lines.append(
            f"| {name} | {_chosen(s, 'free_grid_fit', 'free_grid_fitted')} "
            f"| {pair(s['runs']['free-grid plan'])} | {difference_cell(d[f'recall@{K}'])} "
            f"| {difference_cell(d[f'ndcg@{K}'])} |"
        )
    lines += ["", f"What each fit saw (recall@{K} on its own made questions):", ""]
    lines += ["Shipped grid:", "", *_verdicts(data, "fit"), "", "Free grid:", ""]
    lines += _verdicts(data, "free_grid_fit")
    return "\n".join(lines)


def run() -> dict[str, Any]:
    started = time.perf_counter()
    sets = {}
    for name, (index_name, sources, fmt, probes) in built_corpora().items():
        t = time.perf_counter()
        sets[name] = one_set(index_name, sources, fmt, probes)
        print(f"{name}: {time.perf_counter() - t:.0f} s", file=sys.stderr)
    data = {"sets": sets, "machine": machine(), "seconds": round(time.perf_counter() - started, 1)}
    write_result("planfit", data, markdown(data))
    return data


if __name__ == "__main__":
    run()
