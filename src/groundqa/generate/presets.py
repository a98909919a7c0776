"""Question intent and the generation preset it selects.

A small transparent classifier over the question's opening words: a definition
("What is a NEER report?") wants one precise passage and a short answer; a
procedure ("How do I apply...") wants the steps, so more passages and room to
list them; a comparison ("difference between...") needs both sides retrieved.
Everything else is a lookup. Presets are defaults: a caller's k, temperature or
max tokens always win.
"""

from __future__ import annotations

import re

from groundqa.generate import GenerationSettings

INTENTS = ("definition", "procedure", "comparison", "lookup")

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "comparison",
        re.compile(
            r"\b(compare|comparison|differen\w*|versus|vs\.?|better|rather than|"
            r"which is (?:more|less|higher|lower|larger|smaller))\b|\bboth\b.*\band\b",
            re.I,
        ),
    ),
    (
        "procedure",
        re.compile(
            r"^\s*(how (?:do|can|should|must|would) (?:i|we|you|one|a|an|the)\b|how to\b|what (?:are )?"
            r"the steps|what steps|what (?:is|are) the (?:process|procedure)|steps? (?:to|for)|"
            r"apply for|process for)",
            re.I,
        ),
    ),
    (
        "definition",
        re.compile(
            r"^\s*(what (?:is|are|does) (?:a|an|the)?\s*[\w\-]+(?:\s+[\w\-]+){0,3}\s*(?:mean)?\??$|"
            r"define\b|definition of|what does .+ (?:mean|stand for)|meaning of)",
            re.I,
        ),
    ),
)

PRESETS: dict[str, GenerationSettings] = {
    "definition": GenerationSettings(k=3, temperature=0.0, max_tokens=200),
    "procedure": GenerationSettings(k=6, temperature=0.1, max_tokens=600),
    "comparison": GenerationSettings(k=8, temperature=0.1, max_tokens=600),
    "lookup": GenerationSettings(k=5, temperature=0.0, max_tokens=300),
}


def detect_intent(question: str) -> str:
    """The first intent whose rule matches, else `lookup`."""
    for intent, rule in _RULES:
        if rule.search(question):
            return intent
    return "lookup"


def preset_for(question: str) -> tuple[str, GenerationSettings]:
    intent = detect_intent(question)
    return intent, PRESETS[intent]
