"""Structure-aware chunking: one section becomes one chunk unless it is too long.

A section longer than `max_chars` is split at paragraph boundaries first, then at
sentence boundaries inside a paragraph that is itself too long, with a short
overlap so a fact spanning the cut is found from either side. It does not cut
inside a sentence: a single sentence longer than the limit stays whole (and
`check_boundaries` lists it), up to `LONGEST_SENTENCE` characters. Past that it
is no sentence a reader wrote but a table flattened without punctuation, a log,
or a file made to hurt: it is cut at spaces (at characters where there are
none) into pieces of the limit, so that no chunk, and so no answer or passage
built from one, is ever longer than the larger of the two. Every part keeps the section id, the document
title and the section path, so retrieval is scored and cited per section
(whether the path is also indexed is `ChunkerSettings.section_path`). A part of
a section that runs over pages (a PDF's) takes the page its own text starts on.

Chunk ids hash the section id, the part number and the text, so an unchanged
corpus rebuilds to the same ids.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from groundqa.models import Chunk, Document, Section, stable_id
from groundqa.text import (
    OPENING_CHARS,
    ends_sentence,
    find_opening,
    split_paragraphs,
    split_sentences,
)

# The longest run of text kept whole for being one sentence. A chunk is never longer than
# this or `max_chars`, whichever is larger; the longest real sentences (a long clause
# with its sub-items) run to a few thousand characters.
LONGEST_SENTENCE = 8000


@dataclass(frozen=True)
class ChunkerSettings:
    """How long sections are cut, and what travels with a chunk into the index.

    `section_path=False` indexes each chunk as its document title and text only
    (`Chunk.index_text`); the chunk keeps its path, so citations still show the
    breadcrumb. Stored in the index manifest, and so part of the build fingerprint.
    """

    max_chars: int = 1500
    overlap_chars: int = 300
    section_path: bool = True

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"strategy": "section-paragraph-sentence-v1", **asdict(self)}
        # Written only when off: a default build keeps the fingerprint it had before the
        # setting existed, so existing indexes (and their gate calibrations) stay current.
        if self.section_path:
            del d["section_path"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ChunkerSettings:
        """A missing key takes its default, so a manifest written before a setting existed
        reads as the build it was."""
        default = cls()
        return cls(
            max_chars=int(d.get("max_chars", default.max_chars)),
            overlap_chars=int(d.get("overlap_chars", default.overlap_chars)),
            section_path=bool(d.get("section_path", default.section_path)),
        )


@dataclass(frozen=True)
class _Unit:
    text: str
    joiner: str  # how this unit attaches to the one before it in the same part
    paragraph_start: bool


def _units(text: str, max_chars: int) -> list[_Unit]:
    """Paragraphs, with over-long paragraphs broken into their sentences (and a sentence
    past LONGEST_SENTENCE into pieces)."""
    units: list[_Unit] = []
    for para in split_paragraphs(text):
        if len(para) <= max_chars:
            units.append(_Unit(para, "\n\n", True))
            continue
        for i, sentence in enumerate(split_sentences(para)):
            pieces = (
                cut_at_spaces(sentence, max_chars)
                if len(sentence) > max(max_chars, LONGEST_SENTENCE)
                else [sentence]
            )
            for j, piece in enumerate(pieces):
                first = i == 0 and j == 0
                units.append(_Unit(piece, "\n\n" if first else " ", first))
    return units


def cut_at_spaces(text: str, limit: int) -> list[str]:
    """`text` in pieces of at most `limit` characters, each cut at the last space before
    the limit, or at the limit itself where a piece has no space; whitespace at a cut
    is dropped."""
    pieces: list[str] = []
    start, end = 0, len(text)
    while start < end:
        while start < end and text[start].isspace():
            start += 1
        if end - start <= limit:
            piece = text[start:end].rstrip()
            if piece:
                pieces.append(piece)
            break
        cut = max(text.rfind(space, start, start + limit + 1) for space in " \t\n")
        if cut <= start:
            cut = start + limit
        pieces.append(text[start:cut].rstrip())
        start = cut
    return pieces


def split_section(text: str, settings: ChunkerSettings) -> list[str]:
    """The text of each part of one section, in order."""
    body = text.strip()
    if len(body) <= settings.max_chars:
        return [body] if body else []
    units = _units(body, settings.max_chars)
    parts: list[list[_Unit]] = []
    current: list[_Unit] = []
    size = 0
    for unit in units:
        added = len(unit.text) + (len(unit.joiner) if current else 0)
        if current and size + added > settings.max_chars:
            parts.append(current)
            tail = current[-1]
            # Overlap: repeat the last unit when it is short enough to be context, not a copy.
            overlap_fits = len(tail.text) + len(unit.joiner) + len(unit.text) <= settings.max_chars
            if len(tail.text) <= settings.overlap_chars and overlap_fits:
                current = [tail]
                size = len(tail.text)
            else:
                current, size = [], 0
            added = len(unit.text) + (len(unit.joiner) if current else 0)
        current.append(unit)
        size += added
    if current:
        parts.append(current)
    out: list[str] = []
    for part in parts:
        pieces = [part[0].text]
        pieces.extend(u.joiner + u.text for u in part[1:])
        out.append("".join(pieces))
    return out


def part_offsets(text: str, parts: Sequence[str]) -> list[int]:
    """Where each part (of `split_section(text)`) begins in `text`.

    Parts are cut from the text's paragraphs and sentences in order, so each one is
    looked for from where the one before it began. A part rejoins its sentences with
    single spaces, so only its opening is searched, and if even that was re-spaced
    the search ignores whitespace; a part that cannot be placed inherits the previous
    part's offset.
    """
    offsets: list[int] = []
    position = 0
    for i, part in enumerate(parts):
        frm = position + 1 if i else 0
        opening = part[:OPENING_CHARS].split("\n", 1)[0]
        found = text.find(opening, frm)
        if found < 0:
            found = find_opening(text, opening, frm)
        if found < 0:
            found = position
        offsets.append(found)
        position = found
    return offsets


def part_page_starts(
    section: Section, part: str, offset: int, page: int | None
) -> tuple[tuple[int, int], ...]:
    """(offset in `part`, page) for each page the part of `section` that begins at
    `offset` runs onto, after (0, `page`); () when it stays on one page."""
    starts: list[tuple[int, int]] = []
    for at, number in section.page_starts:
        if not offset < at < offset + len(part):
            continue
        found = find_opening(part, section.text[at:], starts[-1][0] + 1 if starts else 1)
        starts.append((found if found > 0 else at - offset, number))
    return ((0, page or section.page or 1), *starts) if starts else ()


def chunk_section(doc: Document, section: Section, settings: ChunkerSettings) -> list[Chunk]:
    texts = split_section(section.text, settings)
    metadata = {**doc.metadata, **section.metadata}
    starts: list[tuple[tuple[int, int], ...]] = [()] * len(texts)
    if section.page_starts:
        # A section over several pages: each part links to the page its text begins on,
        # and a part that runs over a page break records where the next page begins.
        body = section.text.strip()
        lead = len(section.text) - len(section.text.lstrip())
        offsets = [lead + o for o in part_offsets(body, texts)]
        pages = [section.page_at(o) for o in offsets]
        starts = [
            part_page_starts(section, text, offset, page)
            for text, offset, page in zip(texts, offsets, pages, strict=True)
        ]
    else:
        pages = [section.page] * len(texts)
    return [
        Chunk(
            chunk_id=stable_id(section.section_id, i, text),
            doc_id=doc.doc_id,
            section_id=section.section_id,
            title=doc.title,
            section_path=section.path,
            text=text,
            source=doc.source,
            page=pages[i],
            part=i,
            parts=len(texts),
            metadata=metadata,
            page_starts=starts[i],
        )
        for i, text in enumerate(texts)
    ]


def chunk_documents(docs: Iterable[Document], settings: ChunkerSettings) -> list[Chunk]:
    return [
        chunk
        for doc in docs
        for section in doc.sections
        for chunk in chunk_section(doc, section, settings)
    ]


@dataclass(frozen=True)
class BoundaryIssue:
    """A chunk that does not start at a paragraph or end at a sentence end."""

    chunk_id: str
    section_id: str
    part: int
    problem: str
    excerpt: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_boundaries(chunks: Sequence[Chunk], section_texts: dict[str, str]) -> list[BoundaryIssue]:
    """Where a chunk starts other than at a paragraph start, or ends other than at a sentence end.

    `section_texts` maps section id to the section body, so a chunk start can be
    placed in its source. A part that starts at a sentence inside a paragraph
    is expected for an over-long paragraph and is listed as `starts-mid-paragraph`;
    a start that is not even a sentence start is `starts-mid-sentence`.
    """
    issues: list[BoundaryIssue] = []
    for c in chunks:
        body = section_texts.get(c.section_id, "")
        paragraphs = split_paragraphs(body)
        starts_para = any(p.startswith(c.text[:80]) for p in paragraphs) or c.part == 0
        if not starts_para:
            starts_sentence = any(
                s.startswith(c.text[:60]) for p in paragraphs for s in split_sentences(p)
            )
            problem = "starts-mid-paragraph" if starts_sentence else "starts-mid-sentence"
            issues.append(BoundaryIssue(c.chunk_id, c.section_id, c.part, problem, c.text[:60]))
        if not ends_sentence(c.text):
            issues.append(
                BoundaryIssue(c.chunk_id, c.section_id, c.part, "ends-mid-sentence", c.text[-60:])
            )
    return issues


def size_summary(chunks: Sequence[Chunk]) -> dict[str, float]:
    sizes = sorted(len(c.text) for c in chunks)
    if not sizes:
        return {"min": 0, "p50": 0, "p90": 0, "max": 0, "mean": 0}
    return {
        "min": sizes[0],
        "p50": statistics.median(sizes),
        "p90": sizes[min(len(sizes) - 1, int(0.9 * len(sizes)))],
        "max": sizes[-1],
        "mean": round(statistics.fmean(sizes), 1),
    }
