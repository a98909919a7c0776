"""A PDF's structure: where its sections begin, from its outline or from its lines.

`outline_headings` cuts the text where each outline (bookmark) entry's title is found on
its page; `numbered_headings` recognises heading lines where neither an outline nor the
type sets any apart (a scan's text layer, a typewritten page read by OCR): numbered
lines that fit the numbering so far ("2.1" only under "2"; Parts above numbers; a
Schedule starts afresh), and a few words in Title Case or capitals standing alone
between prose and a clause. See `loaders.pdf` for the rules as a reader meets them.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from groundqa.lexicon import DIVISION_HEADING
from groundqa.loaders.pdf_furniture import FUNCTION_WORD as _FUNCTION_WORD
from groundqa.loaders.pdf_furniture import NEW_BLOCK as _NEW_BLOCK
from groundqa.loaders.pdf_furniture import norm as _norm
from groundqa.loaders.pdf_headings import HEADING_MAX_CHARS, Heading, Line

# A line was wrapped (its text goes on in the next line) when the next line's first
# word would not have fitted on it: when the two come to more than this share of a
# full line. Line lengths are counted in characters, so this leaves room for glyph widths.
WRAP_SHARE = 0.85
# A line under this share of a full line, not wrapped and ending no sentence, ends its
# block when a capitalised line follows (a heading or a label before its text).
SHORT_LINE_SHARE = 0.6
# The next number at one level may skip a few (repealed sections), not jump far.
NUMBER_STEP_MAX = 10
# A heading known by its words alone (`_label`): at most this many words and characters,
# every word from this many letters capitalised.
LABEL_MAX_WORDS = 6
LABEL_MAX_CHARS = 60
LABEL_CAPITALISED_FROM = 4
_NUMBERED = re.compile(r"^(\d{1,3}(?:\.\d{1,3}){0,5})\s+([A-Z].*)$")
# Where each kind of heading sits; numbered headings sit at SECTION_RANK + depth - 1.
_RANKS = {"schedule": 0, "chapter": 0, "part": 1, "division": 2, "subdivision": 3}
SECTION_RANK = 4
SENTENCE_END = re.compile(r"[.!?:;][\"'”’)\]]*$")
_NOT_A_HEADING_END = re.compile(r"[.,;]$")
DASHES = ("-", "–", "—")
# A heading's number as `_norm` leaves it ("2 1 " of "2.1 ", "a " of "A. ", "appendix
# b "), which an outline entry's title often leaves off.
_OUTLINE_NUMBER = re.compile(r"^(?:(?:appendix|annex|chapter|section|part) )?(?:(?:[a-z]|\d+) )+")
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}


def outline_headings(
    lines: Sequence[Line], entries: Sequence[tuple[int, str, int]]
) -> list[Heading]:
    """A heading per outline entry, cut where its title is found on its page; its path
    is the entry's own ancestors in the outline."""
    first_line_of: dict[int, int] = {}
    for i, line in enumerate(lines):
        first_line_of.setdefault(line.page, i)
    page_starts = sorted(first_line_of.items())
    finder = _HeadingFinder(lines)
    headings: list[Heading] = []
    stack: list[tuple[int, str]] = []
    position = 0
    for depth, heading, page in entries:
        # From the first line on its page (or on the next page with text), not before
        # the heading before it: a title not found there is cut at that line.
        at = bisect.bisect_left(page_starts, (page, -1))
        page_start = page_starts[at][1] if at < len(page_starts) else len(lines)
        start = max(position, page_start)
        found = finder.find(start, page, heading)
        if found is not None:
            start, skip = found
        else:
            skip = 0
        while stack and stack[-1][0] >= depth:
            stack.pop()
        stack.append((depth, heading))
        headings.append(Heading(start, start + skip, heading, tuple(t for _, t in stack)))
        position = start + skip
    return headings


