"""Where a PDF page's text sits: reading order for columns, tables as text, the title.

pypdf's `extract_text()` follows the content stream, which is the reading order on
most pages, and the PDF loader keeps that text as it comes. Four things need to
know where each piece of text is drawn, and all four take it from the same
extraction pass (its `visitor_text` reports every run of text with its text and
graphics matrices), so a page is still read once:

- Columns. A page whose text falls into two or three columns with a clear gutter
  between them (an empty vertical band that nearly every line stops short of, with
  lines starting at one edge on its right, and lines of prose, not a table's short
  cells, on each side) is read again column by column when its content stream goes
  back and forth between the columns (drawn row by row across them). Then the lines
  that cross the gutters (a running header, a title set across the page) cut the
  page into bands, each band is read column after column, and the smaller type at
  the foot of a band's columns (footnotes) after its columns. A page drawn down one
  column and then the next keeps pypdf's order: pypdf may join text from two columns
  that share a baseline into one run, so geometry is trusted only where the stream
  order is plainly wrong.
- Tables. A page that paints many rules (thin filled rectangles, stroked rectangles
  and segments; not the rectangles that only clip) is handed to pdfplumber's table
  finder: tables ruled on every side, or ruled between rows only with each rule
  broken at the column edges (as word processors draw them). Each one with at least
  two rows and two columns, mostly filled, whose cells hold the text drawn inside it
  and whose column edges cut through no words, replaces that text by `table_text`
  (a line per row, each cell named by its column header; a header set on two or
  three lines is joined), at the place the table's first text was. pdfplumber parses
  the page again, slowly, so only ruled pages go to it.
- The title. The largest type on the first page, when it is clearly larger than the
  body text: what a reader takes for the title when the PDF's /Title is empty.
- Footnote marks. Figures set in smaller type on a raised baseline straight after a
  word ("Major development⁸²:") are dropped: pypdf glues them to the word, making
  "development82", a term no question asks for. An exponent after a unit ("m²") stays.

Everything else on a page keeps pypdf's text unchanged.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundqa.loaders._tables import table_text

_FIGURE = re.compile(r"\d")
# The operators that paint a path (what clips, "W n", paints nothing).
_PAINT = frozenset({b"S", b"s", b"f", b"F", b"f*", b"B", b"B*", b"b", b"b*"})
_STROKE = frozenset({b"S", b"s", b"B", b"B*", b"b", b"b*"})
_NO_PAINT = frozenset({b"n", b"W", b"W*"})

# A page goes to the table finder when it paints at least this many rectangles and
# line segments (table rules; a page of prose paints a few: underlines, a footnote rule).
RULES_FOR_TABLES = 20
# A table must have this many rows and columns, and this many filled cells, to be one
# (a box drawn round a paragraph is a one-cell "table").
TABLE_MIN_ROWS = 2
TABLE_MIN_COLS = 2
TABLE_MIN_CELLS = 4
# ... and this share of its cells filled, and hold this share of the text inside it.
TABLE_MIN_FILLED = 0.3
TABLE_MIN_HELD = 0.9
# ... and its column edges cut through at most this share of the words in it.
TABLE_MAX_CUT_SHARE = 0.02
TABLE_MAX_HEADER_ROWS = 3
# A header cell is a label, no longer than this.
HEADER_MAX_CHARS = 60
# A rule between table rows is at least this long, and a filled rule under this wide
# (points, in the page's user space before scaling).
RULE_MIN_LENGTH = 5
RULE_MAX_WIDTH = 2.5
# A column edge is where at least this share of the rows' rules break.
COLUMN_EDGE_SHARE = 0.4
# Columns: a page needs this many runs of text to be judged at all.
COLUMN_MIN_RUNS = 20
# A gutter is crossed by at most this share of the page's lines (a header, a title).
GUTTER_CROSSED_SHARE = 0.08
# Lines in a column hold at least this many characters on average: a column of
# prose, not a column of table cells.
COLUMN_MIN_LINE_CHARS = 22
# Each column holds at least this share of the page's characters.
COLUMN_MIN_SHARE = 0.12
# A page is drawn row by row across its columns when the content stream moves from
# one column to another more often than this, and than this share of its lines.
INTERLEAVED_MIN_SWITCHES = 8
INTERLEAVED_SHARE = 0.2
# Type this much smaller than the body, at the foot of a column, is a footnote.
FOOTNOTE_SIZE_SHARE = 0.9
# The title is at least this much larger than the body text.
TITLE_SIZE_SHARE = 1.25
TITLE_MAX_CHARS = 200
# A footnote mark: one to three figures, or several with commas, in type at most this
# share of the text's size, its baseline raised by this share of the text's size...
_MARK = re.compile(r"\d{1,3}(?:,\d{1,3})*")
MARK_SIZE_SHARE = 0.85
MARK_MIN_RISE = 0.15
MARK_MAX_RISE = 0.6
# ... after a word of three letters or more, or a closing mark.
_MARKED = re.compile(r"(?:[^\W\d_]{3}|[.,;:)\]’”\"])$")
# An average glyph is about half an em wide where the font gives no widths.
DEFAULT_GLYPH_WIDTH = 500
# A font is bold from this weight (the descriptor's /FontWeight; 400 is regular), and a
# line is bold when this share of its characters are.
BOLD_WEIGHT = 600
BOLD_LINE_SHARE = 0.8
_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demibold|extrabold", re.IGNORECASE)
_FORCE_BOLD = 1 << 18  # bit 19 of a font descriptor's /Flags


@dataclass(frozen=True)
class Run:
    """A run of text as pypdf reported it, and where it starts on the page (points)."""

    text: str
    x: float
    y: float
    size: float  # the type size in points, after the matrices' scaling
    width: float  # the advance width in points (estimated where the font says nothing)
    upright: bool
    bold: bool = False  # set in a bold face (by the font's name, weight or flags)

    @property
    def end(self) -> float:
        return self.x + self.width


@dataclass
class PageLayout:
    """A page read: its text in reading order, and what was done to get it."""

    text: str
    runs: list[Run] = field(default_factory=list)
    columns: int = 1  # columns found
    tables: int = 0  # tables put as text
    reordered: bool = False  # read column by column, not in the content stream's order
    # The type of each line of `text`, by `line_key`, in the order the lines come.
    styles: dict[str, list[LineStyle]] = field(default_factory=dict)


@dataclass(frozen=True)
class LineStyle:
    """The type a line is set in: the size most of its characters have, and whether
    nearly all of them (BOLD_LINE_SHARE) are bold."""

    size: float
    bold: bool


class _Collector:
    """The visitor pypdf calls while it extracts: keeps every run and counts the rules."""

    def __init__(self, fonts: _Fonts) -> None:
        self.fonts = fonts
        self.runs: list[Run] = []
        self.rules = 0  # rectangles and segments painted
        self.path: list[str] = []  # what the path being built holds: "thin", "box", "line"

    def text(
        self, text: str, cm: Sequence[float], tm: Sequence[float], font: Any, size: Any
    ) -> None:
        if not text:
            return
        a = tm[0] * cm[0] + tm[1] * cm[2]
        b = tm[0] * cm[1] + tm[1] * cm[3]
        c = tm[2] * cm[0] + tm[3] * cm[2]
        d = tm[2] * cm[1] + tm[3] * cm[3]
        x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        points = float(size or 0) * math.hypot(c, d)
        advance = self.fonts.width(text.strip("\n"), font) * float(size or 0) * math.hypot(a, b)
        upright = d > 0 and abs(b) < 1e-3 * max(1.0, abs(a))
        bold = self.fonts.bold(font)
        self.runs.append(Run(text, x, y, points, advance / 1000, upright, bold))

    def operator(self, operator: bytes, operands: Any, cm: Any, tm: Any) -> None:
        """Counts the rules painted: a thin filled rectangle (how word processors draw a
        border) is one, a stroked rectangle four, a stroked segment one. A shaded area is
        none, and neither is a path that only clips."""
        if operator == b"re":
            thin = _thin(operands)
            self.path.append("thin" if thin else "box")
        elif operator == b"l":
            self.path.append("line")
        elif operator in _PAINT:
            stroked = operator in _STROKE
            for kind in self.path:
                if kind == "thin":
                    self.rules += 1
                elif stroked:
                    self.rules += 4 if kind == "box" else 1
            self.path = []
        elif operator in _NO_PAINT:
            self.path = []


def _thin(operands: Any) -> bool:
    """Whether an `re` operator's rectangle is a rule: under RULE_MAX_WIDTH one way."""
    try:
        return min(abs(float(operands[2])), abs(float(operands[3]))) < RULE_MAX_WIDTH
    except (IndexError, TypeError, ValueError):
        return False


