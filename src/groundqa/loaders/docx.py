"""Load a Word (.docx) file as one Document: headings become sections, tables stay tables.

python-docx reads the file. The body is walked in document order, paragraphs and tables
interleaved, with content controls opened (the text typed into a form's fields lives in
them, and python-docx's own iteration skips them). Tracked insertions are read and
deletions are not, as Word shows the text with changes accepted. Empty paragraphs and a
table of contents (its TOC styles repeat the headings with page numbers) are dropped;
line breaks and tabs inside a paragraph become spaces.

Headings: a paragraph is a heading when it sets an outline level (`w:outlineLvl`, what
Word's navigation pane reads; level 9 is body text), or its style is Heading 1-9 or is
based on one (or itself sets an outline level). Its level gives the section path. The
title is the core properties' title, else the first Title paragraph, else the first
Heading 1, else the file stem. A Title paragraph is never a section, nor is a Heading 1
that is the document's only one and gave the title: it is the document.

A document with no heading styles at all (forms, letters) is read by what a reader sees
instead. A short paragraph set apart (all bold, or larger than the body text) is a
heading, and the one opening the document is its title line; the title row of a table
(one cell across the whole width, above rows with text) heads a section holding the
rest of that table, one level below the heading before it. A trailing note in brackets
("(please tick as appropriate)") is moved from such a heading into its section's text.

Automatic list numbers are put into the text as Word shows them ("2.1 Scope", "(a) the
owner"), so a numbered clause reads as it does on screen and the clause reference of a
citation can be read from it. A numbered heading's number, typed or automatic, is also
its section's `clause` metadata ("2.1"; "Pt 2" for "Part 2 ...").

A table with a header row becomes text through `table_text`, one line per row naming
each cell by its column header; merged cells repeat their text in each column they span.
The header rows are those marked to repeat on every page (`w:tblHeader`), else the first
row when it reads like labels (short, no bare numbers, nothing empty after the corner)
and is not a form's first question: where a table sets text in bold, a header is bold
over body cells that are not; where it sets none, a two-column table has no header. A
table without a header, a form's above all, is read row by row as "Label: answer": the
answer bound to its label is what retrieval has to match and what a quote has to show,
and a label's row of tick options reads "Is the site available? Yes; No." Its labels are
the cells whose text opens in bold (or a row's first cell ending in ":" or "?"), or, in
a table without bold, each row's first cell; a cell merged across columns appears once
in such a line.

What it refuses to do: it reads no images, text boxes, headers, footers, footnotes or
comments, and no author or editor names (core properties other than the title are not
kept). It does not even unpack them: python-docx would load every part of the package
into memory, so it is handed a package of only the parts read here (the document, its
styles and numbering, the core properties), each inflated through `_zip.GuardedZip`
within `ZIP_LIMITS`. It never raises on a bad file: a file that is not a zip, a zip that
is not a Word document, a password-protected file, an old binary .doc saved under a
.docx name and a zip bomb (a part past its limit, or a file that says it unpacks to more
than `DECLARED_LIMIT`) are each one BLOCK finding saying what the file is and what to do.
"""

from __future__ import annotations

import functools
import io
import re
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundqa.loaders._blocks import Block, build_sections, numbered_heading
from groundqa.loaders._common import block, doc_id_of, source_of
from groundqa.loaders._tables import table_text
from groundqa.loaders._zip import GuardedZip, ZipRefused
from groundqa.loaders.docx_package import (
    DOCUMENT_PART_BYTES,
    OTHER_PART_BYTES,
    ZIP_LIMITS,
    bomb_finding,
    sniff,
)
from groundqa.models import Document, Finding

if TYPE_CHECKING:
    from docx.document import Document as WordDocument
    from docx.styles.style import CharacterStyle
    from docx.table import _Cell
    from docx.text.paragraph import Paragraph
    from docx.text.run import Run

