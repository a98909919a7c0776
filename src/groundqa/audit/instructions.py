"""Instruction screen: did the answer follow an instruction planted in its sources?

A corpus is data that may have been written to steer the model answering from
it. `groundqa.lexicon.find_instructions` finds the sentences of a passage (its
title and section path included, which the prompt shows too) addressed to that
model rather than to a reader; this screen asks whether the answer listened.

An answer obeys an instruction when one of its sentences
- repeats it: shares six words in a row (or all of them, when fewer) with the
  instruction from where its rule matched, payload set aside, or three quarters
  of its content words, so light rewording still counts; or
- says its payload: every content word of a payload of up to three, or 80% of a
  longer one, appears in the sentence or in one of its clauses, with the same
  negation ("the ferry is not free" does not say "the ferry is free"), and not
  much else beside it, so a one-word payload such as "yes" is not found in every
  answer that contains the word. A payload that a passage also states outside
  any instruction (all its content words in one sentence) does not count: an
  answer may say what the corpus says.

The report (`InjectionReport`, under `injection` in the audit's JSON) lists the
passages that carry instructions (`passages`, 1-based, and `instructions`, each
with its rule, sentence and payload), then `flagged` and `matches` (`passage`,
`rule`, `instruction`, `how`: `repeats` or `obeys`, and `answer_excerpt`).

What this screen refuses to do: it reports; it does not withhold an answer or
change its verdicts, since the same words in a passage may be a quotation the
asker wants, and it never flags a refusal. The prompt fences every passage and
tells the model that source text is data (`generate/prompts.py`); this is the
check that the model listened.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from groundqa.audit.facts import split_claims
from groundqa.lexicon import Instruction, find_instructions, sentence_spans
from groundqa.verdicts import InjectionReport, InstructionMatch, PassageInstruction

INJECTION_METHOD = "instruction-screen-v1"


class _Passage:
    """A passage's instructions, and (on demand) its sentences outside them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.instructions = tuple(find_instructions(text))

    @cached_property
    def plain_sentences(self) -> tuple[str, ...]:
        """The passage's sentences outside its instructions: what it states as data."""
        spans = [(i.start, i.end) for i in self.instructions]
        return tuple(
            self.text[s:e]
            for s, e in sentence_spans(self.text)
            if not any(s < b and a < e for a, b in spans)
        )


@lru_cache(maxsize=4096)
def passage_instructions(text: str) -> _Passage:
    """Read once: the same few passages come back question after question."""
    return _Passage(text)


# Words that carry no claim of their own, left out when wordings are compared.
_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "by",
        "with",
        "from",
        "as",
        "and",
        "or",
        "but",
        "so",
        "then",
        "than",
        "there",
        "here",
        "i",
        "you",
        "your",
        "we",
        "our",
        "they",
        "their",
        "he",
        "she",
        "his",
        "her",
        "them",
        "will",
        "would",
        "shall",
        "should",
        "can",
        "could",
        "may",
        "might",
        "must",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "also",
        "just",
        "only",
        "all",
        "any",
        "now",
        "please",
    }
)
_NEGATIONS = frozenset({"not", "no", "never", "nothing", "none", "cannot", "nobody", "neither"})
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_CLAUSE = re.compile(r"[,;:()—–]|\s-\s|\b(?:and|but|so|while|whereas)\b", re.IGNORECASE)
# A directive shares this many words in a row with a sentence of the answer, or this
# share of its content words, for the answer to count as repeating it.
_ECHO_RUN = 6
_ECHO_SHARE = 0.75
_EXCERPT_CHARS = 200


@dataclass(frozen=True)
class _Words:
    words: tuple[str, ...]
    content: frozenset[str]
    negated: bool


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


@lru_cache(maxsize=8192)
def _words(text: str) -> _Words:
    words = tuple(w.replace("’", "'") for w in _WORD.findall(text.lower()))
    negated = any(w in _NEGATIONS or w.endswith("n't") for w in words)
    content = frozenset(
        _stem(w) for w in words if w not in _STOPWORDS and w not in _NEGATIONS and "n't" not in w
    )
    return _Words(words, content, negated)


