"""Load a plain text file as one Document, cut into sections at its heading lines.

The file is read as UTF-8 (a BOM dropped; anything else is a BLOCK finding, as for every
text format). Paragraphs are blocks separated by blank lines. The lines of a
hard-wrapped paragraph are joined with spaces; a list item ("1. ...", "(a) ...", "- ...")
starts a paragraph of its own, and a block laid out in columns (runs of spaces, tabs or
"|" on every line) keeps its lines as they are.

The title is the first non-empty line when it reads like one: a line on its own (or
underlined), at most 100 characters, not ending in a full stop, comma, colon or
semicolon, and not itself a numbered heading. Otherwise it is the file stem.

A heading is the first line of a block that is numbered ("1.", "2.3 Scope", "4. Fees"),
names a division ("PART 2", "Section 4 - Fees", "CHAPTER 3", "Schedule 1"), is
underlined (a line of "=" or "-" under it), or is a short ALL-CAPS line standing alone.
Its level follows its kind: chapters and schedules, then parts, divisions, ALL-CAPS and
"-"-underlined lines, then numbers by depth ("2.3" below "2"). A numbered line is body
text when it reads as a clause instead: it ends in a full stop, comma, colon or
semicolon, runs on into the next line (which starts in lower case, or whose first word
would have fitted on it), or the next line is another list item; and when its number
does not follow the numbers before it (a first number above 10, or one that does not
rise). A heading with nothing under it before the next heading at its level or above is
an item of a list, not a heading, and stays text, as does the item after it at the same
level (the last of the list). Without headings the file is one section named after its
title. A numbered heading's number is its section's `clause` metadata, as in the Word
loader.

It does not guess an encoding, rewrap a paragraph laid out in columns, or read markup.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path

from groundqa.lexicon import DIVISION_HEADING
from groundqa.loaders._blocks import Block, build_sections, numbered_heading
from groundqa.loaders._common import doc_id_of, normalise_newlines, read_text, source_of
from groundqa.models import Document, Finding

TEXT_SUFFIXES = (".txt",)
HEADING_MAX_CHARS = 100
CAPS_MAX_CHARS = 80
# A line was wrapped when the next line's first word would not have fitted on it: when
# the two come to more than this share of a full line (the 90th percentile of lengths).
WRAP_SHARE = 0.85
# A first heading number above this, or a step larger than it, is not a heading's.
NUMBER_STEP_MAX = 10

_RANKS = {"schedule": 0, "chapter": 0, "part": 1, "division": 2, "subdivision": 3}
_UNDERLINE_RANKS = {"=": 1, "-": 4}
CAPS_RANK = 4
NUMBERED_RANK = 5  # "1." and "Section 1"; "1.2" is one deeper

_NUMBERED = re.compile(r"^(\d{1,3}(?:\.\d{1,3}){0,5})\.?(?:\s+(\S.*))?$")
_UNDERLINE = re.compile(r"^(=|-)\1{2,}$")
_RULE = re.compile(r"^([=\-~*_#])\1{2,}$")
# A list item's opening: "1. ", "2) ", "2.3 ", "(a) ", "a) ", "- ".
_LIST_ITEM = re.compile(
    r"^(?:\d{1,3}(?:\.\d{1,3})*[.)]\s|\d{1,3}(?:\.\d{1,3})+\s"
    r"|\(?[a-zA-Z0-9]{1,4}\)\s|[•▪●◦*–-]\s)"
)
_COLUMNS = re.compile(r"\S(?: {3,}|\t)\S|\||^[\s+\-=|:]+$")
_NOT_A_HEADING_END = (".", ",", ";", ":")
_FUNCTION_WORD = re.compile(
    r"\s(?:a|an|and|as|at|by|for|from|in|into|is|of|on|or|the|to|that|which|with)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Candidate:
    rank: int
    number: tuple[int, ...]  # (2, 3) for "2.3 Scope"; () for a division or unnumbered line


def load_text(path: Path, root: Path | None = None) -> tuple[list[Document], list[Finding]]:
    """One Document for the text file `path` (see the module docstring).

    Its id (and the file part of its section ids) is the path relative to `root`, the
    folder that was loaded; just the file name when `root` is None.
    """
    text = read_text(path)
    if isinstance(text, Finding):
        return [], [text]
    name = doc_id_of(path, root)
    title, blocks = parse_text(text, path.stem)
    document = Document(
        doc_id=name,
        title=title,
        source=source_of(path),
        format="text",
        sections=tuple(build_sections(name, title, blocks)),
    )
    return [document], []


def parse_text(text: str, stem: str) -> tuple[str, list[Block]]:
    """(title, headings and paragraphs in order) of the plain text `text`."""
    chunks = _chunks(normalise_newlines(text).split("\n"))
    full = _full_line_chars([line for chunk in chunks for line in chunk])
    title = ""
    if chunks and _titled(chunks[0]):
        title = chunks.pop(0)[0].strip()
    numbering = _Numbering()
    items: list[tuple[_Candidate, str] | str] = []
    for chunk in chunks:
        lines = chunk
        candidate = _underlined(lines)
        if candidate is not None:
            lines = lines[2:]
        else:
            candidate = _candidate(lines, full)
            if candidate is not None and not numbering.fits(candidate):
                candidate = None
            if candidate is not None:
                lines = lines[1:]
        if candidate is not None:
            numbering.push(candidate)
            items.append((candidate, chunk[0].strip()))
        items.extend(_paragraphs(lines, full))
    return title or stem, _settle(items)


def _chunks(lines: list[str]) -> list[list[str]]:
    """The runs of non-blank lines."""
    chunks: list[list[str]] = []
    current: list[str] = []
    for line in lines:
        if line.strip():
            current.append(line.rstrip())
        elif current:
            chunks.append(current)
            current = []
    if current:
        chunks.append(current)
    return chunks


def _full_line_chars(lines: list[str]) -> int:
    """The length of a full line: the 90th percentile of line lengths."""
    lengths = sorted(len(line.strip()) for line in lines)
    if len(lengths) < 5:
        return 80
    return max(40, lengths[int(0.9 * (len(lengths) - 1))])


def _titled(chunk: list[str]) -> bool:
    """Whether a file's first block is a title line (alone, or over an underline)."""
    first = chunk[0].strip()
    alone = len(chunk) == 1 or (len(chunk) == 2 and _UNDERLINE.match(chunk[1].strip()))
    return bool(
        alone
        and len(first) <= HEADING_MAX_CHARS
        and not first.endswith(_NOT_A_HEADING_END)
        and _NUMBERED.match(first) is None
        and DIVISION_HEADING.match(first) is None
    )


