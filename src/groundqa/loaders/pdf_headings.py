"""Headings in a PDF without an outline, found by the type they are set in.

A reader finds a document's headings by their type before reading a word of them:
larger than the body text, or bold where the body is not. So does this module, from the
type `pdf_layout` records for every line. The body type is the style (size and weight)
most of the document's characters are set in. A heading style is one clearly larger
than the body (HEADING_SIZE_SHARE), or bold where the body is regular and not much
smaller than it (a regulation's bold "(g) Installation ..." set in its smaller type).

Consecutive lines in the same heading style on one page are one heading (a long one
wrapped), unless a line starts with a number or a division's name ("3.1 Applications"
after "3 Permits"), of at most HEADING_MAX_LINES lines: a longer run in heading type is
a bold paragraph, a table's bold header cells or a table of contents, not a heading
(though a caption that opens it, "Table 3: Flood risk ...", is the table's heading). A
heading also reads as one: a short line of words (not a row of figures), with no
sentence ending inside it and no dot leaders, not ending in a comma or a word a phrase
goes on from, nor, when it is set at the body's size, followed by a line that starts in
lower case (a bold start of a sentence that runs on; after larger type, a line in lower
case is an identifier opening the text). A question set apart (an FAQ's) may be up to
QUESTION_MAX_CHARS long. A heading ends in a full stop only when it is numbered or set
in capitals ("SECTION 5.", "25.04.030 EXEMPTIONS.").

The cover page of a longer document is set in type of its own: a heading style found
nowhere but on the first page of a document of more than COVER_MIN_PAGES pages is the
cover's, not a level of headings. So is the largest heading type when it is used on the
first TITLE_PAGES pages only of a document of TITLE_MIN_DOCUMENT_PAGES pages or more
(the document's name over its contents). The title is never a heading, and neither is a
heading repeated with "(continued)" at the top of the next page: its section goes on.

Levels follow the styles: larger type above smaller, bold above regular at one size,
and within one style by the heading's number ("3.1" under "3").
A heading's path is the headings above it that are still open, as in an outline.
Scanned pages read by OCR carry no type, and neither does text that `pdf_layout` could
not place, so a document whose headings are not set apart (fewer than
MIN_STYLED_HEADINGS) gets its numbered headings instead (`pdf_structure.numbered_headings`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from groundqa.loaders.pdf_furniture import FUNCTION_WORD, norm
from groundqa.loaders.pdf_layout import LineStyle

HEADING_MAX_CHARS = 100
# A question set apart as a heading (an FAQ's) may run longer.
QUESTION_MAX_CHARS = 200
# A heading's type is at least this much larger than the body's, or bold (where the
# body is regular) and at least this share of the body's size.
HEADING_SIZE_SHARE = 1.15
BOLD_MIN_SIZE_SHARE = 0.85
HEADING_MAX_LINES = 3
# A heading holds at most this many tokens that are figures ("2017/18", "1,395").
MAX_FIGURES = 2
# The type sets a document's headings apart when at least this many are found so.
MIN_STYLED_HEADINGS = 2
# The largest heading type, used on these first pages only of a document at least this
# long, is a title, not a level.
TITLE_PAGES = 2
TITLE_MIN_DOCUMENT_PAGES = 8
# Documents longer than this have a cover page whose type is not a heading level.
COVER_MIN_PAGES = 2

_NUMBER = re.compile(r"^(\d{1,3}(?:\.\d{1,3}){0,5})\.?\s")
_CONTINUED = re.compile(r"\s*[(\[]?\b(?:continued|cont'd|contd)\b\.?[)\]]?\s*", re.IGNORECASE)
_LEADER = re.compile(r"(?:\. ?){4,}|…{2,}")  # a table of contents' dot leaders
_LETTER = re.compile(r"[^\W\d_]")
_FIGURE = re.compile(r"^[(\[]?[\d.,/%:$£€+–-]*\d[\d.,/%:$£€+–-]*[)\]]?$")
_SENTENCE_INSIDE = re.compile(r"[a-z]{2,}[.!?][\"'”’)]*\s+[A-Z]")
_RUNS_ON = (",", ";", "(", "/", "&", "+", "-", "–", "—")
# A heading that ends in a full stop starts with its number or a division's name.
_LABELLED = re.compile(
    r"^(?:\(?[0-9IVXivx]{1,6}(?:\.\d{1,3})*[.)]?\s|(?:section|article|part|chapter|schedule"
    r"|division|annex|appendix)\s)",
    re.IGNORECASE,
)


# A table's or figure's caption: "Table 3: Flood risk ...", "Figure 2.1 Sites".
_CAPTION = re.compile(r"^(?:table|figure|chart|map)\s+[A-Z]?\d+(?:\.\d+)*[.:]?\s+\S", re.IGNORECASE)


@dataclass(frozen=True)
class Line:
    """A line of a PDF's text, the page it is on, and its type where known."""

    text: str
    page: int
    style: LineStyle | None = None


