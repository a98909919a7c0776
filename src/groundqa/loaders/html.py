"""Load an HTML page as one Document: its main content, cut into sections at its headings.

lxml's HTML parser reads the page (it is lenient: unclosed tags and stray end tags load
as a browser would show them). What a reader of the page skips is removed before
anything else: scripts, styles, forms, buttons, embedded frames and drawings, `<nav>`,
anything hidden (`hidden`, `aria-hidden="true"`, an inline `display: none`), ARIA
navigation, banner and search landmarks, and the site's own header and footer (a
`<header>` or `<footer>` not inside an article, aside, main, nav or section, which is
how HTML defines a page's banner and footer). The main content is then `<main>`, else
the element with `role="main"`, else the `<article>` with the most text, else `<body>`.

An `<aside>` inside the main content stays, in the section where it stands: on pages
like a municipal code's, asides carry a section's history notes and cross references,
which answer "when was this amended". Only an aside that is mostly links (a "related
pages" box) is dropped, unless it says it is a note (`role="note"`). Headings inside an
aside title the note, not a part of the page, so they stay text.

Headings h1-h6 become sections; a heading nests under the last heading of a higher
level. Pages that write several levels with one tag (chapters and sections both `<h2>`,
told apart only by class) are nested by their classes: a heading class whose headings
are directly followed, with no text between, by a heading of the same tag and another
class, at least `CONTAINER_MIN` times, is a container of that class (a chapter heading
followed at once by its first section heading); the containers rank above what they
hold, in the order the page shows. Where that order contradicts itself, the headings
stay siblings. The title is the first `<h1>` when `<title>` contains it (a `<title>`
adds the site's name), else `<title>`, else the first `<h1>`. Section ids are
`<file>#<heading>` (" (2)" on a repeat), and a heading's element id, or that of the
`<section>`, `<div>`, `<article>` or `<header>` it opens, becomes the section's
`ANCHOR`, so a passage links to `page.html#id`. The title's own text (the text under
the title heading, and any before it) is the `<file>#<title>` section with an empty
path; text before a first heading that is not the title is `<file>#preamble`, as in
the PDF loader. Headings with no text under them are no section of their own; their
names stay in the paths of the sections they hold.

Text: each block (paragraph, list item, definition, quote, a div's own text) is a
paragraph; whitespace is folded, `<br>` is a line break, `<pre>` keeps its lines. List
markers are kept only as the page writes them in its text. A table becomes lines that
keep each cell with its headers (`table_text`), after its caption; colspan and rowspan
repeat a cell across the columns and rows it covers, except a body row that is one cell
across the whole table (a note), which stays one line; a body row of header cells
gives the rows below it new headers. Spans that would fill more than `MAX_TABLE_CELLS`
cells are not repeated. A table used for layout (`role="presentation"`, or one holding
headings or tables) is read as blocks.

What it refuses: a binary file, or one that is mostly not text in its encoding, is a
BLOCK finding; the encoding is a byte-order mark, else `<meta charset>`, else UTF-8. A
page with no text in its main content is a BLOCK, one with under `NAV_ONLY_CHARS`
characters outside links a REVIEW: it is likely an index or navigation page, not the
article a user meant to save. It runs no scripts and fetches nothing.
"""

from __future__ import annotations

import codecs
import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import lxml.html
from lxml import etree

from groundqa.loaders._common import BINARY_SNIFF_BYTES, block, doc_id_of, review, source_of
from groundqa.loaders._tables import table_text
from groundqa.models import ANCHOR, Document, Finding, Section

HTML_SUFFIXES = (".html", ".htm")
# A main content with less text than this outside links is an index or navigation page.
NAV_ONLY_CHARS = 200
# Undecodable bytes replaced with U+FFFD: more than this many is reported (a stray byte
# or two is not worth a finding); more than this share of the text is not text at all.
REPLACED_REVIEW = 10
REPLACED_BLOCK_SHARE = 0.2
# Times a heading class must directly precede another class's heading to be a container.
CONTAINER_MIN = 2
# An aside whose text is at least this share links is a link box, not content.
LINK_BOX_SHARE = 0.5
# HTML caps colspan at 1000. A table whose spans would fill more cells than
# MAX_TABLE_CELLS keeps each cell once instead: a few hundred bytes of spans would
# otherwise become megabytes of repeated text.
MAX_COLSPAN = 1000
MAX_TABLE_CELLS = 250_000
CHARSET_SNIFF_BYTES = 4096

HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_DROPPED = frozenset(
    {
        "head",
        "script",
        "style",
        "noscript",
        "template",
        "form",
        "button",
        "svg",
        "math",
        "iframe",
        "object",
        "embed",
        "canvas",
        "input",
        "select",
        "textarea",
        "dialog",
        "nav",
    }
)
_CHROME_ROLES = frozenset({"navigation", "banner", "contentinfo", "search"})
# A header or footer inside one of these belongs to it; outside, it is the site's.
_SCOPES = frozenset({"article", "aside", "main", "nav", "section"})
_ANCHOR_HOLDERS = frozenset({"section", "div", "article", "header"})
_BLOCKS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "center",
        "dd",
        "details",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "header",
        "hgroup",
        "hr",
        "html",
        "legend",
        "li",
        "main",
        "menu",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
        *HEADINGS,
    }
)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_META_CHARSET = re.compile(rb"<meta[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)
# Control characters that no XML text may hold: lxml parses them but refuses to write
# them back when an element is removed.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_XML_ENCODING = re.compile(rb"\s*<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9_.:-]+)")
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# What browsers read for these labels (the WHATWG encoding standard).
_LABEL_ALIASES = {
    "iso-8859-1": "cp1252",
    "latin-1": "cp1252",
    "latin1": "cp1252",
    "ascii": "cp1252",
    "us-ascii": "cp1252",
    "utf-16": "utf-8",
    "utf-16le": "utf-8",
    "utf-16be": "utf-8",
}


@dataclass(frozen=True)
class _Heading:
    level: int
    kind: str  # the heading's class attribute: its style on this page
    text: str
    anchor: str | None


@dataclass
class _Part:
    """A heading and the paragraphs up to the next one (the lead part has no heading)."""

    heading: _Heading | None
    paragraphs: list[str] = field(default_factory=list)


class _Unloadable(Exception):
    """The file is no HTML page that can be read; `finding` says why."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def load_html(path: Path, root: Path | None = None) -> tuple[list[Document], list[Finding]]:
    """One Document for the HTML page `path`, and the findings met on the way.

    Its id (and the file part of its section ids) is the path relative to `root`, the
    folder that was loaded; just the file name when `root` is None. A file that is not
    a readable page, or whose main content has no text, yields no Document and one
    BLOCK finding.
    """
    name = doc_id_of(path, root)
    try:
        text, findings = _decode(path)
        page = _parse(text, path)
    except _Unloadable as exc:
        return [], [exc.finding]
    page_title = _fold(page.findtext("head/title") or "")
    try:
        _drop_chrome(page, scoped=False)
        content = _main_content(page)
        problem = _navigation_only(content, path)
        if problem is not None:
            findings.append(problem)
            if problem.severity == "BLOCK":
                return [], findings
        reader = _Reader(content)
        reader.read(content)
        reader.flush()
    except RecursionError:
        # lxml stops nesting at 255 levels, well inside Python's stack; this is a guard.
        message = f"{path.name} nests its elements too deeply to read; save the page again"
        return [], [block("html-unreadable", message, path)]
    title, title_at = _title(page_title, reader.parts)
    document = Document(
        doc_id=name,
        title=title,
        source=source_of(path),
        format="html",
        sections=tuple(_sections(name, title, reader.parts, title_at)),
    )
    return [document], findings


# ------------------------------------------------------------------ bytes to a tree


def _decode(path: Path) -> tuple[str, list[Finding]]:
    """The page as text, and a REVIEW finding when many bytes had to be replaced."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise _Unloadable(
            block(
                "unreadable",
                f"cannot read {path.name} ({reason}); check the path and its permissions",
                path,
            )
        ) from None
    bom, encoding = next(((b, enc) for b, enc in _BOMS if data.startswith(b)), (b"", None))
    if encoding is not None:
        data = data[len(bom) :]
    elif b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise _Unloadable(
            block(
                "binary",
                f"{path.name} is not an HTML page (NUL bytes in its first 8 KiB); "
                "remove it from the corpus or save the page again as HTML",
                path,
            )
        )
    else:
        encoding = _declared_encoding(data[:CHARSET_SNIFF_BYTES]) or "utf-8"
    try:
        text, replaced = _decode_as(data, encoding)
    except (UnicodeError, LookupError):
        # A declared codec that is no text encoding (base64) or fails its own way (idna).
        encoding = "utf-8"
        text, replaced = _decode_as(data, encoding)
    if not replaced:
        return text, []
    advice = "re-save it as UTF-8 or declare its encoding with <meta charset>"
    if replaced > REPLACED_BLOCK_SHARE * max(len(text), 1):
        raise _Unloadable(
            block(
                "not-decodable",
                f"{path.name} is not an HTML page: {replaced:,} of its bytes are not "
                f"valid {encoding}; if it is a web page, {advice}",
                path,
            )
        )
    if replaced > REPLACED_REVIEW:
        return text, [
            review(
                "encoding",
                f"{replaced:,} bytes of {path.name} are not valid {encoding} and were "
                f"replaced with U+FFFD; {advice}",
                path,
            )
        ]
    return text, []


