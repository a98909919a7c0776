"""Clause references: read from what a document says (its headings, its paragraph
numbers, its instrument's kind), never invented."""

from __future__ import annotations

from typing import Any

import pytest

from groundqa.clauses import clause_ref, heading_ref, paragraph_number, unit_for


@pytest.mark.parametrize(
    ("title", "unit"),
    [
        ("Controlled Waste Movement Act 2018", "s."),
        ("Vegetation Management Regulations 2021 (Westhaven)", "reg."),
        ("Fennick City Council Tree Protection By-law 2022", "cl."),
        ("Northmere Bushfire Building Code", "cl."),
        ("Annual Report", "s."),
    ],
)
def test_a_bare_number_takes_the_unit_its_instrument_uses(title: str, unit: str) -> None:
    assert unit_for(title) == unit


def test_clause_style_metadata_overrides_the_title() -> None:
    assert unit_for("Some Act", {"clause_style": "reg"}) == "reg."


@pytest.mark.parametrize(
    ("style", "unit"),
    [("cl", "cl."), ("cl.", "cl."), ("Art", "art."), ("r", "r."), ("  ", "s."), ("§", "§")],
)
def test_a_clause_style_is_spelled_as_the_unit_or_kept_as_given(style: str, unit: str) -> None:
    # blank: no style, so the title (an Act) decides; unknown: shown as the document wrote it
    assert unit_for("Some Act", {"clause_style": style}) == unit


@pytest.mark.parametrize(
    ("heading", "ref"),
    [
        ("Part 2 Obligations", "Pt 2"),
        ("Schedule 1 Fees", "Sch 1"),
        ("Regulation 12 Records", "reg.12"),
        ("Clause 42", "cl.42"),
        ("2.1.3 Scope 1 thresholds", "s.2.1.3"),
        ("Definitions", None),
    ],
)
def test_heading_references(heading: str, ref: str | None) -> None:
    assert heading_ref(heading, "s.") == ref


@pytest.mark.parametrize(
    ("heading", "unit", "ref"),
    [
        ("Division 3 Records", "s.", "Div 3"),
        ("Chapter IV General", "s.", "Ch IV"),
        ("sec. 7A Offences", "cl.", "s.7A"),
        ("PART 5", "cl.", "Pt 5"),
        ("12. Penalties", "reg.", "reg.12"),
        ("4.6.1 Setbacks", "cl.", "cl.4.6.1"),
        ("Partial exemptions", "s.", None),  # a unit word must stand alone
    ],
)
def test_a_named_unit_wins_over_the_instruments_unit(heading: str, unit: str, ref: str) -> None:
    assert heading_ref(heading, unit) == ref


TEXT = "3.1 A facility must report.\n\n3.2 A corporation must report if its total exceeds 50 kt."


def test_the_paragraph_holding_a_snippet_gives_its_number() -> None:
    assert paragraph_number(TEXT, "A facility must report") == "3.1"
    assert paragraph_number(TEXT, "A corporation must report") == "3.2"
    assert paragraph_number(TEXT, "not in the text") is None
    assert paragraph_number(TEXT, "") is None
    assert paragraph_number("Intro.\n\nA rule without a number.", "A rule") is None


def test_a_cited_sentence_gets_its_paragraphs_finer_number() -> None:
    text = TEXT
    common: dict[str, Any] = {
        "doc_id": "act.md",
        "section_id": "act.md#3 Thresholds",
        "heading": "3 Thresholds",
    }
    assert (
        clause_ref(**common, title="X Act", text=text, snippet="A corporation must report")
        == "s.3.2"
    )
    assert clause_ref(**common, title="X Act", text=text, snippet="") == "s.3"
    # An ObliQA-style DOC:CLAUSE id is already the clause.
    assert clause_ref(doc_id="7", section_id="7:14.2.3.Guidance.10.", heading="", title="") == (
        "14.2.3.Guidance.10."
    )


def test_a_paragraph_number_outside_the_section_does_not_replace_it() -> None:
    text = "4.1 A rule numbered as if it sat in section 4."
    args: dict[str, Any] = {
        "doc_id": "a.md",
        "section_id": "a.md#3",
        "title": "X Act",
        "text": text,
    }
    assert clause_ref(**args, heading="3 Thresholds", snippet="A rule") == "s.3"
    # a section of exactly that number takes its own paragraph's number
    assert clause_ref(**args, heading="4 Rules", snippet="A rule") == "s.4.1"
    # an unnumbered heading: the paragraph's number is all there is
    assert clause_ref(**args, heading="Definitions", snippet="A rule") == "s.4.1"
    # a named unit is not refined by a paragraph number
    assert clause_ref(**args, heading="Part 4 Rules", snippet="A rule") == "Pt 4"


def test_only_a_doc_colon_number_id_is_taken_as_a_clause() -> None:
    common: dict[str, Any] = {"heading": "", "title": "Rules"}
    assert clause_ref(doc_id="7", section_id="7:Intro", **common) is None
    assert clause_ref(doc_id="7", section_id="8:14.2", **common) is None
    assert clause_ref(doc_id="7", section_id="7:14.2", **common) == "14.2"