def _underlined(lines: list[str]) -> _Candidate | None:
    if len(lines) < 2 or len(lines[0].strip()) > HEADING_MAX_CHARS:
        return None
    underline = _UNDERLINE.match(lines[1].strip())
    return _Candidate(_UNDERLINE_RANKS[underline.group(1)], ()) if underline else None


def _kind(text: str) -> _Candidate | None:
    """What kind of heading `text` would be, from its start alone."""
    numbered = _NUMBERED.match(text)
    if numbered is not None:
        rest = numbered.group(2) or ""
        if rest and not (rest[0].isupper() or rest[0].isdigit()):
            return None
        number = tuple(int(n) for n in numbered.group(1).split("."))
        return _Candidate(NUMBERED_RANK + len(number) - 1, number)
    division = DIVISION_HEADING.match(text)
    if division is not None:
        title = division.group(3)
        if division.group(1)[0].islower() or (title and title[0].islower()):
            return None
        kind = division.group(1).lower()
        label = division.group(2)
        number = (int(re.sub(r"\D", "", label)),) if label[0].isdigit() else ()
        if kind == "section":
            return _Candidate(NUMBERED_RANK, number)
        return _Candidate(_RANKS.get(kind, CAPS_RANK), ())
    return None


def _candidate(lines: list[str], full: int) -> _Candidate | None:
    """The heading the block's first line is, or None when it is body text."""
    text = lines[0].strip()
    if len(text) > HEADING_MAX_CHARS:
        return None
    candidate = _kind(text)
    if candidate is None:
        caps = any(c.isalpha() for c in text) and text == text.upper()
        if len(lines) > 1 or not caps or len(text) > CAPS_MAX_CHARS:
            return None
        candidate = _Candidate(CAPS_RANK, ())
    numbered = _NUMBERED.match(text)
    if (numbered is None or numbered.group(2)) and text.endswith(_NOT_A_HEADING_END):
        return None  # "1." alone is a heading; "1. The fee is payable." is a clause
    if len(lines) > 1:
        following = lines[1].strip()
        if following[:1].islower() or _FUNCTION_WORD.search(text):
            return None  # the sentence runs on
        if _LIST_ITEM.match(following) and not _opens(candidate, following):
            return None  # the first item of a list
        if _wrapped(text, following, full):
            return None
    return candidate


