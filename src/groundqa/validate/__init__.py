"""Validate: look at a loaded corpus before anything is indexed, and say what is wrong.

Every check turns documents into `Finding`s with a severity. BLOCK findings
(`empty-body`, `missing-id`, `duplicate-id`, plus the loader's own, such as an
unreadable file) mean the corpus cannot be indexed as it is: ingest refuses to
build and the current index stays as it was. REVIEW findings (`short-section`,
`missing-title`, `welded-footnote`, `replacement-char`, `control-char`,
`truncated-text`, `repeated-boilerplate`, `near-duplicate`, `bad-date`,
`unknown-successor`, `jurisdiction-incomplete`) are reported and the corpus is
still indexed.

What this stage refuses to do:

- It never changes the corpus. It reports the text it found and where; fixing
  the source is the user's call, since a silent repair (stripping a "footnote"
  digit, dropping a duplicate) can destroy the one thing a question needs.
- It never guesses. A check fires only on evidence that holds on the real
  corpora it was written against (the Natech guidance, the city guides, BEIR
  SciFact); every look-alike it must not fire on is a regression test. A missed
  artefact costs a reviewer a minute; a false alarm teaches users to ignore the
  report.
- It never compares every pair of sections: near-duplicates are found by
  MinHash banding, so a corpus of thousands of records validates in seconds.

Each check is a small pure function over text (or over a list of texts when the
evidence is corpus-wide); `validate` composes them and attaches locations.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from groundqa.models import Document, Finding, Section, Severity
from groundqa.text import split_paragraphs
from groundqa.validate.footnotes import (
    FootnoteVocabulary,
    Marker,
    continue_footnote_sequence,
    welded_markers,
)
from groundqa.versions import version_findings

__all__ = [
    "BOILERPLATE_MIN_CHARS",
    "BOILERPLATE_MIN_DOCUMENTS",
    "NEAR_DUPLICATE_JACCARD",
    "NEAR_DUPLICATE_MIN_WORDS",
    "SHORT_SECTION_CHARS",
    "FootnoteVocabulary",
    "Marker",
    "Repeat",
    "Span",
    "continue_footnote_sequence",
    "control_char_spans",
    "excerpt",
    "has_blocking",
    "near_duplicate_pairs",
    "repeated_paragraphs",
    "replacement_char_spans",
    "truncation_span",
    "validate",
    "welded_markers",
]

SHORT_SECTION_CHARS = 120
# Shorter paragraphs repeat legitimately ("Opening hours vary.", a signature line).
BOILERPLATE_MIN_CHARS = 80
BOILERPLATE_MIN_DOCUMENTS = 3
NEAR_DUPLICATE_JACCARD = 0.9
# Below this, two texts agree by accident ("Deleted.", "See 4.2."); short-section covers them.
NEAR_DUPLICATE_MIN_WORDS = 20
EXCERPT_CHARS = 60

# Formats whose Documents are independent records (one row, one abstract). The
# loader names them; a Document with one section whose id is the doc id is read
# as a record too, so a new record format needs no change here.
_RECORD_FORMATS = frozenset({"csv", "tsv", "beir", "jsonl"})


# --------------------------------------------------------------------------- spans


@dataclass(frozen=True)
class Span:
    """Where a check found something in one text: `text[start:end]`, and how many times."""

    start: int
    end: int
    count: int = 1


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def excerpt(text: str, start: int, end: int, width: int = EXCERPT_CHARS) -> str:
    """About `width` characters around `text[start:end]` on one line, cut ends marked `…`.

    Whitespace runs become one space and control characters are shown as `\\xNN`,
    so the excerpt prints safely and the offending character stays visible.
    """
    size = max(width, end - start)
    lo = max(0, min(start - (size - (end - start)) // 2, len(text) - size))
    hi = min(len(text), lo + size)
    piece = re.sub(r"[ \t\n\r]+", " ", text[lo:hi])
    piece = _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}", piece)
    return ("…" if lo > 0 else "") + piece.strip() + ("…" if hi < len(text) else "")


# --------------------------------------------------------------- character checks

# C0 controls except tab, newline and carriage return; plus DEL and the C1 block.
# C1 code points (U+0080-U+009F) are never text: they are Windows-1252 bytes such as
# an en dash (0x96) decoded as Latin-1, so they mark mojibake just as C0 marks binary.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def control_char_spans(text: str) -> list[Span]:
    """Control characters other than tab and line breaks: the first one, with the total count."""
    hits = list(_CONTROL.finditer(text))
    return [Span(hits[0].start(), hits[0].end(), len(hits))] if hits else []


def replacement_char_spans(text: str) -> list[Span]:
    """U+FFFD, the decoder's mark for a character it could not read: the first, with the count."""
    first = text.find("\ufffd")
    return [Span(first, first + 1, text.count("\ufffd"))] if first >= 0 else []


