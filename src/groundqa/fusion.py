"""Fusion: merge several rankings of one corpus into one, and spread a result list out.

Hybrid retrieval runs a lexical (BM25) and a dense (vector) retriever and must
turn their ranked lists into one. Two classic rules are here:

- reciprocal-rank fusion (`rrf`, Cormack, Clarke & Büttcher 2009) looks only at
  ranks, so it needs no calibration between retrievers whose scores live on
  different scales;
- weighted score fusion (`weighted`) min-max normalises each retriever's scores
  and adds them with weights, so a wide margin in one list still counts.

A ranking is a sequence of `(key, score)` pairs, best first. A key repeated in
one ranking counts once, at its first (best) position. Ties in the fused list
are broken by the key's best single rank, then by the key itself, so a run is
reproducible byte for byte; contributions are summed with `math.fsum`, so the
order in which rankings are given cannot change a score by rounding.

`Fusion` names a rule with its parameters, `PRESETS` holds the ones we ship and
`parse_fusion` reads the string a user writes in a config or on the command
line. Two diversity tools act on a fused list: `cap_per_group` (at most n
passages from one document) and `mmr` (maximal marginal relevance).

Everything is a pure function over plain lists: no index, no I/O, no model.
Wrong parameters from code raise `ValueError`; only `parse_fusion`, which reads
user input, raises `UsageError`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt

from groundqa.errors import UsageError

T = TypeVar("T")
Ranking = Sequence[tuple[str, float]]
Fused = list[tuple[str, float]]
Method = Literal["rrf", "weighted"]
SimilarityFn = Callable[[int, int], float]

FUSION_FORMS = ("rrf", "rrf:k=<int>", "weighted", "weighted:<w_bm25>,<w_dense>")


# ------------------------------------------------------------------ score fusion


def rrf(rankings: Sequence[Ranking], k: int = 60, weights: Sequence[float] | None = None) -> Fused:
    """Reciprocal-rank fusion: score(key) = sum_i weights[i] / (k + rank_i(key)).

    Ranks are 1-based; a ranking without the key adds nothing. `weights`
    defaults to 1 for every ranking. Returned best first.
    """
    if k < 1:
        raise ValueError(f"rrf needs k >= 1, got {k}")
    ws = [1.0] * len(rankings) if weights is None else _check_weights(weights, len(rankings))
    return _fuse(rankings, ws, lambda scores: [1.0 / (k + r) for r in range(1, len(scores) + 1)])


def weighted(rankings: Sequence[Ranking], weights: Sequence[float]) -> Fused:
    """Weighted score fusion: sum_i weights[i] * minmax(scores_i)(key).

    Each ranking is normalised on its own, so its best key gets 1 and its worst
    0; a ranking without the key adds 0, the same as its worst key. Returned
    best first.
    """
    ws = _check_weights(weights, len(rankings))
    return _fuse(rankings, ws, lambda scores: minmax(list(scores.values())))


def minmax(scores: Sequence[float]) -> list[float]:
    """Scale scores to [0, 1]. All equal (one score included) gives all 1.0:
    a list with no spread still holds that retriever's best hits."""
    if not scores:
        return []
    arr = np.asarray(scores, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError("minmax needs finite scores")
    lo, hi = float(arr.min()), float(arr.max())
    if hi == lo:
        return [1.0] * len(scores)
    return [float(x) for x in (arr - lo) / (hi - lo)]


def _fuse(
    rankings: Sequence[Ranking],
    weights: Sequence[float],
    values: Callable[[dict[str, float]], list[float]],
) -> Fused:
    """Sum weight * value over rankings; `values` maps one ranking's
    {key: score} (best first) to the value each key contributes."""
    parts: dict[str, list[float]] = {}
    best: dict[str, int] = {}
    for weight, ranking in zip(weights, rankings, strict=True):
        scores = _first_seen(ranking)
        for rank, (key, value) in enumerate(zip(scores, values(scores), strict=True), start=1):
            parts.setdefault(key, []).append(weight * value)
            best[key] = min(best.get(key, rank), rank)
    fused = {key: math.fsum(p) for key, p in parts.items()}
    return sorted(fused.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))


def _first_seen(ranking: Ranking) -> dict[str, float]:
    scores: dict[str, float] = {}
    for key, score in ranking:
        scores.setdefault(key, score)
    return scores


def _check_weight_values(weights: Sequence[float]) -> list[float]:
    ws = [float(w) for w in weights]
    if any(not math.isfinite(w) or w < 0 for w in ws):
        raise ValueError(f"fusion weights must be finite and non-negative, got {list(weights)}")
    if ws and not any(ws):
        raise ValueError("fusion weights are all zero; at least one ranking must count")
    return ws


def _check_weights(weights: Sequence[float], n_rankings: int) -> list[float]:
    if len(weights) != n_rankings:
        raise ValueError(
            f"got {len(weights)} fusion weights for {n_rankings} rankings; give one per ranking"
        )
    return _check_weight_values(weights)


# ------------------------------------------------------------------ named rules