DOCX_SUFFIXES = (".docx",)
HEADING_MAX_CHARS = 100
HEADING_MAX_WORDS = 15
LABEL_MAX_CHARS = 60
# Word counts list levels 0-8.
LIST_LEVELS = 9

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_P, _TBL, _R = f"{_W}p", f"{_W}tbl", f"{_W}r"
_SDT, _SDT_CONTENT, _CUSTOM_XML = f"{_W}sdt", f"{_W}sdtContent", f"{_W}customXml"
# Elements inside a paragraph whose runs are part of its text; deleted text (w:del,
# w:moveFrom) and field instructions are not.
_INLINE = frozenset(
    f"{_W}{tag}"
    for tag in (
        "hyperlink",
        "ins",
        "moveTo",
        "smartTag",
        "fldSimple",
        "sdt",
        "sdtContent",
        "customXml",
        "dir",
        "bdo",
    )
)
_HEADING_STYLE = re.compile(r"^heading ([1-9])$", re.IGNORECASE)
_FILE_NAME = re.compile(r"\.(?:docx?|dotx?|odt|rtf|pdf)$", re.IGNORECASE)
_NOT_A_HEADING_END = (".", ",", ";", ":", "?", "!")
# A title row's trailing instruction, "(please tick as appropriate)": two words or more,
# so that a unit such as "(ha)" stays in the heading.
_TRAILING_NOTE = re.compile(r"^(?P<head>.*\S)\s+(?P<note>\((?:[^()\s]+\s+)+[^()]*\))$")
_OFF = ("0", "false", "off")
_DIGITS_ONLY = re.compile(r"^[\d\s.,%£$€()+-]+$")


def load_docx(path: Path, root: Path | None = None) -> tuple[list[Document], list[Finding]]:
    """One Document for the Word file `path`, or one BLOCK finding saying why not.

    Its id (and the file part of its section ids) is the path relative to `root`, the
    folder that was loaded; just the file name when `root` is None.
    """
    name = doc_id_of(path, root)
    problem = sniff(path)
    if problem is not None:
        return [], [problem]
    try:
        title, blocks = _read(path)
    except ZipRefused as exc:
        return [], [bomb_finding(path, f"its part {exc.member} {exc.reason}")]
    except Exception as exc:  # python-docx and lxml raise many kinds on a broken part
        reason = " ".join(str(exc).split())[:100] or exc.__class__.__name__
        return [], [
            block(
                "docx-unreadable",
                f"{path.name} cannot be read as a Word document ({reason}); "
                "open it in Word and save it again as .docx",
                path,
            )
        ]
    document = Document(
        doc_id=name,
        title=title,
        source=source_of(path),
        format="docx",
        sections=tuple(build_sections(name, title, blocks)),
    )
    return [document], []


# --- reading ----------------------------------------------------------------------


@dataclass
class _Para:
    """A body paragraph: its text as shown (list number included) and what it may head."""

    text: str
    level: int | None  # outline level 1-9 from its style or properties; None for body text
    title: bool  # set in the Title style
    visual: bool  # short and set apart (all bold or larger than body text)


@dataclass
class _CellText:
    text: str
    bold: bool  # its text opens in bold
    element: Any  # the w:tc, to tell a merged cell met again from a new one


@dataclass
class _Table:
    caption: _CellText | None  # a full-width first row above rows with text
    rows: list[list[_CellText | None]] = field(default_factory=list)
    header_rows: int = 0  # leading rows marked to repeat as a header (w:tblHeader)

    @property
    def title(self) -> str:
        return self.caption.text if self.caption is not None else ""


def _read(path: Path) -> tuple[str, list[Block]]:
    """(title, headings and paragraphs in document order) of the Word file `path`."""
    import docx

    document = docx.Document(_word_package(path))
    reader = _Reader(document)
    items = [reader.item(element) for element in _block_elements(document.element.body)]
    return _assemble([i for i in items if i is not None], _core_title(document), path.stem)


def _word_package(path: Path) -> io.BytesIO:
    """The parts of the Word file `path` that this loader reads, as a package of its own.

    python-docx loads every part the relationships reach (pictures, fonts, headers,
    embedded files) whole into memory, so it is given a copy holding only the main
    document, its styles and numbering and the core properties, each read through the
    guard. The relationships to the other parts are dropped; the document's links to
    the web are kept (they name no part). Raises ZipRefused for a part past a limit.
    """
    from docx.opc.constants import RELATIONSHIP_TYPE as RT

    out = io.BytesIO()
    with (
        GuardedZip(path, ZIP_LIMITS) as archive,
        zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as package,
    ):
        copy = _Copier(archive, package)
        copy.part(_CONTENT_TYPES, OTHER_PART_BYTES)
        for reltype, part in copy.relationships("/", {RT.OFFICE_DOCUMENT, RT.CORE_PROPERTIES}):
            if reltype != RT.OFFICE_DOCUMENT:
                copy.part(part, OTHER_PART_BYTES)
                continue
            copy.part(part, DOCUMENT_PART_BYTES)
            for _, inner in copy.relationships(part, {RT.STYLES, RT.NUMBERING}, external=True):
                copy.part(inner, OTHER_PART_BYTES)
    out.seek(0)
    return out


