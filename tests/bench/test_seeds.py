"""bench/seeds.py converts the seed question files; bench/city_guides.probes.jsonl is sound.

Both read ../shared and skip with a message where it is absent. Retrieval numbers
are measured by the benchmark, not asserted here: the harness run only has to work.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from groundqa.engine import Engine
from groundqa.evaluate import Probe, evaluate_probes, load_probes
from groundqa.ingestion import ingest
from groundqa.loaders import load

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[2].parent / "shared"
PROBE_FILE = ROOT / "bench" / "city_guides.probes.jsonl"

sys.path.insert(0, str(ROOT / "bench"))

import seeds  # noqa: E402

pytestmark = pytest.mark.shared


def shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs {path} (the ../shared data folder beside the project)")
    return path


def guide_sections() -> dict[str, str]:
    guides = shared("corpora", "city_guides")
    return {s.section_id: s.text for d in load([guides]).documents for s in d.sections}


def seed_questions() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        shared("corpora", "city_guides", "questions.json").read_text("utf-8")
    )
    return data


# --- natech ---------------------------------------------------------------------------


def test_natech_probes_name_real_chapters() -> None:
    probes = seeds.natech_probes(shared("corpora", "natech", "probes.json"))
    assert len(probes) == 12
    assert all(p.kind == "answerable" and p.expected for p in probes)
    assert [p.id for p in probes][:2] == ["natech-01", "natech-02"]
    csv_ids = {
        s.section_id
        for d in load([shared("corpora", "natech", "guidance.csv")]).documents
        for s in d.sections
    }
    missing = sorted({e for p in probes for e in p.expected} - csv_ids)
    assert not missing, f"chapters not in guidance.csv: {missing}"


def test_missing_seed_file_names_the_path(tmp_path: Path) -> None:
    absent = tmp_path / "nowhere" / "probes.json"
    with pytest.raises(FileNotFoundError, match=re.escape(str(absent))):
        seeds.natech_probes(absent)
    guides = shared("corpora", "city_guides")
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "questions.json"))):
        seeds.city_guides_probes(tmp_path / "questions.json", guides)
    questions = shared("corpora", "city_guides", "questions.json")
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "no_guides"))):
        seeds.city_guides_probes(questions, tmp_path / "no_guides")


# --- city guides questions.json ---------------------------------------------------------


def test_city_questions_convert_by_kind() -> None:
    probes = seeds.city_guides_probes(
        shared("corpora", "city_guides", "questions.json"), shared("corpora", "city_guides")
    )
    kinds = Counter(p.kind for p in probes)
    assert kinds == {"answerable": 10, "near_miss": 5, "out_of_scope": 5}
    ids = [p.id for p in probes]
    assert len(set(ids)) == len(ids)
    assert {"city-a01", "city-n01", "city-o01"} <= set(ids)
    for p in probes:
        if p.kind == "answerable":
            assert len(p.answer_contains) == 1
        else:
            assert not p.expected and not p.answer_contains


def test_city_expected_sections_contain_the_expected_answer() -> None:
    sections = guide_sections()
    probes = seeds.city_guides_probes(
        shared("corpora", "city_guides", "questions.json"), shared("corpora", "city_guides")
    )
    answerable = [p for p in probes if p.kind == "answerable"]
    for p in answerable:
        (expects,) = p.answer_contains
        for section_id in p.expected:
            assert seeds.normalise(expects) in seeds.normalise(sections[section_id]), (
                p.id,
                section_id,
            )
    empty = [p.id for p in answerable if not p.expected]
    # Reported rather than asserted to zero: an `expects` string the guides never
    # contain is a fact about the seed data, and the probe still checks the answer.
    print(f"city questions with no expected section: {len(empty)} {empty}")
    assert len(empty) * 2 < len(answerable), f"most seed answers found nowhere: {empty}"


def test_city_mapping_prefers_the_town_the_question_names() -> None:
    probes = {
        p.id: p
        for p in seeds.city_guides_probes(
            shared("corpora", "city_guides", "questions.json"), shared("corpora", "city_guides")
        )
    }
    # "1pm" is in both the Brightwater guide and the regional eating guide; the
    # question names Brightwater, so only its section is kept.
    tuesday = next(p for p in probes.values() if "Tuesday market" in p.question)
    assert tuesday.expected == ("guide_brightwater.md#Eat and drink",)


def test_expected_sections_rules() -> None:
    documents = list(load([shared("corpora", "city_guides")]).documents)
    # No town named: every section with the string is kept.
    anywhere = seeds.expected_sections("finished by 1pm", "When does the market end?", documents)
    assert set(anywhere) == {"guide_brightwater.md#Eat and drink", "guide_eating.md#Markets"}
    # A line wrap inside the guide text does not hide a match.
    assert "guide_eating.md#Markets" in seeds.expected_sections(
        "sets up at 7am in the square", "market?", documents
    )
    assert seeds.expected_sections("a string no guide contains", "Brightwater?", documents) == ()


def test_write_probes_round_trips(tmp_path: Path) -> None:
    probes = [
        Probe(id="a", question="Q one?", expected=("x#y",), group="g", answer_contains=("1pm",)),
        Probe(id="n", question="Q two?", kind="near_miss"),
    ]
    out = tmp_path / "sub" / "p.jsonl"
    seeds.write_probes(probes, out)
    assert load_probes(out) == probes


# --- bench/city_guides.probes.jsonl ------------------------------------------------------


def test_probe_file_is_sound() -> None:
    probes = load_probes(PROBE_FILE)
    sections = guide_sections()
    kinds = Counter(p.kind for p in probes)
    assert kinds["answerable"] >= 20
    assert kinds["near_miss"] >= 8
    assert kinds["out_of_scope"] >= 8
    answerable = [p for p in probes if p.kind == "answerable"]
    for p in answerable:
        assert len(p.expected) == 1, p.id
        assert 1 <= len(p.answer_contains) <= 2, p.id
        (section_id,) = p.expected
        assert section_id in sections, (p.id, section_id)
        for needle in p.answer_contains:
            assert needle.casefold() in sections[section_id].casefold(), (p.id, needle)
    for p in probes:
        if p.kind != "answerable":
            assert not p.expected and not p.answer_contains, p.id
    guides = {p.expected[0].split("#", 1)[0] for p in answerable}
    assert len(guides) >= 10
    groups: dict[str, list[Probe]] = {}
    for p in answerable:
        assert p.group, p.id
        groups.setdefault(p.group, []).append(p)
    paraphrased = [g for g in groups.values() if len(g) >= 2]
    assert len(paraphrased) >= 6
    for members in paraphrased:
        assert len(members) <= 3
        assert len({m.expected for m in members}) == 1
        assert len({m.question for m in members}) == len(members)


def test_probe_file_does_not_reuse_seed_questions() -> None:
    data = seed_questions()
    seed = {
        item["question"]
        for key in ("questions", "alt_questions_other_student")
        for item in data[key]
    }
    seed |= set(data["near_miss"]) | set(data["out_of_scope_starter"])
    seed_norm = {seeds.normalise(q) for q in seed}
    reused = [p.id for p in load_probes(PROBE_FILE) if seeds.normalise(p.question) in seed_norm]
    assert not reused


def test_harness_runs_on_the_probe_file(tmp_path: Path) -> None:
    guides = shared("corpora", "city_guides")
    index = tmp_path / "index"
    ingest([guides], index)
    engine = Engine.open(index)
    report = evaluate_probes(engine, load_probes(PROBE_FILE))
    assert "recall@1" in report.metrics
    assert 0.0 <= report.metrics["recall@1"] <= 1.0
