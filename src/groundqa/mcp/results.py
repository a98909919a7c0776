"""What the MCP tools return: the structured content of each result, and its text.

Each tool result carries both: plain text a model reads (an answer with its `[n]`
markers and Sources list, ranked passages, a document's sections) and structured
content whose shape the tool's output schema publishes. Both are built here from
the library's own objects (`Answer`, `Hit`, `Chunk`); nothing is searched or decided.
Every text is cut to the limits in `exposure`, as the HTTP API cuts it, and says so:
an index may hold a section that was never split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal, cast

from pydantic import BaseModel, Field

from groundqa.exposure import MAX_ANSWER_CHARS, MAX_PASSAGE_CHARS, clip, cut_note
from groundqa.models import Answer, Chunk, Citation, Hit

# A document read whole stops after this many characters of text; the sections left out
# are named, so each can be read on its own by its section id.
MAX_SOURCE_CHARS = 30_000


TRUNCATED = (
    f"True when the text is cut to its first {MAX_PASSAGE_CHARS:,} characters (a section "
    "of the corpus that was never split); `source` with its id reads the same cut text."
)


class CitationOut(BaseModel):
    """Where one `[n]` marker of an answer points."""

    n: int = Field(description="The number of the [n] marker in the answer text.")
    doc_id: str
    section_id: str = Field(description="The cited section; `source` reads it whole.")
    section: str = Field(description="The section's path: document title > headings.")
    clause: str | None = Field(description="The clause a reader looks up, e.g. s.3.1, if known.")
    page: int | None
    uri: str = Field(description="A link to the source file (and page).")
    snippet: str = Field(description="The cited passage's words the answer rests on.")
    truncated: bool = Field(False, description=TRUNCATED)


Outcome = Literal["confident", "cautious", "refused"]


class AskResult(BaseModel):
    """An answer from the corpus with its citations, or a refusal."""

    answer: str = Field(description="The answer with [n] markers, or the refusal sentence.")
    outcome: Outcome = Field(
        description="'confident'; 'cautious': the closest passage, which may not answer the "
        "question, so say so when passing it on; or 'refused'."
    )
    refused: bool = Field(
        description="True when the corpus does not cover the question: nothing is cited, and "
        "the question should not be answered from general knowledge as if the corpus did."
    )
    refused_by: str | None = Field(
        description="What refused: 'gate' (retrieval found too little) or 'generator'."
    )
    confidence: float = Field(description="How likely the corpus answers the question, 0 to 1.")
    standalone_question: str | None = Field(
        description="How a follow-up was read against the history, when that changed it."
    )
    citations: list[CitationOut]
    notes: list[str] = Field(
        description="What a reader must know about the sources, e.g. that a version is superseded."
    )


class PassageOut(BaseModel):
    """One retrieved passage: a chunk of a section."""

    rank: int
    score: float
    doc_id: str
    section_id: str
    chunk_id: str
    section: str = Field(description="The section's path: document title > headings.")
    page: int | None
    uri: str
    text: str
    truncated: bool = Field(False, description=TRUNCATED)


class SearchResult(BaseModel):
    """Passages ranked for a question, best first; not an answer."""

    passages: list[PassageOut]


class SourcePart(BaseModel):
    """One chunk of a document, in reading order."""

    chunk_id: str
    section_id: str
    section: str = Field(description="The section's path: document title > headings.")
    part: int = Field(description="Which part of its section this chunk is, from 0.")
    parts: int = Field(description="How many parts its section was cut into.")
    page: int | None
    uri: str
    text: str
    truncated: bool = Field(False, description=TRUNCATED)


class SourceResult(BaseModel):
    """A document, a section or a chunk as the index holds it."""

    id: str
    kind: Literal["document", "section", "chunk"]
    doc_id: str
    title: str
    parts: list[SourcePart]
    omitted_sections: list[str] = Field(
        description="Sections of a long document left out of `parts`; read each by its id."
    )


def shown(answer: Answer) -> Answer:
    """`answer` as a tool returns it: its text cut to MAX_ANSWER_CHARS, with a note if cut."""
    text, cut = clip(answer.answer, MAX_ANSWER_CHARS)
    if not cut:
        return answer
    note = cut_note("The answer", len(text), len(answer.answer))
    return replace(answer, answer=text, notes=(*answer.notes, note))


def citation_out(c: Citation) -> CitationOut:
    snippet, cut = clip(c.snippet, MAX_PASSAGE_CHARS)
    return CitationOut(
        n=c.n,
        doc_id=c.doc_id,
        section_id=c.section_id,
        section=c.section,
        clause=c.clause,
        page=c.page,
        uri=c.uri,
        snippet=snippet,
        truncated=cut,
    )


def ask_result(answer: Answer) -> AskResult:
    return AskResult(
        answer=answer.answer,
        outcome=cast(Outcome, answer.outcome),
        refused=answer.refused,
        refused_by=answer.refused_by,
        confidence=answer.confidence,
        standalone_question=answer.standalone_question,
        citations=[citation_out(c) for c in answer.citations],
        notes=list(answer.notes),
    )


def passage_out(hit: Hit) -> PassageOut:
    c = hit.chunk
    text, cut = clip(c.text, MAX_PASSAGE_CHARS)
    return PassageOut(
        rank=hit.rank,
        score=hit.score,
        doc_id=c.doc_id,
        section_id=c.section_id,
        chunk_id=c.chunk_id,
        section=c.breadcrumb,
        page=c.page,
        uri=c.uri,
        text=text,
        truncated=cut,
    )


def _text(text: str) -> str:
    """A passage's text as a model reads it, cut with a line that says so."""
    shown_text, cut = clip(text, MAX_PASSAGE_CHARS)
    if not cut:
        return text
    return f"{shown_text}\n[{cut_note('This passage', len(shown_text), len(text))}]"