_CONTENT_TYPES = "/[Content_Types].xml"


class _Copier:
    """Copies parts and filtered relationships from a guarded archive into a new package."""

    def __init__(self, archive: GuardedZip, package: zipfile.ZipFile) -> None:
        self.archive = archive
        self.package = package
        self.written: set[str] = set()

    def part(self, partname: str, limit: int) -> None:
        """Copy the part `partname` within `limit` bytes, once; a part that is not there
        is left out, for python-docx to report as it would have."""
        name = partname.lstrip("/")
        if name in self.written or not self.archive.has(name):
            return
        self.written.add(name)
        self.package.writestr(name, self.archive.read(name, limit))

    def relationships(
        self, partname: str, wanted: set[str], external: bool = False
    ) -> list[tuple[str, str]]:
        """Copy the relationships of `partname` ("/" for the package) of the `wanted` types
        (and those to the web, with `external`); return (type, part name) for each part
        they name."""
        from docx.opc.packuri import PackURI
        from lxml import etree

        source = PackURI(partname)
        name = source.rels_uri.membername
        if name in self.written or not self.archive.has(name):
            return []
        self.written.add(name)
        # python-docx's own parser settings: no entities expanded; and no network.
        parser = etree.XMLParser(remove_blank_text=True, resolve_entities=False, no_network=True)
        rels = etree.fromstring(self.archive.read(name, OTHER_PART_BYTES), parser)
        targets: list[tuple[str, str]] = []
        for rel in list(rels):
            if rel.get("TargetMode") == "External":
                if not external:
                    rels.remove(rel)
            elif rel.get("Type") in wanted:
                target = PackURI.from_rel_ref(source.baseURI, rel.get("Target", ""))
                targets.append((rel.get("Type", ""), str(target)))
            else:
                rels.remove(rel)
        self.package.writestr(name, etree.tostring(rels, xml_declaration=True, encoding="UTF-8"))
        return targets


def _block_elements(parent: Any) -> Iterator[Any]:
    """The paragraphs and tables in `parent`, in order, content controls opened."""
    for child in parent:
        if child.tag in (_P, _TBL):
            yield child
        elif child.tag == _SDT:
            content = child.find(_SDT_CONTENT)
            if content is not None:
                yield from _block_elements(content)
        elif child.tag == _CUSTOM_XML:
            yield from _block_elements(child)


def _run_elements(parent: Any) -> Iterator[Any]:
    """The runs of a paragraph, in order, including those in links, insertions and
    content controls (python-docx's `Paragraph.text` reads only direct runs and links)."""
    for child in parent:
        if child.tag == _R:
            yield child
        elif child.tag in _INLINE:
            yield from _run_elements(child)


@functools.cache  # a few paths, asked for millions of times in a long document
def _steps(path: str) -> str:
    return "/".join(f"{_W}{step}" for step in path.split("/"))


def _children(element: Any, path: str) -> list[Any]:
    """The elements at `path` ("trPr/tblHeader") below `element`, in the `w:` namespace.

    ElementPath, not python-docx's `xpath`: it works on every element of the package,
    including those python-docx does not model (numbering definitions).
    """
    return list(element.findall(_steps(path)))


def _val(element: Any, path: str) -> str | None:
    """The `w:val` of the first element at `path` below `element`, or None."""
    found = element.find(_steps(path))
    return found.get(f"{_W}val") if found is not None else None


def _clean(text: str) -> str:
    return " ".join(text.split())


