"""The audit's report on one answer, as frozen records: claims, tokens, citations, instructions.

`groundqa.audit.audit_answer` returns an `AuditReport` and every `Answer` carries
one. `to_dict()` gives the JSON that the CLI (`--json`), the HTTP API and the web
page read, key for key and in order; `from_dict()` reads it back equal. What
follows from the rows (the verdict counts, the checkable share, whether the
citations are `ok`, whether an instruction was `flagged`, which passages carry
one) is computed from them, never stored beside them, so it cannot disagree.

These records hold what the audit found; they check nothing themselves, and this
module imports no stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Every verdict a claim can get, in the order the report counts them.
VERDICTS = ("NOT_CONTRADICTED", "UNSUPPORTED", "MISATTRIBUTED", "DERIVED", "UNVERIFIABLE")


@dataclass(frozen=True)
class TokenCheck:
    """One checkable token of a claim, and where the passages hold it.

    `found_in` are the 1-based positions of the retrieved passages that hold it.
    `status`: `cited` (a passage the claim cites holds it), `elsewhere` (only
    passages it does not cite), `derived` (none, but arithmetic over the cited
    passages gives it, as `derivation` says) or `missing`.
    """

    text: str
    kind: str
    normalised: str
    found_in: tuple[int, ...]
    status: str
    derivation: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "text": self.text,
            "kind": self.kind,
            "normalised": self.normalised,
            "found_in": list(self.found_in),
            "status": self.status,
        }
        if self.derivation is not None:
            d["derivation"] = self.derivation
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TokenCheck:
        return cls(
            text=d["text"],
            kind=d["kind"],
            normalised=d["normalised"],
            found_in=tuple(d.get("found_in", ())),
            status=d["status"],
            derivation=d.get("derivation"),
        )


@dataclass(frozen=True)
class ClaimCheck:
    """One sentence of the answer, its tokens, and the verdict they add up to.

    `cites` are its marker numbers as written; `passages` the 1-based positions of
    the retrieved passages those resolve to. `judged` says a `Judge` was asked
    about it (only UNVERIFIABLE claims are); `judge_verdict` is its answer, None
    when it had no opinion.
    """

    claim: str
    cites: tuple[int, ...]
    passages: tuple[int, ...]
    tokens: tuple[TokenCheck, ...]
    verdict: str
    judge_verdict: str | None = None
    judged: bool = False

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "claim": self.claim,
            "cites": list(self.cites),
            "passages": list(self.passages),
            "tokens": [t.to_dict() for t in self.tokens],
            "verdict": self.verdict,
        }
        if self.judged:
            d["judge_verdict"] = self.judge_verdict
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClaimCheck:
        return cls(
            claim=d["claim"],
            cites=tuple(d.get("cites", ())),
            passages=tuple(d.get("passages", ())),
            tokens=tuple(TokenCheck.from_dict(t) for t in d.get("tokens", ())),
            verdict=d["verdict"],
            judge_verdict=d.get("judge_verdict"),
            judged="judge_verdict" in d,
        )


@dataclass(frozen=True)
class CitationCheck:
    """Whether every `[n]` in the text resolves to a citation of a retrieved passage.

    `unresolved`: marker numbers with no citation (or beyond the passages given);
    `no_markers`: an answer that is not a refusal and cites nothing inline;
    `refusal_cites`: a refusal that carries a marker or a citation. `unused`
    (citations no marker points to) is reported but does not make it fail.
    """

    markers: tuple[int, ...]
    unresolved: tuple[int, ...]
    unused: tuple[int, ...]
    no_markers: bool
    refusal_cites: bool

    @property
    def ok(self) -> bool:
        return not (self.unresolved or self.no_markers or self.refusal_cites)

    def to_dict(self) -> dict[str, Any]:
        return {
            "markers": list(self.markers),
            "unresolved": list(self.unresolved),
            "unused": list(self.unused),
            "no_markers": self.no_markers,
            "refusal_cites": self.refusal_cites,
            "ok": self.ok,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CitationCheck:
        return cls(
            markers=tuple(d.get("markers", ())),
            unresolved=tuple(d.get("unresolved", ())),
            unused=tuple(d.get("unused", ())),
            no_markers=bool(d["no_markers"]),
            refusal_cites=bool(d["refusal_cites"]),
        )


@dataclass(frozen=True)
class PassageInstruction:
    """A sentence of retrieved passage `passage` (1-based) addressed to the model.

    `rule` names the way it addresses the model (`override`, `role`, ...);
    `payload` is what it asks to be said, or "" when it asks nothing.
    """

    passage: int
    rule: str
    text: str
    payload: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "passage": self.passage,
            "rule": self.rule,
            "text": self.text,
            "payload": self.payload,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PassageInstruction:
        return cls(passage=d["passage"], rule=d["rule"], text=d["text"], payload=d["payload"])


@dataclass(frozen=True)
class InstructionMatch:
    """A sentence of the answer that `repeats` or `obeys` an instruction of passage `passage`."""

    passage: int
    rule: str
    instruction: str
    how: str
    answer_excerpt: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "passage": self.passage,
            "rule": self.rule,
            "instruction": self.instruction,
            "how": self.how,
            "answer_excerpt": self.answer_excerpt,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> InstructionMatch:
        return cls(
            passage=d["passage"],
            rule=d["rule"],
            instruction=d["instruction"],
            how=d["how"],
            answer_excerpt=d["answer_excerpt"],
        )


@dataclass(frozen=True)
class InjectionReport:
    """The instruction screen: what the passages say to the model, and whether the answer listened."""

    method: str
    instructions: tuple[PassageInstruction, ...] = ()
    matches: tuple[InstructionMatch, ...] = ()

    @property
    def passages(self) -> list[int]:
        """The 1-based positions of the passages that carry an instruction."""
        return sorted({i.passage for i in self.instructions})

    @property
    def flagged(self) -> bool:
        """Whether the answer repeats or obeys any of them."""
        return bool(self.matches)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "passages": self.passages,
            "instructions": [i.to_dict() for i in self.instructions],
            "flagged": self.flagged,
            "matches": [m.to_dict() for m in self.matches],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> InjectionReport:
        return cls(
            method=d["method"],
            instructions=tuple(PassageInstruction.from_dict(i) for i in d.get("instructions", ())),
            matches=tuple(InstructionMatch.from_dict(m) for m in d.get("matches", ())),
        )


@dataclass(frozen=True)
class AuditReport:
    """What the audit found in one answer: its claims, its citations, its passages' instructions.

    `judge` names the `Judge` asked about UNVERIFIABLE claims, or is None.
    """

    method: str
    claims: tuple[ClaimCheck, ...]
    citations: CitationCheck
    judge: str | None
    injection: InjectionReport

    @property
    def verdicts(self) -> dict[str, int]:
        """How many claims got each verdict, every verdict listed."""
        counts = dict.fromkeys(VERDICTS, 0)
        for claim in self.claims:
            counts[claim.verdict] += 1
        return counts

    @property
    def checkable_share(self) -> float:
        """The share of claims with a checkable token: 0.0 for none, so a quiet audit
        is never mistaken for a clean one."""
        if not self.claims:
            return 0.0
        return sum(1 for c in self.claims if c.verdict != "UNVERIFIABLE") / len(self.claims)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "claims": [c.to_dict() for c in self.claims],
            "verdicts": self.verdicts,
            "checkable_share": self.checkable_share,
            "citations": self.citations.to_dict(),
            "judge": self.judge,
            "injection": self.injection.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AuditReport:
        return cls(
            method=d["method"],
            claims=tuple(ClaimCheck.from_dict(c) for c in d.get("claims", ())),
            citations=CitationCheck.from_dict(d["citations"]),
            judge=d.get("judge"),
            injection=InjectionReport.from_dict(d["injection"]),
        )
