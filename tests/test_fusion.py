"""Tests for fusion.py: every fused score here is worked out by hand first."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from groundqa.errors import UsageError
from groundqa.fusion import (
    PRESETS,
    Fusion,
    cap_per_group,
    minmax,
    mmr,
    parse_fusion,
    rrf,
    weighted,
)

BM25 = [("a", 12.0), ("b", 7.5), ("c", 3.0)]
DENSE = [("b", 0.91), ("d", 0.88), ("a", 0.42)]


def keys(fused: list[tuple[str, float]]) -> list[str]:
    return [key for key, _ in fused]


# ------------------------------------------------------------------ rrf


def test_rrf_hand_computed_with_default_k() -> None:
    # a: ranks 1 and 3; b: ranks 2 and 1; c: rank 3 in bm25 only; d: rank 2 in dense only
    fused = dict(rrf([BM25, DENSE]))
    expected = {
        "a": Fraction(1, 61) + Fraction(1, 63),
        "b": Fraction(1, 62) + Fraction(1, 61),
        "c": Fraction(1, 63),
        "d": Fraction(1, 62),
    }
    assert fused == {key: pytest.approx(float(v), rel=1e-15) for key, v in expected.items()}
    assert keys(rrf([BM25, DENSE])) == ["b", "a", "d", "c"]


def test_rrf_small_k_exact_values() -> None:
    # k=1: rank r contributes 1/(1+r), so 1/2, 1/3, 1/4
    assert rrf([BM25, DENSE], k=1) == [
        ("b", pytest.approx(1 / 3 + 1 / 2)),
        ("a", 0.75),
        ("d", pytest.approx(1 / 3)),
        ("c", 0.25),
    ]


def test_rrf_ignores_scores_and_missing_keys_add_nothing() -> None:
    assert rrf([[("x", 100.0)], [("y", -5.0)]], k=1) == [("x", 0.5), ("y", 0.5)]
    assert rrf([[("x", 1.0), ("y", 1.0)], []], k=1) == [("x", 0.5), ("y", pytest.approx(1 / 3))]


def test_rrf_weights_scale_each_ranking() -> None:
    # k=1, weights (1, 3): a = 1/2 + 3/4 = 1.25; b = 1/3 + 3/2 = 1.8333...
    fused = rrf([BM25, DENSE], k=1, weights=[1.0, 3.0])
    assert keys(fused) == ["b", "a", "d", "c"]
    assert dict(fused) == {
        "b": pytest.approx(1 / 3 + 3 / 2),
        "a": 1.25,
        "d": pytest.approx(1.0),
        "c": 0.25,
    }


def test_rrf_zero_weight_switches_a_ranking_off() -> None:
    assert keys(rrf([BM25, DENSE], weights=[1.0, 0.0]))[:3] == ["a", "b", "c"]


def test_rrf_repeated_key_counts_once_at_its_best_rank() -> None:
    assert rrf([[("a", 3.0), ("a", 2.0), ("b", 1.0)]], k=1) == [
        ("a", 0.5),
        ("b", pytest.approx(1 / 3)),
    ]


def test_rrf_ties_broken_by_best_rank_then_key() -> None:
    # k=1: m and n are first once (1/2); a is third twice (1/4 + 1/4 = 1/2) so it follows them
    # although its key sorts first; x and y tie on everything but the key.
    r1 = [("m", 0.0), ("x", 0.0), ("a", 0.0)]
    r2 = [("n", 0.0), ("y", 0.0), ("a", 0.0)]
    assert rrf([r1, r2], k=1) == [
        ("m", 0.5),
        ("n", 0.5),
        ("a", 0.5),
        ("x", pytest.approx(1 / 3)),
        ("y", pytest.approx(1 / 3)),
    ]
    assert keys(rrf([r2, r1], k=1)) == ["m", "n", "a", "x", "y"]


def test_rrf_is_a_permutation_of_the_union_and_order_invariant() -> None:
    rankings = [
        [("a", 1.0), ("b", 0.9), ("c", 0.8), ("d", 0.1)],
        [("c", 5.0), ("e", 4.0), ("a", 3.0)],
        [("f", 0.3), ("b", 0.2), ("e", 0.1), ("c", 0.0)],
    ]
    reference = rrf(rankings)
    assert sorted(keys(reference)) == sorted({key for r in rankings for key, _ in r})
    for order in itertools.permutations(rankings):
        assert rrf(list(order)) == reference


def test_rrf_empty() -> None:
    assert rrf([]) == []
    assert rrf([[], []]) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k >= 1"),
        ({"weights": [1.0]}, "1 fusion weights for 2 rankings"),
        ({"weights": [1.0, -1.0]}, "non-negative"),
        ({"weights": [0.0, 0.0]}, "all zero"),
    ],
)
def test_rrf_rejects_bad_parameters(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rrf([BM25, DENSE], **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------ minmax and weighted


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([], []),
        ([4.0], [1.0]),
        ([2.0, 2.0, 2.0], [1.0, 1.0, 1.0]),
        ([10.0, 6.0, 2.0], [1.0, 0.5, 0.0]),
        ([-1.0, 1.0, 0.0], [0.0, 1.0, 0.5]),
    ],
)
def test_minmax(scores: list[float], expected: list[float]) -> None:
    assert minmax(scores) == expected


def test_minmax_refuses_non_finite() -> None:
    with pytest.raises(ValueError, match="finite"):
        minmax([1.0, float("nan")])


def test_weighted_preset_hand_worked() -> None:
    bm25 = [("a", 10.0), ("b", 6.0), ("c", 2.0)]  # normalised: a 1, b 0.5, c 0
    dense = [("b", 0.9), ("d", 0.8), ("a", 0.5)]  # normalised: b 1, d 0.75, a 0
    # a = .3*1 + .7*0 = .3; b = .3*.5 + .7*1 = .85; c = 0; d = .7*.75 = .525
    fused = PRESETS["weighted"].apply([bm25, dense])
    assert fused == [
        ("b", pytest.approx(0.85)),
        ("d", pytest.approx(0.525)),
        ("a", pytest.approx(0.3)),
        ("c", 0.0),
    ]
    assert fused == weighted([bm25, dense], [0.3, 0.7])


def test_weighted_missing_key_gets_zero_and_ties_break_by_rank_then_key() -> None:
    # both lists have no spread, so every key scores 1 * its weight
    fused = weighted([[("z", 5.0)], [("y", 1.0), ("x", 1.0)]], [1.0, 1.0])
    assert fused == [("y", 1.0), ("z", 1.0), ("x", 1.0)]


def test_weighted_rejects_bad_weights() -> None:
    with pytest.raises(ValueError, match="one per ranking"):
        weighted([BM25, DENSE], [1.0])
    with pytest.raises(ValueError, match="all zero"):
        weighted([BM25, DENSE], [0.0, 0.0])


# ------------------------------------------------------------------ Fusion and parse_fusion


def test_presets() -> None:
    assert PRESETS["rrf"] == Fusion("rrf", k=60)
    assert PRESETS["weighted"] == Fusion("weighted", weights=(0.3, 0.7))
    assert PRESETS["rrf"].apply([BM25, DENSE]) == rrf([BM25, DENSE])
    with pytest.raises(TypeError):
        PRESETS["mine"] = Fusion("rrf")  # type: ignore[index]


def test_fusion_validates_on_construction() -> None:
    with pytest.raises(ValueError, match="needs weights"):
        Fusion("weighted")
    with pytest.raises(ValueError, match="k >= 1"):
        Fusion("rrf", k=0)
    with pytest.raises(ValueError, match="unknown fusion method"):
        Fusion("sum")  # type: ignore[arg-type]


def test_rrf_fusion_with_weights() -> None:
    assert Fusion("rrf", k=1, weights=(1.0, 3.0)).apply([BM25, DENSE]) == rrf(
        [BM25, DENSE], k=1, weights=[1.0, 3.0]
    )


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("rrf", Fusion("rrf", k=60)),
        ("rrf:k=20", Fusion("rrf", k=20)),
        (" RRF:k=5 ", Fusion("rrf", k=5)),
        ("weighted", Fusion("weighted", weights=(0.3, 0.7))),
        ("weighted:0.5,0.5", Fusion("weighted", weights=(0.5, 0.5))),
        ("weighted:1, 0", Fusion("weighted", weights=(1.0, 0.0))),
    ],
)
def test_parse_fusion_valid(spec: str, expected: Fusion) -> None:
    assert parse_fusion(spec) == expected


@pytest.mark.parametrize(
    "spec",
    ["", "sum", "rrf:20", "rrf:k=", "rrf:k=0", "rrf:k=two", "weighted:", "weighted:a,b"],
)
def test_parse_fusion_invalid_lists_valid_forms(spec: str) -> None:
    with pytest.raises(UsageError, match=r"use one of: rrf, rrf:k=<int>, weighted, weighted:"):
        parse_fusion(spec)


def test_parse_fusion_invalid_weights_say_why() -> None:
    with pytest.raises(UsageError, match="non-negative"):
        parse_fusion("weighted:-1,2")
    with pytest.raises(UsageError, match="all zero"):
        parse_fusion("weighted:0,0")


# ------------------------------------------------------------------ cap_per_group


def doc_of(chunk_id: str) -> str:
    return chunk_id.split("#")[0]


def test_cap_per_group_keeps_order_and_caps() -> None:
    items = ["A#1", "A#2", "A#3", "B#1", "C#1", "B#2", "B#3"]
    assert cap_per_group(items, doc_of, cap=2, k=5) == ["A#1", "A#2", "B#1", "C#1", "B#2"]
    assert cap_per_group(items, doc_of, cap=1, k=3) == ["A#1", "B#1", "C#1"]


def test_cap_per_group_back_fills_when_the_corpus_is_small() -> None:
    items = ["A#1", "A#2", "A#3", "B#1", "A#4"]
    assert cap_per_group(items, doc_of, cap=1, k=4) == ["A#1", "B#1", "A#2", "A#3"]
    assert cap_per_group(items, doc_of, cap=1, k=10) == ["A#1", "B#1", "A#2", "A#3", "A#4"]


def test_cap_per_group_edges() -> None:
    assert cap_per_group([], doc_of, cap=1, k=3) == []
    assert cap_per_group(["A#1"], doc_of, cap=1, k=0) == []
    with pytest.raises(ValueError, match="cap"):
        cap_per_group(["A#1"], doc_of, cap=0, k=1)


# ------------------------------------------------------------------ mmr

# Candidate 11 is a near-duplicate of 10 (the most relevant); 12 is less relevant but new.
CANDIDATES = [10, 11, 12]
RELEVANCE = [1.0, 0.9, 0.6]
SIM = np.array(
    [
        [1.0, 0.95, 0.1],
        [0.95, 1.0, 0.1],
        [0.1, 0.1, 1.0],
    ]
)


def test_mmr_skips_the_near_duplicate_at_half_lambda() -> None:
    # after 10: 11 scores .5*.9 - .5*.95 = -.025, 12 scores .5*.6 - .5*.1 = .25
    assert mmr(CANDIDATES, RELEVANCE, SIM, k=2, lam=0.5) == [10, 12]
    assert mmr(CANDIDATES, RELEVANCE, SIM, k=3, lam=0.5) == [10, 12, 11]


def test_mmr_at_lambda_one_is_relevance_order() -> None:
    assert mmr(CANDIDATES, RELEVANCE, SIM, k=2, lam=1.0) == [10, 11]


def test_mmr_callable_matches_matrix_and_is_asked_by_position() -> None:
    asked: list[tuple[int, int]] = []

    def sim(i: int, j: int) -> float:
        asked.append((i, j))
        return float(SIM[i, j])

    assert mmr(CANDIDATES, RELEVANCE, sim, k=3, lam=0.5) == [10, 12, 11]
    assert all(0 <= i < 3 and 0 <= j < 3 for i, j in asked)


def test_mmr_edges() -> None:
    # default lam .7 after 10: 11 scores .63 - .285 = .345, 12 scores .42 - .03 = .39
    assert mmr(CANDIDATES, RELEVANCE, SIM, k=10) == [10, 12, 11]
    assert mmr(CANDIDATES, RELEVANCE, SIM, k=0) == []
    assert mmr([], [], np.zeros((0, 0)), k=3) == []
    # equal relevance and no similarity: ties go to the earlier candidate
    assert mmr(["x", "y"], [1.0, 1.0], np.eye(2), k=2) == ["x", "y"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"relevance": [1.0]}, "relevance scores"),
        ({"lam": 1.5}, "lam"),
        ({"k": -1}, "k must be"),
        ({"similarity": np.eye(2)}, "shape"),
        ({"relevance": [1.0, float("inf"), 0.0]}, "finite"),
    ],
)
def test_mmr_rejects_bad_input(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {
        "candidates": CANDIDATES,
        "relevance": RELEVANCE,
        "similarity": SIM,
        "k": 2,
        "lam": 0.5,
    }
    with pytest.raises(ValueError, match=message):
        mmr(**{**args, **kwargs})  # type: ignore[arg-type]