class _Fonts:
    """What the extraction needs of each font, read once per font per document: its
    glyph widths (thousandths of an em) and whether it is bold."""

    def __init__(self) -> None:
        # By the font dictionary's id, with the dictionary kept so the id stays its own.
        self.fonts: dict[int, tuple[Any, Any, bool]] = {}

    def _read(self, font: Any) -> tuple[Any, Any, bool]:
        cached = self.fonts.get(id(font))
        if cached is None or cached[0] is not font:
            cached = self.fonts[id(font)] = (font, _font_metrics(font), _is_bold(font))
        return cached

    def bold(self, font: Any) -> bool:
        return font is not None and self._read(font)[2]

    def width(self, text: str, font: Any) -> float:
        if not text:
            return 0.0
        metrics = self._read(font)[1] if font is not None else None
        if metrics is None:
            return DEFAULT_GLYPH_WIDTH * len(text)
        width = float(metrics.get_text_width(text))
        if not 0 < width <= 2000 * len(text):
            return DEFAULT_GLYPH_WIDTH * len(text)
        return width


def _is_bold(font: Any) -> bool:
    """Whether a font dictionary names a bold face: by its name ("Arial-BoldMT",
    "ABCDEF+Calibri-Semibold"), its descriptor's weight, or its ForceBold flag."""
    try:
        name = str(font.get("/BaseFont", ""))
        if _BOLD_NAME.search(name):
            return True
        descriptor = font.get("/FontDescriptor")
        if descriptor is None and "/DescendantFonts" in font:
            descriptor = font["/DescendantFonts"][0].get_object().get("/FontDescriptor")
        if descriptor is None:
            return False
        descriptor = descriptor.get_object()
        weight = float(descriptor.get("/FontWeight", 0) or 0)
        flags = int(descriptor.get("/Flags", 0) or 0)
    except Exception:  # a font dictionary pypdf can read but not the way we ask
        return False
    return weight >= BOLD_WEIGHT or bool(flags & _FORCE_BOLD)


