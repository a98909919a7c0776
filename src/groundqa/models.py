"""The records that flow between pipeline stages.

Every stage takes and returns these frozen dataclasses. Each has `to_dict()` and
`from_dict()` so an Answer can cross a process boundary (CLI `--json`, HTTP) and
come back equal. Ids are derived from content and position, never from a
counter, so a rebuild of the same corpus yields the same ids.
"""

from __future__ import annotations

import bisect
import hashlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from groundqa.verdicts import AuditReport

Severity = Literal["BLOCK", "REVIEW"]
SEVERITIES: tuple[Severity, ...] = ("BLOCK", "REVIEW")


def stable_id(*parts: object, length: int = 16) -> str:
    """A short hex id that depends only on `parts` (content and position)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8"))
    return digest.hexdigest()[:length]


def breadcrumb(title: str, path: tuple[str, ...]) -> str:
    """`Title > Part 2 > 2.1 Thresholds`: the document title then the section path."""
    return " > ".join(p for p in (title, *path) if p)


# The section metadata key that names an element id a link can jump to (an HTML heading's
# id): its chunks link to `page.html#ID`.
ANCHOR = "anchor"
# What a fragment may hold unescaped (RFC 3986 pchar, less what would end it).
ANCHOR_SAFE = "-._~!$&'()*+,;=:@/?"


def uri_for(source: str, page: int | None, anchor: str | None = None) -> str:
    """A link a reader can open: a file URI for local paths, with `#page=N` when known,
    else `#ANCHOR` for a section an element id names (an HTML page's)."""
    if "://" in source:
        base = source
    elif source:
        base = Path(source).resolve().as_uri()
    else:
        base = ""
    if not base:
        return base
    if page is not None:
        return f"{base}#page={page}"
    return f"{base}#{quote(anchor, safe=ANCHOR_SAFE)}" if anchor else base


def page_at(page: int | None, page_starts: tuple[tuple[int, int], ...], offset: int) -> int | None:
    """The page of the character at `offset` in a text whose pages begin at `page_starts`
    ((offset, page) pairs in order); `page` where there are none."""
    if not page_starts:
        return page
    at = bisect.bisect_right(page_starts, (offset, sys.maxsize)) - 1
    return page_starts[max(at, 0)][1]


def _pairs(raw: Any) -> tuple[tuple[int, int], ...]:
    return tuple((int(o), int(p)) for o, p in raw or ())


@dataclass(frozen=True)
class Section:
    """One addressable unit of a document: a `##` section, a CSV row, a clause.

    `page` is the page the section starts on. A section that runs over several pages
    (PDF) also has `page_starts`: (character offset in `text`, page) where each page's
    part of the text begins, in order, the first at offset 0.
    """

    section_id: str
    heading: str
    text: str
    path: tuple[str, ...] = ()
    page: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    page_starts: tuple[tuple[int, int], ...] = ()

    def page_at(self, offset: int) -> int | None:
        """The page the character at `offset` in `text` is on (`page` without page_starts)."""
        return page_at(self.page, self.page_starts, offset)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "section_id": self.section_id,
            "heading": self.heading,
            "text": self.text,
            "path": list(self.path),
            "page": self.page,
            "metadata": dict(self.metadata),
        }
        if self.page_starts:
            # Only when present, so stored corpora without pages keep their fingerprints.
            d["page_starts"] = [list(pair) for pair in self.page_starts]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Section:
        return cls(
            section_id=d["section_id"],
            heading=d.get("heading", ""),
            text=d.get("text", ""),
            path=tuple(d.get("path", ())),
            page=d.get("page"),
            metadata=dict(d.get("metadata", {})),
            page_starts=_pairs(d.get("page_starts")),
        )