def _core_title(document: WordDocument) -> str:
    """The title the file's properties give, unless it is missing or a file name."""
    from docx.opc.constants import RELATIONSHIP_TYPE

    try:
        # python-docx invents a title ("Word Document") for a file without properties.
        document.part.package.part_related_by(RELATIONSHIP_TYPE.CORE_PROPERTIES)
    except (KeyError, ValueError):
        return ""
    title = _clean(document.core_properties.title or "")
    return "" if _FILE_NAME.search(title) else title


def _style_chain(style: CharacterStyle | None) -> Iterator[CharacterStyle]:
    """`style` and the styles it is based on, nearest first (a cycle is cut)."""
    seen: set[str] = set()
    while style is not None and style.style_id not in seen and len(seen) < 20:
        seen.add(style.style_id)
        yield style
        style = style.base_style


def _inherited(style: CharacterStyle | None, get: Callable[[Any], Any]) -> Any:
    """The first value `get` finds along the style chain, or None."""
    for s in _style_chain(style):
        value = get(s)
        if value is not None:
            return value
    return None


def _outline_value(element: Any) -> int | None:
    """`w:outlineLvl` in an element's paragraph properties (python-docx does not read it)."""
    value = _val(element, "pPr/outlineLvl")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class _Styles:
    """Styles and the values they pass on, looked up once per style id.

    python-docx finds a style by scanning styles.xml on every lookup; asked for each
    paragraph and run, that was most of the time a form took to load.
    """

    def __init__(self, document: WordDocument) -> None:
        self.document = document
        self.found: dict[tuple[str, str | None], CharacterStyle | None] = {}
        self.values: dict[tuple[str | None, str], Any] = {}

    def named(self, name: str) -> CharacterStyle | None:
        from docx.styles.style import CharacterStyle

        try:
            style = self.document.styles[name]
        except KeyError:
            return None
        return style if isinstance(style, CharacterStyle) else None

    def of_paragraph(self, paragraph: Paragraph) -> CharacterStyle | None:
        key = ("p", _val(paragraph._p, "pPr/pStyle"))  # python-docx reads the id there too
        if key not in self.found:
            self.found[key] = paragraph.style
        return self.found[key]

    def of_run(self, run: Run) -> CharacterStyle | None:
        key = ("r", _val(run._r, "rPr/rStyle"))
        if key not in self.found:
            self.found[key] = run.style
        return self.found[key]

    def font(self, style: CharacterStyle | None, name: str) -> Any:
        """The font's `name` ("bold", "size") that `style` sets or inherits, or None."""
        key = (style.style_id if style is not None else None, name)
        if key not in self.values:
            self.values[key] = _inherited(style, lambda s: getattr(s.font, name))
        return self.values[key]

    def outline(self, style: CharacterStyle | None) -> tuple[int | None, bool]:
        """(heading level 1-9 or None, whether it is Title) that `style` gives."""
        key = (style.style_id if style is not None else None, "outline")
        if key not in self.values:
            self.values[key] = _style_outline(style)
        result: tuple[int | None, bool] = self.values[key]
        return result


def _style_outline(style: CharacterStyle | None) -> tuple[int | None, bool]:
    for s in _style_chain(style):
        name = s.name or ""
        if name.lower() == "title":
            return None, True
        heading = _HEADING_STYLE.match(name)
        if heading:
            return int(heading.group(1)), False
        value = _outline_value(s.element)
        if value is not None:
            return (value + 1 if 0 <= value < LIST_LEVELS else None), False
    return None, False


