"""Versions in force: each document's dates and successor, read on a given day.

Pure: a `Versions` is built from (doc id, title, source, metadata) rows written
in the test. How retrieval and answers use it is in test_regulatory.py.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from groundqa.loaders import load
from groundqa.models import Chunk, Document, Section
from groundqa.validate import validate
from groundqa.versions import Versions, parse_date, version_findings

D = dt.date

ROWS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "noise_2015.md",
        "Quiet Hours Act 2015",
        "/c/noise_2015.md",
        {"effective_date": "2015-07-01", "superseded_by": "noise_2023.md"},
    ),
    (
        "noise_2023.md",
        "Quiet Hours Act 2023",
        "/c/noise_2023.md",
        {"effective_date": D(2023, 7, 1)},
    ),
    (
        "future_levy.md",
        "Leaf Blower Levy Act 2099",
        "/c/future_levy.md",
        {"effective_date": "2099-01-01"},
    ),
    (
        "lapsed.md",
        "Drought Order 2010",
        "/c/lapsed.md",
        {"effective_from": "2010-01-01", "effective_to": "2020-06-30"},
    ),
    ("orphan.md", "Old Rules", "/c/orphan.md", {"superseded_by": "Some Later Act"}),
    # a chain linked by title, then by file stem
    ("a.md", "A Code", "/c/a.md", {"superseded_by": "b code"}),
    ("b.md", "B Code", "/c/b.md", {"superseded_by": "c", "effective_date": "2020-01-01"}),
    ("c.md", "C Code", "/c/c.md", {"effective_date": "2022-01-01"}),
    ("plain.md", "Plain Notes", "/c/plain.md", {}),
]
VERSIONS = Versions(ROWS)


def test_the_quiet_hours_acts_on_either_side_of_the_change() -> None:
    versions = VERSIONS
    assert versions.status("noise_2015.md", dt.date(2024, 1, 1)) == "superseded"
    assert versions.status("noise_2015.md", dt.date(2020, 1, 1)) == "in force"
    assert versions.status("noise_2023.md", dt.date(2020, 1, 1)) == "not yet in force"
    assert versions.family("noise_2023.md") == ["noise_2015.md", "noise_2023.md"]
    # the day the successor takes effect, the old act is superseded
    assert versions.status("noise_2015.md", D(2023, 6, 30)) == "in force"
    assert versions.status("noise_2015.md", D(2023, 7, 1)) == "superseded"
    assert versions.status("noise_2023.md", D(2023, 7, 1)) == "in force"


@pytest.mark.parametrize(
    ("doc_id", "day", "status"),
    [
        ("future_levy.md", D(2098, 12, 31), "not yet in force"),
        ("future_levy.md", D(2099, 1, 1), "in force"),
        ("lapsed.md", D(2009, 12, 31), "not yet in force"),
        ("lapsed.md", D(2020, 6, 30), "in force"),  # effective_to is the last day it applies
        ("lapsed.md", D(2020, 7, 1), "ended"),
        ("orphan.md", D(1990, 1, 1), "superseded"),  # its successor is not in the corpus
        ("plain.md", D(2024, 1, 1), "in force"),
        ("not-in-the-index.md", D(2024, 1, 1), "in force"),
    ],
)
def test_status_on_a_day(doc_id: str, day: dt.date, status: str) -> None:
    assert VERSIONS.status(doc_id, day) == status


def test_successors_resolve_by_id_title_or_file_stem_and_link_whole_families() -> None:
    a, b = VERSIONS.get("a.md"), VERSIONS.get("b.md")
    assert a is not None and (a.successor, a.successor_known) == ("b.md", True)
    assert b is not None and (b.successor, b.successor_known) == ("c.md", True)
    orphan = VERSIONS.get("orphan.md")
    assert orphan is not None and (orphan.successor, orphan.successor_known) == (
        "Some Later Act",
        False,
    )
    for member in ("a.md", "b.md", "c.md"):
        assert VERSIONS.family(member) == ["a.md", "b.md", "c.md"]
    assert VERSIONS.family("plain.md") == ["plain.md"]
    assert VERSIONS.family("orphan.md") == ["orphan.md"]
    assert VERSIONS.in_force_of("a.md", D(2021, 1, 1)) == "b.md"
    assert VERSIONS.in_force_of("a.md", D(2023, 1, 1)) == "c.md"
    # in 2019 b (effective 2020) has not taken effect: a, which it replaces, still applies
    assert VERSIONS.in_force_of("c.md", D(2019, 1, 1)) == "a.md"


def test_the_version_in_force_is_preferred_only_when_it_matched_too() -> None:
    doc_of = ["noise_2015.md", "noise_2023.md", "plain.md"]
    ranked = [(0, 3.0), (1, 2.0), (2, 1.0)]
    assert VERSIONS.prefer(ranked, doc_of, D(2024, 1, 1)) == [(1, 2.0), (2, 1.0)]
    assert VERSIONS.prefer(ranked, doc_of, D(2019, 1, 1)) == [(0, 3.0), (2, 1.0)]
    # only the old version matched: it is kept (and the answer gets a note)
    assert VERSIONS.prefer([(0, 3.0), (2, 1.0)], doc_of, D(2024, 1, 1)) == [(0, 3.0), (2, 1.0)]
    # a corpus without dates is left alone
    undated = Versions([("x.md", "X", "x.md", {}), ("y.md", "Y", "y.md", {})])
    assert not undated.active
    assert undated.prefer([(1, 2.0), (0, 1.0)], ["x.md", "y.md"], D(2024, 1, 1)) == [
        (1, 2.0),
        (0, 1.0),
    ]


def test_notes_name_the_version_and_why() -> None:
    assert VERSIONS.note("noise_2023.md", D(2024, 1, 1)) is None
    assert VERSIONS.note("noise_2015.md", D(2024, 1, 1)) == (
        "Quiet Hours Act 2015 is superseded by Quiet Hours Act 2023 from 2023-07-01 "
        "(answer as of 2024-01-01)"
    )
    assert VERSIONS.note("future_levy.md", D(2024, 1, 1)) == (
        "Leaf Blower Levy Act 2099 is not yet in force on 2024-01-01 (it takes effect 2099-01-01)"
    )
    assert VERSIONS.note("lapsed.md", D(2024, 1, 1)) == (
        "Drought Order 2010 ceased to apply on 2020-06-30 (answer as of 2024-01-01)"
    )
    assert VERSIONS.note("orphan.md", D(2024, 1, 1)) == (
        "Old Rules is superseded by Some Later Act, which is not in this corpus"
    )


@pytest.mark.parametrize(
    ("value", "day"),
    [
        ("2022-05-01", D(2022, 5, 1)),
        (" 2022-05-01T09:30:00 ", D(2022, 5, 1)),
        (D(2022, 5, 1), D(2022, 5, 1)),
        (dt.datetime(2022, 5, 1, 23, 59), D(2022, 5, 1)),
        ("next spring", None),
        ("2022-13-01", None),
        (20220501, None),
        (None, None),
    ],
)
def test_parse_date(value: Any, day: dt.date | None) -> None:
    assert parse_date(value) == day


def test_of_chunks_reads_each_documents_first_chunk() -> None:
    def chunk(doc_id: str, n: int, metadata: dict[str, Any]) -> Chunk:
        return Chunk(
            f"{doc_id}:{n}", doc_id, f"{doc_id}#{n}", doc_id, (), "t", doc_id, metadata=metadata
        )

    versions = Versions.of_chunks(
        [
            chunk("old.md", 0, {"superseded_by": "new"}),
            chunk("old.md", 1, {}),
            chunk("new.md", 0, {"effective_date": "2020-01-01"}),
        ]
    )
    assert versions.active and versions.family("new.md") == ["new.md", "old.md"]
    assert versions.status("old.md", D(2021, 1, 1)) == "superseded"


def _document(doc_id: str, metadata: dict[str, Any]) -> Document:
    return Document(
        doc_id,
        doc_id.upper(),
        f"/c/{doc_id}",
        "markdown",
        (Section(f"{doc_id}#1", "1", "x"),),
        metadata,
    )


def test_version_findings_are_review_findings_naming_the_document() -> None:
    findings = version_findings(
        [
            _document("a.md", {"effective_date": "next spring", "effective_to": "2020-01-01"}),
            _document("b.md", {"effective_to": "soon", "superseded_by": "Nowhere Act"}),
            _document("c.md", {"superseded_by": "c.md"}),
            _document("d.md", {"effective_date": "2020-01-01", "superseded_by": "a.md"}),
        ]
    )
    assert [(f.doc_id, f.check, f.severity) for f in findings] == [
        ("a.md", "bad-date", "REVIEW"),
        ("b.md", "bad-date", "REVIEW"),
        ("b.md", "unknown-successor", "REVIEW"),
        ("c.md", "unknown-successor", "REVIEW"),
    ]
    assert (
        findings[0].message == "effective_date 'next spring' is not a date; write it as YYYY-MM-DD"
    )
    assert findings[1].message.startswith("effective_to 'soon' is not a date")
    assert findings[2].message.startswith("superseded_by 'Nowhere Act' names no document")
    assert findings[3].message == "superseded_by names the document itself"
    assert findings[0].source == "/c/a.md"


def test_bad_dates_and_unknown_successors_are_review_findings(tmp_path: Path) -> None:
    # the same findings reach validation from a file on disk
    (tmp_path / "a.md").write_text(
        "---\neffective_date: next spring\nsuperseded_by: Some Later Act\n---\n"
        "# A Act\n\n## 1 Rule\n\n1.1 A rule that is long enough to be a section of its own here.\n",
        encoding="utf-8",
    )
    findings = validate(load([tmp_path]).documents)
    checks = {f.check: f for f in findings}
    assert checks["bad-date"].severity == "REVIEW" and "YYYY-MM-DD" in checks["bad-date"].message
    assert "names no document in this corpus" in checks["unknown-successor"].message


def test_the_dated_part_alone_answers_as_the_whole_does() -> None:
    """What a store keeps (`dated`) judges every document, named or not, as the whole does."""
    part = Versions.resolved(VERSIONS.dated())
    assert {v.doc_id for v in VERSIONS.dated()} == {
        d for d, *_ in ROWS if d != "plain.md"
    }  # c.md is named as b's successor; plain.md says nothing
    assert part.active
    for doc, *_ in [*ROWS, ("unknown.md",)]:
        assert part.family(doc) == VERSIONS.family(doc)
        for day in (D(2010, 6, 1), D(2019, 3, 1), D(2021, 1, 1), D(2024, 1, 1), D(2100, 1, 1)):
            assert part.status(doc, day) == VERSIONS.status(doc, day)
            assert part.note(doc, day) == VERSIONS.note(doc, day)
            assert part.in_force_of(doc, day) == VERSIONS.in_force_of(doc, day)
    assert not Versions.resolved([]).active