class _HeadingFinder:
    """Finds an outline title among the lines by looking it up, not by reading the page.

    Reading every line of the page for every entry costs entries x lines: minutes for an
    outline of thousands of entries over a long page. Each line is normalised once and
    indexed by its text, and by its text without a leading number ("2.1 ASN.1 syntax" is
    found for the entry "ASN.1 syntax": outlines often leave the number off, or give
    another, "A Copying Information" for "Appendix A Copying Information"); a title is
    then looked up whole and without its number, and each of its word-boundary prefixes is looked up as the
    first line of a heading wrapped onto two.
    """

    def __init__(self, lines: Sequence[Line]) -> None:
        self.lines = lines
        self.at: dict[str, list[int]] = {}
        for i, line in enumerate(lines):
            for key in _finder_keys(line.text):
                self.at.setdefault(key, []).append(i)

    def _on_page(self, text: str, start: int, page: int) -> Iterator[int]:
        """Indexes of the lines reading `text` (a `_finder_keys` key) on `page`, from
        `start` on, in order."""
        where = self.at.get(text, [])
        for i in where[bisect.bisect_left(where, start) :]:
            if self.lines[i].page != page:
                return  # lines run in page order: the page is over
            yield i

    def find(self, start: int, page: int, title: str) -> tuple[int, int] | None:
        """(index of the heading's first line, lines it takes) on `page` from `start`;
        the earliest match wins, a one-line one over a wrapped one on the same line."""
        found: tuple[int, int] | None = None
        for want in _finder_words(title):
            key = "".join(want)
            one = next(self._on_page(key, start, page), None)
            if one is not None and (found is None or one < found[0]):
                found = (one, 1)
            for cut in range(1, len(want)):
                for i in self._on_page("".join(want[:cut]), start, page):
                    if found is not None and i >= found[0]:
                        break
                    following = self.lines[i + 1].text if i + 1 < len(self.lines) else None
                    if following is None:
                        continue
                    if key in _finder_keys(f"{self.lines[i].text} {following}"):
                        found = (i, 2)  # a long heading wrapped onto a second line
                        break
        return found


def _finder_words(text: str) -> list[list[str]]:
    """A heading's words as compared, whole and without a leading number (see
    `_HeadingFinder`); a form that leaves no words is left out."""
    whole = _norm(text)
    forms = [whole, _OUTLINE_NUMBER.sub("", whole)]
    return [form.split() for form in dict.fromkeys(forms) if form]


def _finder_keys(text: str) -> list[str]:
    """The keys a line is found by: its words without spaces between them ("Non-regular"
    reads as "Nonregular"), whole and without a leading number."""
    return ["".join(words) for words in _finder_words(text)]


def _roman(numeral: str) -> int | None:
    values = [_ROMAN.get(c) for c in numeral.lower()]
    if not values or any(v is None for v in values):
        return None
    total = 0
    nums = [v for v in values if v is not None]
    for i, v in enumerate(nums):
        total += -v if i + 1 < len(nums) and nums[i + 1] > v else v
    return total


@dataclass(frozen=True)
class _Candidate:
    rank: int
    number: tuple[int, ...]  # the heading's number; (n,) for Part n, (2, 1) for "2.1"
    kind: str


def _candidate(text: str) -> _Candidate | None:
    division = DIVISION_HEADING.match(text)
    if division is not None:
        kind = division.group(1).lower()
        label = division.group(2)
        value = int(re.sub(r"\D", "", label)) if label[0].isdigit() else _roman(label)
        if value is None or (division.group(1)[0].islower()):
            return None
        title = division.group(3)
        if title and title[0].islower():
            return None
        rank = _RANKS.get(kind, SECTION_RANK)
        return _Candidate(rank, (value,), "numbered" if kind == "section" else kind)
    numbered = _NUMBERED.match(text)
    if numbered is None:
        return None
    number = tuple(int(n) for n in numbered.group(1).split("."))
    return _Candidate(SECTION_RANK + len(number) - 1, number, "numbered")


class _Numbering:
    """The heading numbers seen so far, to tell a heading from a numbered body line."""

    def __init__(self) -> None:
        self.stack: list[tuple[_Candidate, str]] = []
        # The last number used under each parent: by kind for Parts and the like, by
        # parent number for numbered headings.
        self.last: dict[tuple[str, tuple[int, ...]], int] = {}

    def fits(self, c: _Candidate) -> bool:
        if c.kind == "numbered" and len(c.number) > 1:
            parent = c.number[:-1]
            if not any(s.kind == "numbered" and s.number == parent for s, _ in self.stack):
                return False
        key = (c.kind, c.number[:-1])
        previous = self.last.get(key)
        return previous is None or previous < c.number[-1] <= previous + NUMBER_STEP_MAX

    def push(self, c: _Candidate, heading: str) -> tuple[str, ...]:
        while self.stack and self.stack[-1][0].rank >= c.rank:
            self.stack.pop()
        if c.kind not in ("numbered", "label"):
            # A new Part (Schedule, ...) may restart the numbering below it.
            self.last = {k: v for k, v in self.last.items() if _RANK_OF.get(k[0], 9) <= c.rank}
        if c.number:
            self.last[(c.kind, c.number[:-1])] = c.number[-1]
        self.stack.append((c, heading))
        return tuple(h for _, h in self.stack)