def _font_metrics(font: Any) -> Any:
    """pypdf's font object (it knows the widths), or None where it cannot be built."""
    try:
        from pypdf.generic._font import Font

        return Font.from_font_resource(font)
    except Exception:  # an old pypdf, or a font dictionary it cannot read
        return None


class Tables:
    """pdfplumber's table finder over one PDF, opened on first use (it is slow to open)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pdf: Any = None
        self.failed = False

    def find(self, number: int) -> list[tuple[tuple[float, float, float, float], str]]:
        """(bbox as x0, top, x1, bottom from the page's top left, text) per table on
        page `number` (1-based); [] where none is found or pdfplumber fails."""
        if self.failed:
            return []
        try:
            if self._pdf is None:
                import pdfplumber

                self._pdf = pdfplumber.open(self.path)
            page = self._pdf.pages[number - 1]
        except Exception:  # pdfplumber cannot open what pypdf could: keep pypdf's text
            self.failed = True
            return []
        found = []
        try:
            for table in _ruled_tables(page):
                rows = _cells(table.extract())
                if _is_table(rows) and _holds_its_text(page, table, rows):
                    heads = _header_rows(rows)
                    # "Completed by:" as a label would read "Completed by:: Major Scheme".
                    rows[:heads] = [[c.rstrip(":").rstrip() for c in row] for row in rows[:heads]]
                    text = table_text(rows, header_rows=heads)
                    found.append((tuple(table.bbox), text))
        except Exception:  # a page pdfplumber cannot parse keeps pypdf's text
            return []
        finally:
            page.close()
        return found

    def close(self) -> None:
        if self._pdf is not None:
            with contextlib.suppress(Exception):
                self._pdf.close()
            self._pdf = None


def _ruled_tables(page: Any) -> list[Any]:
    """pdfplumber's tables on the page: ruled on every side, or ruled between rows only
    with each row's rule broken at the column edges (as word processors draw them)."""
    tables = page.find_tables()
    if tables:
        return list(tables)
    ends: Counter[int] = Counter()
    for edge in page.horizontal_edges:
        if edge["x1"] - edge["x0"] >= RULE_MIN_LENGTH:
            ends.update({round(edge["x0"]), round(edge["x1"])})
    columns = _column_edges(ends)
    if len(columns) < TABLE_MIN_COLS + 1:
        return []
    settings = {
        "vertical_strategy": "explicit",
        "explicit_vertical_lines": columns,
        "horizontal_strategy": "lines",
    }
    return list(page.find_tables(settings))


def _column_edges(ends: Counter[int]) -> list[float]:
    """Where the rules between rows break, as column edges: the ends a point or two apart
    (the two sides of one border) taken together, and only those most rows share (a
    short rule elsewhere on the page is not a column edge)."""
    clusters: list[tuple[float, int]] = []
    for x in sorted(ends):
        if clusters and x - clusters[-1][0] <= 2:
            clusters[-1] = (clusters[-1][0], clusters[-1][1] + ends[x])
        else:
            clusters.append((float(x), ends[x]))
    most = max((n for _, n in clusters), default=0)
    return [x for x, n in clusters if n >= max(2, COLUMN_EDGE_SHARE * most)]


def _cells(rows: Sequence[Sequence[str | None]]) -> list[list[str]]:
    """The grid without the columns and rows that hold no text: those merged cells
    cover (pdfplumber gives None there) and those a finer grid than the table's adds."""
    width = max((len(row) for row in rows), default=0)
    grid = [[(c or "").strip() for c in row] + [""] * (width - len(row)) for row in rows]
    keep = [col for col in range(width) if any(row[col] for row in grid)]
    return [[row[col] for col in keep] for row in grid if any(row[col] for col in keep)]


def _is_table(rows: Sequence[Sequence[str | None]]) -> bool:
    """Whether pdfplumber's grid is a table: rows and columns enough, and mostly filled
    (a chart's grid or a box round a paragraph is not)."""
    cells = [c for row in rows for c in row]
    filled = [c for c in cells if c and c.strip()]
    rows_with_cells = [row for row in rows if any(c and c.strip() for c in row)]
    return (
        len(rows_with_cells) >= TABLE_MIN_ROWS
        and max((len(row) for row in rows), default=0) >= TABLE_MIN_COLS
        and len(filled) >= TABLE_MIN_CELLS
        and len(filled) >= TABLE_MIN_FILLED * len(cells)
    )


def _holds_its_text(page: Any, table: Any, rows: Sequence[Sequence[str | None]]) -> bool:
    """Whether the cells hold (nearly) all the text drawn inside the table's frame, and
    no column edge cuts through a word: a grid that does either (a chart's, or edges
    guessed wrong) is not the table's."""
    x0, top, x1, bottom = table.bbox
    inside = sum(
        1
        for c in page.chars
        if not c["text"].isspace()
        and x0 <= (c["x0"] + c["x1"]) / 2 <= x1
        and top <= (c["top"] + c["bottom"]) / 2 <= bottom
    )
    held = sum(len("".join((cell or "").split())) for row in rows for cell in row)
    if inside == 0 or held < TABLE_MIN_HELD * inside:
        return False
    edges = {round(cell[0], 1) for cell in table.cells} - {round(x0, 1)}
    px0, ptop, px1, pbottom = page.bbox
    frame = (max(x0, px0), max(top, ptop), min(x1, px1), min(bottom, pbottom))
    words = page.within_bbox(frame, strict=False).extract_words()
    cut = sum(1 for w in words if any(w["x0"] + 1 < x < w["x1"] - 1 for x in edges))
    return cut <= TABLE_MAX_CUT_SHARE * len(words)


def _header_rows(rows: Sequence[Sequence[str | None]]) -> int:
    """How many rows head the table: the first, unless a cell of it is too long for a
    label (the header was set above the first rule), and those after it that name no
    row (an empty first cell) and hold no figures: a header set on two or three lines."""
    if any(len((c or "").strip()) > HEADER_MAX_CHARS for c in rows[0]):
        return 0
    count = 1
    while count < min(TABLE_MAX_HEADER_ROWS, len(rows) - 1):
        row = [(c or "").strip() for c in rows[count]]
        if (row and row[0]) or any(_FIGURE.search(c) for c in row):
            break
        count += 1
    return count


class PageReader:
    """Reads the pages of one PDF in reading order (see the module docstring)."""

    def __init__(self, path: Path, tables: bool = True) -> None:
        self.fonts = _Fonts()
        self.tables = Tables(path) if tables else None

    def read(self, page: Any, number: int) -> PageLayout:
        collector = _Collector(self.fonts)
        text = page.extract_text(
            visitor_text=collector.text, visitor_operand_before=collector.operator
        )
        text = text or ""
        if "".join(r.text for r in collector.runs) != text:
            return PageLayout(text, collector.runs)  # runs that do not add up: pypdf's text
        runs = without_footnote_marks(collector.runs)
        if len(runs) < len(collector.runs):
            collector.runs = runs
            text = "".join(r.text for r in runs)
        try:
            layout = self._arrange(page, number, text, collector)
        except Exception:  # geometry this code did not foresee: pypdf's text as it comes
            layout = PageLayout(text, collector.runs)
        if not layout.styles:
            layout.styles = line_styles([layout.runs])
        return layout

    def _arrange(self, page: Any, number: int, text: str, collector: _Collector) -> PageLayout:
        runs = collector.runs
        found: list[tuple[tuple[float, float, float, float], str]] = []
        if self.tables is not None and collector.rules >= RULES_FOR_TABLES:
            found = self.tables.find(number)
        if found:
            runs = _with_tables(runs, found, page)
        gutters = _gutters(runs)
        if gutters and _interleaved(runs, gutters):
            text, lines = _column_text(runs, gutters)
            return PageLayout(
                text, runs, len(gutters) + 1, len(found), True, styles=line_styles(lines)
            )
        if found:
            return PageLayout("".join(r.text for r in runs), runs, len(gutters) + 1, len(found))
        return PageLayout(text, runs, len(gutters) + 1)

    def close(self) -> None:
        if self.tables is not None:
            self.tables.close()


# --- footnote marks ---------------------------------------------------------------


def without_footnote_marks(runs: list[Run]) -> list[Run]:
    """`runs` less the footnote marks: a figure or a few ("82", "3,4") set in smaller type
    and raised above the baseline of the run it follows, straight after a word or a
    closing mark ("Major development82:", "alert,5"). Left in, the mark glues itself to
    the word, and "development82" is a term no question asks for. An exponent stays:
    one after a unit of one or two letters ("1,000m2", "km2") is not a footnote's."""
    kept: list[Run] = []
    for run in runs:
        prev = kept[-1] if kept else None
        if prev is not None and _footnote_mark(prev, run):
            continue
        kept.append(run)
    return kept


def _footnote_mark(prev: Run, run: Run) -> bool:
    if not (_MARK.fullmatch(run.text) and _MARKED.search(prev.text)):
        return False
    if not (run.upright and prev.upright and 0 < run.size <= MARK_SIZE_SHARE * prev.size):
        return False
    raised = run.y - prev.y
    return MARK_MIN_RISE * prev.size <= raised <= MARK_MAX_RISE * prev.size


# --- tables -----------------------------------------------------------------------


def _with_tables(
    runs: list[Run], tables: Sequence[tuple[tuple[float, float, float, float], str]], page: Any
) -> list[Run]:
    """`runs` less those drawn inside a table, each table's text put where its first was."""
    try:
        left, top = float(page.mediabox.left), float(page.mediabox.top)
    except Exception:
        left, top = 0.0, 0.0
    out: list[Run] = []
    placed: set[int] = set()
    for run in runs:
        inside = next(
            (
                i
                for i, ((x0, t0, x1, b0), _) in enumerate(tables)
                if run.text.strip()
                and x0 - 2 <= run.x - left <= x1 + 2
                and t0 - 2 <= top - run.y <= b0 + 2
            ),
            None,
        )
        if inside is None:
            out.append(run)
            continue
        if inside not in placed:
            placed.add(inside)
            (x0, t0, x1, _), body = tables[inside]
            size = run.size
            text = f"\n{body}\n"
            out.append(Run(text, left + x0, top - t0, size, x1 - x0, True))
        if run.text.endswith("\n") and out and not out[-1].text.endswith("\n"):
            out.append(Run("\n", run.x, run.y, run.size, 0.0, run.upright))
    return out


# --- columns ----------------------------------------------------------------------


def _body(runs: Sequence[Run]) -> list[Run]:
    return [r for r in runs if r.upright and r.text.strip() and r.size > 0]


def _line_key(run: Run) -> int:
    return round(run.y)


def _gutters(runs: Sequence[Run]) -> list[float]:
    """The x of each gutter between columns of prose on the page; [] for one column."""
    body = _body(runs)
    if len(body) < COLUMN_MIN_RUNS:
        return []
    # The text block's edges, by percentile: a page number set in the margin, or a run
    # whose width is misjudged, does not move them.
    starts = sorted(r.x for r in body)
    ends = sorted(r.end for r in body)
    left, right = starts[len(starts) // 20], ends[-1 - len(ends) // 20]
    span = right - left
    if span <= 0:
        return []
    # A cheap first look: columns start lines well right of the text's left edge.
    if sum(1 for r in body if r.x > left + 0.25 * span) < 0.2 * len(body):
        return []
    origin = min(starts)
    bins = int(ends[-1] - origin) + 2
    cover = [0] * (bins + 1)
    for r in body:
        start = max(0, int(r.x - origin))
        stop = min(bins, math.ceil(r.end - origin))
        if stop > start:
            cover[start] += 1
            cover[stop] -= 1
    lines = len({_line_key(r) for r in body})
    crossed_max = max(1, int(GUTTER_CROSSED_SHARE * lines))
    widest = max(3.0, 0.4 * statistics.median(r.size for r in body))
    gutters: list[float] = []
    depth = 0
    open_at: int | None = None
    for i in range(bins):
        depth += cover[i]
        x = origin + i
        if left + 0.12 * span <= x <= right - 0.12 * span and depth <= crossed_max:
            open_at = i if open_at is None else open_at
            continue
        if open_at is not None and i - open_at >= widest:
            gutters.append(origin + (open_at + i) / 2)
        open_at = None
    return _real_columns(body, gutters)


def _real_columns(body: Sequence[Run], gutters: list[float]) -> list[float]:
    """The gutters that part columns of prose: each column holds lines that start at one
    edge, hold enough characters on average, and a fair share of the page's text. A
    gutter beside an outer column that fails is dropped; an inner one that fails means
    the page is not set in columns."""
    total = sum(len(r.text.strip()) for r in body) or 1
    while gutters:
        edges = [-math.inf, *gutters, math.inf]
        failing = [
            i
            for i, (lo, hi) in enumerate(itertools.pairwise(edges))
            if not _a_column([r for r in body if lo <= r.x < hi and r.end <= hi + 2], total)
        ]
        if not failing:
            return gutters
        if failing == [0]:
            gutters = gutters[1:]
        elif failing == [len(gutters)]:
            gutters = gutters[:-1]
        else:
            return []
    return []


def _a_column(inside: Sequence[Run], total: int) -> bool:
    chars = sum(len(r.text.strip()) for r in inside)
    lines = len({_line_key(r) for r in inside})
    if not inside or chars / total < COLUMN_MIN_SHARE:
        return False
    if chars / max(1, lines) < COLUMN_MIN_LINE_CHARS:
        return False  # short cells: a table, not a column of prose
    edge = Counter(round(r.x) for r in inside).most_common(1)[0][1]
    return edge >= 0.3 * lines  # lines start at one edge


def _interleaved(runs: Sequence[Run], gutters: Sequence[float]) -> bool:
    """Whether the content stream goes back and forth between the columns (drawn row by
    row), rather than down one column and then the next: only then is the page read
    again in column order. A run of text that pypdf put together across a gutter makes
    geometry unsure, so a page drawn in column order keeps the stream's order."""
    body = _body(runs)
    columns = [sum(1 for g in gutters if r.x >= g - 2) for r in body]
    switches = sum(1 for a, b in itertools.pairwise(columns) if a != b)
    lines = len({_line_key(r) for r in body})
    return switches > max(INTERLEAVED_MIN_SWITCHES, INTERLEAVED_SHARE * lines)


def _column_text(runs: Sequence[Run], gutters: Sequence[float]) -> tuple[str, list[list[Run]]]:
    """The page read band by band, and in each band column by column, footnotes last;
    and its lines, each as the runs it is made of."""
    pieces = [p for r in runs for p in _split_lines(r)]
    body = [p for p in pieces if p.upright and p.text.strip()]
    spanning = sorted(
        {_line_key(p) for p in body if any(p.x < g - 2 and p.end > g + 2 for g in gutters)},
        reverse=True,
    )
    size = statistics.median(p.size for p in body) if body else 0.0

    def column(p: Run) -> int:
        return sum(1 for g in gutters if p.x >= g - 2)

    def band(p: Run) -> int:
        return sum(1 for y in spanning if y > _line_key(p))

    keyed: dict[tuple[int, int], list[Run]] = {}
    for p in body:
        key = _line_key(p)
        if key in spanning:
            keyed.setdefault((2 * spanning.index(key) + 1, 0), []).append(p)
        else:
            keyed.setdefault((2 * band(p), column(p)), []).append(p)
    blocks: list[tuple[tuple[int, int, int], list[list[Run]]]] = []
    columns = len(gutters) + 1
    for (zone, col), members in keyed.items():
        lines = _lines(members)
        if zone % 2 == 0:
            body_lines, notes = _footnotes(lines, size)
            blocks.append(((zone, 0, col), body_lines))
            if notes:
                blocks.append(((zone, 1, columns + col), notes))
        else:
            blocks.append(((zone, 0, 0), lines))
    blocks.sort(key=lambda b: b[0])
    lines = [line for _, block in blocks for line in block]
    out = [_line_text(line) for line in lines]
    # Text set sideways (a margin note, a production line) goes last, as drawn.
    out += [" ".join(p.text.split()) for p in pieces if p.text.strip() and not p.upright]
    return "\n".join(out) + "\n", lines


def _split_lines(run: Run) -> list[Run]:
    """A run with line breaks inside it as one run per line (later lines placed below)."""
    parts = [p for p in run.text.split("\n") if p.strip()]
    if len(parts) <= 1:
        text = parts[0] if parts else ""
        return [Run(text, run.x, run.y, run.size, run.width, run.upright)]
    step = 1.2 * run.size
    share = run.width / max(1, sum(len(p) for p in parts))
    return [
        Run(p, run.x, run.y - i * step, run.size, share * len(p), run.upright)
        for i, p in enumerate(parts)
    ]


def _lines(runs: Sequence[Run]) -> list[list[Run]]:
    """Runs grouped into lines top to bottom, each line's runs left to right."""
    ordered = sorted(runs, key=lambda r: (-r.y, r.x))
    lines: list[list[Run]] = []
    top = 0.0
    for run in ordered:
        if lines and top - run.y < 0.5 * max(run.size, max(r.size for r in lines[-1])):
            lines[-1].append(run)
            continue
        lines.append([run])
        top = run.y
    return [sorted(line, key=lambda r: r.x) for line in lines]


def _footnotes(lines: list[list[Run]], size: float) -> tuple[list[list[Run]], list[list[Run]]]:
    """(the lines of a column, the smaller-type lines at its foot that follow the last
    line in body type)."""
    last_body = max(
        (
            i
            for i, line in enumerate(lines)
            if max(r.size for r in line) >= FOOTNOTE_SIZE_SHARE * size
        ),
        default=-1,
    )
    return lines[: last_body + 1], lines[last_body + 1 :]


def _line_text(line: Sequence[Run]) -> str:
    text = ""
    previous: Run | None = None
    for run in line:
        piece = run.text
        gap = run.x - previous.end if previous is not None else 0.0
        joined = not text or text.endswith(" ") or piece.startswith(" ")
        if previous is not None and not joined and gap > 0.15 * max(run.size, previous.size):
            text += " "
        text += piece
        previous = run
    return " ".join(text.split())


# --- type of each line ------------------------------------------------------------

_KEY_DROPS = str.maketrans({"\u00ad": None, "-": None})
_KEY_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl"})


def line_key(text: str) -> str:
    """A line's text as both sides of a lookup see it alike: without spaces, hyphens and
    soft hyphens, ligatures spelled out, case folded."""
    return "".join(text.translate(_KEY_LIGATURES).translate(_KEY_DROPS).split()).casefold()


def line_styles(groups: Sequence[Sequence[Run]]) -> dict[str, list[LineStyle]]:
    """The type of every line the runs make, by `line_key`: each group's runs read in
    order, a new line at each line break in their text (the runs of one line of a page,
    or all of a page's runs in the content stream's order)."""
    styles: dict[str, list[LineStyle]] = {}
    for group in groups:
        lines: list[list[tuple[str, float, bool]]] = [[]]
        for run in group:
            for i, part in enumerate(run.text.split("\n")):
                if i:
                    lines.append([])
                lines[-1].append((part, round(run.size * 2) / 2, run.bold))
        for line in lines:
            key = line_key("".join(part for part, _, _ in line))
            if not key:
                continue
            sizes: dict[float, int] = {}
            bold = 0
            for part, size, is_bold in line:
                chars = len(part) - part.count(" ")
                sizes[size] = sizes.get(size, 0) + chars
                bold += chars if is_bold else 0
            total = sum(sizes.values())
            if total:
                size = max(sizes, key=sizes.__getitem__)
                styles.setdefault(key, []).append(LineStyle(size, bold >= BOLD_LINE_SHARE * total))
    return styles


# --- title ------------------------------------------------------------------------


def title_of(runs: Sequence[Run]) -> str:
    """The largest type on a page, when clearly larger than its body text; else ""."""
    body = _body(runs)
    if not body:
        return ""
    sizes: Counter[float] = Counter()
    for r in body:
        sizes[round(r.size, 1)] += len(r.text.strip())
    common = sizes.most_common(1)[0][0]
    largest = max(sizes)
    if largest < TITLE_SIZE_SHARE * common:
        return ""
    big = [p for r in body if r.size >= largest - 0.5 for p in _split_lines(r)]
    title = " ".join(_line_text(line) for line in _lines(big))
    if len(title) > TITLE_MAX_CHARS or sum(c.isalpha() for c in title) < 3:
        return ""
    return title