# A word broken at a line-end hyphen with the rest lost ("levels of func-"), or an
# ellipsis standing as its own last token, which is how exporters mark a text they
# cut ("…may lead …"). A final word cut without a hyphen ("such as seri") is not
# detectable without a dictionary and is left alone rather than guessed at; so is a
# glued ellipsis ("and so on…"), which writers use on purpose.
_TRUNCATED = re.compile(r"(?:(?<=[a-z])-|(?<=\s)(?:…|\.\.\.))\Z")


def truncation_span(text: str) -> Span | None:
    """Where `text` ends mid-word or with an exporter's cut mark, or None when it ends cleanly."""
    end = len(text.rstrip())
    # Only the tail can match; searching it alone keeps this O(1) per section.
    lo = max(0, end - 8)
    m = _TRUNCATED.search(text[lo:end])
    return Span(lo + m.start(), end) if m else None


# ------------------------------------------------------------ corpus-wide checks


def _normalise(paragraph: str) -> str:
    return " ".join(paragraph.split())


@dataclass(frozen=True)
class Repeat:
    """A paragraph found verbatim in several documents: `where` holds (document, text) indices."""

    paragraph: str
    where: tuple[tuple[int, int], ...]

    @property
    def documents(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(d for d, _ in self.where))


def repeated_paragraphs(
    texts: Sequence[tuple[int, str]],
    *,
    min_chars: int = BOILERPLATE_MIN_CHARS,
    min_documents: int = BOILERPLATE_MIN_DOCUMENTS,
) -> list[Repeat]:
    """Paragraphs (split on blank lines, whitespace-normalised, at least `min_chars` long)
    that occur in `min_documents` or more different documents.

    `texts` pairs each text with the index of its document; a paragraph repeated
    inside one document counts once. Repeats come in order of first occurrence.
    """
    where: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for index, (doc, text) in enumerate(texts):
        for paragraph in split_paragraphs(text):
            key = _normalise(paragraph)
            if len(key) >= min_chars:
                where[key].append((doc, index))
    repeats = [Repeat(key, tuple(places)) for key, places in where.items()]
    return [r for r in repeats if len(r.documents) >= min_documents]


_SHINGLE = 3
_BANDS, _ROWS = 16, 4  # 64 MinHash values: a pair at Jaccard 0.9 is a candidate with p > 0.9999


def _mix(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64 finaliser: spreads word-id combinations over all 64 bits."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


# Texts are shingled in batches of about this many words, and read this many characters
# at a time, so that one very long section (a 52 MB log) never becomes one list of
# millions of words or a dozen arrays of them at once.
_BATCH_WORDS = 1_000_000
_BLOCK_CHARS = 1 << 20
_SPACE = re.compile(r"\s")


def _word_ids(text: str, ids: dict[str, int]) -> npt.NDArray[np.uint64]:
    """`text`'s whitespace tokens, lower-cased, as ids in `ids` (first-seen order, added
    to as new words come), read a block of `_BLOCK_CHARS` at a time."""
    parts = []
    start = 0
    while start < len(text):
        end = start + _BLOCK_CHARS
        if end < len(text):
            space = _SPACE.search(text, end)
            end = space.start() if space else len(text)
        words = text[start:end].lower().split()
        parts.append(
            np.fromiter(
                (ids.setdefault(w, len(ids)) for w in words), dtype=np.uint64, count=len(words)
            )
        )
        start = end
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)


