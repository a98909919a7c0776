"""Metrics on hand-worked examples, then against trec_eval (pytrec-eval-terrier)."""

from __future__ import annotations

import math
import random

import pytest

from groundqa.evaluate import plateau
from groundqa.evaluate.metrics import (
    average_precision,
    dedupe,
    first_rank,
    hit_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)


def test_hand_worked_example() -> None:
    ranked = ["d3", "d1", "d7", "d2"]
    relevant = {"d1", "d2"}
    assert recall_at_k(ranked, relevant, 1) == 0.0
    assert recall_at_k(ranked, relevant, 2) == 0.5
    assert recall_at_k(ranked, relevant, 4) == 1.0
    assert hit_at_k(ranked, relevant, 2) == 1.0
    assert precision_at_k(ranked, relevant, 4) == 0.5
    assert first_rank(ranked, relevant) == 2
    assert reciprocal_rank(ranked, relevant) == 0.5
    assert reciprocal_rank(ranked, relevant, k=1) == 0.0
    # AP = (1/2 + 2/4) / 2
    assert average_precision(ranked, relevant) == pytest.approx(0.5)
    # DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(ranked, {"d1": 1, "d2": 1}, 10) == pytest.approx(expected)


def test_empty_cases() -> None:
    assert recall_at_k(["a"], set(), 3) == 0.0
    assert ndcg_at_k([], {"a": 1}, 10) == 0.0
    assert first_rank([], {"a"}) is None
    assert dedupe(["s1", "s2", "s1", "s3", "s2"]) == ["s1", "s2", "s3"]


def test_plateau_never_calls_the_edge_a_plateau() -> None:
    assert plateau([(1, 0.3), (3, 0.6), (5, 0.8), (10, 0.9)])["still_climbing"] is True
    flat = plateau([(1, 0.3), (3, 0.7), (5, 0.9), (10, 0.9), (20, 0.9)])
    assert flat == {
        "levels_off_at": 5,
        "still_climbing": False,
        "note": "levels off at k=5 (recall 0.900)",
    }


def test_against_trec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = random.Random(7)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(40):
        docs = [f"d{i}" for i in range(30)]
        qrels[f"q{q}"] = {d: rng.choice([1, 2]) for d in rng.sample(docs, rng.randint(1, 14))}
        run[f"q{q}"] = {d: rng.random() for d in rng.sample(docs, 20)}
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut.10", "recall.5", "recip_rank", "map_cut.10"}
    )
    ref = evaluator.evaluate(run)
    for q, scores in run.items():
        ranked = [d for d, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))]
        relevant = {d for d, g in qrels[q].items() if g > 0}
        gains = {d: float(g) for d, g in qrels[q].items()}
        assert ndcg_at_k(ranked, gains, 10) == pytest.approx(ref[q]["ndcg_cut_10"], abs=1e-6)
        assert recall_at_k(ranked, relevant, 5) == pytest.approx(ref[q]["recall_5"], abs=1e-6)
        assert reciprocal_rank(ranked, relevant) == pytest.approx(ref[q]["recip_rank"], abs=1e-6)
        assert average_precision(ranked, relevant, 10) == pytest.approx(
            ref[q]["map_cut_10"], abs=1e-6
        )


def test_gate_sweep_counts_refusals_below_each_threshold() -> None:
    from groundqa.evaluate.metrics import gate_sweep

    scores = [("answerable", 0.9), ("answerable", 0.3), ("out_of_scope", 0.1), ("near_miss", 0.5)]
    rows = gate_sweep(scores, [0.2, 0.4, 0.6])
    assert rows[0] == {
        "threshold": 0.2,
        "false_refusal": 0.0,
        "refused_out_of_scope": 1.0,
        "refused_near_miss": 0.0,
    }
    assert rows[1]["false_refusal"] == 0.5 and rows[2]["refused_near_miss"] == 1.0
    assert gate_sweep([("answerable", 0.5)], [0.5])[0] == {"threshold": 0.5, "false_refusal": 0.0}
