"""Intent detection picks the preset; explicit settings always win."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from groundqa.generate import GenerationSettings
from groundqa.query.intent import (
    INTENTS,
    PRESETS,
    detect_intent,
    explain_intent,
    preset_for,
)

LABELLED = Path(__file__).resolve().parents[2] / "bench" / "intents.jsonl"


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("What is a Natech accident?", "definition"),
        ("What does NEER stand for?", "definition"),
        ("Define offset ratio", "definition"),
        ("What is meant by a controlled action?", "definition"),
        ("How do I apply for a clearing permit in Northmere?", "procedure"),
        ("What are the steps to register for NEER?", "procedure"),
        ("How is the TPZ radius worked out for a tree in Fennick?", "procedure"),
        ("What should I do if a chemical splashes in my eye?", "procedure"),
        ("Compare location-based and market-based scope 2 methods", "comparison"),
        ("What is the difference between a TPZ and an APZ?", "comparison"),
        ("Which costs more, a tree permit in Fennick or in Ashcombe?", "comparison"),
        ("At what level of emissions must a facility report?", "threshold"),
        ("How many tonnes can a plant emit before reporting?", "threshold"),
        ("How many tonnes trigger reporting?", "threshold"),
        ("What is the maximum fine for clearing without a permit?", "threshold"),
        ("Above what height does a tree need a permit?", "threshold"),
        ("How far must a turbine be from a dwelling?", "threshold"),
        ("What is the minimum setback for a turbine?", "threshold"),
        ("What is the turbine setback from a dwelling in Northmere?", "threshold"),
        ("How much native vegetation can be cleared without a permit?", "threshold"),
        ("What trunk circumference makes a tree protected?", "threshold"),
        ("When is a NEER report due?", "lookup"),
        ("Who enforces the noise local law?", "lookup"),
    ],
)
def test_detect_intent(question: str, intent: str) -> None:
    assert detect_intent(question) == intent


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        # A plain fee or a fixed penalty is a lookup; a cap on it is a threshold.
        ("How much does a permit cost?", "lookup"),
        ("How much must a corporation pay if its report is late?", "lookup"),
        ("What is the fine for putting recycling in the wrong bin?", "lookup"),
        ("What is the most a landholder can be fined for illegal clearing?", "threshold"),
        # A number in the question that is not asked for.
        ("What happens if a facility emits more than 25,000 tonnes in a year?", "lookup"),
        ("Does a tree with a 2 metre trunk circumference need a permit?", "lookup"),
        ("What was the sample size of the trial?", "lookup"),
        # Time is a lookup, even phrased as a limit.
        ("How many days can a tourist stay without a visa?", "lookup"),
        ("How late can a band play on a Friday?", "lookup"),
        ("What is the time limit for an appeal?", "lookup"),
        # The concept is a definition, the value a threshold.
        ("What is a reporting threshold?", "definition"),
        ("What is the reporting threshold for energy production?", "threshold"),
        ("What does CO2-e mean?", "definition"),
        # Comparing two thresholds is a comparison.
        ("Is Westhaven's clearing limit higher than Northmere's?", "comparison"),
        ("What are the steps to get a burn permit?", "procedure"),
        # Which authority decides is not a comparison; the size that decides it is a threshold.
        ("What size of solar farm needs state approval rather than council approval?", "threshold"),
        ("What is the largest city in Japan?", "lookup"),
    ],
)
def test_hard_cases_follow_the_guideline(question: str, intent: str) -> None:
    assert detect_intent(question) == intent


def test_explain_intent_returns_the_matched_phrase() -> None:
    assert explain_intent("What is the maximum fine for late lodgement?") == (
        "threshold",
        "maximum",
    )
    assert explain_intent("How far must a turbine be from a dwelling?") == (
        "threshold",
        "How far must",
    )
    assert explain_intent("In an emergency, how should I shut off the gas?") == (
        "procedure",
        "how should",
    )
    assert explain_intent("Which agency issues licences?") == ("lookup", None)
    for question in ("Define controlled waste.", "Scope 1 versus scope 2?"):
        intent, phrase = explain_intent(question)
        assert intent == detect_intent(question) and phrase and phrase in question


def test_every_intent_has_a_preset() -> None:
    assert set(PRESETS) == set(INTENTS) and len(INTENTS) == 5
    assert PRESETS["threshold"] == GenerationSettings(k=4, temperature=0.0, max_tokens=200)


def test_presets_and_overrides() -> None:
    intent, settings = preset_for("How do I apply for a permit?")
    assert intent == "procedure" and settings == PRESETS["procedure"]
    assert settings.merged(k=2).k == 2 and settings.merged(k=2).max_tokens == settings.max_tokens
    assert GenerationSettings().merged(temperature=None) == GenerationSettings()


def test_labelled_questions_are_well_formed() -> None:
    rows = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines()]
    assert all(set(r) <= {"question", "intent", "round"} for r in rows)
    assert all(isinstance(r["question"], str) and r["question"].strip() for r in rows)
    assert {r["intent"] for r in rows} == set(INTENTS)
    counts = Counter(r["intent"] for r in rows)
    assert len(rows) >= 150 and min(counts.values()) >= 20, counts
    questions = [r["question"].strip().lower() for r in rows]
    assert len(questions) == len(set(questions)), "duplicate questions"