def _decode_as(data: bytes, encoding: str) -> tuple[str, int]:
    """The bytes decoded, and how many undecodable bytes became U+FFFD."""
    try:
        return data.decode(encoding), 0
    except UnicodeDecodeError:
        pass
    text = data.decode(encoding, errors="replace")
    return text, text.count("\ufffd") - data.decode(encoding, errors="ignore").count("\ufffd")


def _declared_encoding(head: bytes) -> str | None:
    """The codec a `<meta charset>` (or `http-equiv` content type, or an XHTML page's XML
    declaration) names, if Python has it."""
    match = _XML_ENCODING.match(head) or _META_CHARSET.search(head)
    if match is None:
        return None
    label = match.group(1).decode("ascii").lower()
    label = _LABEL_ALIASES.get(label, label)
    try:
        info = codecs.lookup(label)
    except LookupError:
        return None
    return info.name if getattr(info, "_is_text_encoding", True) else None


def _parse(text: str, path: Path) -> lxml.html.HtmlElement:
    # The text is handed over as UTF-8 bytes with the encoding named, so that a page's own
    # declaration (already applied above) cannot make lxml decode it a second time.
    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
    try:
        data = _CONTROL.sub(" ", text).encode("utf-8")
        return lxml.html.document_fromstring(data, parser=parser)
    except (etree.LxmlError, ValueError) as exc:
        reason = "it is empty" if "empty" in str(exc).lower() else "lxml cannot parse it"
        raise _Unloadable(
            block(
                "html-unreadable",
                f"{path.name} is not a readable HTML page ({reason}); save the page again",
                path,
            )
        ) from None


# ------------------------------------------------------------------ what a reader skips


def _tag(el: etree._Element) -> str:
    return el.tag.lower() if isinstance(el.tag, str) else ""


def _fold(text: str) -> str:
    return " ".join(text.split())


def _text_chars(el: etree._Element) -> int:
    return len(_fold(el.text_content()))


def _link_chars(el: etree._Element) -> int:
    return sum(_text_chars(a) for a in el.iter("a"))


def _hidden(el: etree._Element) -> bool:
    return (
        el.get("hidden") is not None
        or el.get("aria-hidden", "").strip().lower() == "true"
        or bool(_HIDDEN_STYLE.search(el.get("style", "")))
    )


def _is_chrome(el: etree._Element, tag: str, scoped: bool) -> bool:
    if tag in _DROPPED or _hidden(el):
        return True
    if el.get("role", "").strip().lower() in _CHROME_ROLES:
        return True
    if tag in ("header", "footer", "aside") and not scoped:
        return True
    if tag == "aside" and el.get("role", "").strip().lower() != "note":
        total = _text_chars(el)
        return total > 0 and _link_chars(el) >= LINK_BOX_SHARE * total
    return False


def _drop(el: etree._Element) -> None:
    """Remove `el`, keeping the text that follows it.

    lxml's own `drop_tree` refuses to write back text holding a control character,
    which a character reference (`&#xb;`) can put there, so the joined text is cleaned.
    """
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        before = el.getprevious()
        if before is None:
            parent.text = _CONTROL.sub(" ", (parent.text or "") + el.tail)
        else:
            before.tail = _CONTROL.sub(" ", (before.tail or "") + el.tail)
    parent.remove(el)


def _drop_chrome(el: etree._Element, scoped: bool) -> None:
    """Remove in place what is not the page's content (see the module docstring)."""
    for child in list(el):
        tag = _tag(child)
        if not tag:
            continue
        if _is_chrome(child, tag, scoped):
            _drop(child)
            continue
        inner = scoped or tag in _SCOPES or child.get("role", "").strip().lower() == "main"
        _drop_chrome(child, inner)


