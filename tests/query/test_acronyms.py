"""Tests for acronyms.py: definitions mined from text, and questions expanded with them."""

from __future__ import annotations

import pytest

from groundqa.query.acronyms import definitions, detect, expand_query, mine_acronyms

# ------------------------------------------------------------------ definitions


@pytest.mark.parametrize(
    ("text", "abbr", "name"),
    [
        (
            "Facilities report under the National Greenhouse and Energy Reporting (NGER) scheme.",
            "NGER",
            "National Greenhouse and Energy Reporting",
        ),
        (
            "Complaints go to the Environment Protection Authority (EPA) within 7 days.",
            "EPA",
            "Environment Protection Authority",
        ),
        (
            "Flood maps use Light Detection and Ranging (LiDAR) surveys.",
            "LiDAR",
            "Light Detection and Ranging",
        ),
        (
            "A Natural-hazard triggered technological accident (Natech) can follow a flood.",
            "Natech",
            "Natural-hazard triggered technological accident",
        ),
        (
            "Councils in New South Wales (NSW) publish plans.",
            "NSW",
            "New South Wales",
        ),
        (
            "Funding for research & development (R&D) is separate.",
            "R&D",
            "research & development",
        ),
        (
            # a hyphenated word gives the initials of its parts
            "Rules for the cross-border transfer (CBT) of waste.",
            "CBT",
            "cross-border transfer",
        ),
        (
            # a name broken over a line, with a comma inside, keeps its words in one line
            "the Department of Climate Change, Energy, the Environment and\nWater (DCCEEW) said",
            "DCCEEW",
            "Department of Climate Change, Energy, the Environment and Water",
        ),
        (
            "Ofcom is the Office of Communications (Ofcom) in the UK.",
            "Ofcom",
            "Office of Communications",
        ),
        (
            "Sediments laid down three million years ago (Mya) hold pollen.",
            "Mya",
            "million years ago",
        ),
        (
            # a function word gives its initial inside a name, never as its first word
            "Audits by the Office of the Inspector General (OIG) found gaps.",
            "OIG",
            "Office of the Inspector General",
        ),
        (
            # an apostrophe inside a word is kept; one after the last word is not
            "Samples of Commelina yellow mottle virus' (ComYMV) were sequenced.",
            "ComYMV",
            "Commelina yellow mottle virus",
        ),
    ],
)
def test_definitions_found(text: str, abbr: str, name: str) -> None:
    assert list(definitions(text)) == [(abbr, name)]


@pytest.mark.parametrize(
    "text",
    [
        "The limits are listed (see above).",
        "The guideline was revised (2019).",
        "Either option applies (A).",
        "Report to the regulator (e.g. EPA) within a week.",
        "Councils across the state (NSW) must report.",
        "The rules were changed (EPA 2019).",
        "Ask the Agency (Note).",  # one word cannot spell a syllabic abbreviation
        "(EPA) opens the sentence.",
        # a full stop ends the clause a full name may come from
        "Complaints go to the Environment Protection. Authority (EPA) staff reply.",
        # the words before spell the capitals only with a word left over
        "Energy Protection Authority Board (EPA) members.",
        "Nothing here spells it (NGER).",
        # a quotation mark ends the clause too
        'Called "National" Greenhouse Energy Reporting (NGER) here.',
        # syllabic: too many words for three letters, and "a" gives no letter
        "Köppen climate classification, Sydney has a humid subtropical climate (Cfa).",
        "stained with a Papanicolaou (Pap) smear",
        "in the test plus a Papanicolaou (Pap) smear",
    ],
)
def test_look_alikes_are_not_definitions(text: str) -> None:
    assert list(definitions(text)) == []


def test_apostrophe_inside_a_word() -> None:
    assert list(definitions("Crohn's disease (CD) is chronic.")) == [("CD", "Crohn's disease")]


def test_the_shortest_spelling_run_wins() -> None:
    text = "The Energy Policy and the Environment Protection Authority (EPA) agreed."
    assert list(definitions(text)) == [("EPA", "Environment Protection Authority")]


def test_several_definitions_in_one_text() -> None:
    text = (
        "The Environment Protection Authority (EPA) administers the National Greenhouse "
        "and Energy Reporting (NGER) scheme; see the EPA (2020) guide."
    )
    assert list(definitions(text)) == [
        ("EPA", "Environment Protection Authority"),
        ("NGER", "National Greenhouse and Energy Reporting"),
    ]