@dataclass(frozen=True)
class Document:
    """A source document as loaded: its identity, provenance and sections.

    Record formats (CSV rows, BEIR entries) give one Document per record with a
    single Section whose id is the record id; structured formats (Markdown,
    ObliQA) give one Document per file with one Section per heading or clause.
    """

    doc_id: str
    title: str
    source: str
    format: str
    sections: tuple[Section, ...]
    metadata: dict[str, Any] = field(default_factory=dict)
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "title": self.title,
            "source": self.source,
            "format": self.format,
            "sections": [s.to_dict() for s in self.sections],
            "metadata": dict(self.metadata),
            "line": self.line,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Document:
        return cls(
            doc_id=d["doc_id"],
            title=d.get("title", ""),
            source=d.get("source", ""),
            format=d.get("format", ""),
            sections=tuple(Section.from_dict(s) for s in d.get("sections", ())),
            metadata=dict(d.get("metadata", {})),
            line=d.get("line"),
        )


@dataclass(frozen=True)
class Chunk:
    """The unit that is indexed and retrieved: a section, or one part of a long one.

    `page` is the page its text starts on; a chunk that runs over a page break also has
    `page_starts`, as a section does: (character offset in `text`, page) where each
    page's part begins, the first at offset 0. So a citation can name the page of the
    very sentence it quotes.
    """

    chunk_id: str
    doc_id: str
    section_id: str
    title: str
    section_path: tuple[str, ...]
    text: str
    source: str
    page: int | None = None
    part: int = 0
    parts: int = 1
    metadata: dict[str, Any] = field(default_factory=dict)
    page_starts: tuple[tuple[int, int], ...] = ()

    @property
    def breadcrumb(self) -> str:
        return breadcrumb(self.title, self.section_path)

    @property
    def uri(self) -> str:
        return self.uri_at(self.page)

    def uri_at(self, page: int | None) -> str:
        """The chunk's link, to `page` (one of its pages) where it has pages."""
        anchor = self.metadata.get(ANCHOR)
        return uri_for(self.source, page, anchor if isinstance(anchor, str) else None)

    def page_at(self, offset: int) -> int | None:
        """The page the character at `offset` in `text` is on."""
        return page_at(self.page, self.page_starts, offset)

    def index_text(self, section_path: bool = True) -> str:
        """What the indexes see: title and section path travel with the body. Without
        `section_path` (`ChunkerSettings.section_path`), the title and the body only."""
        head = self.breadcrumb if section_path else breadcrumb(self.title, ())
        return "\n".join((head, self.text))

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "section_id": self.section_id,
            "title": self.title,
            "section_path": list(self.section_path),
            "text": self.text,
            "source": self.source,
            "page": self.page,
            "part": self.part,
            "parts": self.parts,
            "metadata": dict(self.metadata),
            **({"page_starts": [list(p) for p in self.page_starts]} if self.page_starts else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Chunk:
        return cls(
            chunk_id=d["chunk_id"],
            doc_id=d["doc_id"],
            section_id=d["section_id"],
            title=d.get("title", ""),
            section_path=tuple(d.get("section_path", ())),
            text=d["text"],
            source=d.get("source", ""),
            page=d.get("page"),
            part=int(d.get("part", 0)),
            parts=int(d.get("parts", 1)),
            metadata=dict(d.get("metadata", {})),
            page_starts=_pairs(d.get("page_starts")),
        )


@dataclass(frozen=True)
class Hit:
    """A retrieved chunk with its score and 1-based rank under one retriever."""

    chunk: Chunk
    score: float
    rank: int
    retriever: str = "bm25"

    def to_dict(self) -> dict[str, Any]:
        c = self.chunk
        return {
            "rank": self.rank,
            "score": self.score,
            "retriever": self.retriever,
            "chunk_id": c.chunk_id,
            "doc_id": c.doc_id,
            "section_id": c.section_id,
            "title": c.title,
            "section": c.breadcrumb,
            "section_path": list(c.section_path),
            "page": c.page,
            "source": c.source,
            "uri": c.uri,
            "part": c.part,
            "parts": c.parts,
            "metadata": dict(c.metadata),
            "text": c.text,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Hit:
        return cls(
            chunk=Chunk.from_dict(d),
            score=float(d["score"]),
            rank=int(d["rank"]),
            retriever=d.get("retriever", "bm25"),
        )


@dataclass(frozen=True)
class Citation:
    """What an `[n]` marker in an answer points to."""

    n: int
    chunk_id: str
    doc_id: str
    section_id: str
    title: str
    section: str
    page: int | None
    uri: str
    snippet: str
    # The clause a reader looks up (s.3.1, cl.42, reg.12, an ObliQA passage id), if known.
    clause: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "section_id": self.section_id,
            "title": self.title,
            "section": self.section,
            "page": self.page,
            "uri": self.uri,
            "snippet": self.snippet,
            "clause": self.clause,
        }

    def source_line(self) -> str:
        """One plain line naming where `[n]` points: section, clause, page and link."""
        where = "".join(
            f", {part}" for part in (self.clause, f"p. {self.page}" if self.page else None) if part
        )
        return f"[{self.n}] {self.section}{where} <{self.uri}>"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Citation:
        return cls(
            n=int(d["n"]),
            chunk_id=d.get("chunk_id", ""),
            doc_id=d["doc_id"],
            section_id=d.get("section_id", ""),
            title=d.get("title", ""),
            section=d.get("section", ""),
            page=d.get("page"),
            uri=d.get("uri", ""),
            snippet=d.get("snippet", ""),
            clause=d.get("clause"),
        )


@dataclass(frozen=True)
class GateDecision:
    """Whether retrieval found enough to answer, and the numbers behind the call.

    `score` is P(answerable) from the gate's model; `factors` is each feature's
    push on its log-odds (positive: towards answering); `calibrated` says whether
    the model was fitted for this index or is the built-in default. `outcome` is
    "confident" (score at or over `threshold`), "cautious" (at or over `floor`) or
    "refused"; `answer` is whether it is not a refusal.
    """

    answer: bool
    reason: str
    score: float
    threshold: float
    features: dict[str, float] = field(default_factory=dict)
    factors: dict[str, float] = field(default_factory=dict)
    calibrated: bool = False
    outcome: str = ""
    floor: float | None = None
    self_fit: bool = False  # the default gate, with the floor its index fitted for itself
    # The band gate's P(answerable) where it was asked (the default alone would refuse), and
    # its floor, where the index fitted one (`Gate.band`).
    band: float | None = None
    band_floor: float | None = None

    def __post_init__(self) -> None:
        if not self.outcome:  # made before there were three outcomes
            object.__setattr__(self, "outcome", "confident" if self.answer else "refused")
        if self.floor is None:
            object.__setattr__(self, "floor", self.threshold)

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "outcome": self.outcome,
            "reason": self.reason,
            "score": self.score,
            "threshold": self.threshold,
            "floor": self.floor,
            "features": dict(self.features),
            "factors": dict(self.factors),
            "calibrated": self.calibrated,
            "self_fit": self.self_fit,
            "band": self.band,
            "band_floor": self.band_floor,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GateDecision:
        return cls(
            answer=bool(d["answer"]),
            reason=d.get("reason", ""),
            score=float(d.get("score", 0.0)),
            threshold=float(d.get("threshold", 0.0)),
            features={k: float(v) for k, v in d.get("features", {}).items()},
            factors={k: float(v) for k, v in d.get("factors", {}).items()},
            calibrated=bool(d.get("calibrated", False)),
            outcome=str(d.get("outcome", "")),
            floor=float(d["floor"]) if d.get("floor") is not None else None,
            self_fit=bool(d.get("self_fit", False)),
            band=float(d["band"]) if d.get("band") is not None else None,
            band_floor=float(d["band_floor"]) if d.get("band_floor") is not None else None,
        )


REFUSAL = "I don't have enough information about that."
# What a cautious answer is called wherever it is shown.
CAUTION = "The closest passage, which may not answer this"
# A refusal asked to explain itself lists this many of the sections that came closest.
CLOSEST_MATCHES = 3


@dataclass(frozen=True)
class Answer:
    """The result of one question: text, its sources, and how it was decided."""

    question: str
    answer: str
    refused: bool
    citations: tuple[Citation, ...]
    passages: tuple[Hit, ...]
    gate: GateDecision
    refused_by: str | None = None
    generator: str = "extractive"
    audit: AuditReport | None = None
    scope: dict[str, list[str]] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    prompt_version: str | None = None
    intent: str | None = None
    # Things a reader must know about the sources, e.g. that a cited version is superseded.
    notes: tuple[str, ...] = ()
    # A follow-up's standalone form, when the conversation changed what was asked.
    standalone_question: str | None = None

    def with_sources(self) -> str:
        """The answer as plain text for a chat: its `[n]` markers, then a `Sources:` list,
        then its notes. A cautious answer says so on the line after its text (after, so that
        a reply streamed as it is written can still say it). A refusal is the refusal
        sentence alone."""
        if self.refused or not self.citations:
            return self.answer
        caution = ["", f"({CAUTION}.)"] if self.cautious else []
        lines = [
            self.answer,
            *caution,
            "",
            "Sources:",
            *(c.source_line() for c in self.citations),
        ]
        if self.notes:
            lines += ["", *(f"Note: {n}" for n in self.notes)]
        return "\n".join(lines)

    @property
    def confidence(self) -> float:
        """P(answerable) as the gate judged it (calibrated when `gate.calibrated`)."""
        return self.gate.score

    @property
    def outcome(self) -> str:
        """ "refused"; "cautious", the closest passage, which may not answer the question
        (the gate's confidence under its threshold for a confident answer); or "confident"."""
        if self.refused:
            return "refused"
        return "cautious" if self.gate.outcome == "cautious" else "confident"

    @property
    def cautious(self) -> bool:
        return self.outcome == "cautious"

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "outcome": self.outcome,
            "refused": self.refused,
            "refused_by": self.refused_by,
            "confidence": self.confidence,
            "citations": [c.to_dict() for c in self.citations],
            "passages": [h.to_dict() for h in self.passages],
            "gate": self.gate.to_dict(),
            "generator": self.generator,
            "audit": self.audit.to_dict() if self.audit is not None else None,
            "scope": {k: list(v) for k, v in self.scope.items()},
            "timings_ms": dict(self.timings_ms),
            "error": self.error,
            "prompt_version": self.prompt_version,
            "intent": self.intent,
            "notes": list(self.notes),
            "standalone_question": self.standalone_question,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Answer:
        return cls(
            question=d["question"],
            answer=d["answer"],
            refused=bool(d["refused"]),
            refused_by=d.get("refused_by"),
            citations=tuple(Citation.from_dict(c) for c in d.get("citations", ())),
            passages=tuple(Hit.from_dict(h) for h in d.get("passages", ())),
            gate=GateDecision.from_dict(d["gate"]),
            generator=d.get("generator", "extractive"),
            audit=AuditReport.from_dict(d["audit"]) if d.get("audit") is not None else None,
            scope={k: list(v) for k, v in d.get("scope", {}).items()},
            error=d.get("error"),
            prompt_version=d.get("prompt_version"),
            intent=d.get("intent"),
            notes=tuple(d.get("notes", ())),
            standalone_question=d.get("standalone_question"),
            timings_ms={k: float(v) for k, v in d.get("timings_ms", {}).items()},
        )


@dataclass(frozen=True)
class Finding:
    """One thing validation noticed. BLOCK stops indexing; REVIEW is reported and indexed."""

    severity: Severity
    check: str
    message: str
    source: str = ""
    doc_id: str | None = None
    section_id: str | None = None
    line: int | None = None
    excerpt: str = ""

    def where(self) -> str:
        parts = []
        if self.source:
            parts.append(f"{self.source}:{self.line}" if self.line else self.source)
        if self.section_id:
            parts.append(f"section {self.section_id}")
        elif self.doc_id:
            parts.append(f"doc {self.doc_id}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "check": self.check,
            "message": self.message,
            "source": self.source,
            "doc_id": self.doc_id,
            "section_id": self.section_id,
            "line": self.line,
            "excerpt": self.excerpt,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        severity = d["severity"]
        if severity not in SEVERITIES:
            raise ValueError(f"unknown severity {severity!r}")
        return cls(
            severity=severity,
            check=d["check"],
            message=d["message"],
            source=d.get("source", ""),
            doc_id=d.get("doc_id"),
            section_id=d.get("section_id"),
            line=d.get("line"),
            excerpt=d.get("excerpt", ""),
        )
