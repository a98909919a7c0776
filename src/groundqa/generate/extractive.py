"""The extractive answerer: the offline default, which needs no model.

It answers with sentences copied verbatim from the retrieved passages, each
followed by the `[n]` of the passage it came from. It never writes a word of
its own, so every claim in its answer is checkable against its citation.

Sentences are scored by how much of the question's topic they cover (idf
weighted, with the passage's title and section path counted as context), plus
a bonus when the sentence carries the kind of fact the question asks for (a
time for "what time", an amount for "how much"). It refuses when no sentence
covers enough of the question.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from groundqa.audit import find_instructions
from groundqa.gate import Reading, coverage
from groundqa.generate import Evidence, Generation, cite
from groundqa.models import REFUSAL, Citation, Hit

_TIME = re.compile(
    r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d{2}\b|\bmidnight\b|\bnoon\b", re.I
)
_DATE = re.compile(
    r"\b(?:19|20)\d{2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day",
    re.I,
)
_MONEY = re.compile(
    r"[£$€¥]\s?\d|\b[A-Z]{3}\s?\d[\d,.]*|\b\d[\d,.]*\s?(?:pounds|dollars|euros|penalty units?)\b"
)
_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b", re.I
)
# A name: a capitalised word inside a sentence (after a lower-case word), not its first word.
_NAME = re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]+")

# Which kind of fact a question asks for, judged from its wording; the first match wins.
# "When is a permit required?" asks for a condition, not a time: that "when" does not count.
_WANTS = (
    (
        re.compile(
            r"\b(what time|when(?!\b.*\b(?:required|needed|necessary|allowed|permitted|"
            r"prohibited|apply|applies)\b)|how late|how early|opening hours|until when|"
            r"by what date|what date|deadline|due)\b",
            re.I,
        ),
        (_TIME, _DATE),
    ),
    (
        re.compile(
            r"\b(cost|costs|price|fee|fees|fine|fines|penalt\w*|charged?|infringement)\b", re.I
        ),
        (_MONEY,),
    ),
    (re.compile(r"\b(how much|amount)\b", re.I), (_MONEY, _NUMBER)),
    (
        re.compile(
            r"\b(how many|how long|how far|how big|how often|how high|how old|percentage|"
            r"threshold|limit|minimum|maximum|figure|number|distance|size|area|height|rate|"
            r"terajoules?|tonnes?|metres?|meters?|hectares?|decibels?|db)\b",
            re.I,
        ),
        (_NUMBER,),
    ),
    (re.compile(r"\b(who|whom|whose)\b", re.I), (_NAME,)),
)
_HEADING_LINE = re.compile(r"^\s*#{1,6}\s")


@lru_cache(maxsize=8192)
def _addresses_model(sentence: str) -> bool:
    """Whether the sentence is an instruction to the model (see `audit.find_instructions`).
    Cached: `reading` and `generate` both walk the same passages, question after question."""
    return bool(find_instructions(sentence))


@dataclass(frozen=True)
class _Candidate:
    hit_index: int
    position: int
    sentence: str
    coverage: float
    score: float


def _wanted(question: str) -> tuple[re.Pattern[str], ...]:
    for asks, patterns in _WANTS:
        if asks.search(question):
            return patterns
    return ()


def _has(patterns: tuple[re.Pattern[str], ...], sentence: str) -> bool:
    return any(p.search(sentence) for p in patterns)


@dataclass(frozen=True)
class ExtractiveGenerator:
    max_sentences: int = 3
    max_passages: int = 5
    min_coverage: float = 0.3
    keep_ratio: float = 0.75
    type_bonus: float = 0.25

    name = "extractive"
    streams = False

    def _candidates(self, ev: Evidence) -> list[_Candidate]:
        wanted = _wanted(ev.question)
        out: list[_Candidate] = []
        topic = set(ev.weights)
        for i, hit in enumerate(ev.hits[: self.max_passages]):
            chunk = hit.chunk
            context = ev.text.terms(f"{chunk.chunk_id}:crumb", chunk.breadcrumb)
            for pos, (sentence, terms) in enumerate(ev.text.sentences(chunk.chunk_id, chunk.text)):
                if _HEADING_LINE.match(sentence) or len(sentence) < 12:
                    continue
                # Context alone (a matching title) is not an answer: the sentence must add something.
                if not terms & topic or _addresses_model(sentence):
                    continue
                cov = coverage(ev.weights, terms | context)
                bonus = self.type_bonus if wanted and _has(wanted, sentence) else 0.0
                score = cov + bonus + 0.05 / (i + 1)
                out.append(_Candidate(i, pos, sentence, cov, score))
        return out

    def reading(self, evidence: Evidence) -> Reading:
        """How well the sentence this reader would quote first answers the question:
        its topic coverage, and whether it holds the kind of fact asked for."""
        candidates = self._candidates(evidence)
        wanted = _wanted(evidence.question)
        if not candidates:
            return Reading(0.0, bool(wanted), False)
        best = min(candidates, key=lambda c: (-c.score, c.hit_index, c.position))
        follow = [
            c.sentence
            for c in candidates
            if c.hit_index == best.hit_index and c.position == best.position + 1
        ]
        found = bool(wanted) and any(_has(wanted, s) for s in (best.sentence, *follow))
        return Reading(best.coverage, bool(wanted), found)

    def stream(self, evidence: Evidence) -> Iterator[str | Generation]:
        """One piece per cited sentence (`sentence [n]`), then the Generation."""
        result = self.generate(evidence)
        pieces = re.split(r"(?<=\]) (?=\S)", result.text) if not result.refused else [result.text]
        for i, piece in enumerate(pieces):
            yield piece if i == 0 else f" {piece}"
        yield result

    def generate(self, evidence: Evidence) -> Generation:
        candidates = self._candidates(evidence)
        if not candidates:
            return Generation(
                REFUSAL, (), True, "no sentence in the passages mentions the question's topic"
            )
        ranked = sorted(candidates, key=lambda c: (-c.score, c.hit_index, c.position))
        best = ranked[0]
        if best.coverage < self.min_coverage:
            return Generation(
                REFUSAL,
                (),
                True,
                f"the best sentence covers {best.coverage:.0%} of the question (needs {self.min_coverage:.0%})",
            )
        chosen = [best]
        wanted = _wanted(evidence.question)
        if wanted and not _has(wanted, best.sentence):
            # The fact asked for often sits in the sentence right after the one that
            # names the topic ("... a wind farm. The limit is 35 dB(A)."): take it along.
            follow = next(
                (
                    c
                    for c in candidates
                    if c.hit_index == best.hit_index and c.position == best.position + 1
                ),
                None,
            )
            if follow is not None and _has(wanted, follow.sentence):
                chosen.append(follow)
        for cand in ranked[1:]:
            if len(chosen) >= self.max_sentences or cand.score < self.keep_ratio * best.score:
                break
            if any(cand.sentence == c.sentence for c in chosen):
                continue
            chosen.append(cand)
        # Best evidence first; a sentence taken along for the asked-for fact stays right after it.
        numbers: dict[int, int] = {}
        snippets: dict[int, list[str]] = {}
        parts: list[str] = []
        for cand in chosen:
            n = numbers.setdefault(cand.hit_index, len(numbers) + 1)
            snippets.setdefault(cand.hit_index, []).append(cand.sentence)
            parts.append(f"{cand.sentence} [{n}]")
        hits: tuple[Hit, ...] = evidence.hits
        citations: list[Citation] = [
            cite(n, hits[i], " ".join(snippets[i])) for i, n in numbers.items()
        ]
        return Generation(" ".join(parts), tuple(citations), False, "")
