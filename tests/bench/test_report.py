"""bench/report.py lays out the results pages' tables and bench/paired.py compares two
retrieval runs question by question; both are checked here on figures made up for it."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import paired
import report


def test_a_table_puts_figures_right_and_its_first_column_left() -> None:
    lines = report.table(["set", "recall@10", "n"], [["ObliQA dev", "0.7511", 2788]])
    assert lines == [
        "| set | recall@10 | n |",
        "|---|---:|---:|",
        "| ObliQA dev | 0.7511 | 2788 |",
    ]


def test_a_table_takes_one_alignment_per_column_and_refuses_any_other_count() -> None:
    assert report.table(["a", "b"], [], "ll")[1] == "|---|---|"
    assert report.table(["a", "b", "c"], [["x", "y", "z"]], "rlr")[1] == "|---:|---|---:|"
    with pytest.raises(ValueError, match="3 columns but 2 alignments"):
        report.table(["a", "b", "c"], [], "lr")


def test_a_share_reads_as_a_percentage_or_a_dash() -> None:
    assert report.pct(0.125) == "12.5%"
    assert report.pct(1 / 3, digits=0) == "33%"
    assert report.pct(None) == report.NONE == "—"


def test_a_difference_is_real_only_where_its_interval_leaves_out_zero() -> None:
    groups = [f"q{i}" for i in range(40)]
    base = [0.0, 1.0] * 20
    same = paired.difference(base, base, groups)
    assert same == {"mean": 0.0, "interval": [0.0, 0.0], "real": False}
    better = paired.difference([1.0] * 40, base, groups)
    assert better["mean"] == 0.5 and better["real"]
    assert 0.0 < better["interval"][0] <= 0.5 <= better["interval"][1]
    mixed = paired.difference([1.0, 0.0] * 20, base, groups)  # as often better as worse
    assert mixed["mean"] == 0.0 and not mixed["real"]
    assert mixed["interval"][0] < 0.0 < mixed["interval"][1]


def test_paired_cells_show_the_run_and_the_difference_with_its_interval() -> None:
    assert paired.pair({"recall@10": 0.85, "ndcg@10": 0.73141}) == "0.8500 / 0.7314"
    cell = paired.difference_cell({"mean": 0.0186, "interval": [0.0098, 0.0273], "real": True})
    assert cell == "+0.0186 [+0.0098, +0.0273] (real)"
    assert paired.difference_cell({"mean": -0.01, "interval": [-0.03, 0.01], "real": False}, 2) == (
        "-0.01 [-0.03, +0.01]"
    )
    assert paired.mean([]) == 0.0 and paired.mean([0.5, 1.0]) == 0.75
