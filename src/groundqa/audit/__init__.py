"""Audit: put an answer back against the passages it cites, and say what holds.

Three checks run on every answer, one module each:

- `citations`: every `[n]` marker resolves to a citation of a retrieved
  passage; a real answer carries a marker; a refusal cites nothing.
- `facts`: the answer's claims and the checkable tokens in them (quantities,
  percentages, times, money, dates, standards, directives, clause references),
  each looked up in the passages and given a verdict (`VERDICTS`).
- `instructions`: whether the answer repeats or obeys an instruction that a
  passage addresses to the model.

`report.audit_answer` runs them and returns an `AuditReport` (`groundqa.verdicts`),
which every `Answer` carries; `audit_notes` gives the lines (a warning when the
answer follows an instruction in its sources) a reader must see beside it. What
text looks like (markers, sentences, tokens, instructions) is read from
`groundqa.lexicon`.

What this stage refuses to do: it judges no prose (a claim with nothing
checkable is UNVERIFIABLE, and only a `Judge` is asked about it), it never
loosens a look-alike into a match, and it never withholds or rewrites an
answer: it reports, and the reader decides.

Everything here is a pure function over strings and the pipeline's records,
with no I/O. A passage's reading is cached by its text, since the same few
passages come back question after question; `clear_caches` forgets them.
"""

from __future__ import annotations

from groundqa.audit.citations import check_citations
from groundqa.audit.facts import (
    METHOD,
    Claim,
    Judge,
    Token,
    extract_tokens,
    passage_facts,
    split_claims,
)
from groundqa.audit.instructions import INJECTION_METHOD, passage_instructions
from groundqa.audit.report import audit_answer, audit_notes, audited
from groundqa.lexicon import Instruction, find_instructions
from groundqa.verdicts import (
    VERDICTS,
    AuditReport,
    CitationCheck,
    ClaimCheck,
    InjectionReport,
    InstructionMatch,
    PassageInstruction,
    TokenCheck,
)

__all__ = [
    "INJECTION_METHOD",
    "METHOD",
    "VERDICTS",
    "AuditReport",
    "CitationCheck",
    "Claim",
    "ClaimCheck",
    "InjectionReport",
    "Instruction",
    "InstructionMatch",
    "Judge",
    "PassageInstruction",
    "Token",
    "TokenCheck",
    "audit_answer",
    "audit_notes",
    "audited",
    "check_citations",
    "clear_caches",
    "extract_tokens",
    "find_instructions",
    "split_claims",
]


def clear_caches() -> None:
    """Forget every passage read so far, so the next audit reads each afresh (a cold start)."""
    passage_facts.cache_clear()
    passage_instructions.cache_clear()
