"""bench/outcomes.py over the example corpus: both rows from one pass, and the baseline
(today's two outcomes) is the three-outcome row with its cautious answers refused."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import REGPACK, REGPACK_PROBES, widen_the_band

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import outcomes  # noqa: E402
from groundqa.engine import Engine  # noqa: E402
from groundqa.evaluate import evaluate_probes, load_probes  # noqa: E402
from groundqa.ingestion import ingest  # noqa: E402


def test_the_baseline_refuses_what_the_band_answers_with_caution(tmp_path: Path) -> None:
    index = tmp_path / "index"
    ingest([REGPACK], index, dense=None)
    widen_the_band(index, threshold=0.9, floor=0.3)  # a band wide enough to hold some
    results = evaluate_probes(Engine.open(index), load_probes(REGPACK_PROBES)).results
    three = outcomes.counts(results, banded=True)
    two = outcomes.counts(results, banded=False)
    assert sum(o["cautious"] for o in three.values()) > 0
    for kind, o in three.items():
        b = two[kind]
        assert o["confident"] + o["cautious"] + o["refused"] == o["n"] == b["n"]
        assert b["cautious"] == 0 and b["confident"] == o["confident"]
        assert b["refused"] == o["refused"] + o["cautious"]
        assert b["fact"] <= o["fact"] <= o["checked"]


def test_the_reliability_bins_cover_every_question_once() -> None:
    index_results = []
    for score, answerable in (
        (0.05, False),
        (0.15, False),
        (0.55, True),
        (0.95, True),
        (1.0, True),
    ):
        index_results.append(_result(score, answerable))
    bins = outcomes.reliability(index_results)
    assert [b["n"] for b in bins] == [2, 1, 2]
    assert [b["answerable_share"] for b in bins] == [0.0, 1.0, 1.0]
    assert bins[-1]["mean_confidence"] == pytest.approx(0.975)


def _result(score: float, answerable: bool) -> outcomes.ProbeResult:
    from groundqa.evaluate.probes import Probe

    probe = Probe(
        id=f"p{score}",
        question="q",
        expected=("s",) if answerable else (),
        kind="answerable" if answerable else "out_of_scope",
    )
    return outcomes.ProbeResult(
        probe=probe,
        ranked_sections=(),
        chunk_sections=(),
        chunk_docs=(),
        rank=None,
        refused=not answerable,
        refused_by=None,
        answer="",
        contains=None,
        grounded=None,
        gate_score=score,
        latency_ms=1.0,
    )
