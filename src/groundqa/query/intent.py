"""Question intent and the generation preset it selects.

A small transparent classifier over the question's wording: a definition ("What
is a NEER report?") wants one precise passage and a short answer; a procedure
("How do I apply...") wants the steps, so more passages and room to list them; a
comparison ("difference between...") needs both sides retrieved; a threshold
("How far must a turbine be from a dwelling?", "What is the maximum fine...")
wants the passage that states the number, few neighbours to blur it, and a short
answer. Everything else is a lookup. Rules are tried in order and the first match
wins; `explain_intent` shows which words decided. Presets are defaults: a caller's
k, temperature or max tokens always win. It reads words, not meaning, and does not
try to: `bench/intent.py` measures it against hand-labelled questions (the labelling
guideline is at the top of that file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

INTENTS = ("definition", "procedure", "comparison", "threshold", "lookup")

# Where a rule may start: the question's start or after a context clause ("In Drayland, ...").
_START = r"(?:^\s*|[,;:]\s*)"
# "What is", "What are", "What's", "Whats".
_WHAT_IS = r"what(?:\s+is|\s+are|'s|\u2019s|s)"
# Words that make a quantity a bound: a modal, a trigger or an exception.
_BOUND = (
    r"\b(?:can|may|could|might|must|should|allowed|permitted|before|without|until|and still|"
    r"needs?|needed|requires?|required|have to|has to|trigger\w*|exceed\w*|makes?|calls? for)\b"
)
# Quantities a threshold bounds. Time is not one: dates, deadlines and durations are lookups.
_QUANTITY = (
    r"(?:size|level|height|distance|volume|amount|capacity|area|weight|circumference|girth|"
    r"diameter|value|number|depth|width|quantity|concentration|figure|rating|exposure|speed|"
    r"flow|rate|percentage|proportion|temperature|age|length)"
)


def _rule(intent: str, pattern: str) -> tuple[str, re.Pattern[str]]:
    return intent, re.compile(pattern, re.I)


_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Comparison first: a question that sets two things side by side wants both, even
    # when they are thresholds ("Is Westhaven's clearing limit higher than Northmere's?").
    #
    # Comparison words: "difference between", "compare", "X versus Y", "how is X unlike
    # Y", "what sets X apart", "the same as", "outperform". Not "best" ("best way to" is
    # a procedure).
    _rule(
        "comparison",
        r"\b(?:compar\w*|contrast\w*|differ\w*|distinguish\w*|versus|vs\.?|unlike|better|worse|"
        r"outperform\w*|(?:the )?same as|similar to|each other|one another)\b"
        r"|\b(?:sets?|tells?) (?:\w+ )?apart\b",
    ),
    # A comparative with "than": "stricter than in Northmere", "higher than Ashcombe's".
    # Must not catch "more than 25,000 tonnes" (than + a number is a quantity) or
    # "decided by the state rather than the council" (which authority: not a comparison).
    _rule("comparison", r"(?<!rather )(?<!other )\bthan\s+(?![\d$£€])"),
    # A choice between named options: "Which costs more, X or Y?", "X or Y: which...",
    # "Is it cheaper to fly or take the train?", "Should I use a tank or OSD?".
    # Must not catch "Which products need a label?" (no alternatives offered).
    _rule(
        "comparison",
        r"^\s*which\b[^?]*,[^?]*\bor\b"
        r"|\bor\b[^?:]*:\s*which\b"
        r"|\bis it (?:\w+er|more \w+|less \w+) to\b[^?]*\bor\b"
        r"|^\s*should (?:i|we) (?:use|choose|pick|buy|get|take)\b[^?]*\bor\b",
    ),
    # Procedure: "how" + an auxiliary asks a manner ("How do I apply", "How is the radius
    # calculated", "In an emergency, how should I..."). Must not catch "How far must..."
    # or "How much can..." (how + a degree word asks a quantity).
    _rule(
        "procedure",
        _START + r"how (?:do|does|did|can|could|should|must|would|is|are|was|were)\b",
    ),
    # Procedure words: "how to", "step by step", "What are the steps", "What's the
    # process", "What should I do if", "correct way to", "Apply for...". Must not catch
    # "What does the regulator do?" ("does" is left out: that asks a role, a lookup).
    _rule(
        "procedure",
        r"\bhow to\b|\bstep[ -]by[ -]step\b"
        r"|^\s*what (?:are )?the steps|^\s*what steps|\bsteps? (?:to|for)\b"
        r"|^\s*" + _WHAT_IS + r" the (?:process|procedure)"
        r"|^\s*what (?:should|must|do|can) [^?]*\bdo\b"
        r"|\b(?:correct|right|best|safest|proper) way to\b"
        r"|^\s*(?:apply for|process for)",
    ),
    # Definition, the unmistakable forms, before threshold so that "What is a reporting
    # threshold?" (an indefinite article asks what kind of thing) stays a definition:
    # "define X", "meaning of", "what is meant by", "what does X mean / stand for",
    # "what counts as", "what's a/an <up to six words>". Must not catch "What does the
    # application need to include?" (a lookup) or "What is a typical fee for..." past
    # six words.
    _rule(
        "definition",
        r"^\s*define\b|\bdefinition of\b|\bmeaning of\b|\bwhat is meant by\b"
        r"|\bwhat (?:does|do) .+ (?:mean|stand for|refer to)\b"
        r"|\bwhat does the (?:term|word|phrase|acronym|abbreviation)\b"
        r"|\bwhat counts as\b"
        r"|^\s*" + _WHAT_IS + r" an?\s+\S+(?:\s+\S+){0,5}\s*$",
    ),
    # Threshold words: "minimum setback", "maximum fine", "exposure limit", "at most".
    # Must not catch "time limit" (a deadline is a lookup).
    _rule(
        "threshold",
        r"\b(?:minimum|maximum|max|min|thresholds?|cut-?offs?|setbacks?|at most|at least)\b"
        r"|(?<!time )\blimits?\b",
    ),
    # "The most a landholder can be fined". Must not catch "the most common reason".
    _rule(
        "threshold",
        r"\bthe (?:most|least) (?=(?:an?|i|you|we|one|they|[\w\-]+ (?:can|may|could|must))\b)",
    ),
    # "At what level...", "Above what height...", "Beneath what trunk size...".
    # Must not catch "At what time does it open?".
    _rule(
        "threshold",
        _START + r"(?:at|above|below|beneath|beyond|past|over|under|from) what "
        r"(?!time|hour|date|day)\b",
    ),
    # "How much/many ... can/before/without": "How many tonnes can a plant emit before
    # reporting?". Must not catch a fee ("How much does a permit cost?", "How much must it
    # pay?"), a count ("How many participants dropped out?") or time ("How many days can
    # I stay?").
    _rule(
        "threshold",
        r"\bhow (?:much|many) (?!days?|weeks?|months?|years?|hours?|minutes?|time)"
        r"(?![^?]*\b(?:cost|costs|pay|fee)\b)[^?]*" + _BOUND,
    ),
    # How + a degree word + a bound: "How far must a turbine be", "How tall can a
    # building be". Must not catch "How tall is the tower?" (no bound: a plain fact).
    _rule(
        "threshold",
        r"\bhow (?:far|close|near|big|large|small|tall|high|low|deep|wide|loud|heavy|thick|"
        r"old)\b[^?]*" + _BOUND,
    ),
    # What + a quantity + a bound: "What trunk circumference makes a tree protected?",
    # "What size of solar farm needs state approval?". Must not catch "What was the
    # sample size?" (a number that bounds nothing).
    _rule("threshold", _START + r"what (?:[\w\-]+ ){0,3}" + _QUANTITY + r"\b[^?]*" + _BOUND),
    # A superlative that something may reach: "the largest grant an owner can receive",
    # "the lowest star rating a tap can carry and still be sold". Must not catch "the
    # largest city in Japan".
    _rule(
        "threshold",
        r"\b(?:largest|smallest|lowest|highest|biggest|greatest|heaviest|widest|tallest|"
        r"deepest)\b[^?]*\b(?:allowed|permitted|possible|available|can|may|could|before|"
        r"without|and still)\b",
    ),
    # Definition, the short "What is the X?" form, after threshold so that "What is the
    # speed limit?" asks for the number: "What is the Schengen area?", "What are scope 1
    # emissions?". Must not catch a superlative ("What is the largest city in Japan?")
    # or longer questions (over four words after the verb: lookups such as "What is the
    # fee to lodge a complaint?").
    _rule(
        "definition",
        r"^\s*" + _WHAT_IS + r" "
        r"(?!(?:the\s+)?(?:most|least|best|worst|largest|smallest|biggest|highest|lowest|longest|"
        r"shortest|nearest|cheapest|oldest|newest|latest|earliest)\b)"
        r"(?:the\s+)?\S+(?:\s+\S+){0,3}\s*$",
    ),
)


@dataclass(frozen=True)
class GenerationSettings:
    """How much to retrieve and how to sample; presets per question intent set these."""

    k: int = 5
    temperature: float = 0.0
    max_tokens: int = 400

    def merged(
        self,
        *,
        k: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> GenerationSettings:
        """These settings with every override that is not None applied."""
        return GenerationSettings(
            k=self.k if k is None else k,
            temperature=self.temperature if temperature is None else temperature,
            max_tokens=self.max_tokens if max_tokens is None else max_tokens,
        )


PRESETS: dict[str, GenerationSettings] = {
    "definition": GenerationSettings(k=3, temperature=0.0, max_tokens=200),
    "procedure": GenerationSettings(k=6, temperature=0.1, max_tokens=600),
    "comparison": GenerationSettings(k=8, temperature=0.1, max_tokens=600),
    "threshold": GenerationSettings(k=4, temperature=0.0, max_tokens=200),
    "lookup": GenerationSettings(k=5, temperature=0.0, max_tokens=300),
}


def explain_intent(question: str) -> tuple[str, str | None]:
    """The first intent whose rule matches and the words it matched; (`lookup`, None) if none."""
    for intent, rule in _RULES:
        match = rule.search(question)
        if match:
            return intent, match.group(0).strip(" ,;:")
    return "lookup", None


def detect_intent(question: str) -> str:
    """The first intent whose rule matches, else `lookup`."""
    return explain_intent(question)[0]


def preset_for(question: str) -> tuple[str, GenerationSettings]:
    intent = detect_intent(question)
    return intent, PRESETS[intent]
