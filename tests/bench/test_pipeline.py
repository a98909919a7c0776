"""bench/pipeline.py's comparison: which figures count as changed, which probes moved, and
that each side really imports its own source. The measuring itself is the benchmark's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import pipeline  # noqa: E402


def test_figures_equal_to_four_decimals_are_unchanged_and_others_changed() -> None:
    before = {"bm25": {"mrr": 0.85801, "ndcg@10": 0.5, "recall@1": 0.7692}}
    after = {"bm25": {"mrr": 0.85804, "ndcg@10": 0.5001, "recall@1": 0.7692}}
    rows = pipeline.compare_metrics(before, after)
    assert [(r["metric"], r["status"]) for r in rows] == [
        ("mrr", "unchanged"),
        ("ndcg@10", "changed"),
        ("recall@1", "unchanged"),
    ]
    changed = rows[1]
    assert (changed["before"], changed["after"]) == (0.5, 0.5001)
    assert changed["explanation"] is None
    assert "explanation" not in rows[0]


def test_timing_is_shown_not_judged_and_one_sided_figures_are_named() -> None:
    before = {"bm25": {"latency_ms_p50": 13.4, "answer_grounded": 0.79}}
    after = {
        "bm25": {"latency_ms_p50": 5.1, "answer_in_expected": 0.7},
        "dense": {"mrr": 0.9},
    }
    rows = {
        (r["retriever"], r["metric"]): r["status"] for r in pipeline.compare_metrics(before, after)
    }
    assert rows == {
        ("bm25", "latency_ms_p50"): "timing",
        ("bm25", "answer_grounded"): "before only",
        ("bm25", "answer_in_expected"): "after only",
        ("dense", "mrr"): "after only",
    }


def test_a_retriever_specific_explanation_wins_over_the_metric_wide_one() -> None:
    before = {"bm25": {"false_refusal": 0.04}, "dense": {"false_refusal": 0.08}}
    after = {"bm25": {"false_refusal": 0.02}, "dense": {"false_refusal": 0.06}}
    explained = {"false_refusal": "the gate reads the retrieval", "bm25/false_refusal": "bm25 only"}
    rows = pipeline.compare_metrics(before, after, explained=explained)
    assert [r["explanation"] for r in rows] == ["bm25 only", "the gate reads the retrieval"]


def test_eval_metrics_reads_either_json_shape_and_keeps_numbers_only() -> None:
    probes = {"metrics": {"bm25": {"mrr": 0.5, "n": 3, "note": "x", "flag": True}}}
    beir_old = {"retrievers": {"dense": {"ndcg@10": 0.6}}, "index_reused": True}
    assert pipeline.eval_metrics(probes) == {"bm25": {"mrr": 0.5, "n": 3}}
    assert pipeline.eval_metrics(beir_old) == {"dense": {"ndcg@10": 0.6}}
    # The new --beir shape names both; `metrics` is read.
    both = {"metrics": {"bm25": {"mrr": 0.1}}, "retrievers": {"bm25": {"mrr": 0.2}}}
    assert pipeline.eval_metrics(both) == {"bm25": {"mrr": 0.1}}


def _probe(pid: str, **kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": pid,
        "rank": 1,
        "refused": False,
        "refused_by": None,
        "gate_score": 0.8,
        "answer": "A.",
    }
    return {**base, **kw}


def test_probe_diffs_lists_each_kind_of_move() -> None:
    before = {
        "bm25": [
            _probe("a1"),
            _probe("a2"),
            _probe("a3", gate_score=0.51234),
            _probe("a4"),
            _probe("gone"),
        ],
        "dense": [_probe("a1")],
    }
    after = {
        "bm25": [
            _probe("a1", rank=2),
            _probe("a2", refused=True, refused_by="gate", answer=""),
            _probe("a3", gate_score=0.51231),  # the same to 4 decimals
            _probe("a4", gate_score=0.7),
            _probe("new"),
        ]
    }
    assert pipeline.probe_diffs(before, after) == {
        "bm25": {
            "rank": ["a1"],
            "refusal": ["a2"],
            "gate score": ["a4"],
            "answer": ["a2"],
            "one side only": ["gone", "new"],
        }
    }


def test_merge_rounds_takes_each_questions_median() -> None:
    assert pipeline.merge_rounds([[1.0, 5.0], [3.0, 1.0], [2.0, 9.0]]) == [2.0, 5.0]


def test_metrics_table_prints_a_figure_once_when_unchanged() -> None:
    rows = pipeline.compare_metrics(
        {"bm25": {"mrr": 0.5, "latency_ms_p50": 9.04}, "dense": {"mrr": 0.25, "queries": 300}},
        {"bm25": {"mrr": 0.5001, "latency_ms_p50": 9.01}, "dense": {"mrr": 0.25, "queries": 300}},
    )
    assert pipeline.metrics_table(rows) == [
        "| metric | `bm25` | `dense` | |",
        "|---|---:|---:|---|",
        "| mrr | 0.5000 → 0.5001 | 0.2500 | **changed** |",
        "| latency_ms_p50 | 9.0 | — | timing |",
        "| queries | — | 300 | unchanged |",
    ]


def test_a_side_whose_groundqa_comes_from_elsewhere_is_refused(tmp_path: Path) -> None:
    # An empty folder on PYTHONPATH: `import groundqa` falls through to the installed copy.
    with pytest.raises(pipeline.SideFailed, match="imports groundqa from"):
        pipeline.Side("before", "empty", tmp_path).check_import()
    pipeline.Side("after", "working tree", ROOT / "src").check_import()