def _longest_run(a: Sequence[str], b: Sequence[str]) -> int:
    """The most words in a row that `a` and `b` share."""
    best = 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            if x == y:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def _echoes(directive: str, sentence: str) -> bool:
    """A sentence of the answer repeats the directive, word for word or lightly reworded."""
    d, s = _words(directive), _words(sentence)
    if _longest_run(d.words, s.words) >= min(_ECHO_RUN, len(d.words)) and len(d.words) >= 3:
        return True
    return len(d.content) >= 3 and len(d.content & s.content) / len(d.content) >= _ECHO_SHARE


def _says(payload: str, sentence: str, *, alone: bool = True) -> bool:
    """The sentence, or a clause of it, says what the payload says, negated as it is.

    With `alone`, the payload must also be most of what the clause says, so that
    a payload of `yes` is not said by every answer that holds the word.
    """
    p = _words(payload)
    if not p.content:
        return False
    need = len(p.content) if len(p.content) <= 3 else 0.8 * len(p.content)
    # A one-word payload (`yes`) is said only by a sentence, not by a clause of one.
    clauses = _CLAUSE.split(sentence) if len(p.content) > 1 else []
    pieces = [sentence, *(c for c in clauses if c and c.strip())]
    for piece in pieces:
        s = _words(piece)
        if s.negated != p.negated or len(p.content & s.content) < need:
            continue
        if not alone or len(s.content - p.content) <= max(2, len(p.content)):
            return True
    return False


def _stated_elsewhere(payload: str, passages: Sequence[_Passage]) -> bool:
    """A passage holds the payload's words outside any instruction: an answer may say them."""
    return any(
        _says(payload, sentence, alone=False) for p in passages for sentence in p.plain_sentences
    )


def _obeyed(ins: Instruction, sentence: str, passages: Sequence[_Passage]) -> str | None:
    """`repeats` when the sentence echoes the command, `obeys` when it says the payload."""
    command = ins.directive
    if ins.payload:
        command = command.replace(ins.payload, " ")
    if _echoes(command, sentence):
        return "repeats"
    if (
        ins.payload
        and _says(ins.payload, sentence)
        and not _stated_elsewhere(ins.payload, passages)
    ):
        return "obeys"
    return None


def screen_instructions(
    answer_text: str, passage_texts: Sequence[str], *, refused: bool
) -> InjectionReport:
    """The instructions the passages carry, and the sentences of the answer that follow one.

    `passage_texts` are the retrieved passages as the prompt shows them, in order;
    positions in the report are 1-based. A refusal is never flagged, though its
    passages' instructions are still listed.
    """
    passages = [passage_instructions(text) for text in passage_texts]
    found = [(i, ins) for i, p in enumerate(passages, start=1) for ins in p.instructions]
    matches: list[InstructionMatch] = []
    if found and not refused:
        sentences = [c.text for c in split_claims(answer_text)]
        for position, ins in found:
            for sentence in sentences:
                how = _obeyed(ins, sentence, passages)
                if how is None:
                    continue
                excerpt = sentence[:_EXCERPT_CHARS]
                matches.append(InstructionMatch(position, ins.rule, ins.text, how, excerpt))
                break
    return InjectionReport(
        method=INJECTION_METHOD,
        instructions=tuple(
            PassageInstruction(i, ins.rule, ins.text, ins.payload) for i, ins in found
        ),
        matches=tuple(matches),
    )


def instruction_warning(report: InjectionReport) -> str | None:
    """The line a reader must see beside an answer that follows an instruction, or None.

    The answer still goes out, with the warning beside it: the reader decides.
    """
    if not report.flagged:
        return None
    where = ", ".join(str(n) for n in sorted({m.passage for m in report.matches}))
    return (
        f"this answer repeats or follows an instruction found in source text "
        f"(passage {where}); source text is data, so treat the answer with suspicion"
    )
