"""Sentence and paragraph splitting: boundaries a reader would agree with, no others."""

from __future__ import annotations

import pytest

from groundqa.text import Analyzer, ends_sentence, shorten, split_paragraphs, split_sentences


def test_paragraphs_split_on_blank_lines_only() -> None:
    text = "First line\nstill first.\n\n  \nSecond.\n\n\nThird."
    assert split_paragraphs(text) == ["First line\nstill first.", "Second.", "Third."]


@pytest.mark.parametrize(
    "text",
    [
        "See s. 3.2 of the Act for details.",
        "Farms are covered, e.g. dairies and piggeries.",
        "A limit of 1.5 ha applies to each lot.",
        "Dr. Smith wrote the guidance in 2012.",
        "Clause 4.6.1.1 applies.",
        "The fee is ARL 2.50 per tonne.",
    ],
)
def test_no_boundary_inside_abbreviations_decimals_and_clause_numbers(text: str) -> None:
    assert split_sentences(text) == [text]


def test_sentences_and_list_items() -> None:
    text = "The bakery sells out by 11am. Pubs serve food until 8:30! Why? Because.\n(a) notify;\n(b) report."
    assert split_sentences(text) == [
        "The bakery sells out by 11am.",
        "Pubs serve food until 8:30!",
        "Why?",
        "Because.",
        "(a) notify;",
        "(b) report.",
    ]


def test_ends_sentence() -> None:
    assert ends_sentence("It ends here.")
    assert ends_sentence('He said "stop."')
    assert ends_sentence("(a) a clause;")
    assert not ends_sentence("It ends mid")
    assert not ends_sentence("a trailing number 12")


def test_analyzer_stems_and_drops_stopwords() -> None:
    a = Analyzer()
    assert a.terms("The bakeries are selling") == ["bakeri", "sell"]
    # question words are index terms but not topic terms
    assert "what" in a.terms("What time")
    assert a.query_terms("What time does the bakery sell out? The bakery!") == [
        "time",
        "bakeri",
        "sell",
        "out",
    ]


def test_shorten() -> None:
    assert shorten("a  b\nc") == "a b c"
    long = "word " * 100
    cut = shorten(long, 20)
    assert len(cut) <= 20 and cut.endswith("…")


def test_the_stem_cache_is_bounded_and_stems_stay_right() -> None:
    a = Analyzer()
    a.CACHE_WORDS = 100
    words = [f"running{i}x" for i in range(1000)]
    for w in words:
        a.terms(w)
    assert len(a._cache) <= 100
    assert a.terms("running jumped") == ["run", "jump"]


def test_a_blank_line_ends_a_sentence_without_a_full_stop() -> None:
    # A heading or a table row ends its unit at the paragraph break, so a quote never
    # runs from a heading into the text below it.
    text = "Applicability\n\nThe rule applies to all 737 MAX airplanes.\n \nZone: Rural; Lot: 40 ha"
    assert split_sentences(text) == [
        "Applicability",
        "The rule applies to all 737 MAX airplanes.",
        "Zone: Rural; Lot: 40 ha",
    ]
    assert split_sentences("One line\nstill the same sentence.") == [
        "One line\nstill the same sentence."
    ]