def _shingle_sets(texts: Sequence[str], min_words: int) -> list[npt.NDArray[np.uint64] | None]:
    """Each text's distinct word 3-grams as sorted 64-bit codes (None if too short).

    Texts are shingled a batch at a time in one vectorised pass; a word id is its
    first-seen order, so codes are stable across runs (Python's str hash is salted).
    """
    # Whitespace tokens, punctuation and all: both texts of a pair go through the same
    # tokeniser, which is all Jaccard needs, and str.split is the fastest there is.
    ids: dict[str, int] = {}
    words = [_word_ids(t, ids) for t in texts]
    out: list[npt.NDArray[np.uint64] | None] = [None] * len(texts)
    batch: list[int] = []
    size = 0
    for slot, w in enumerate(words):
        if len(w) < max(min_words, _SHINGLE):
            continue
        batch.append(slot)
        size += len(w)
        if size >= _BATCH_WORDS:
            _shingle_batch([words[i] for i in batch], batch, out)
            batch, size = [], 0
    if batch:
        _shingle_batch([words[i] for i in batch], batch, out)
    return out


def _shingle_batch(
    kept: Sequence[npt.NDArray[np.uint64]],
    slots: Sequence[int],
    out: list[npt.NDArray[np.uint64] | None],
) -> None:
    """The shingle sets of the word-id arrays `kept`, put in `out` at `slots`."""
    lengths = np.array([len(w) for w in kept], dtype=np.int64)
    flat = np.concatenate(kept)
    owner = np.repeat(np.arange(len(kept), dtype=np.int32), lengths)
    valid = owner[:-2] == owner[2:]  # a shingle may not run across two texts
    code = _mix(flat[:-2] + np.uint64(1))
    code = _mix(code ^ (flat[1:-1] + np.uint64(0x9E3779B97F4A7C15)))
    code = _mix(code ^ (flat[2:] + np.uint64(0x632BE59BD9B4E019)))
    del flat
    code, owner = code[valid], owner[:-2][valid]
    del valid
    order = np.lexsort((code, owner))
    code, owner = code[order], owner[order]
    del order
    first = np.ones(len(code), dtype=bool)
    first[1:] = (code[1:] != code[:-1]) | (owner[1:] != owner[:-1])
    code, owner = code[first], owner[first]
    bounds = np.flatnonzero(np.diff(owner)) + 1
    for slot, part in zip(slots, np.split(code, bounds), strict=True):
        out[slot] = part


def near_duplicate_pairs(
    texts: Sequence[str],
    *,
    threshold: float = NEAR_DUPLICATE_JACCARD,
    min_words: int = NEAR_DUPLICATE_MIN_WORDS,
) -> list[tuple[int, int, float]]:
    """Pairs `(i, j, jaccard)`, i < j, whose word 3-gram sets have Jaccard >= `threshold`.

    MinHash (64 values) with LSH banding (16 bands of 4) proposes candidates and the
    exact Jaccard of the shingle sets confirms them, so the cost grows with the
    corpus rather than with its square, and no pair is reported on an estimate.
    Texts under `min_words` words are skipped. Seeded, so the result is stable.
    """
    sets = _shingle_sets(texts, min_words)
    kept = [i for i, s in enumerate(sets) if s is not None]
    if len(kept) < 2:
        return []
    arrays = [s for s in sets if s is not None]
    lengths = np.array([len(a) for a in arrays])
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    codes = np.concatenate(arrays)
    rng = np.random.default_rng(20240601)
    mult = rng.integers(1, 2**63, size=_BANDS * _ROWS, dtype=np.uint64) | np.uint64(1)
    add = rng.integers(0, 2**63, size=_BANDS * _ROWS, dtype=np.uint64)
    signature = np.empty((len(arrays), _BANDS * _ROWS), dtype=np.uint64)
    for h in range(_BANDS * _ROWS):
        signature[:, h] = np.minimum.reduceat(codes * mult[h] + add[h], starts)

    candidates: set[tuple[int, int]] = set()
    for band in range(_BANDS):
        key = np.zeros(len(arrays), dtype=np.uint64)
        for value in signature[:, band * _ROWS : (band + 1) * _ROWS].T:
            key = _mix(key ^ value)
        order = np.argsort(key, kind="stable")
        bounds = np.flatnonzero(np.diff(key[order]) != 0) + 1
        run_starts = np.concatenate(([0], bounds))
        run_ends = np.concatenate((bounds, [len(order)]))
        for lo, hi in zip(run_starts, run_ends, strict=True):
            if hi - lo > 1:
                members = sorted(int(g) for g in order[lo:hi])
                candidates.update((a, b) for n, a in enumerate(members) for b in members[n + 1 :])

    pairs: list[tuple[int, int, float]] = []
    for a, b in sorted(candidates):
        shared = len(np.intersect1d(arrays[a], arrays[b], assume_unique=True))
        jaccard = shared / (len(arrays[a]) + len(arrays[b]) - shared)
        if jaccard >= threshold:
            pairs.append((kept[a], kept[b], jaccard))
    return pairs