def test_long_text_before_a_definition() -> None:
    text = "word " * 500 + "the Environment Protection Authority (EPA)"
    assert list(definitions(text)) == [("EPA", "Environment Protection Authority")]


# ------------------------------------------------------------------ mine_acronyms


def test_mine_acronyms_over_texts() -> None:
    texts = [
        "The Environment Protection Authority (EPA) regulates.",
        "Light Detection and Ranging (LiDAR) is used. Nothing else (see above).",
    ]
    assert mine_acronyms(texts) == {
        "EPA": "Environment Protection Authority",
        "LiDAR": "Light Detection and Ranging",
    }
    assert mine_acronyms([]) == {}


def test_most_frequent_full_name_wins() -> None:
    texts = [
        "the Environmental Planning Act (EPA) says",
        "the Environment Protection Authority (EPA) says",
        "the environment protection  authority (EPA) says",  # same name, other case and spacing
    ]
    assert mine_acronyms(texts) == {"EPA": "Environment Protection Authority"}


def test_tie_keeps_the_first_seen() -> None:
    texts = [
        "the Environmental Planning Act (EPA) says",
        "the Environment Protection Authority (EPA) says",
    ]
    assert mine_acronyms(texts) == {"EPA": "Environmental Planning Act"}
    assert mine_acronyms(reversed(texts)) == {"EPA": "Environment Protection Authority"}


# ------------------------------------------------------------------ detect and expand_query

ACRONYMS = {
    "NGER": "National Greenhouse and Energy Reporting",
    "EPA": "Environment Protection Authority",
    "NSW": "New South Wales",
    "R&D": "research and development",
}


@pytest.mark.parametrize(
    ("question", "found"),
    [
        ("When is an NGER report due?", ["NGER"]),
        ("Do NSW EPA rules apply? Ask the EPA.", ["NSW", "EPA"]),
        ("What is the EPA's role?", ["EPA"]),
        ("Which NGER-covered facilities report?", ["NGER"]),
        ("How many NGERs are there?", ["NGER"]),
        ("Is R&D exempt?", ["R&D"]),
        ("(EPA), NGER.", ["EPA", "NGER"]),
        ("is nger due?", []),
        ("What is NGERS?", []),
        ("Ask XEPA or EPAX.", []),
        ("Nothing here.", []),
    ],
)
def test_detect(question: str, found: list[str]) -> None:
    assert detect(question, ACRONYMS) == found


def test_detect_with_no_acronyms() -> None:
    assert detect("When is an NGER report due?", {}) == []


def test_expand_appends_the_full_name() -> None:
    assert (
        expand_query("When is an NGER report due?", ACRONYMS)
        == "When is an NGER report due? (National Greenhouse and Energy Reporting)"
    )


def test_expand_several_in_order_of_use_and_each_once() -> None:
    assert (
        expand_query("Does the EPA in NSW check EPA audits?", ACRONYMS)
        == "Does the EPA in NSW check EPA audits? (Environment Protection Authority; New South Wales)"
    )


def test_expand_skips_a_full_name_already_asked_about() -> None:
    question = "Does the environment protection authority (EPA) check NGER reports?"
    assert expand_query(question, ACRONYMS) == (
        question + " (National Greenhouse and Energy Reporting)"
    )


def test_expand_never_twice() -> None:
    once = expand_query("Do NSW EPA rules apply?", ACRONYMS)
    assert once == "Do NSW EPA rules apply? (New South Wales; Environment Protection Authority)"
    assert expand_query(once, ACRONYMS) == once


def test_two_abbreviations_with_one_full_name_append_it_once() -> None:
    acronyms = {
        "EPA": "Environment Protection Authority",
        "NSWEPA": "Environment Protection Authority",
    }
    assert (
        expand_query("EPA or NSWEPA?", acronyms)
        == "EPA or NSWEPA? (Environment Protection Authority)"
    )


@pytest.mark.parametrize("question", ["What is nger?", "Nothing to expand.", ""])
def test_expand_leaves_other_questions_unchanged(question: str) -> None:
    assert expand_query(question, ACRONYMS) == question
    assert expand_query(question, {}) == question


def test_mined_then_expanded() -> None:
    corpus = ["Large emitters report under National Greenhouse and Energy Reporting (NGER) rules."]
    assert expand_query("What must an NGER report hold?", mine_acronyms(corpus)).endswith(
        "(National Greenhouse and Energy Reporting)"
    )