class _Reader:
    """Turns body elements into paragraphs and tables, counting list numbers on the way."""

    def __init__(self, document: WordDocument) -> None:
        from docx.shared import Pt

        self.document = document
        self.styles = _Styles(document)
        self.numbers = _ListNumbers(document)
        self.cells: dict[Any, _CellText] = {}
        normal = self.styles.font(self.styles.named("Normal"), "size")
        default = _val(document.styles.element, "docDefaults/rPrDefault/rPr/sz")
        half_points = int(default) if default and default.isdigit() else 20
        self.body_size: int = int(normal) if normal is not None else int(Pt(half_points / 2))

    def item(self, element: Any) -> _Para | _Table | None:
        if element.tag == _TBL:
            return self.table(element)
        return self.paragraph(element)

    def _read(self, element: Any) -> tuple[CharacterStyle | None, str, list[Run]]:
        """(style, text as shown with its list number, the runs with text) of the paragraph
        `element`. Each run's text is read once: python-docx finds it by XPath each time."""
        from docx.text.paragraph import Paragraph
        from docx.text.run import Run

        paragraph = Paragraph(element, self.document)
        style = self.styles.of_paragraph(paragraph)
        number = self.numbers.next(element, style)
        runs = [Run(r, paragraph) for r in _run_elements(element)]
        texts = [r.text for r in runs]
        text = _clean("".join(texts))
        shown = [r for r, t in zip(runs, texts, strict=True) if t.strip()]
        return style, (f"{number} {text}" if number and text else text), shown

    def paragraph(self, element: Any) -> _Para | None:
        style, shown, runs = self._read(element)
        if style is not None and style.name and style.name.lower().startswith("toc "):
            return None  # a table of contents repeats the headings with page numbers
        if not shown:
            return None
        own = _outline_value(element)
        if own is not None:
            level, title = (own + 1 if 0 <= own < LIST_LEVELS else None), False
        else:
            level, title = self.styles.outline(style)
        visual = (
            len(shown) <= HEADING_MAX_CHARS
            and len(shown.split()) <= HEADING_MAX_WORDS
            and not shown.endswith(_NOT_A_HEADING_END)
            and self._set_apart(style, runs)
        )
        return _Para(shown, level, title, visual)

    def _set_apart(self, style: CharacterStyle | None, shown: Sequence[Run]) -> bool:
        """Whether every run with text is bold, or every one is larger than body text."""
        return bool(shown) and (
            all(self._bold(style, r) for r in shown)
            or all(self._size(style, r) > self.body_size for r in shown)
        )

    def _bold(self, style: CharacterStyle | None, run: Run) -> bool:
        if run.bold is not None:
            return bool(run.bold)
        value = self.styles.font(self.styles.of_run(run), "bold")
        if value is None:
            value = self.styles.font(style, "bold")
        return bool(value)

    def _size(self, style: CharacterStyle | None, run: Run) -> int:
        size = run.font.size
        if size is None:
            size = self.styles.font(self.styles.of_run(run), "size")
        if size is None:
            size = self.styles.font(style, "size")
        return int(size) if size is not None else self.body_size

    # --- tables ---

    def table(self, element: Any) -> _Table:
        from docx.table import Table

        table = Table(element, self.document)
        trs = _children(element, "tr")
        rows: list[list[_CellText | None]] = []
        header_rows = 0
        for tr, row in zip(trs, table.rows, strict=True):
            cells: list[_CellText | None] = [None] * row.grid_cols_before
            cells += [self.cell(c) for c in row.cells]
            cells += [None] * row.grid_cols_after
            rows.append(cells)
            flags = _children(tr, "trPr/tblHeader")
            is_header = bool(flags) and flags[0].get(f"{_W}val", "1").lower() not in _OFF
            if is_header and header_rows == len(rows) - 1:
                header_rows += 1
        caption = None
        if len(rows) > 1 and _spans_row(rows[0]) and any(_row_texts(r) for r in rows[1:]):
            caption = rows[0][0]
            rows = rows[1:]
            header_rows = max(0, header_rows - 1)
        return _Table(caption, rows, header_rows)

    def cell(self, cell: _Cell) -> _CellText:
        """A cell's text (paragraphs and nested tables) and whether it opens in bold (a
        label with a plain note after it, "Flooding (eg ...)", is still a label); read
        once per merged cell, so list numbers are counted once."""
        element = cell._tc  # the w:tc: python-docx has no public handle for a cell's XML
        known = self.cells.get(element)
        if known is not None:
            return known
        parts: list[str] = []
        bold: bool | None = None
        for child in _block_elements(element):
            if child.tag == _TBL:
                parts.append(" ".join(_table_block(self.table(child)).split("\n")))
                continue
            style, shown, runs = self._read(child)
            if shown:
                parts.append(shown)
                if bold is None:
                    bold = self._bold(style, runs[0])
        self.cells[element] = _CellText(" ".join(parts), bool(bold), element)
        return self.cells[element]


def _row_texts(row: Sequence[_CellText | None]) -> list[str]:
    return [c.text for c in row if c is not None and c.text]


