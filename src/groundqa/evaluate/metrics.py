"""Retrieval metrics as pure functions over ranked ids and relevance sets.

Inputs are plain lists and dicts: `ranked` is a list of ids best first (already
collapsed to one entry per section), `relevant` the set of ids that count, or
for graded metrics a dict id -> gain. No I/O, no engine: each function is
checked against hand-worked examples and against ranx in the tests.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence


def dedupe(ids: Iterable[str]) -> list[str]:
    """Keep the first occurrence of each id: several chunks of one section count once."""
    seen: dict[str, None] = {}
    for i in ids:
        seen.setdefault(i, None)
    return list(seen)


def recall_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & relevant) / len(relevant)


def hit_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    return 1.0 if set(ranked[:k]) & relevant else 0.0


def precision_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    return len(set(ranked[:k]) & relevant) / k if k > 0 else 0.0


def first_rank(ranked: Sequence[str], relevant: set[str]) -> int | None:
    """1-based rank of the first relevant id, or None."""
    for i, doc in enumerate(ranked, start=1):
        if doc in relevant:
            return i
    return None


def reciprocal_rank(ranked: Sequence[str], relevant: set[str], k: int | None = None) -> float:
    rank = first_rank(ranked if k is None else ranked[:k], relevant)
    return 1.0 / rank if rank else 0.0


def average_precision(ranked: Sequence[str], relevant: set[str], k: int | None = None) -> float:
    """AP@k: precision at each relevant hit in the top k, summed, over |relevant| (trec_eval map_cut)."""
    if not relevant:
        return 0.0
    window = ranked if k is None else ranked[:k]
    hits = 0
    total = 0.0
    for i, doc in enumerate(window, start=1):
        if doc in relevant:
            hits += 1
            total += hits / i
    return total / len(relevant)


def ndcg_at_k(ranked: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    """nDCG@k with linear gains and log2 discount, as trec_eval and ranx compute it."""
    dcg = sum(gains.get(doc, 0.0) / math.log2(i + 1) for i, doc in enumerate(ranked[:k], start=1))
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0