def _main_content(page: lxml.html.HtmlElement) -> etree._Element:
    for query in ("//main", "//*[@role='main']"):
        found = page.xpath(query)
        if found:
            return found[0]
    articles = page.xpath("//article")
    if articles:
        return max(articles, key=_text_chars)
    body = page.find("body")
    return body if body is not None else page


def _navigation_only(content: etree._Element, path: Path) -> Finding | None:
    total = _text_chars(content)
    if total == 0:
        return block(
            "html-no-content",
            f"{path.name} has no text in its main content (scripts may fill it in, or "
            "it is only navigation); save the article page as the browser shows it",
            path,
        )
    outside_links = total - _link_chars(content)
    if outside_links < NAV_ONLY_CHARS:
        return review(
            "html-navigation-only",
            f"{path.name} seems to hold only navigation ({max(outside_links, 0)} characters "
            "of text outside links); save the page of the article itself, not the index "
            "page that links to it",
            path,
            excerpt=_fold(content.text_content())[:200],
        )
    return None


# ------------------------------------------------------------------ blocks to paragraphs


def _flat_text(el: etree._Element) -> str:
    """The element's text on one line: blocks and line breaks become spaces."""
    pieces: list[str] = []

    def visit(node: etree._Element) -> None:
        tag = _tag(node)
        gap = tag in _BLOCKS or tag == "br"
        if gap:
            pieces.append(" ")
        pieces.append(node.text or "")
        for child in node:
            if _tag(child):
                visit(child)
            pieces.append(child.tail or "")
        if gap:
            pieces.append(" ")

    visit(el)
    return _fold("".join(pieces))


def _anchor(heading: etree._Element, content: etree._Element) -> str | None:
    """The element id a link to this heading's section can jump to, if any.

    The heading's own id, else an id (or old-style `<a name>`) inside it, else the id
    of a section, div, article or header that this heading opens (the first heading in
    it), nearest first.
    """
    if heading.get("id"):
        return str(heading.get("id"))
    for inner in heading.iterdescendants():
        named = inner.get("id") or (inner.get("name") if _tag(inner) == "a" else None)
        if named:
            return str(named)
    holder = heading.getparent()
    while holder is not None:
        if next(holder.iter(*HEADINGS), None) is not heading:
            return None  # the holder opens with an earlier heading: it is not this one's
        if _tag(holder) in _ANCHOR_HOLDERS and holder.get("id"):
            return str(holder.get("id"))
        if holder is content:
            return None
        holder = holder.getparent()
    return None


def _inline(text: str | None) -> str:
    """Source text as inline text: its line breaks are spaces (only `<br>` breaks a line)."""
    return (text or "").replace("\r", " ").replace("\n", " ")


def _pre_text(el: etree._Element) -> str:
    lines = [line.rstrip() for line in el.text_content().split("\n")]
    return "\n".join(line for line in lines if line.strip())


def _is_layout_table(table: etree._Element) -> bool:
    if table.get("role", "").strip().lower() in ("presentation", "none"):
        return True
    return any(_tag(el) in ("table", *HEADINGS) for el in table.iterdescendants())


class _Reader:
    """Walks the main content in order, gathering paragraphs under the last heading."""

    def __init__(self, content: etree._Element) -> None:
        self.content = content
        self.parts: list[_Part] = [_Part(heading=None)]
        self.line: list[str] = []

    def flush(self) -> None:
        """End the paragraph being gathered (inline text since the last block edge)."""
        lines = (_fold(line) for line in "".join(self.line).split("\n"))
        text = "\n".join(line for line in lines if line)
        self.line = []
        if text:
            self.parts[-1].paragraphs.append(text)

    def paragraph(self, text: str) -> None:
        self.flush()
        if text:
            self.parts[-1].paragraphs.append(text)

    def read(self, el: etree._Element, in_aside: bool = False) -> None:
        tag = _tag(el)
        if tag in HEADINGS and not in_aside:
            self.heading(el, tag)
        elif tag == "table" and not _is_layout_table(el):
            self.paragraph(_table(el))
        elif tag == "pre":
            self.paragraph(_pre_text(el))
        elif tag == "br":
            self.line.append("\n")
        else:
            self.children(el, tag, in_aside or tag == "aside")

    def children(self, el: etree._Element, tag: str, in_aside: bool) -> None:
        is_block = tag in _BLOCKS
        if is_block:
            self.flush()
        self.line.append(_inline(el.text))
        for child in el:
            if _tag(child):
                self.read(child, in_aside)
            self.line.append(_inline(child.tail))
        if is_block:
            self.flush()

    def heading(self, el: etree._Element, tag: str) -> None:
        self.flush()
        text = _flat_text(el)
        if not text:
            return
        kind = " ".join(sorted(el.get("class", "").split()))
        anchor = _anchor(el, self.content)
        self.parts.append(_Part(_Heading(int(tag[1]), kind, text, anchor)))


