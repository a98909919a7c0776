"""Running headers, footers and page numbers: found on a PDF's pages and removed.

A line at a page's top or bottom (the first and last EDGE_LINES lines, and further in
once the lines outside it are removed, up to PEEL_LINES) is page furniture when:

- digits aside, it recurs at the page edges on most pages (FURNITURE_SHARE), or is the
  document's title;
- it recurs at the same edge on FURNITURE_MIN_PAGES pages within FURNITURE_SPAN pages:
  a header that names the chapter changes every few pages ("Chapter 4: Function
  reference 20", then "Chapter 5: ..."), and left and right pages may alternate;
- it shares its frame (its edge, first two words and last word, digits aside) with
  such a running line, or most pages have that frame on their first or last line:
  the chapter name between varies, and a short chapter never shows it recurring;
- or it is a bare page number ("12", "Page 3 of 11", "- iv -", "12 | Title").

Only a line that could stand alone counts for the recurrence and frame rules: not a
numbered clause or list item, not a line that runs on (ending in a comma, a function
word, a hyphen), not one that starts in lower case; so body text that happens to open
several pages in the same words stays. What is removed is listed in one finding.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from groundqa.loaders._common import source_of
from groundqa.models import Finding

# Headers and footers live in this many lines at the top and at the bottom of a page...
EDGE_LINES = 2
# ... and, once the lines outside them are removed, as far in as this.
PEEL_LINES = 4
# A line is a running header or footer when it recurs at a page edge on at least this
# share of the pages with text, and on at least FURNITURE_MIN_PAGES of them.
FURNITURE_SHARE = 0.5
FURNITURE_MIN_PAGES = 3
# ... or when it recurs at the same edge of FURNITURE_MIN_PAGES pages within this many
# pages: a running header that names the chapter changes every few pages.
FURNITURE_SPAN = 4
EXCERPT_ITEMS = 12
EXCERPT_ITEM_CHARS = 60

_DIGITS = re.compile(r"\d+")
_LETTERS = re.compile(r"[^\W\d_]+")

_ROMAN_NUMERAL = r"(?=[ivxlc])c{0,3}(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})"
_PAGE_NUMBER = re.compile(
    rf"^(?:(?:page|p\.)\s*)?[-–—]?\s*(?:\d{{1,5}}|{_ROMAN_NUMERAL})\s*[-–—]?"
    r"(?:\s*(?:of|/)\s*\d{1,5})?$",
    re.IGNORECASE,
)
_PAGE_NUMBER_TITLED = re.compile(r"^(?:\d{1,5}\s*\|\s*\S.*|\S.*?\s*\|\s*\d{1,5})$")
# A line that starts a clause or list item ("2.1 ", "(a) ", "• ").
NEW_BLOCK = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3})*\.?\s|\([a-zA-Z0-9]{1,4}\)\s|[•▪●◦*–-]\s)")
# A line that ends in a word a sentence does not end in.
FUNCTION_WORD = re.compile(
    r"\s(?:a|an|and|as|at|by|for|from|in|into|is|of|on|or|the|to|that|which|with)$"
)


def norm(text: str) -> str:
    """A heading as compared: lower case, letters and digits only, single spaces."""
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())


def _furniture_key(line: str) -> str:
    return _DIGITS.sub("#", line).casefold()


def _is_page_number(line: str) -> bool:
    return bool(_PAGE_NUMBER.match(line) or _PAGE_NUMBER_TITLED.match(line))


def _edge(lines: Sequence[str], depth: int = EDGE_LINES) -> list[tuple[int, bool]]:
    """(index, at the top) of the lines where a header or footer can be: the first and
    last `depth` lines."""
    n = len(lines)
    top = [(i, True) for i in range(min(depth, n))]
    bottom = [(n - 1 - i, False) for i in range(min(depth, n)) if n - 1 - i >= depth]
    return top + bottom


def strip_furniture(
    pages: list[list[str]], title: str = ""
) -> tuple[list[list[str]], dict[str, list[str]]]:
    """Pages without running headers, footers and page numbers; what was removed, by key.

    A line at a page edge that is the document's /Title is a running title (or the
    title printed atop page 1) even in a document too short to show the repetition.
    Lines are peeled from each edge: one removed lets the next one in be looked at.
    """
    with_text = sum(1 for p in pages if p)
    on_pages: Counter[str] = Counter()
    at_edge: dict[tuple[bool, str], list[int]] = {}
    frame_on: dict[tuple[bool, str, str], set[int]] = {}
    for number, lines in enumerate(pages):
        edge = _edge(lines, EDGE_LINES + 1)
        on_pages.update({_furniture_key(lines[i]) for i, _ in edge})
        for i, top in edge:
            if not _standalone(lines[i]):
                continue
            key = _furniture_key(lines[i])
            at_edge.setdefault((top, key), []).append(number)
            frame = _frame(top, key)
            if frame is not None and i in (0, len(lines) - 1):
                frame_on.setdefault(frame, set()).add(number)
    needed = max(FURNITURE_MIN_PAGES, math.ceil(with_text * FURNITURE_SHARE))
    running = {key for key, n in on_pages.items() if n >= needed}
    running |= {key for (_, key), numbers in at_edge.items() if _runs_on(key, numbers)}
    title_key = norm(_furniture_key(title))
    if title_key:
        running |= {key for key in on_pages if norm(key) == title_key}
    # A frame is a running one when a running line has it, or when most pages have it
    # on their first or last line (the words between vary on every page).
    frames = _frames({(top, key) for top, key in at_edge if key in running})
    frames |= {frame for frame, on in frame_on.items() if len(on) >= needed}

    def furniture(line: str, top: bool) -> bool:
        key = _furniture_key(line)
        framed = _standalone(line) and _frame(top, key) in frames
        return key in running or framed or _is_page_number(line)

    stripped: dict[str, list[str]] = {}
    cleaned: list[list[str]] = []
    for lines in pages:
        drop = _peel(lines, furniture)
        for i in sorted(drop):
            stripped.setdefault(_furniture_key(lines[i]), []).append(lines[i])
        cleaned.append([line for i, line in enumerate(lines) if i not in drop])
    return cleaned, stripped


def _peel(lines: Sequence[str], furniture: Callable[[str, bool], bool]) -> set[int]:
    """The indexes of the furniture among the first and last EDGE_LINES lines, looking
    one line further in for every line removed."""
    drop: set[int] = set()
    reach, i = EDGE_LINES, 0
    while i < min(reach, len(lines)):
        if furniture(lines[i], True):
            drop.add(i)
            reach = min(reach + 1, PEEL_LINES)
        i += 1
    floor = i  # the bottom edge stops where the top one did
    reach, i = EDGE_LINES, len(lines) - 1
    while i >= max(floor, len(lines) - reach):
        if furniture(lines[i], False):
            drop.add(i)
            reach = min(reach + 1, PEEL_LINES)
        i -= 1
    return drop


def _standalone(line: str) -> bool:
    """Whether a line could be a running header on its own: not a clause or list item,
    and not a line that runs on into the next ("(4) In the Operating Procedures chapter,")."""
    return not (
        NEW_BLOCK.match(line)
        or line.endswith((",", ";", ":", "-", "("))
        or FUNCTION_WORD.search(line)
        or line[:1].islower()
    )


def _frame(top: bool, key: str) -> tuple[bool, str, str] | None:
    """A running line's frame: its edge, first two words and last word ("chapter #:"
    and "#" of "chapter #: function reference #"), or None for a line under 3 words."""
    words = key.split()
    if len(words) < 3:
        return None
    return top, " ".join(words[:2]), words[-1]


def _frames(running: set[tuple[bool, str]]) -> set[tuple[bool, str, str]]:
    """The frames of the running lines at each edge: a header whose chapter name varies
    is furniture in the chapters too short to show it recurring."""
    return {frame for top, key in running if (frame := _frame(top, key)) is not None}


def _runs_on(key: str, pages: Sequence[int]) -> bool:
    """Whether a line recurs at one edge of nearby pages, as a chapter's running header
    does: on FURNITURE_MIN_PAGES pages within FURNITURE_SPAN pages (left and right
    pages may alternate, and a chapter's first page may go without)."""
    if len(pages) < FURNITURE_MIN_PAGES or len(_LETTERS.findall(key)) < 2:
        return False
    ordered = sorted(set(pages))
    reach = FURNITURE_MIN_PAGES - 1
    return any(
        ordered[i + reach] - ordered[i] <= FURNITURE_SPAN for i in range(len(ordered) - reach)
    )


def furniture_finding(path: Path, doc_id: str, stripped: dict[str, list[str]]) -> Finding:
    total = sum(len(v) for v in stripped.values())
    ranked = sorted(stripped.values(), key=lambda v: (-len(v), v[0]))
    items = []
    for lines in ranked[:EXCERPT_ITEMS]:
        first = lines[0]
        shown = first if len(first) <= EXCERPT_ITEM_CHARS else first[: EXCERPT_ITEM_CHARS - 1] + "…"
        varies = " (numbers vary)" if len(set(lines)) > 1 else ""
        items.append(f"{shown!r} ×{len(lines)}{varies}")
    if len(ranked) > EXCERPT_ITEMS:
        items.append(f"and {len(ranked) - EXCERPT_ITEMS} more")
    return Finding(
        severity="REVIEW",
        check="pdf-furniture",
        message=(
            f"{path.name}: removed {total} running header, footer and page-number line(s) "
            f"({len(stripped)} distinct); check the list holds nothing but page furniture"
        ),
        source=source_of(path),
        doc_id=doc_id,
        excerpt="; ".join(items),
    )