# ------------------------------------------------------------------- composition


@dataclass(frozen=True)
class _Place:
    """One section in reading order, with the document that holds it."""

    doc_index: int
    doc: Document
    section: Section


def _is_record(doc: Document) -> bool:
    if doc.format.lower() in _RECORD_FORMATS:
        return True
    return len(doc.sections) == 1 and doc.sections[0].section_id == doc.doc_id


def _finding(
    severity: Severity,
    check: str,
    message: str,
    doc: Document,
    section: Section | None = None,
    excerpt_text: str = "",
) -> Finding:
    return Finding(
        severity=severity,
        check=check,
        message=message,
        source=doc.source,
        doc_id=doc.doc_id or None,
        section_id=(section.section_id or None) if section is not None else None,
        line=doc.line,
        excerpt=excerpt_text,
    )


def _at(doc: Document) -> str:
    if doc.source:
        return f"{doc.source}:{doc.line}" if doc.line else doc.source
    return f"document {doc.doc_id!r}"


def _shape_findings(documents: Sequence[Document]) -> list[Finding]:
    """empty-body, missing-id, missing-title: what each document looks like on its own."""
    out: list[Finding] = []
    for doc in documents:
        record = _is_record(doc)
        name = "record" if record else "document"
        if not doc.doc_id.strip():
            out.append(
                _finding(
                    "BLOCK",
                    "missing-id",
                    f"this {name} has no id, so nothing could cite it; give it one in the source",
                    doc,
                    excerpt_text=excerpt(doc.title or _first_text(doc), 0, 0),
                )
            )
        if not doc.sections:
            out.append(
                _finding(
                    "BLOCK",
                    "empty-body",
                    f"this {name} has no text; add its content or remove it from the corpus",
                    doc,
                    excerpt_text=doc.title,
                )
            )
        if not doc.title.strip() or (record and any(not s.heading.strip() for s in doc.sections)):
            what = "title" if not doc.title.strip() else "heading"
            out.append(
                _finding(
                    "REVIEW",
                    "missing-title",
                    f"this {name} has no {what}, so answers cannot name it; add one in the source",
                    doc,
                    doc.sections[0] if record and doc.sections else None,
                    excerpt(_first_text(doc), 0, 0),
                )
            )
        for section in doc.sections:
            # A record's single section carries the record id: report a missing id once.
            if not section.section_id.strip() and not (record and not doc.doc_id.strip()):
                out.append(
                    _finding(
                        "BLOCK",
                        "missing-id",
                        "this section has no id, so nothing could cite it; "
                        "give it a heading or id in the source",
                        doc,
                        section,
                        excerpt(section.heading or section.text, 0, 0),
                    )
                )
            if not section.text.strip():
                out.append(
                    _finding(
                        "BLOCK",
                        "empty-body",
                        "this section has no text; add its content or remove it from the source",
                        doc,
                        section,
                        section.heading,
                    )
                )
    return out


def _first_text(doc: Document) -> str:
    return next((s.text for s in doc.sections if s.text.strip()), "")


