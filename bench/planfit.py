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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sets
from _common import machine, write_result
from dense import DENSE_WORK
from groundqa.engine import Engine
from groundqa.evaluate.metrics import dedupe, ndcg_at_k, recall_at_k
from groundqa.evaluate.planfit import DEPTH, K, fit_plan, paired_interval
from groundqa.evaluate.probes import Probe
from groundqa.ingestion import ingest
from groundqa.retrieve import DEFAULT_DENSE_PLAN

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


def corpora() -> dict[str, tuple[str, list[Path], str, list[Probe]]]:
    """name -> (index name under bench/.work-dense, sources, format, answerable questions).

    The index names are `bench/dense.py`'s where it builds the same corpus, so its
    vectors are reused rather than embedded again."""
    index_names = {
        "example corpus": "regpack",
        "city guides": "city_guides",
        "Natech": "natech",
        "ObliQA dev": "obliqa",
        "ClapNQ shared half": "clapnq",
    }
    out = {
        name: (index_names[name], sources, fmt, [p for p in probes if p.answerable])
        for name, (sources, fmt, probes) in sets.corpora().items()
    }
    if (test := sets.scifact("test")) is not None:
        out["SciFact test"] = ("scifact", [test.corpus], "beir", sets.scifact_probes(test))
    return out


def per_question(
    engine: Engine, probes: Sequence[Probe], plans: Sequence[str]
) -> dict[str, tuple[list[float], list[float]]]:
    """plan -> (recall@K, nDCG@K) per question, over sections. Each question is asked of
    every plan in turn, so its vector is embedded once."""
    out: dict[str, tuple[list[float], list[float]]] = {p: ([], []) for p in plans}
    for probe in probes:
        expected = set(probe.expected)
        for plan in plans:
            ranked = dedupe(
                h.chunk.section_id for h in engine.search(probe.question, DEPTH, retriever=plan)
            )
            out[plan][0].append(recall_at_k(ranked, expected, K))
            out[plan][1].append(ndcg_at_k(ranked, dict.fromkeys(expected, 1.0), K))
    return out


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _difference(a: Sequence[float], b: Sequence[float], groups: Sequence[str]) -> dict[str, Any]:
    low, high = paired_interval(a, b, groups)
    return {
        "mean": round(_mean(a) - _mean(b), 4),
        "interval": [round(low, 4), round(high, 4)],
        "real": low > 0 or high < 0,
    }


def one_set(index_name: str, sources: list[Path], fmt: str, probes: list[Probe]) -> dict[str, Any]:
    index = DENSE_WORK / index_name
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
            name: {f"recall@{K}": _mean(r), f"ndcg@{K}": _mean(n)} for name, (r, n) in rows.items()
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
            f"recall@{K}": _difference(rows[a][0], rows[b][0], groups),
            f"ndcg@{K}": _difference(rows[a][1], rows[b][1], groups),
        }
        for a, b in pairs
    }
    return out


def pair(run: dict[str, float], digits: int = 4) -> str:
    """A run's recall@K and nDCG@K, as "0.8500 / 0.7314"."""
    return f"{run[f'recall@{K}']:.{digits}f} / {run[f'ndcg@{K}']:.{digits}f}"


def difference_cell(d: dict[str, Any], digits: int = 4, real: str = " (real)") -> str:
    """A paired difference (`_difference`) as "+0.0186 [+0.0098, +0.0273]", marked `real`
    where its interval excludes 0."""
    low, high = d["interval"]
    mark = real if d["real"] else ""
    return f"{d['mean']:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]{mark}"


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
    for name, (index_name, sources, fmt, probes) in corpora().items():
        t = time.perf_counter()
        sets[name] = one_set(index_name, sources, fmt, probes)
        print(f"{name}: {time.perf_counter() - t:.0f} s", file=sys.stderr)
    data = {"sets": sets, "machine": machine(), "seconds": round(time.perf_counter() - started, 1)}
    write_result("planfit", data, markdown(data))
    return data


if __name__ == "__main__":
    run()
