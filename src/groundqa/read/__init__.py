"""Reading: which sentences of the retrieved passages say what the question asks.

The reader walks the top passages once per question and scores each sentence
by how much of the question's topic it covers (idf weighted, with the passage's
title, section path and document name counted as context), plus a bonus when it
carries the kind of fact the question asks for (a time for "what time", an amount
for "how much", a length of time for "when", the defining sentence for "what is a
setback?"). The result, a `Reading`, is made once and shared: the gate reads its
best sentence's coverage and fact type, and the extractive generator quotes
from its ranked sentences without scoring anything again.

It reads words, not meaning: a sentence that answers in other words than the
question's scores low. It never quotes a sentence addressed to the model (an
instruction planted in source text).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from groundqa.lexicon import (
    MENTIONS_CALENDAR_DATE,
    MENTIONS_DATE,
    MENTIONS_DURATION,
    MENTIONS_MONEY,
    MENTIONS_NAME,
    MENTIONS_NUMBER,
    MENTIONS_TIME,
    NUMBER_WORDS,
    find_instructions,
)
from groundqa.models import Chunk, Hit
from groundqa.query.definitions import defined_term, definition_pattern
from groundqa.read.model import UNTRAINED_NOTE, AnswerModel, trained_language
from groundqa.text import PassageTerms, leading_title

# What reads the passages: word coverage alone, or the shipped answer model. Word coverage
# stays the default: on the city-guide probes, which it was not trained for, the model
# declines answerable questions far more often (bench/results/gate.md).
READERS = ("lexical", "model")
DEFAULT_READER = "lexical"
# How many of the top passages the gate's `coverage` looks at.
COVERAGE_DEPTH = 3

# Which kind of fact a question asks for, judged from its wording; the first match wins.
# "When is a permit required?" asks for a condition, not a time: that "when" does not count.
# A clock time is asked for by "what time" or "opening hours"; a "when" or a deadline may
# also be answered by a length of time ("two years after its approval").
_WANTS = (
    (
        re.compile(r"\b(what time|how late|how early|opening hours|until when)\b", re.I),
        (MENTIONS_TIME, MENTIONS_DATE),
    ),
    (
        re.compile(
            r"\b(when(?!\b.*\b(?:required|needed|necessary|allowed|permitted|"
            r"prohibited|apply|applies)\b)|by what date|what date|deadline|due)\b",
            re.I,
        ),
        (MENTIONS_TIME, MENTIONS_DATE, MENTIONS_DURATION),
    ),
    (
        re.compile(
            r"\b(cost|costs|price|fee|fees|fine|fines|penalt\w*|charged?|infringement)\b", re.I
        ),
        (MENTIONS_MONEY,),
    ),
    (re.compile(r"\b(how much|amount)\b", re.I), (MENTIONS_MONEY, MENTIONS_NUMBER)),
    (
        re.compile(
            r"\b(how many|how long|how far|how big|how often|how high|how old|how tall|how wide|"
            r"how deep|how large|how heavy|how close|how fast|how soon|how loud|percentage|"
            r"threshold|limit|minimum|maximum|figure|number|distance|size|area|height|width|"
            r"depth|length|weight|speed|rate|"
            r"terajoules?|tonnes?|metres?|meters?|hectares?|decibels?|db)\b",
            re.I,
        ),
        (MENTIONS_NUMBER,),
    ),
    (re.compile(r"\b(who|whom|whose)\b", re.I), (MENTIONS_NAME,)),
)
_HEADING_LINE = re.compile(r"^\s*#{1,6}\s")
# A sentence that asks ("How much is a day ticket?"), as a FAQ's question line does.
_QUESTION = re.compile(r"\?[\"'”’)\]]*$")
# Stands for a passage's title line among its sentences (no sentence is empty).
_TITLE = ""


def coverage(weights: Mapping[str, float], passage_terms: AbstractSet[str]) -> float:
    """Weighted share of the question's terms (term -> weight) present in `passage_terms`."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in weights.items() if t in passage_terms) / total


def wanted(question: str) -> tuple[re.Pattern[str], ...]:
    """The patterns of the kind of fact the question asks for (empty: no particular kind).

    A question that names what it asks for ("Under which Act is the fine provided for?",
    "What body sets the fee?") asks for that: a fine or fee later in it is the topic, not
    the answer. Only the kind of the named thing (up to three words: "What energy
    consumption figure ...", "What fee is charged?") counts then."""
    named = _WHICH_NOUN.search(question)
    if named is None:
        return _kind_of(question)
    phrase = []
    for word in named.group(2).split():
        if _NOT_NAMED.fullmatch(word):
            break
        phrase.append(word)
    if not phrase:
        return _kind_of(question)
    return _kind_of(f"{named.group(1)} {' '.join(phrase)}")


