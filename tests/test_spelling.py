"""British and Commonwealth spellings fold to American ones, and nothing else moves."""

from __future__ import annotations

import pytest

from groundqa.spelling import american
from groundqa.text import Analyzer

FOLDED = {
    "colour": "color",
    "favourite": "favorite",
    "neighbourhoods": "neighborhoods",
    "vapourised": "vaporized",
    "organisation": "organization",
    "authorised": "authorized",
    "randomised": "randomized",
    "emphasise": "emphasize",
    "analysed": "analyzed",
    "centre": "center",
    "centred": "centered",
    "kilometres": "kilometers",
    "millilitre": "milliliter",
    "offence": "offense",
    "offences": "offenses",
    "licence": "license",
    "defenceless": "defenseless",
    "catalogued": "cataloged",
    "dialogue": "dialog",
    "travelled": "traveled",
    "counsellor": "counselor",
    "modelling": "modeling",
    "anaemia": "anemia",
    "anaesthesia": "anesthesia",
    "ischaemic": "ischemic",
    "paediatric": "pediatric",
    "oestrogen": "estrogen",
    "foetal": "fetal",
    "ageing": "aging",
    "practised": "practiced",
    "enrolment": "enrollment",
    "judgement": "judgment",
}

# Words that end like a variant family but have no other spelling, American words, and
# words whose British form means something else in American English.
KEPT = [
    "hour",
    "four",
    "your",
    "tour",
    "contour",
    "emphasis",
    "analyses",
    "organism",
    "promise",
    "exercise",
    "advertise",
    "realism",
    "economist",
    "acre",
    "massacre",
    "genre",
    "ogre",
    "cancellation",
    "controlled",
    "licensed",
    "offend",
    "aerial",
    "canoe",
    "cheque",
    "storey",
    "metre",
    "metres",
    "programme",
    "tyre",
    "kerb",
    "draught",
    "color",
    "organize",
    "center",
    "",
]


@pytest.mark.parametrize(("british", "us"), sorted(FOLDED.items()))
def test_a_british_spelling_reads_as_the_american_one(british: str, us: str) -> None:
    assert american(british) == us
    assert american(us) == us


@pytest.mark.parametrize("word", KEPT)
def test_words_without_a_variant_are_left_alone(word: str) -> None:
    assert american(word) == word


def test_the_analyzer_hears_both_spellings_as_one_term_and_the_first_version_does_not() -> None:
    british = "The licence holder's second offence near the town centre, analysed in 2011."
    us = "The license holder's second offense near the town center, analyzed in 2011."
    assert Analyzer().terms(british) == Analyzer().terms(us)
    first = Analyzer("en-snowball-v1")
    assert first.terms(british) != first.terms(us)
    assert Analyzer().query_terms("What is the fine for an offence?") == ["fine", "offens"]