@dataclass(frozen=True)
class Fusion:
    """A fusion rule with its parameters. `k` is used by rrf only; `weights`
    are optional for rrf and required for weighted, one per ranking, in the
    order the rankings are passed (the engine passes (bm25, dense))."""

    method: Method
    k: int = 60
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.method not in ("rrf", "weighted"):
            raise ValueError(f"unknown fusion method {self.method!r}; use 'rrf' or 'weighted'")
        if self.k < 1:
            raise ValueError(f"rrf needs k >= 1, got {self.k}")
        if self.weights is not None:
            _check_weight_values(self.weights)
        elif self.method == "weighted":
            raise ValueError("weighted fusion needs weights, one per ranking")

    def apply(self, rankings: Sequence[Ranking]) -> Fused:
        if self.method == "weighted" and self.weights is not None:
            return weighted(rankings, self.weights)
        return rrf(rankings, self.k, self.weights)


# BM25 weight 0.3, dense weight 0.7: rankings are passed as (bm25, dense).
PRESETS: Mapping[str, Fusion] = MappingProxyType(
    {"rrf": Fusion("rrf"), "weighted": Fusion("weighted", weights=(0.3, 0.7))}
)


def parse_fusion(spec: str) -> Fusion:
    """Read "rrf", "rrf:k=20", "weighted" or "weighted:0.5,0.5" into a Fusion."""
    text = spec.strip().lower()
    if text in PRESETS:
        return PRESETS[text]
    method, _, arg = text.partition(":")
    forms = ", ".join(FUSION_FORMS)
    try:
        if method == "rrf" and arg.startswith("k="):
            return Fusion("rrf", k=int(arg.removeprefix("k=")))
        if method == "weighted" and arg:
            return Fusion("weighted", weights=tuple(float(w) for w in arg.split(",")))
    except ValueError as exc:
        raise UsageError(f"bad fusion {spec!r} ({exc}); use one of: {forms}") from None
    raise UsageError(f"unknown fusion {spec!r}; use one of: {forms}")


# ------------------------------------------------------------------ diversity


def cap_per_group(items: Sequence[T], group: Callable[[T], Hashable], cap: int, k: int) -> list[T]:
    """The first k items, keeping order, with at most `cap` from any one group.

    When fewer than k items pass the cap, the skipped ones are appended in
    their original order, so a small corpus still returns k results.
    """
    if cap < 1:
        raise ValueError(f"cap must be >= 1, got {cap}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    kept: list[T] = []
    skipped: list[T] = []
    counts: Counter[Hashable] = Counter()
    for item in items:
        if len(kept) == k:
            break
        g = group(item)
        if counts[g] < cap:
            counts[g] += 1
            kept.append(item)
        else:
            skipped.append(item)
    return kept + skipped[: k - len(kept)]


def mmr(
    candidates: Sequence[T],
    relevance: Sequence[float],
    similarity: npt.ArrayLike | SimilarityFn,
    *,
    k: int,
    lam: float = 0.7,
) -> list[T]:
    """Maximal marginal relevance (Carbonell & Goldstein 1998): pick k candidates
    greedily, each time the one maximising

        lam * relevance[i] - (1 - lam) * max(similarity(i, j) for j already picked)

    `relevance[i]` belongs to `candidates[i]`. `similarity` is indexed by
    position in `candidates`, never by the candidates themselves: an (n, n)
    matrix (for unit embeddings E of the candidates, `E @ E.T`) or a function
    `sim(i, j)`. lam=1 is plain relevance order; lower lam trades relevance
    for novelty. Ties go to the earlier candidate. Returns the picked
    candidates in pick order.
    """
    n = len(candidates)
    if len(relevance) != n:
        raise ValueError(f"got {len(relevance)} relevance scores for {n} candidates")
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    rel = np.asarray(relevance, dtype=float)
    if not np.all(np.isfinite(rel)):
        raise ValueError("mmr needs finite relevance scores")
    column = _similarity_column(similarity, n)
    open_ = np.ones(n, dtype=bool)
    penalty = np.zeros(n)  # max similarity to anything picked; nothing is picked yet
    picked: list[int] = []
    for _ in range(min(k, n)):
        score = np.where(open_, lam * rel - (1.0 - lam) * penalty, -np.inf)
        best = int(np.argmax(score))
        picked.append(best)
        open_[best] = False
        sim = column(best, open_)
        penalty = sim if len(picked) == 1 else np.maximum(penalty, sim)
    return [candidates[i] for i in picked]


def _similarity_column(
    similarity: npt.ArrayLike | SimilarityFn, n: int
) -> Callable[[int, npt.NDArray[np.bool_]], npt.NDArray[np.float64]]:
    """A function giving similarity(i, j) for every i against one picked j.
    A callable is asked only about candidates still open."""
    if callable(similarity):
        fn = similarity

        def ask(j: int, open_: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
            return np.array([fn(i, j) if open_[i] else 0.0 for i in range(n)], dtype=float)

        return ask
    matrix = np.asarray(similarity, dtype=float)
    if matrix.shape != (n, n):
        raise ValueError(f"similarity matrix has shape {matrix.shape}, expected ({n}, {n})")
    return lambda j, _open: matrix[:, j]
