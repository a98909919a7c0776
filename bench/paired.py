"""Retrieval compared question by question: each question's recall@K and nDCG@K over
sections under each plan, and the paired difference of two plans with its bootstrap
interval (95%, paraphrase groups resampled together; `evaluate.planfit.paired_interval`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from groundqa.engine import Engine
from groundqa.evaluate.metrics import dedupe, ndcg_at_k, recall_at_k
from groundqa.evaluate.planfit import DEPTH, K, paired_interval
from groundqa.evaluate.probes import Probe


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


def mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def difference(a: Sequence[float], b: Sequence[float], groups: Sequence[str]) -> dict[str, Any]:
    low, high = paired_interval(a, b, groups)
    return {
        "mean": round(mean(a) - mean(b), 4),
        "interval": [round(low, 4), round(high, 4)],
        "real": low > 0 or high < 0,
    }


def pair(run: dict[str, float], digits: int = 4) -> str:
    """A run's recall@K and nDCG@K, as "0.8500 / 0.7314"."""
    return f"{run[f'recall@{K}']:.{digits}f} / {run[f'ndcg@{K}']:.{digits}f}"


def difference_cell(d: dict[str, Any], digits: int = 4, real: str = " (real)") -> str:
    """A paired difference (`difference`) as "+0.0186 [+0.0098, +0.0273]", marked `real`
    where its interval excludes 0."""
    low, high = d["interval"]
    mark = real if d["real"] else ""
    return f"{d['mean']:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]{mark}"