# ------------------------------------------------------------------ tables


def _span(value: str | None, default: int) -> int:
    try:
        return int((value or "").strip())
    except ValueError:
        return default


@dataclass(frozen=True)
class _Grid:
    """A table's cell texts, spans repeated, and what kind of row each row is."""

    rows: list[list[str]]
    notes: set[int]  # one cell across the whole table
    headers: set[int]  # every cell a <th>, at least two of them with text


def _table(table: etree._Element) -> str:
    """The table as `table_text` lines, after its caption."""
    rows = table.xpath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr")
    grid = _grid(rows)
    leading = 0
    for r, tr in enumerate(rows):
        if _tag(tr.getparent()) != "thead" and r not in grid.headers:
            break
        leading += 1
    caption = table.find("caption")
    lines = [_flat_text(caption)] if caption is not None else []
    lines.extend(_table_lines(grid, leading))
    return "\n".join(line for line in lines if line)


def _colspan(cell: etree._Element) -> int:
    return min(max(_span(cell.get("colspan"), 1), 1), MAX_COLSPAN)


def _grid(rows: Sequence[etree._Element], repeat: bool = True) -> _Grid:
    """The cells in rows and columns; spans repeated when `repeat`, and while the table
    stays within MAX_TABLE_CELLS cells."""
    grid: list[list[str]] = []
    cells_so_far = 0
    single: dict[int, int] = {}  # row -> columns its only cell covers
    headers: set[int] = set()
    below: dict[int, tuple[int, str]] = {}  # column -> (rows still covered, text)
    for r, tr in enumerate(rows):
        row: dict[int, str] = {}
        for col, (left, text) in list(below.items()):
            row[col] = text
            if left > 1:
                below[col] = (left - 1, text)
            else:
                del below[col]
        carried = bool(row)
        cells = tr.xpath("./th | ./td")
        texts = [_flat_text(cell) for cell in cells]
        col = 0
        for cell, text in zip(cells, texts, strict=True):
            while col in row:
                col += 1
            across, down = _colspan(cell), _span(cell.get("rowspan"), 1)
            down = len(rows) - r if down == 0 else min(max(down, 1), len(rows) - r)
            if not repeat:
                across = down = 1
            for c in range(col, col + across):
                row[c] = text
                if down > 1:
                    below[c] = (down - 1, text)
            col += across
            if repeat and cells_so_far + col > MAX_TABLE_CELLS:
                return _grid(rows, repeat=False)
        if len(cells) == 1 and not carried:
            single[r] = col
        if all(_tag(c) == "th" for c in cells) and sum(1 for t in texts if t) > 1:
            headers.add(r)
        width = max(row, default=-1) + 1
        cells_so_far += width
        if repeat and cells_so_far > MAX_TABLE_CELLS:
            return _grid(rows, repeat=False)
        grid.append([row.get(c, "") for c in range(width)])
    width = max((len(row) for row in grid), default=0)
    notes = {r for r, n in single.items() if width > 1 and n >= width}
    return _Grid(grid, notes, headers)


def _table_lines(grid: _Grid, leading: int) -> list[str]:
    """`table_text` of each run of body rows under the header rows above it.

    A row of header cells in the body starts new headers for the rows below it (a table
    that changes its columns' meaning halfway); a note row is a line of its own.
    """
    head = grid.rows[:leading]
    run: list[list[str]] = []
    out: list[str] = []
    head_used = False
    for r in range(leading, len(grid.rows)):
        row = grid.rows[r]
        if r in grid.notes or r in grid.headers:
            if run:
                out.append(table_text(head + run, header_rows=len(head)))
                run, head_used = [], True
            if r in grid.notes:
                out.append(row[0])
            elif head_used:
                head, head_used = [row], False
            else:
                head.append(row)  # a second header row under the first
        else:
            run.append(row)
    if run or not head_used:
        # A table of header rows only still says what it holds (table_text reads the last
        # one as a body row).
        out.append(table_text(head + run, header_rows=len(head)))
    return out