_RANK_OF = {**_RANKS, "numbered": SECTION_RANK, "label": SECTION_RANK}
# A heading known by its words alone sits where numbered headings do.
_LABEL = _Candidate(SECTION_RANK, (), "label")


def wrapped(line: str, following: str, full: int) -> bool:
    """Whether `line` was broken because the first word of `following` did not fit."""
    word = following.split(" ", 1)[0]
    return bool(word) and len(line) + 1 + len(word) > WRAP_SHARE * full


def _opens(candidate: _Candidate, following: str) -> bool:
    """Whether `following` is numbered as the first level below a numbered heading."""
    if candidate.kind != "numbered":
        return False
    prefix = ".".join(str(n) for n in candidate.number) + "."
    return bool(re.match(rf"{re.escape(prefix)}\d{{1,3}}\s", following))


def numbered_headings(lines: Sequence[Line], full: int) -> list[Heading]:
    numbering = _Numbering()
    headings: list[Heading] = []
    for i, line in enumerate(lines):
        text = line.text
        if len(text) > HEADING_MAX_CHARS or _NOT_A_HEADING_END.search(text):
            continue
        following = lines[i + 1].text if i + 1 < len(lines) else ""
        previous = lines[i - 1].text if i > 0 else ""
        candidate = _candidate(text)
        if candidate is None:
            if _label(text, previous, following, full, bool(headings and headings[-1].start == i)):
                headings.append(Heading(i, i + 1, text, numbering.push(_LABEL, text)))
            continue
        if following[:1].islower():
            continue  # the sentence runs on
        if _listed(candidate, previous, following, full):
            continue  # "1 Stoneleigh Road" over "1a Stoneleigh Road": a list's item
        if wrapped(text, following, full) and not _opens(candidate, following):
            continue  # a wrapped line of a paragraph, unless its first clause follows
        if _FUNCTION_WORD.search(text):
            continue  # "1.1 The register is kept by the": a heading does not end so
        if previous.endswith(("-", ",")) or (
            wrapped(previous, text, full) and not SENTENCE_END.search(previous)
        ):
            continue  # this line finishes the one before
        if not numbering.fits(candidate):
            continue
        headings.append(Heading(i, i + 1, text, numbering.push(candidate, text)))
    return headings


def _listed(candidate: _Candidate, previous: str, following: str, full: int) -> bool:
    """Whether a numbered line is an item of a list or a table's row: the line before or
    after it is short and starts with a figure too (after it, not as the first clause
    under it)."""
    if candidate.kind != "numbered":
        return False

    def item(line: str) -> bool:
        return line[:1].isdigit() and len(line) < SHORT_LINE_SHARE * full

    return (item(following) and not _opens(candidate, following)) or (
        item(previous) and not SENTENCE_END.search(previous)
    )


def _label(text: str, previous: str, following: str, full: int, after_heading: bool) -> bool:
    """Whether a line without a number is a heading by its words and place alone: a few
    words in Title Case or capitals ("Idling of Vehicles", "FIRST SCHEDULE"), no digits
    or commas, after a line that ends a sentence (or a heading), before a clause or a
    full line of text. A line all in capitals may also follow a line that ends no
    sentence, where its author broke that line ("... thereby enabling" over "DIRECT
    THAT"): a typist sets a heading so, and a wrapped line of prose is not. Scanned pages carry no type to tell a heading by, and this is
    what is left."""
    words = text.split()
    if not 0 < len(words) <= LABEL_MAX_WORDS or len(text) > LABEL_MAX_CHARS:
        return False
    if not text[0].isupper() or any(c.isdigit() or c in ",;:()" for c in text):
        return False
    if not all(w[0].isupper() for w in words if len(w) >= LABEL_CAPITALISED_FROM):
        return False
    if _FUNCTION_WORD.search(text) or text.endswith(DASHES):
        return False
    if not (
        after_heading
        or not previous
        or SENTENCE_END.search(previous)
        or (text.isupper() and _broken_before(previous, text, full))
    ):
        return False
    return bool(_NEW_BLOCK.match(following)) or len(following) >= SHORT_LINE_SHARE * full


def _broken_before(previous: str, text: str, full: int) -> bool:
    """Whether `previous`, a line of prose, was broken before `text` by its author: it
    ends in a word, not "the" or "of", and had room for `text`'s first word. A line in
    capitals before ("... WITHIN THE" over "TOWN OF WHITBY") is a title set over two,
    and one ending in a bracket or a sign is code ("}" over "END" in an ASN.1 listing)."""
    return previous[-1:].isalpha() and not (
        previous.isupper()
        or wrapped(previous, text, full)
        or _FUNCTION_WORD.search(previous.lower())
    )
