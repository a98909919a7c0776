"""The audit of one answer: the citation check, the fact screen and the instruction screen, together.

`audit_answer` runs the three checks over an answer and the passages it was
given, and returns one `AuditReport` (see `groundqa.verdicts` for its fields
and its JSON). `audit_notes` gives the lines a reader must see beside the answer;
`audited` attaches both to an Answer, with the audit's own time.

What the audit refuses to do: it never changes or withholds an answer, and no
check's finding changes another's verdicts; it reports, and the reader decides.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from groundqa.audit.citations import check_citations, citation_positions
from groundqa.audit.facts import METHOD, Judge, ask_judge, check_claim, passage_facts, split_claims
from groundqa.audit.instructions import instruction_warning, screen_instructions
from groundqa.models import Answer, Citation, Hit
from groundqa.verdicts import AuditReport, ClaimCheck


def audit_answer(
    answer_text: str,
    citations: Sequence[Citation],
    passages: Sequence[Hit],
    *,
    refused: bool,
    judge: Judge | None = None,
) -> AuditReport:
    """Check an answer's citations, claims and obedience against its passages.

    Each claim reports `cites` (its marker numbers as written) and `passages` (the
    1-based positions in `passages` those markers resolve to); each token's
    `found_in` uses the same positions, so a token found in a passage the claim
    does not cite is visible as such. A refusal has no claims, but the passages
    that carry instructions are still named. `judge`, when given, is asked about
    the UNVERIFIABLE claims only.
    """
    positions = citation_positions(citations, passages)
    check = check_citations(answer_text, sorted(positions), len(passages), refused)
    # The prompt shows a passage with its title and section path: the screens read that.
    texts = [h.chunk.index_text() for h in passages]
    injection = screen_instructions(answer_text, texts, refused=refused)
    claims: list[ClaimCheck] = []
    if not refused:
        facts = [passage_facts(text) for text in texts]
        claims = [check_claim(c, positions, facts) for c in split_claims(answer_text)]
        if judge is not None:
            evidence = [h.chunk.text for h in passages]
            claims = [
                ask_judge(judge, c, evidence) if c.verdict == "UNVERIFIABLE" else c for c in claims
            ]
    return AuditReport(
        method=METHOD,
        claims=tuple(claims),
        citations=check,
        judge=judge.name if judge is not None else None,
        injection=injection,
    )


def audit_notes(report: AuditReport) -> tuple[str, ...]:
    """Lines a reader must see beside the answer: a warning when it follows an instruction
    found in its sources. The answer still goes out with it: the reader decides."""
    warning = instruction_warning(report.injection)
    return (warning,) if warning else ()


def audited(answer: Answer) -> Answer:
    """The answer with its audit attached, the notes the audit says a reader must see,
    and the audit's time added to `timings_ms` (and to the total)."""
    t = time.perf_counter()
    report = audit_answer(answer.answer, answer.citations, answer.passages, refused=answer.refused)
    timings = dict(answer.timings_ms)
    timings["audit"] = (time.perf_counter() - t) * 1000
    timings["total"] = timings.get("total", 0.0) + timings["audit"]
    notes = (*answer.notes, *audit_notes(report))
    return replace(answer, audit=report, timings_ms=timings, notes=notes)