@dataclass(frozen=True)
class Heading:
    """A section start in the line stream: its line(s) from `cut`, its body from `start`."""

    cut: int
    start: int
    text: str
    path: tuple[str, ...]


def body_style(lines: Sequence[Line]) -> LineStyle | None:
    """The style most of the document's characters are set in (None: no type known)."""
    chars: Counter[LineStyle] = Counter()
    for line in lines:
        if line.style is not None:
            chars[line.style] += len(line.text)
    return chars.most_common(1)[0][0] if chars else None


def _heading_type(style: LineStyle | None, body: LineStyle) -> bool:
    if style is None or style.size <= 0:
        return False
    if style.size >= HEADING_SIZE_SHARE * body.size:
        return True
    return style.bold and not body.bold and style.size >= BOLD_MIN_SIZE_SHARE * body.size


def reads_as_heading(text: str) -> bool:
    """Whether a line's words could be a heading (see the module docstring)."""
    limit = QUESTION_MAX_CHARS if text.endswith("?") else HEADING_MAX_CHARS
    if len(text) > limit or _SENTENCE_INSIDE.search(text) or _LEADER.search(text):
        return False
    letters = len(_LETTER.findall(text))
    if letters < 2 or letters < 0.5 * sum(not c.isspace() for c in text):
        return False
    if sum(bool(_FIGURE.match(token)) for token in text.split()) > MAX_FIGURES:
        return False
    if text.endswith(_RUNS_ON) or FUNCTION_WORD.search(text.lower()):
        return False
    if text.endswith("."):
        upper = sum(c.isupper() for c in text)
        return bool(_LABELLED.match(text)) or upper >= 0.6 * letters
    return True


@dataclass(frozen=True)
class _Block:
    cut: int
    start: int
    text: str
    style: LineStyle
    page: int


def _blocks(lines: Sequence[Line], body: LineStyle) -> list[_Block]:
    """Runs of consecutive lines on one page in one heading type, each run of at most
    HEADING_MAX_LINES lines one heading's text."""
    blocks: list[_Block] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.style is None or not _heading_type(line.style, body):
            i += 1
            continue
        j = i + 1
        while (
            j < len(lines)
            and lines[j].style == line.style
            and lines[j].page == line.page
            and not _LABELLED.match(lines[j].text)
        ):
            j += 1
        if j - i <= HEADING_MAX_LINES:
            text = " ".join(lines[k].text for k in range(i, j))
            blocks.append(_Block(i, j, text, line.style, line.page))
        elif _CAPTION.match(line.text):
            # A table's caption over its bold header cells: the caption is the heading.
            blocks.append(_Block(i, i + 1, line.text, line.style, line.page))
        i = j
    return blocks


def _depth(text: str) -> int:
    """How deep a heading's number goes ("3" 1, "3.1" 2; unnumbered 1): within one type,
    "3.1 Applications" sits under "3 Permits", and "Contents" beside "1. Introduction"."""
    number = _NUMBER.match(text)
    return number.group(1).count(".") + 1 if number is not None else 1


def styled_headings(lines: Sequence[Line], title: str) -> list[Heading]:
    """The headings the type sets apart, with their paths; [] when fewer than
    MIN_STYLED_HEADINGS are found."""
    body = body_style(lines)
    if body is None:
        return []
    pages = max((line.page for line in lines), default=0)
    wanted = norm(title)
    found: list[_Block] = []
    seen: set[str] = set()
    for block in _blocks(lines, body):
        following = lines[block.start].text if block.start < len(lines) else ""
        runs_on = following[:1].islower() and block.style.size < HEADING_SIZE_SHARE * body.size
        if runs_on or not reads_as_heading(block.text):
            continue
        text = norm(block.text)
        if text == wanted or (block.page == 1 and text and text in wanted):
            continue  # the title, not a heading
        if _CONTINUED.search(block.text) and norm(_CONTINUED.sub(" ", block.text)) in seen:
            continue  # "Schedule 2 (continued) – ...": the section goes on
        seen.add(text)
        found.append(block)
    if pages > COVER_MIN_PAGES:
        inside = {b.style for b in found if b.page > 1}
        found = [b for b in found if b.style in inside]
    order = sorted({b.style for b in found}, key=lambda s: (-s.size, not s.bold))
    # The largest type used only near the start names the document, not a level.
    while len(order) > 1 and pages >= TITLE_MIN_DOCUMENT_PAGES:
        if any(b.page > TITLE_PAGES for b in found if b.style == order[0]):
            break
        found = [b for b in found if b.style != order[0]]
        order = order[1:]
    if len(found) < MIN_STYLED_HEADINGS:
        return []
    rank = {style: i for i, style in enumerate(order)}
    stack: list[tuple[tuple[int, int], str]] = []
    headings: list[Heading] = []
    for block in found:
        level = (rank[block.style], _depth(block.text))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, block.text))
        headings.append(Heading(block.cut, block.start, block.text, tuple(t for _, t in stack)))
    return headings