def _spans_row(row: Sequence[_CellText | None]) -> bool:
    """Whether a row is one cell across the table's whole width, with text."""
    first = row[0] if row else None
    return (
        first is not None
        and bool(first.text)
        and len(row) > 1
        and all(c is not None and c.element is first.element for c in row)
    )


def _matrix(rows: Sequence[Sequence[_CellText | None]]) -> list[list[str]]:
    return [[c.text if c is not None else "" for c in row] for row in rows]


def _looks_like_labels(row: Sequence[_CellText | None]) -> bool:
    """A first row that names columns: every cell after the corner has short text, and
    none is a bare number."""
    cells = [c.text if c is not None else "" for c in row]
    rest = cells[1:] if len(cells) > 1 else cells
    return (
        len(set(cells)) > 1
        and all(rest)
        and all(len(c) <= LABEL_MAX_CHARS and not _DIGITS_ONLY.match(c) for c in cells if c)
    )


def _has_header(rows: Sequence[Sequence[_CellText | None]]) -> bool:
    """Whether the first row names the columns of the rows below it (no row is marked).

    It must read like labels. In a table that sets text in bold, it must be all bold
    while no cell below it beyond the first column is: a form that sets its labels in
    bold starts with a label and its answer, not with a header. In a table without bold,
    a first row of labels is a header unless the table has two columns, which is read
    as labels and answers.
    """
    rows = [r for r in rows if _row_texts(r)]
    if len(rows) < 2 or not _looks_like_labels(rows[0]):
        return False
    cells = [c for r in rows for c in r if c is not None and c.text]
    if any(c.bold for c in cells):
        later = [c for r in rows[1:] for c in r[1:] if c is not None and c.text]
        return all(c is None or c.bold for c in rows[0]) and not any(c.bold for c in later)
    return max(len(r) for r in rows) > 2


def _form_line(row: Sequence[_CellText | None], bold_labels: bool) -> str:
    """A row of a table without a header as "Label: answer; Label: answer."

    Where the table sets its labels in bold, a bold cell starts a label, and so does a
    row's first cell ending in ":" or "?"; a row without one is a row of options ("Yes;
    No."). Where it does not, a row's first cell is its label. A cell merged across
    columns counts once.
    """
    groups: list[tuple[str, list[str]]] = []
    previous: Any = None
    for cell in row:
        if cell is None or cell.element is previous:
            continue
        previous = cell.element
        if not cell.text:
            continue
        first = not groups
        asks = first and cell.text.endswith((":", "?"))
        if (cell.bold or asks) if bold_labels else first:
            groups.append((cell.text, []))
        elif first:
            groups.append(("", [cell.text.rstrip(": ")]))
        else:
            groups[-1][1].append(cell.text.rstrip(": "))
    parts = []
    for label, values in groups:
        if not label:
            parts.append("; ".join(values))
        elif not values:
            parts.append(label.rstrip(": ") if label.endswith(":") else label)
        elif label.endswith("?"):
            parts.append(f"{label} {'; '.join(values)}")
        else:
            parts.append(f"{label.rstrip(': ')}: {'; '.join(values)}")
    line = "; ".join(parts)
    return line if not line or line.endswith((".", "?", "!")) else f"{line}."


def _table_lines(table: _Table) -> str:
    """The table's rows as text (its title row is the caller's): by column header when it
    has a header row, else row by row as labels and answers."""
    header_rows = table.header_rows or (1 if _has_header(table.rows) else 0)
    if header_rows:
        return table_text(_matrix(table.rows), header_rows=header_rows)
    cells = [c for r in table.rows for c in r if c is not None]
    bold = any(c.bold for c in [*cells, *filter(None, [table.caption])])
    return "\n".join(filter(None, (_form_line(r, bold) for r in table.rows)))


def _split_caption(caption: str) -> tuple[str, str]:
    """("6. Site Accessibility", "(please provide ...)") from a title row with a note."""
    match = _TRAILING_NOTE.match(caption)
    return (match["head"], match["note"]) if match else (caption, "")


def _assemble(
    items: Sequence[_Para | _Table], core_title: str, stem: str
) -> tuple[str, list[Block]]:
    """(title, blocks): headings placed by style, or by what a reader sees when the
    document has no heading styles (see the module docstring)."""
    if any(isinstance(i, _Para) and (i.level is not None or i.title) for i in items):
        return _by_styles(items, core_title, stem)
    return _by_looks(items, core_title, stem)


