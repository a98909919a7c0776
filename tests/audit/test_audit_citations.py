"""Tests for audit/citations.py: every `[n]` resolves to a citation of a retrieved passage."""

from __future__ import annotations

from groundqa.audit import CitationCheck, audit_answer, check_citations
from groundqa.audit.citations import citation_positions
from groundqa.generate import cite
from groundqa.models import REFUSAL
from tests.auditkit import BASIN, METHANE, passage, verdicts


def test_an_extractive_style_answer_passes_the_citation_check() -> None:
    check = check_citations("Gates open at 7am. [1] Parking is free. [2]", [1, 2], 5, False)
    assert check == CitationCheck(
        markers=(1, 2), unresolved=(), unused=(), no_markers=False, refusal_cites=False
    )
    assert check.to_dict() == {
        "markers": [1, 2],
        "unresolved": [],
        "unused": [],
        "no_markers": False,
        "refusal_cites": False,
        "ok": True,
    }


def test_a_marker_without_a_citation_is_unresolved() -> None:
    check = check_citations("Gates open at 7am. [1] Parking is free. [3]", [1, 2], 2, False)
    assert check.unresolved == (3,)
    assert check.unused == (2,)
    assert check.ok is False


def test_a_marker_beyond_the_passages_is_unresolved() -> None:
    assert check_citations("Open daily. [4]", [4], 3, False).unresolved == (4,)


def test_a_marker_group_names_each_of_its_numbers() -> None:
    check = check_citations("Open daily. [1, 3]", [1], 3, False)
    assert check.markers == (1, 3)
    assert check.unresolved == (3,)


def test_an_answer_without_markers_is_flagged() -> None:
    check = check_citations("Gates open at 7am.", [], 3, False)
    assert check.no_markers is True
    assert check.ok is False


def test_a_refusal_that_cites_is_flagged() -> None:
    assert check_citations(REFUSAL, [], 3, True).ok is True
    assert check_citations(REFUSAL, [1], 3, True).refusal_cites is True
    assert check_citations(REFUSAL + " [1]", [], 3, True).refusal_cites is True


def test_a_citation_names_the_position_of_its_passage() -> None:
    hits = [passage(1, METHANE), passage(2, BASIN)]
    assert citation_positions([cite(1, hits[1], ""), cite(2, hits[0], "")], hits) == {1: 2, 2: 1}
    assert citation_positions([cite(1, passage(9, BASIN), "")], hits) == {}


def test_a_citation_to_a_passage_not_retrieved_does_not_resolve() -> None:
    hits = [passage(1, METHANE)]
    stray = cite(1, passage(9, BASIN), "")
    report = audit_answer("Capture 90% of the methane. [1]", [stray], hits, refused=False)
    assert report.citations.unresolved == (1,)
    assert verdicts(report) == ["MISATTRIBUTED"]