def _duplicate_findings(documents: Sequence[Document]) -> list[Finding]:
    """duplicate-id: a section id used twice anywhere, or a record id on two records.

    Sections of one structured document share its doc id by design, so only records
    (one Document per row or entry) are held to distinct doc ids.
    """
    out: list[Finding] = []
    first_record: dict[str, int] = {}
    first_section: dict[str, int] = {}
    for d, doc in enumerate(documents):
        reported: set[str] = set()
        if _is_record(doc) and doc.doc_id.strip():
            earlier = first_record.setdefault(doc.doc_id, d)
            if earlier != d:
                reported.add(doc.doc_id)
                out.append(
                    _finding(
                        "BLOCK",
                        "duplicate-id",
                        f"record id {doc.doc_id!r} is used again (first at "
                        f"{_at(documents[earlier])}); give each record its own id",
                        doc,
                        doc.sections[0] if doc.sections else None,
                        excerpt(_first_text(doc), 0, 0),
                    )
                )
        for section in doc.sections:
            sid = section.section_id
            if not sid.strip():
                continue
            if sid not in first_section:
                first_section[sid] = d
                continue
            if sid in reported:  # the record-id finding above already names this clash
                continue
            first = first_section[sid]
            where = (
                "earlier in this document" if first == d else f"first at {_at(documents[first])}"
            )
            out.append(
                _finding(
                    "BLOCK",
                    "duplicate-id",
                    f"section id {sid!r} is used again ({where}); "
                    "rename one of the headings or ids so each section has its own",
                    doc,
                    section,
                    excerpt(section.text, 0, 0),
                )
            )
    return out


def _text_findings(places: Sequence[_Place], short_section_chars: int) -> list[Finding]:
    """short-section, replacement-char, control-char, truncated-text: one section at a time."""
    out: list[Finding] = []
    for p in places:
        text = p.section.text
        stripped = text.strip()
        if stripped and len(stripped) < short_section_chars:
            out.append(
                _finding(
                    "REVIEW",
                    "short-section",
                    f"section text is only {len(stripped)} characters "
                    f"(under {short_section_chars}), too little to answer from; "
                    "merge it with a neighbour or fill it in",
                    p.doc,
                    p.section,
                    excerpt(stripped, 0, len(stripped)),
                )
            )
        for span in replacement_char_spans(text):
            out.append(
                _finding(
                    "REVIEW",
                    "replacement-char",
                    f"text has {span.count} U+FFFD replacement character(s) where the decoder "
                    "lost a character; re-extract the source with the right encoding or font",
                    p.doc,
                    p.section,
                    excerpt(text, span.start, span.end),
                )
            )
        for span in control_char_spans(text):
            code = f"U+{ord(text[span.start]):04X}"
            out.append(
                _finding(
                    "REVIEW",
                    "control-char",
                    f"text has {span.count} control character(s), first {code}, left by a "
                    "binary or mis-decoded source; re-extract or clean the source",
                    p.doc,
                    p.section,
                    excerpt(text, span.start, span.end),
                )
            )
        cut = truncation_span(text)
        if cut is not None:
            out.append(
                _finding(
                    "REVIEW",
                    "truncated-text",
                    "text ends mid-word or with a cut mark, so its end is missing; "
                    "restore the full text from the source",
                    p.doc,
                    p.section,
                    excerpt(text, cut.start, cut.end),
                )
            )
    return out


def _footnote_findings(places: Sequence[_Place]) -> list[Finding]:
    texts = [p.section.text for p in places]
    vocabulary = FootnoteVocabulary(texts)
    markers = [welded_markers(t, vocabulary) for t in texts]
    by_source: dict[str, list[int]] = defaultdict(list)
    for index, p in enumerate(places):
        by_source[p.doc.source].append(index)
    for indices in by_source.values():
        extra = continue_footnote_sequence(
            [texts[i] for i in indices], [markers[i] for i in indices]
        )
        for i, more in zip(indices, extra, strict=True):
            markers[i] = sorted([*markers[i], *more], key=lambda mk: mk.start)
    out: list[Finding] = []
    for p, text, found in zip(places, texts, markers, strict=True):
        for mk in found:
            token = mk.token(text)
            number = text[mk.start : mk.end]
            word = text[mk.token_start : mk.start]
            out.append(
                _finding(
                    "REVIEW",
                    "welded-footnote",
                    f"{token!r} looks like {word!r} with footnote marker {number} welded on by "
                    "text extraction; remove the marker from the source text",
                    p.doc,
                    p.section,
                    excerpt(text, mk.token_start, mk.end),
                )
            )
    return out