def _by_styles(
    items: Sequence[_Para | _Table], core_title: str, stem: str
) -> tuple[str, list[Block]]:
    paragraphs = [i for i in items if isinstance(i, _Para)]
    title_line = next((p for p in paragraphs if p.title), None)
    top = [p for p in paragraphs if p.level == 1]
    title = core_title or (title_line.text if title_line else "") or (top[0].text if top else "")
    # A sole Heading 1 that names the document is the document, not a section of it.
    document_heading = (
        top[0] if title_line is None and len(top) == 1 and top[0].text == title else None
    )
    blocks: list[Block] = []
    for item in items:
        if isinstance(item, _Table):
            blocks.append(_table_block(item))
        elif item is document_heading:
            continue
        elif item.title:
            if item is not title_line or item.text != title:
                blocks.append(item.text)
        elif item.level is not None:
            blocks.append(numbered_heading(item.text, item.level))
        else:
            blocks.append(item.text)
    return title or stem, blocks


def _by_looks(
    items: Sequence[_Para | _Table], core_title: str, stem: str
) -> tuple[str, list[Block]]:
    opening = items[0] if items and isinstance(items[0], _Para) and items[0].visual else None
    title = core_title or (opening.text if opening is not None else "")
    blocks: list[Block] = []
    level = 0  # the level of the last paragraph heading; table titles sit one below
    for item in items:
        if item is opening:
            if item.text != title:
                blocks.append(item.text)
        elif isinstance(item, _Para):
            if item.visual:
                level = 1
                blocks.append(numbered_heading(item.text, level))
            else:
                blocks.append(item.text)
        elif item.title:
            head, note = _split_caption(item.title)
            if len(head) <= HEADING_MAX_CHARS and not head.endswith(_NOT_A_HEADING_END):
                blocks.append(numbered_heading(head, level + 1))
                blocks.append("\n".join(filter(None, (note, _table_lines(item)))))
            else:
                blocks.append(_table_block(item))
        else:
            blocks.append(_table_block(item))
    return title or stem, blocks


def _table_block(table: _Table) -> str:
    return "\n".join(filter(None, (table.title, _table_lines(table))))


# --- list numbers -----------------------------------------------------------------