# ------------------------------------------------------------------ headings to sections


def _title(page_title: str, parts: Sequence[_Part]) -> tuple[str, int | None]:
    """(document title, index of the part whose h1 is that title, if one is)."""
    for i, part in enumerate(parts):
        h1 = part.heading
        if h1 is None or h1.level != 1:
            continue
        if not page_title or h1.text.casefold() in page_title.casefold():
            return h1.text, i
        break
    return page_title, None


def _container_ranks(headings: Iterable[tuple[_Part, _Part]]) -> dict[tuple[int, str], int]:
    """Rank of each (level, class) among the classes one heading tag is written with.

    From pairs of consecutive parts: a heading with no text before the next heading of
    the same tag but another class holds it (a chapter heading followed at once by its
    first section's). A class seen doing so `CONTAINER_MIN` times is a container, ranked
    above the classes it was seen holding; classes it never held rank with the deepest.
    """
    follows: Counter[tuple[int, str, str]] = Counter()
    held: Counter[tuple[int, str]] = Counter()
    kinds: dict[int, set[str]] = defaultdict(set)
    for before, after in headings:
        if before.heading is None or after.heading is None:
            continue
        level = before.heading.level
        kinds[level].add(before.heading.kind)
        kinds[after.heading.level].add(after.heading.kind)
        if before.paragraphs or after.heading.level != level:
            continue
        if before.heading.kind != after.heading.kind:
            follows[(level, before.heading.kind, after.heading.kind)] += 1
            held[(level, before.heading.kind)] += 1
    ranks: dict[tuple[int, str], int] = {}
    for level, level_kinds in kinds.items():
        edges = {
            (above, below)
            for (lvl, above, below), n in follows.items()
            if lvl == level
            and held[(level, above)] >= CONTAINER_MIN
            and n > follows[(level, below, above)]
        }
        depths = _depths(edges)
        if not depths:
            continue
        deepest = max(depths.values())
        for kind in level_kinds:
            ranks[(level, kind)] = depths.get(kind, deepest)
    return ranks


def _depths(edges: set[tuple[str, str]]) -> dict[str, int]:
    """Longest-path depth of each node of a graph of (above, below) edges; {} on a cycle."""
    nodes = {n for edge in edges for n in edge}
    incoming = Counter(below for _, below in edges)
    depth = {n: 0 for n in nodes}
    ready = [n for n in nodes if incoming[n] == 0]
    done = 0
    while ready:
        node = ready.pop()
        done += 1
        for above, below in edges:
            if above == node:
                depth[below] = max(depth[below], depth[node] + 1)
                incoming[below] -= 1
                if incoming[below] == 0:
                    ready.append(below)
    return depth if done == len(nodes) else {}


def _sections(name: str, title: str, parts: list[_Part], title_at: int | None) -> list[Section]:
    if title_at == 1:
        # The text before the title heading opens the title's own section.
        parts[1].paragraphs[:0] = parts[0].paragraphs
        parts = parts[1:]
        title_at = 0
    ranked = [p for i, p in enumerate(parts) if i != title_at]
    ranks = _container_ranks(itertools.pairwise(ranked))
    stack: list[tuple[tuple[int, int], str]] = []
    seen: Counter[str] = Counter()
    sections: list[Section] = []
    for i, part in enumerate(parts):
        heading = part.heading
        path: tuple[str, ...] = ()
        if heading is None and len(parts) > 1:
            label = ""  # text before the first heading: the preamble
        elif heading is None or i == title_at:
            stack.clear()
            label = title
        else:
            key = (heading.level, ranks.get((heading.level, heading.kind), 0))
            while stack and stack[-1][0] >= key:
                stack.pop()
            stack.append((key, heading.text))
            label, path = heading.text, tuple(text for _, text in stack)
        body = "\n\n".join(part.paragraphs)
        if not body:
            continue  # a heading with nothing under it answers nothing; its name is in paths
        seen[label or "preamble"] += 1
        count = seen[label or "preamble"]
        suffix = f" ({count})" if count > 1 else ""
        anchor = heading.anchor if heading is not None else None
        sections.append(
            Section(
                section_id=f"{name}#{label or 'preamble'}{suffix}",
                heading=label,
                text=body,
                path=path,
                metadata={ANCHOR: anchor} if anchor else {},
            )
        )
    return sections
