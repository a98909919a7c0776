"""Every record survives a JSON round trip unchanged, and ids depend only on content."""

from __future__ import annotations

import json

import pytest

from groundqa.models import (
    REFUSAL,
    Answer,
    Chunk,
    Citation,
    Document,
    Finding,
    GateDecision,
    Hit,
    Section,
    breadcrumb,
    stable_id,
    uri_for,
)


def _chunk(**over: object) -> Chunk:
    base: dict[str, object] = dict(
        chunk_id="c1",
        doc_id="act.md",
        section_id="act.md#3 Thresholds",
        title="Emissions Act",
        section_path=("3 Thresholds",),
        text="A facility emitting 25,000 t CO2-e must report.",
        source="/corpus/act.md",
        page=4,
        part=1,
        parts=2,
        metadata={"jurisdiction": "federal", "frameworks": ["NEER", "GHG"]},
    )
    base.update(over)
    return Chunk(**base)  # type: ignore[arg-type]


def _roundtrip(obj: object) -> object:
    data = json.loads(json.dumps(obj.to_dict()))  # type: ignore[attr-defined]
    return type(obj).from_dict(data)  # type: ignore[attr-defined]


def test_section_and_document_round_trip() -> None:
    section = Section("act.md#Intro", "Intro", "Body text.", ("Intro",), 2, {"clause": "1"})
    doc = Document("act.md", "Act", "/c/act.md", "markdown", (section,), {"state": "North"}, 3)
    assert _roundtrip(section) == section
    assert _roundtrip(doc) == doc


def test_section_pages_round_trip_and_stay_out_of_the_dict_when_absent() -> None:
    paged = Section("a.pdf#2 Scope", "2 Scope", "x" * 50, ("2 Scope",), 3, {}, ((0, 3), (20, 4)))
    assert _roundtrip(paged) == paged
    assert paged.to_dict()["page_starts"] == [[0, 3], [20, 4]]
    assert [paged.page_at(o) for o in (0, 19, 20, 49)] == [3, 3, 4, 4]
    plain = Section("act.md#Intro", "Intro", "Body text.", ("Intro",), 2)
    # Absent, so a stored corpus without pages keeps its fingerprint.
    assert "page_starts" not in plain.to_dict()
    assert plain.page_at(5) == 2 and _roundtrip(plain) == plain


def test_chunk_hit_citation_round_trip() -> None:
    chunk = _chunk()
    hit = Hit(chunk, 7.25, 1, "bm25")
    cit = Citation(
        1,
        "c1",
        "act.md",
        "act.md#3 Thresholds",
        "Emissions Act",
        "Emissions Act > 3 Thresholds",
        4,
        "file:///corpus/act.md#page=4",
        "snippet",
    )
    assert _roundtrip(chunk) == chunk
    assert _roundtrip(hit) == hit
    assert _roundtrip(cit) == cit


def test_answer_round_trip_including_refusal() -> None:
    hit = Hit(_chunk(), 3.5, 1)
    gate = GateDecision(True, "covered", 0.8, 0.6, {"coverage": 0.8, "top_score": 3.5})
    cit = Citation(1, "c1", "act.md", "act.md#3 Thresholds", "Emissions Act", "x", None, "", "s")
    answer = Answer(
        "q?", "A facility must report. [1]", False, (cit,), (hit,), gate, timings_ms={"total": 1.5}
    )
    refusal = Answer(
        "q?", REFUSAL, True, (), (hit,), GateDecision(False, "low", 0.1, 0.6), refused_by="gate"
    )
    assert _roundtrip(answer) == answer
    assert _roundtrip(refusal) == refusal


def test_answer_json_has_the_contract_fields() -> None:
    hit = Hit(_chunk(), 3.5, 1)
    answer = Answer("q?", "a [1]", False, (), (hit,), GateDecision(True, "ok", 1, 0.6))
    data = answer.to_dict()
    assert {"question", "answer", "refused", "citations", "passages", "audit", "timings_ms"} <= set(
        data
    )
    passage = data["passages"][0]
    assert {"chunk_id", "doc_id", "section", "score", "text"} <= set(passage)
    assert passage["section"] == "Emissions Act > 3 Thresholds"


def test_finding_round_trip_and_bad_severity() -> None:
    f = Finding("REVIEW", "short-section", "Too short.", "/c/a.csv", "4.1", "4.1", 7, "x")
    assert _roundtrip(f) == f
    with pytest.raises(ValueError):
        Finding.from_dict({**f.to_dict(), "severity": "WARN"})


def test_stable_id_depends_only_on_parts() -> None:
    assert stable_id("a", 0, "text") == stable_id("a", 0, "text")
    assert stable_id("a", 0, "text") != stable_id("a", 1, "text")
    assert len(stable_id("x")) == 16


def test_breadcrumb_and_uri() -> None:
    assert breadcrumb("Act", ("Part 2", "2.1 Scope")) == "Act > Part 2 > 2.1 Scope"
    assert breadcrumb("", ("Intro",)) == "Intro"
    assert uri_for("/x/a.pdf", 3) == "file:///x/a.pdf#page=3"
    assert uri_for("https://e.org/a.pdf", None) == "https://e.org/a.pdf"
    assert uri_for("", 2) == ""