def _kind_of(text: str) -> tuple[re.Pattern[str], ...]:
    for asks, patterns in _WANTS:
        if asks.search(text):
            return patterns
    return ()


# A question that opens with "which <noun>" or "what <noun>" (after a preposition:
# "Under which Act"), where the word after is the thing asked for, not a verb ("what
# is"), a pronoun ("what it") or a word that defers to the noun after it ("what kind of",
# "what amount of": the rest of the question decides, as without this rule). A "which"
# later in the question is a relative pronoun ("the fine which applies").
_WHICH_NOUN = re.compile(
    r"^\W*(?:(?:under|in|on|at|by|for|from|to|with|within|into|during|after|before|since|"
    r"until|according to)\s+)?(which|what)\s+((?:[a-z][\w-]*\s+){0,2}[a-z][\w-]*)",
    re.I,
)
_NOT_NAMED = re.compile(
    r"is|are|was|were|be|been|do|does|did|can|could|should|would|will|shall|must|may|might|"
    r"has|have|had|happen(?:s|ed)?|it|its|they|them|their|he|she|his|her|you|your|we|our|i|"
    r"if|an?|the|this|that|these|those|there|here|of|to|in|on|for|at|by|with|from|into|"
    r"kinds?|types?|sorts?|forms?|amount",
    re.I,
)


_HOW_MANY = re.compile(r"\bhow many ([a-z][a-z-]{2,})", re.I)
# "On what date", "which day": a day of a month, not a bare year. Not "by what date": a
# deadline is as often a length of time ("within 30 days of the notice"), as `wanted` has it.
_WHAT_DATE = re.compile(r"(?<!\bby\s)\b(?:what|which)\s+(?:date|day)\b", re.I)
# A table row's cell that holds a number ("Achieved: 5,550; Difference: +450."; see
# loaders/_tables.py): what it counts is in the column's header, not beside the number.
_TABLE_NUMBER = re.compile(r"(?:^|; )[^:;\n]{1,80}: [^;\d]{0,3}\d")


@lru_cache(maxsize=256)
def _counted(noun: str) -> re.Pattern[str]:
    """A number of `noun`: "79 work-hours", "ten (10) homes", "8,981 new dwellings"."""
    stem = re.escape(noun[:-1] if noun.endswith("s") and len(noun) > 3 else noun)
    number = r"(?:\d[\d,.]*|\b(?:" + "|".join(NUMBER_WORDS) + r"))"
    return re.compile(number + r"\s*(?:\(\d+\)\s*)?(?:[\w-]+\s+){0,3}?" + stem, re.I)


def preferred(question: str) -> tuple[re.Pattern[str], ...]:
    """The patterns of the fact that best answers the question, which the reader ranks
    first: for "how many work-hours", a number of work-hours ("79 work-hours", not "in
    2007") or a number in a table's cell, whose header says what it counts; for "on what
    date", a day of a month ("Dated this 20th day of March 1992", not "the Order 1988"); for a
    question that asks what a term means and for no kind of fact ("What is the minimum
    lot size?" asks for a number), the sentence that defines the term; for any other
    question, the kind it asks for (`wanted`).

    A definition is preferred, never wanted: "what is the X of Y" reads as a definition
    question, and a defining sentence is too narrow a form to count as missing when
    none is found (on ClapNQ's answerable questions that raised the default gate's false
    refusals from 17 to 24 of 143, 18 to 25 end to end)."""
    counted = _HOW_MANY.search(question)
    if counted is not None:
        return (_counted(counted.group(1).lower()), _TABLE_NUMBER)
    if _WHAT_DATE.search(question):
        return (MENTIONS_CALENDAR_DATE,)
    kinds = wanted(question)
    if kinds:
        return kinds
    term = defined_term(question)
    return (definition_pattern(term),) if term is not None else ()


def holds(patterns: tuple[re.Pattern[str], ...], sentence: str) -> bool:
    """Whether the sentence carries a fact of the kind the patterns describe."""
    return any(p.search(sentence) for p in patterns)


@lru_cache(maxsize=8192)
def _addresses_model(sentence: str) -> bool:
    """Whether the sentence is an instruction to the model. Cached: the same top passages
    come back question after question."""
    return bool(find_instructions(sentence))


