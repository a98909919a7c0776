"""Intent detection picks the preset; explicit settings always win."""

from __future__ import annotations

import pytest

from groundqa.generate import GenerationSettings
from groundqa.generate.presets import PRESETS, detect_intent, preset_for


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("What is a Natech accident?", "definition"),
        ("What does NEER stand for?", "definition"),
        ("Define offset ratio", "definition"),
        ("How do I apply for a clearing permit in Northmere?", "procedure"),
        ("What are the steps to register for NEER?", "procedure"),
        ("Compare location-based and market-based scope 2 methods", "comparison"),
        ("What is the difference between a TPZ and an APZ?", "comparison"),
        ("When is a NEER report due?", "lookup"),
        ("How many tonnes trigger reporting?", "lookup"),
        ("What is the turbine setback from a dwelling in Northmere?", "lookup"),
    ],
)
def test_detect_intent(question: str, intent: str) -> None:
    assert detect_intent(question) == intent


def test_presets_and_overrides() -> None:
    intent, settings = preset_for("How do I apply for a permit?")
    assert intent == "procedure" and settings == PRESETS["procedure"]
    assert settings.merged(k=2).k == 2 and settings.merged(k=2).max_tokens == settings.max_tokens
    assert GenerationSettings().merged(temperature=None) == GenerationSettings()