class _ListNumbers:
    """Word's automatic list numbers ("2.1.", "(a)"), counted as Word counts them.

    python-docx exposes a paragraph's numbering properties but not the number Word shows,
    so this reads numbering.xml itself: a paragraph names a list (`numId`) and a level
    (`ilvl`), in its own properties or its style's; the list points to a definition
    (`abstractNum`) that gives each level's start, format and pattern ("%1.%2.").
    Lists sharing a definition count on together unless one restarts a level
    (`startOverride`); a level restarts after any level above it. Not read: a list's
    redefinition of a level's format, `lvlRestart`, legal numbering and lists linked
    through a numbering style; a bullet or an unknown format adds no number. A style
    numbered without a level takes the level linked to it (`w:pStyle`), as heading
    styles in a multilevel list are.
    """

    def __init__(self, document: WordDocument) -> None:
        from docx.opc.constants import RELATIONSHIP_TYPE
        from docx.opc.part import XmlPart

        # (definition id, level) -> (start, format, pattern)
        self.levels: dict[tuple[str, int], tuple[int, str, str]] = {}
        # (definition id, paragraph style id) -> the level that style is linked to
        self.style_levels: dict[tuple[str, str], int] = {}
        self.definition: dict[str, str] = {}  # list id -> definition id
        self.restarts: dict[str, dict[int, int]] = {}  # list id -> {level: start}
        self.counts: dict[str, list[int | None]] = {}
        self.started: set[str] = set()
        self.by_style: dict[str | None, tuple[str, int | None] | None] = {}
        try:
            part = document.part.part_related_by(RELATIONSHIP_TYPE.NUMBERING)
        except (KeyError, ValueError):
            return
        if not isinstance(part, XmlPart):
            return
        root = part.element
        for abstract in _children(root, "abstractNum"):
            definition = abstract.get(f"{_W}abstractNumId", "")
            for lvl in _children(abstract, "lvl"):
                level = _int(lvl.get(f"{_W}ilvl"), 0)
                start = _int(_val(lvl, "start"), 1)
                fmt = _val(lvl, "numFmt") or "decimal"
                pattern = _val(lvl, "lvlText") or ""
                self.levels[(definition, level)] = (start, fmt, pattern)
                linked = _val(lvl, "pStyle")
                if linked:
                    self.style_levels[(definition, linked)] = level
        for num in _children(root, "num"):
            list_id = num.get(f"{_W}numId", "")
            self.definition[list_id] = _val(num, "abstractNumId") or ""
            for override in _children(num, "lvlOverride"):
                if override.find(_steps("startOverride")) is None:
                    continue
                level = _int(override.get(f"{_W}ilvl"), 0)
                start = _int(_val(override, "startOverride"), 1)
                self.restarts.setdefault(list_id, {})[level] = start

    def next(self, element: Any, style: CharacterStyle | None) -> str | None:
        """The number the paragraph `element` shows, counted; None when it shows none."""
        if not self.levels:
            return None
        found = _numbering(element)
        if found is None:
            found = self._style_numbering(style)
        if found is None:
            return None
        list_id, level = found
        definition = self.definition.get(list_id)
        if definition is None:
            return None
        if level is None:
            # A heading style numbered without a level: the level that names the style.
            style_id = style.style_id if style is not None else ""
            level = self.style_levels.get((definition, style_id), 0)
        if (definition, level) not in self.levels:
            return None
        counts = self.counts.setdefault(definition, [None] * LIST_LEVELS)
        if list_id not in self.started:
            self.started.add(list_id)
            for restarted, start in self.restarts.get(list_id, {}).items():
                if 0 <= restarted < LIST_LEVELS:
                    counts[restarted] = start - 1
        start, fmt, pattern = self.levels[(definition, level)]
        current = counts[level]
        counts[level] = start if current is None else current + 1
        for deeper in range(level + 1, LIST_LEVELS):
            counts[deeper] = None
        if fmt in ("bullet", "none"):
            return None
        shown = re.sub(
            r"%([1-9])", lambda m: self._shown(definition, int(m[1]) - 1, counts), pattern
        )
        return _clean(shown) or None

    def _style_numbering(self, style: CharacterStyle | None) -> tuple[str, int | None] | None:
        """The numbering `style` or a style it is based on gives, looked up once."""
        key = style.style_id if style is not None else None
        if key not in self.by_style:
            found = None
            for s in _style_chain(style):
                found = _numbering(s.element)
                if found is not None:
                    break
            self.by_style[key] = found
        return self.by_style[key]

    def _shown(self, definition: str, level: int, counts: Sequence[int | None]) -> str:
        start, fmt, _ = self.levels.get((definition, level), (1, "decimal", ""))
        value = counts[level]
        return _format_number(start if value is None else value, fmt)


def _numbering(element: Any) -> tuple[str, int | None] | None:
    """(list id, level or None when not given) from an element's `w:numPr`; None without
    one or for list id 0."""
    list_id = _val(element, "pPr/numPr/numId")
    if list_id is None or list_id == "0":
        return None  # no numbering, or numbering switched off for this paragraph
    level = _val(element, "pPr/numPr/ilvl")
    return list_id, None if level is None else min(max(_int(level, 0), 0), LIST_LEVELS - 1)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _format_number(value: int, fmt: str) -> str:
    """`value` as a list level of format `fmt` shows it (decimal, letters, roman)."""
    if fmt == "decimalZero":
        return f"{value:02d}"
    if fmt in ("lowerLetter", "upperLetter") and value > 0:
        # Word repeats the letter past z: 27 is "aa", 28 "bb".
        letter = chr(ord("a") + (value - 1) % 26) * ((value - 1) // 26 + 1)
        return letter.upper() if fmt == "upperLetter" else letter
    if fmt in ("lowerRoman", "upperRoman") and 0 < value < 4000:
        roman = _roman(value)
        return roman if fmt == "upperRoman" else roman.lower()
    return str(value)


def _roman(value: int) -> str:
    numerals = (
        (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
        (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
    )  # fmt: skip
    out = []
    for amount, numeral in numerals:
        count, value = divmod(value, amount)
        out.append(numeral * count)
    return "".join(out)