def _names(places: Sequence[_Place], doc_indices: Sequence[int], limit: int = 3) -> str:
    by_doc = {p.doc_index: p.doc for p in places}
    names = [by_doc[d].doc_id or _at(by_doc[d]) for d in doc_indices[:limit]]
    more = len(doc_indices) - limit
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def _repeat_findings(places: Sequence[_Place], repeats: Sequence[Repeat]) -> list[Finding]:
    out: list[Finding] = []
    for r in repeats:
        first = places[r.where[0][1]]
        docs = r.documents
        out.append(
            _finding(
                "REVIEW",
                "repeated-boilerplate",
                f"this paragraph appears verbatim in {len(docs)} documents "
                f"({_names(places, docs)}) and will crowd out real answers; "
                "keep it in one place or drop the copies",
                first.doc,
                first.section,
                excerpt(r.paragraph, 0, 0),
            )
        )
    return out


def _without(text: str, paragraphs: set[str]) -> str:
    if not paragraphs:
        return text
    return "\n\n".join(p for p in split_paragraphs(text) if _normalise(p) not in paragraphs)


def _near_duplicate_findings(places: Sequence[_Place], repeats: Sequence[Repeat]) -> list[Finding]:
    # Boilerplate is reported once above; comparing what is left keeps nine copies of
    # the same notes from also becoming thirty-six near-duplicate pairs.
    boilerplate = {r.paragraph for r in repeats}
    texts = [_without(p.section.text, boilerplate) for p in places]
    out: list[Finding] = []
    for i, j, jaccard in near_duplicate_pairs(texts):
        a, b = places[i], places[j]
        if a.section.section_id == b.section.section_id:
            continue  # duplicate-id already blocks this pair
        # Floor, not round: 99.6% must not read as "100% the same".
        same = "identical to" if jaccard >= 1.0 else f"{int(jaccard * 100)}% the same as"
        out.append(
            _finding(
                "REVIEW",
                "near-duplicate",
                f"section text is {same} section {a.section.section_id!r} ({_at(a.doc)}); "
                "keep one copy or make the difference explicit",
                b.doc,
                b.section,
                excerpt(b.section.text, 0, 0),
            )
        )
    return out


def _sort_key(f: Finding) -> tuple[int, str, int, str]:
    return (
        0 if f.severity == "BLOCK" else 1,
        f.source,
        f.line if f.line is not None else -1,
        f.section_id or "",
    )


def validate(
    documents: Sequence[Document],
    *,
    load_findings: Sequence[Finding] = (),
    short_section_chars: int = SHORT_SECTION_CHARS,
) -> list[Finding]:
    """All findings for a loaded corpus: the loader's plus every check's here.

    Sorted BLOCK first, then by source, line and section id. Indexing may go ahead
    when `has_blocking` is False; the REVIEW findings are still worth showing.
    """
    places = [
        _Place(index, doc, section)
        for index, doc in enumerate(documents)
        for section in doc.sections
    ]
    repeats = repeated_paragraphs([(p.doc_index, p.section.text) for p in places])
    findings = [
        *load_findings,
        *_shape_findings(documents),
        *_duplicate_findings(documents),
        *_text_findings(places, short_section_chars),
        *_footnote_findings(places),
        *_repeat_findings(places, repeats),
        *_near_duplicate_findings(places, repeats),
        *version_findings(documents),
        *_jurisdiction_findings(documents),
    ]
    return sorted(findings, key=_sort_key)


# What a document of each jurisdiction level must name to be scoped correctly.
_PLACE_NEEDED = {"local": ("state", "area"), "state": ("state",)}


def _jurisdiction_findings(documents: Sequence[Document]) -> list[Finding]:
    """REVIEW: a local document without its area (or a state one without its state) applies
    to every asker in its state (or everywhere) once a scope is given."""
    findings = []
    for doc in documents:
        level = str(doc.metadata.get("jurisdiction", "")).strip().casefold()
        missing = [k for k in _PLACE_NEEDED.get(level, ()) if not doc.metadata.get(k)]
        if missing:
            findings.append(
                Finding(
                    severity="REVIEW",
                    check="jurisdiction-incomplete",
                    message=(
                        f"jurisdiction is {level} but no {' or '.join(missing)} is given, so a "
                        "scoped question treats it as applying more widely; add the metadata"
                    ),
                    source=doc.source,
                    doc_id=doc.doc_id,
                )
            )
    return findings


def has_blocking(findings: Sequence[Finding]) -> bool:
    """True when any finding stops indexing."""
    return any(f.severity == "BLOCK" for f in findings)