def _opens(candidate: _Candidate, following: str) -> bool:
    """Whether `following` is numbered as the first level below a numbered heading."""
    if not candidate.number:
        return False
    prefix = ".".join(str(n) for n in candidate.number) + "."
    return bool(re.match(rf"{re.escape(prefix)}\d{{1,3}}\s", following))


def _wrapped(line: str, following: str, full: int) -> bool:
    """Whether `line` was broken because the first word of `following` did not fit."""
    word = following.split(" ", 1)[0]
    return bool(word) and len(line) + 1 + len(word) > WRAP_SHARE * full


class _Numbering:
    """The heading numbers seen so far under each parent number, to tell a heading's
    number ("3 Fees" after "2 Scope") from a number that opens other text ("100 Main
    Street")."""

    def __init__(self) -> None:
        self.last: dict[tuple[int, ...], int] = {}

    def fits(self, candidate: _Candidate) -> bool:
        if not candidate.number or candidate.rank < NUMBERED_RANK:
            return True
        previous = self.last.get(candidate.number[:-1])
        value = candidate.number[-1]
        if previous is None:
            return value <= NUMBER_STEP_MAX
        return previous < value <= previous + NUMBER_STEP_MAX

    def push(self, candidate: _Candidate) -> None:
        if candidate.rank < NUMBERED_RANK:
            self.last.clear()  # a new Part (Chapter, ...) may number afresh
        elif candidate.number:
            self.last[candidate.number[:-1]] = candidate.number[-1]


def _paragraphs(lines: list[str], full: int) -> list[str]:
    """A block's paragraphs: wrapped lines joined, list items apart, columns kept."""
    if len(lines) > 1 and all(_COLUMNS.search(line.strip()) for line in lines):
        return ["\n".join(lines)]
    paragraphs: list[list[str]] = []
    previous = ""
    for raw in lines:
        line = raw.strip()
        if _RULE.match(line):
            previous = ""
            continue  # a separator line draws, it does not say anything
        new_item = _LIST_ITEM.match(line) and not _wrapped(previous, line, full)
        if not paragraphs or not previous or new_item:
            paragraphs.append([])
        paragraphs[-1].append(line)
        previous = line
    return [_join(p) for p in paragraphs]


def _join(lines: list[str]) -> str:
    """Wrapped lines as one line; a word hyphenated at a line end keeps its hyphen."""
    parts = [lines[0]]
    for previous, line in itertools.pairwise(lines):
        hyphenated = previous.endswith("-") and previous[-2:-1].isalpha() and line[:1].islower()
        parts.append(line if hyphenated else f" {line}")
    return "".join(parts)


def _settle(items: list[tuple[_Candidate, str] | str]) -> list[Block]:
    """Headings as blocks, a heading with nothing under it (see the module docstring)
    kept as text."""
    blocks: list[Block] = []
    listed: int | None = None  # the rank of the list item just kept as text, if any
    for i, item in enumerate(items):
        if isinstance(item, str):
            blocks.append(item)
            listed = None
            continue
        candidate, text = item
        following = items[i + 1] if i + 1 < len(items) else None
        if (
            following is None
            or (not isinstance(following, str) and following[0].rank <= candidate.rank)
            or listed == candidate.rank  # the last item of a list, with text after it
        ):
            blocks.append(text)
            listed = candidate.rank
        else:
            blocks.append(numbered_heading(text, candidate.rank + 1))
            listed = None
    return blocks