@dataclass(frozen=True)
class Sentence:
    """One candidate sentence: which hit it is in, where, its coverage and its score."""

    hit_index: int
    position: int
    text: str
    coverage: float
    score: float
    holds: bool  # it carries the fact the reader ranks first (`preferred`)
    answer: float | None = None  # the answer model's P(it answers); None: not scored
    # The question's topic terms in the sentence's own words (its context aside), sorted.
    topic: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "topic": list(self.topic)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Sentence:
        return cls(**{**d, "topic": tuple(d.get("topic", ()))})


@dataclass(frozen=True)
class Reading:
    """What the reader found in the passages for one question.

    `sentences` are the candidates in passage order; `best` is the one a reader
    would quote first (None: no sentence mentions the question's topic). `asked`
    says the question asks for a kind of fact, `found` that the best sentence (or
    the one right after it) holds one. `passage_terms` are the term sets of the
    top passages (what BM25 scored), for the gate's coverage.
    """

    sentences: tuple[Sentence, ...] = ()
    asked: bool = False
    found: bool = False
    passage_terms: tuple[frozenset[str], ...] = field(default=())
    untrained: bool = False  # the text is not in the answer model's language: it did not read

    @property
    def best(self) -> Sentence | None:
        if not self.sentences:
            return None
        return min(self.sentences, key=lambda c: (-c.score, c.hit_index, c.position))

    @property
    def coverage(self) -> float:
        best = self.best
        return best.coverage if best is not None else 0.0

    @property
    def scored(self) -> bool:
        """Whether the answer model read these sentences (its scores rank them)."""
        return any(s.answer is not None for s in self.sentences)

    def notes(self) -> tuple[str, ...]:
        """What the answer tells its reader about this reading."""
        return (UNTRAINED_NOTE,) if self.untrained else ()

    def answers(self) -> list[float]:
        """The answer model's scores, highest first (empty: it did not read)."""
        return sorted((s.answer for s in self.sentences if s.answer is not None), reverse=True)

    def ranked(self) -> list[Sentence]:
        """The candidates best first (ties: earlier passage, then earlier sentence)."""
        return sorted(self.sentences, key=lambda c: (-c.score, c.hit_index, c.position))

    def following(self, sentence: Sentence) -> Sentence | None:
        """The candidate right after `sentence` in the same passage, if there is one."""
        return next(
            (
                c
                for c in self.sentences
                if c.hit_index == sentence.hit_index and c.position == sentence.position + 1
            ),
            None,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "sentences": [s.to_dict() for s in self.sentences],
            "asked": self.asked,
            "found": self.found,
            "passage_terms": [sorted(t) for t in self.passage_terms],
            "untrained": self.untrained,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Reading:
        return cls(
            sentences=tuple(Sentence.from_dict(s) for s in d.get("sentences", ())),
            asked=bool(d.get("asked", False)),
            found=bool(d.get("found", False)),
            passage_terms=tuple(frozenset(t) for t in d.get("passage_terms", ())),
            untrained=bool(d.get("untrained", False)),
        )


@dataclass(frozen=True)
class Reader:
    """Scores the sentences of the top `max_passages` hits for one question.

    With an answer `model`, it reads the sentences of the top `model_passages` hits
    instead (at most `model_sentences`, in rank order): every sentence of the first
    `model_all`, whether or not it shares a word with the question, and those of the rest
    that do. Its P(answers) is the sentence's score. A question or first
    passage that does not read as English (the model's only language) is read by word
    coverage instead, and the Reading says so (`untrained`).
    """

    text: PassageTerms
    section_path: bool = True  # whether the index's text includes each chunk's section path
    max_passages: int = 5
    type_bonus: float = 0.25
    model: AnswerModel | None = None
    model_passages: int = 3
    model_all: int = 2
    model_sentences: int = 48

    def read(self, question: str, weights: Mapping[str, float], hits: Sequence[Hit]) -> Reading:
        """The Reading of `hits` for a question whose topic terms weigh `weights`."""
        passages = tuple(
            self.text.terms(h.chunk.chunk_id, h.chunk.index_text(self.section_path))
            for h in hits[:COVERAGE_DEPTH]
        )
        model = self.model
        untrained = bool(
            model is not None and hits and not trained_language(question, hits[0].chunk.text)
        )
        if untrained:
            model = None
        if not weights and model is None:
            return Reading(passage_terms=passages, untrained=untrained)
        kinds = wanted(question)
        best_kind = preferred(question)
        topic = set(weights)
        sentences: list[Sentence] = []
        depth = self.max_passages if model is None else self.model_passages
        for i, hit in enumerate(hits[:depth]):
            chunk = hit.chunk
            context = self.text.terms(
                f"{chunk.chunk_id}:context", f"{chunk.breadcrumb} {document_name(chunk.doc_id)}"
            )
            asked: frozenset[str] = frozenset()  # the question line above, in a FAQ
            for pos, (text, terms) in enumerate(self._units(chunk)):
                if pos == 0 and text == _TITLE:
                    context = context | terms  # the passage's title: context, not a quote
                    continue
                if _HEADING_LINE.match(text) or len(text) < 12 or _addresses_model(text):
                    continue
                if _QUESTION.search(text):
                    # A question line is what the sentences after it answer, never the
                    # answer itself: its words are their context.
                    asked = terms
                    continue
                # Context alone (a matching title) is not an answer: the sentence must add
                # something. The model reads every sentence of the first `model_all`
                # passages (an answer may use other words) and, below them, those that
                # share a topic word (or whose question line does), which keeps the cost
                # of a read down.
                if not (terms | asked) & topic and (model is None or i >= self.model_all):
                    continue
                cov = coverage(weights, terms | context | asked)
                has = holds(best_kind, text)
                bonus = self.type_bonus if has else 0.0
                own = tuple(sorted(terms & topic))
                score = cov + bonus + 0.05 / (i + 1)
                sentences.append(Sentence(i, pos, text, cov, score, has, topic=own))
        if model is not None:
            sentences = self._scored(model, question, hits, sentences[: self.model_sentences])
        reading = Reading(tuple(sentences), bool(kinds), False, passages, untrained)
        best = reading.best
        if best is None or not kinds:
            return reading
        follow = reading.following(best)
        # Found: the kind asked for at all, which the gate weighs ("189 fatalities" is a
        # number for "how many people", though not the one the reader ranks first).
        found = holds(kinds, best.text) or (follow is not None and holds(kinds, follow.text))
        return replace(reading, found=found)

    def _units(self, chunk: Chunk) -> list[tuple[str, frozenset[str]]]:
        """The passage's sentences with their terms; a title on its first line (see
        `text.leading_title`) comes first on its own, as (`_TITLE`, its terms)."""
        units = list(self.text.sentences(chunk.chunk_id, chunk.text))
        title = leading_title(chunk.text)
        if title is None or not units:
            return units
        first = units[0][0]
        if first == title:
            return [(_TITLE, units[0][1]), *units[1:]]
        if not first.startswith(f"{title} "):
            return units
        rest = first[len(title) + 1 :]
        return [
            (_TITLE, self.text.terms(f"{chunk.chunk_id}:title", title)),
            (rest, self.text.terms(f"{chunk.chunk_id}:first", rest)),
            *units[1:],
        ]

    @staticmethod
    def _scored(
        model: AnswerModel, question: str, hits: Sequence[Hit], sentences: list[Sentence]
    ) -> list[Sentence]:
        """The sentences with the model's P(answers) as their score (ties: passage rank)."""
        pairs = [(section_title(hits[s.hit_index].chunk.breadcrumb), s.text) for s in sentences]
        scores = model.score(question, pairs)
        return [
            replace(s, answer=round(float(p), 6), score=float(p) + 0.001 / (s.hit_index + 1))
            for s, p in zip(sentences, scores, strict=True)
        ]


def document_name(doc_id: str) -> str:
    """A document's file name as words, its numbers and suffix left out: the context of
    every sentence in it, as its section path is ("san_mateo_code_title26.html" ->
    "san mateo code"). A question that names the place or the document ("... in San
    Mateo?") is then matched by the document, not by the one sentence that repeats the
    name. A document whose id is not a name (a CSV row's number) adds nothing."""
    stem = doc_id.rsplit("/", 1)[-1]
    stem = stem.rsplit(".", 1)[0] if "." in stem.lstrip(".") else stem
    return " ".join(w for w in re.split(r"[\W_]+", stem) if w.isalpha())


def section_title(breadcrumb: str) -> str:
    """The innermost heading of a breadcrumb ("Guide > Transport > Tickets" -> "Tickets")."""
    return breadcrumb.rsplit(" > ", 1)[-1].strip()


__all__ = [
    "COVERAGE_DEPTH",
    "DEFAULT_READER",
    "READERS",
    "Reader",
    "Reading",
    "Sentence",
    "coverage",
    "document_name",
    "holds",
    "preferred",
    "section_title",
    "wanted",
]
