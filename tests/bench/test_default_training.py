"""bench/default_training.py's rule for adopting the refit, and how it reads its training
sets into passages. The fitting and measuring are the benchmark's."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import default_training as dt  # noqa: E402

CITY = ("city guides, seed questions", "city guides, our probes")


def _o(answerable: int, near: int | None = None, out: int | None = None) -> dict[str, Any]:
    o = {"answerable": {"n": 50, "refused": answerable}}
    if near is not None:
        o["near_miss"] = {"n": 10, "refused": near}
    if out is not None:
        o["out_of_scope"] = {"n": 5, "refused": out}
    return o


def _results(refit_city: int, refit_near: int, refit_out: int, refit_obliqa: int) -> dict[str, Any]:
    shipped = {
        CITY[0]: _o(2, 4, 5),
        CITY[1]: _o(10, 6, 5),
        "example corpus": _o(2, 5, 5),
        "obliqa dev": _o(30),
    }
    refit = {
        CITY[0]: _o(2, 4, 5),
        CITY[1]: _o(refit_city, refit_near, refit_out),
        "example corpus": _o(2, 5, 5),
        "obliqa dev": _o(refit_obliqa),
    }
    return {k: {dt.SHIPPED: shipped[k], dt.REFIT: refit[k]} for k in shipped}


def test_a_refit_better_on_both_sets_and_no_worse_at_refusing_is_adopted() -> None:
    verdict = dt.adopt(_results(refit_city=9, refit_near=6, refit_out=5, refit_obliqa=20))
    assert all(verdict.values()), verdict


def test_each_clause_of_the_rule_can_refuse_the_refit() -> None:
    city_worse = dt.adopt(_results(refit_city=11, refit_near=6, refit_out=5, refit_obliqa=20))
    assert not city_worse["city guides false refusals fall"]
    assert city_worse["ObliQA dev false refusals fall"]
    obliqa_same = dt.adopt(_results(refit_city=9, refit_near=6, refit_out=5, refit_obliqa=30))
    assert not obliqa_same["ObliQA dev false refusals fall"]
    lets_one_through = dt.adopt(_results(refit_city=9, refit_near=6, refit_out=4, refit_obliqa=20))
    assert not lets_one_through["every out-of-scope question still refused"]


def test_near_misses_may_fall_by_three_and_no_more() -> None:
    three = dt.adopt(_results(refit_city=9, refit_near=3, refit_out=5, refit_obliqa=20))
    four = dt.adopt(_results(refit_city=9, refit_near=2, refit_out=5, refit_obliqa=20))
    assert three["near misses refused fall by at most 3"]
    assert not four["near misses refused fall by at most 3"]


def test_selqa_sections_become_one_passage_each_with_their_questions(tmp_path: Path) -> None:
    causes = ["The moon pulls.", "So does the sun."]

    def item(section: str, candidates: list[str], question: str) -> dict[str, Any]:
        return {
            "article": "Tides",
            "section": section,
            "candidates": candidates,
            "question": question,
        }

    items = [
        item("Causes", causes, "What causes tides?"),
        item("Causes", causes, "Does the sun matter?"),
        item("Records", ["The highest is in Fundy."], "Where are tides highest?"),
    ]
    path = tmp_path / "selqa.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    passages = {p.title: p for p in dt._selqa(path)}
    assert set(passages) == {"Tides: Causes", "Tides: Records"}
    first = passages["Tides: Causes"]
    assert first.text == "The moon pulls. So does the sun."
    assert first.questions == ("What causes tides?", "Does the sun matter?")
    assert passages["Tides: Records"].id != first.id


def test_policyqa_segments_become_passages_under_their_policy(tmp_path: Path) -> None:
    data = {
        "data": [
            {
                "title": "example.com",
                "paragraphs": [
                    {"context": "We keep logs for 30 days.", "qas": [{"question": "How long?"}]},
                    {"context": "We sell no data.", "qas": [{"question": "Do you sell it?"}]},
                ],
            }
        ]
    }
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    passages = dt._policyqa(path)
    assert [(p.id, p.title, p.questions) for p in passages] == [
        ("policyqa-0-0", "example.com", ("How long?",)),
        ("policyqa-0-1", "example.com", ("Do you sell it?",)),
    ]


def test_a_quarter_or_so_of_the_passages_is_left_out_and_always_the_same_ones() -> None:
    ids = [f"policyqa-{p}-{s}" for p in range(20) for s in range(30)]
    left = [i for i in ids if dt._left_out(i)]
    assert 0.2 < len(left) / len(ids) < 0.3
    assert left == [i for i in ids if dt._left_out(i)]
