"""bench/synthetic.py's comparison figures: the gap to the calibrated gate, and several
seeds' results pooled into one row."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import synthetic  # noqa: E402


def _result(auc: float, **refused: tuple[int, int]) -> dict[str, object]:
    return {
        "auc": auc,
        "outcome": {
            k: {"n": n, "gate": r, "generator": 0, "refused": r} for k, (r, n) in refused.items()
        },
    }


def test_the_gap_is_the_mean_difference_in_share_refused_over_the_kinds_both_have() -> None:
    mine = _result(0.8, answerable=(2, 10), near_miss=(5, 10), out_of_scope=(4, 4))
    reference = _result(0.9, answerable=(1, 10), near_miss=(8, 10))
    # answerable 0.2 against 0.1, near misses 0.5 against 0.8; out of scope not in both
    assert synthetic.gap(mine, reference) == pytest.approx((0.1 + 0.3) / 2)
    assert synthetic.gap(mine, mine) == 0.0


def test_seeds_pool_into_summed_counts_the_mean_auc_and_the_range_refused() -> None:
    runs = [
        _result(0.7, answerable=(1, 10), near_miss=(3, 5)),
        _result(0.9, answerable=(4, 10), near_miss=(2, 5)),
    ]
    row = synthetic.pooled(runs)
    assert row["auc"] == pytest.approx(0.8)
    assert row["outcome"]["answerable"]["refused"] == 5
    assert row["outcome"]["answerable"]["n"] == 20
    assert row["outcome"]["near_miss"] == {"n": 10, "gate": 5, "generator": 0, "refused": 5}
    assert row["answerable_refused_range"] == [0.1, 0.4]
    assert synthetic._range(row["answerable_refused_range"]) == "10%–40%"
