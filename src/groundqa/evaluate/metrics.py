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


def crowding(chunk_sections: Sequence[str], expected: set[str], k: int) -> float:
    """Share of the top-k chunk slots held by chunks of sections that were not expected."""
    window = chunk_sections[:k]
    if not window:
        return 0.0
    return sum(1 for s in window if s not in expected) / len(window)


def same_document_crowding(
    chunk_sections: Sequence[str],
    chunk_docs: Sequence[str],
    expected: set[str],
    expected_docs: set[str],
    k: int,
) -> float:
    """Share of top-k slots held by other sections of an expected section's own document.

    This is the "naming a town pulls in that town's other sections" effect: the
    document is right, the section is not, and it pushes real answers down.
    """
    window = list(zip(chunk_sections[:k], chunk_docs[:k], strict=True))
    if not window:
        return 0.0
    return sum(1 for s, d in window if d in expected_docs and s not in expected) / len(window)


def paraphrase_stability(group_ranks: Mapping[str, Sequence[int | None]]) -> dict[str, float]:
    """Over paraphrase groups with two or more phrasings: how often ranking holds up.

    `rank1_all`: share of groups where every phrasing puts an expected section first.
    `rank1_any`: share where at least one does (the gap is what rephrasing costs).
    """
    groups = [ranks for ranks in group_ranks.values() if len(ranks) >= 2]
    if not groups:
        return {"groups": 0.0, "rank1_all": 0.0, "rank1_any": 0.0}
    return {
        "groups": float(len(groups)),
        "rank1_all": mean(float(all(r == 1 for r in ranks)) for ranks in groups),
        "rank1_any": mean(float(any(r == 1 for r in ranks)) for ranks in groups),
    }


def gate_sweep(
    scores: Sequence[tuple[str, float]], thresholds: Sequence[float]
) -> list[dict[str, float]]:
    """Refusal rates at the gate for each threshold, from (kind, gate score) pairs.

    A question is refused when its score is below the threshold. Returns, per
    threshold, the share of answerable questions refused (false refusals) and the
    shares of out-of-scope and near-miss questions refused, where there are any.
    """
    by_kind: dict[str, list[float]] = {}
    for kind, score in scores:
        by_kind.setdefault(kind, []).append(score)
    rows = []
    for t in thresholds:
        row = {"threshold": t}
        for kind, key in (
            ("answerable", "false_refusal"),
            ("out_of_scope", "refused_out_of_scope"),
            ("near_miss", "refused_near_miss"),
        ):
            if by_kind.get(kind):
                row[key] = mean(float(s < t) for s in by_kind[kind])
        rows.append(row)
    return rows
