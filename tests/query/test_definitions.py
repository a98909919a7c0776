"""Definition questions and definitional sentences, with the look-alikes that must not count."""

from __future__ import annotations

import pytest

from groundqa.query.definitions import defined_term, defines


@pytest.mark.parametrize(
    ("question", "term"),
    [
        ("What is a Natech accident?", "Natech accident"),
        ("what are protected trees", "protected trees"),
        ("Define setback.", "setback"),
        ("What does APZ mean?", "APZ"),
        ("What is the meaning of controlled waste?", "controlled waste"),
        ("What is it?", None),
        ("What is the fine for lodging a NEER report late each year?", None),
        ("What time does the bakery open?", None),
        ("How is loss of containment modelled?", None),
        ("How does the anti-idling by-law define idle?", "idle"),
        ("How does the subdivision code define an expressway?", "expressway"),
        ("How is a tentative map defined?", "tentative map"),
        ("How are you?", None),
    ],
)
def test_the_term_a_definition_question_asks_about(question: str, term: str | None) -> None:
    assert defined_term(question) == term


@pytest.mark.parametrize(
    "text",
    [
        "This type of event is called Natech (natural hazard triggered technological) accident.",
        "A Natech accident is a technological accident triggered by a natural hazard.",
        "Natech accidents refer to releases triggered by natural hazards.",
        "The term Natech accident means a release triggered by a natural hazard.",
        '"Natech accident" means a release triggered by a natural hazard.',
        "Natech accident (NA) refers to a release triggered by a natural hazard.",
    ],
)
def test_definitional_sentences(text: str) -> None:
    assert defines(text, "Natech accident")


@pytest.mark.parametrize(
    "text",
    [
        "Natech accidents are a serious concern for operators.",
        "The likelihood of Natech accidents is the product of two terms.",
        "Operators must manage the Natech accident risk.",
        "A flood accident is a common case.",
    ],
)
def test_sentences_that_use_the_term_without_defining_it(text: str) -> None:
    assert not defines(text, "Natech accident")


def test_a_plural_question_finds_a_singular_definition() -> None:
    assert defines('"Protected tree" means a tree with a trunk over 1 m.', "protected trees")