def search_text(hits: Sequence[Hit]) -> str:
    """Ranked passages as a model reads them: rank, section, ids and link, then the text."""
    if not hits:
        return "No passage of the corpus matches."
    blocks = []
    for h in hits:
        c = h.chunk
        page = f", p. {c.page}" if c.page else ""
        head = f"{h.rank}. {c.breadcrumb}{page} (section_id: {c.section_id}) <{c.uri}>"
        blocks.append(f"{head}\n{_text(c.text)}")
    return "\n\n".join(blocks)


def source_part(c: Chunk) -> SourcePart:
    text, cut = clip(c.text, MAX_PASSAGE_CHARS)
    return SourcePart(
        chunk_id=c.chunk_id,
        section_id=c.section_id,
        section=c.breadcrumb,
        part=c.part,
        parts=c.parts,
        page=c.page,
        uri=c.uri,
        text=text,
        truncated=cut,
    )


def source_result(
    id_: str, kind: Literal["document", "section", "chunk"], chunks: Sequence[Chunk]
) -> SourceResult:
    """`chunks` (one document's, in reading order) up to MAX_SOURCE_CHARS of text, at least one
    (cut to MAX_PASSAGE_CHARS); the sections of the chunks past the limit are named instead."""
    kept: list[Chunk] = []
    size = 0
    for c in chunks:
        length = min(len(c.text), MAX_PASSAGE_CHARS)
        if kept and size + length > MAX_SOURCE_CHARS:
            break
        kept.append(c)
        size += length
    omitted = [c.section_id for c in chunks[len(kept) :]]
    return SourceResult(
        id=id_,
        kind=kind,
        doc_id=chunks[0].doc_id,
        title=chunks[0].title,
        parts=[source_part(c) for c in kept],
        omitted_sections=list(dict.fromkeys(omitted)),
    )


def source_text(result: SourceResult) -> str:
    """The parts under their section headings, and what was left out."""
    lines: list[str] = []
    section = None
    for p in result.parts:
        if p.section_id != section:
            section = p.section_id
            page = f", p. {p.page}" if p.page else ""
            lines += ["", f"## {p.section}{page} (section_id: {p.section_id}) <{p.uri}>"]
        lines.append(p.text)
        if p.truncated:
            lines.append(f"[This passage is cut to its first {len(p.text):,} characters]")
    if result.omitted_sections:
        lines += [
            "",
            f"{len(result.omitted_sections)} more sections are left out for length; read each "
            "with source and its section_id: " + ", ".join(result.omitted_sections),
        ]
    return "\n".join(lines).strip()
