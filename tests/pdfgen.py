"""Test and benchmark PDFs, rendered from Markdown with fpdf2, with their ground truth.

`render_markdown` lays out a Markdown file (YAML front matter, `# Title`, `##`/`###`
headings, paragraphs) the way a word processor would: Helvetica, a running header
(the title) and a "Page N of M" footer on every page, bookmarks for the headings when
asked, and its own line breaking so that it knows which line, and so which page, every
word landed on. That record is the ground truth the PDF loader is measured against.

`running_header` swaps the title header for one that varies by page and chapter
("Chapter 2: Permits 14"), as reference manuals and journals print them.

The other writers make the awkward files: an image-only (scanned) PDF, an encrypted
one (RC4, which fpdf2 writes without the `cryptography` package), an AES-256 one that
pypdf cannot open without `cryptography`, corrupt ones, an N-page one made quickly,
pages set in two or three columns whose lines are drawn row by row across the columns
(so the content stream interleaves them), a page with a ruled table, and lines with
footnote marks and exponents set in raised small type.
"""

from __future__ import annotations

import bisect
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fpdf import FPDF
from fpdf.enums import EncryptionMethod, XPos, YPos

MARGIN = 20.0
BODY_SIZE = 10.5
LINE_H = 5.0
PARAGRAPH_GAP = 2.5
# A word this long or longer may be broken with an inserted hyphen (hyphenate=True).
HYPHENATE_MIN = 9
_FRONT_MATTER = re.compile(r"\A---\n.*?\n(?:---|\.\.\.)\n", re.DOTALL)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


def latin1(text: str) -> str:
    """`text` as the core fonts can draw it: typographic marks to ASCII, the rest to '?'."""
    table = str.maketrans(
        {"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-", "…": "...", "\u00a0": " "}
    )
    return text.translate(table).encode("latin-1", "replace").decode("latin-1")


@dataclass(frozen=True)
class Paragraph:
    """One paragraph as written: its text (one line, as in the source) and where it starts."""

    text: str
    page: int
    heading: str
    # (offset in `text`, page) where each rendered line of the paragraph begins.
    line_starts: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Rendered:
    """A generated PDF and what it holds."""

    path: Path
    title: str
    pages: int
    headings: tuple[tuple[int, str, int], ...]  # (level, text, page), `##` is level 1
    paragraphs: tuple[Paragraph, ...]
    header: str
    hyphenated: tuple[str, ...]  # words broken at a line end with an inserted hyphen
    hyphen_breaks: tuple[str, ...]  # compounds broken after their own hyphen
    scanned_pages: tuple[int, ...]
    # Words hyphenated at the foot of one page and finished on the next.
    across_pages: tuple[str, ...] = ()
    # The running header drawn on each page, in page order ("" where none was drawn).
    headers: tuple[str, ...] = ()
    _text: str = field(default="", repr=False)
    _offsets: tuple[int, ...] = field(default=(), repr=False)
    _pages: tuple[int, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        # What `page_at` searches: every paragraph in one string, and where each line starts.
        text = ""
        offsets: list[int] = []
        pages: list[int] = []
        for para in self.paragraphs:
            if text:
                text += "\n"
            for offset, page in para.line_starts:
                offsets.append(len(text) + offset)
                pages.append(page)
            text += para.text
        object.__setattr__(self, "_text", text)
        object.__setattr__(self, "_offsets", tuple(offsets))
        object.__setattr__(self, "_pages", tuple(pages))

    def page_at(self, snippet: str) -> int | None:
        """The page the first occurrence of `snippet` starts on (whitespace-insensitive)."""
        needle = " ".join(snippet.split())
        at = self._text.find(needle)
        if at < 0:
            return None
        return self._pages[bisect.bisect_right(self._offsets, at) - 1]


# A running header that varies: given the page number and the chapter (`##` heading)
# the page starts in, the header line to draw.
HeaderText = Callable[[int, str], str]


class _Pdf(FPDF):
    def __init__(
        self,
        running_header: str,
        furniture: bool,
        margin: float = MARGIN,
        header_text: HeaderText | None = None,
    ) -> None:
        super().__init__(format="A4")
        self.running_header = running_header
        self.header_text = header_text
        self.furniture = furniture
        self.chapter = ""  # the `##` heading the text has reached
        self.bare_pages: set[int] = set()  # scanned pages: no header, no footer
        self.drawn_headers: list[str] = []
        self.set_margins(margin, MARGIN + 5, margin)
        self.set_auto_page_break(True, margin=MARGIN + 2)

    def header(self) -> None:
        if not self.furniture or self.page_no() in self.bare_pages:
            self.drawn_headers.append("")
            return
        text = self.running_header
        if self.header_text is not None:
            text = self.header_text(self.page_no(), self.chapter)
        self.drawn_headers.append(text)
        self.set_font("Helvetica", "I", 8)
        self.set_y(10)
        self.cell(0, 5, text, align="R")
        self.set_y(self.t_margin)

    def footer(self) -> None:
        if not self.furniture or self.page_no() in self.bare_pages:
            return
        self.set_font("Helvetica", "I", 8)
        self.set_y(-14)
        self.cell(0, 5, f"Page {self.page_no()} of {{nb}}", align="C")


def _parse(text: str) -> tuple[str, list[tuple[int, str]]]:
    """(title, blocks): each block is (heading level, heading) or (0, paragraph)."""
    body = _FRONT_MATTER.sub("", text.replace("\r\n", "\n"), count=1)
    title = ""
    blocks: list[tuple[int, str]] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            blocks.append((0, " ".join(paragraph)))
            paragraph.clear()

    for line in body.split("\n"):
        match = _HEADING.match(line)
        if match:
            flush()
            level = len(match.group(1))
            if level == 1 and not title:
                title = match.group(2)
            else:
                blocks.append((level - 1, match.group(2)))
        elif line.strip():
            paragraph.append(line.strip())
        else:
            flush()
    flush()
    return title, blocks


class _Layout:
    """Greedy line breaking that remembers which word starts each line."""

    def __init__(self, pdf: _Pdf, hyphenate: bool, break_compounds: Sequence[str]) -> None:
        self.pdf = pdf
        self.hyphenate = hyphenate
        self.break_compounds = {w.lower() for w in break_compounds}
        self.hyphenated: list[str] = []
        self.hyphen_breaks: list[str] = []

    def lines(self, text: str) -> list[tuple[str, int]]:
        """(line as drawn, offset in `text` of its first character) for each line."""
        width = self.pdf.epw
        fits = self.pdf.get_string_width
        out: list[tuple[str, int]] = []
        line, start = "", 0
        pos = 0
        for word in text.split(" "):
            offset = pos
            pos += len(word) + 1
            forced = self._forced(word)
            if forced is not None:
                # Break after the compound's hyphen here, whatever room is left.
                head = word[: forced + 1]
                out.append(((f"{line} {head}" if line else head), start if line else offset))
                self.hyphen_breaks.append(word.strip(".,;:()"))
                offset += forced + 1
                word = word[forced + 1 :]
                line, start = "", offset
            while True:
                candidate = f"{line} {word}" if line else word
                if fits(candidate) <= width:
                    if not line:
                        start = offset
                    line = candidate
                    break
                head = self._split(line, word, width)
                if head is None:
                    if not line:  # a word wider than the line: draw it anyway
                        out.append((word, offset))
                        break
                    out.append((line, start))
                    line = ""
                    continue
                drawn, rest = head
                out.append(((f"{line} {drawn}" if line else drawn), start if line else offset))
                offset += len(word) - len(rest)
                word = rest
                line, start = "", offset
        if line:
            out.append((line, start))
        return out

    def _forced(self, word: str) -> int | None:
        """Where to break `word` if it is the first use of a compound to break."""
        core = word.strip(".,;:()").lower()
        if core in self.break_compounds and "-" in core:
            self.break_compounds.discard(core)
            return word.index("-")
        return None

    def _split(self, line: str, word: str, width: float) -> tuple[str, str] | None:
        """(what goes on this line, what goes on the next) for `word`, or None to wrap it whole."""
        fits = self.pdf.get_string_width
        prefix = f"{line} " if line else ""
        # A compound breaks after its own hyphen, as any word processor does.
        for i in range(len(word) - 2, 1, -1):
            if word[i] == "-" and word[i + 1].isalpha() and fits(prefix + word[: i + 1]) <= width:
                self.hyphen_breaks.append(word.strip(".,;:()"))
                return word[: i + 1], word[i + 1 :]
        core = word.rstrip(".,;:)")
        if not (
            self.hyphenate and len(core) >= HYPHENATE_MIN and core.isalpha() and core.islower()
        ):
            return None
        for cut in range(len(core) - 3, 2, -1):
            if fits(prefix + core[:cut] + "-") <= width:
                self.hyphenated.append(core)
                return core[:cut] + "-", word[cut:]
        return None


def _scan_image() -> object:
    """A grey 'scanned page' bitmap (Pillow ships with fpdf2)."""
    from PIL import Image, ImageDraw

    image = Image.new("L", (420, 594), 235)
    draw = ImageDraw.Draw(image)
    for y in range(60, 540, 14):
        draw.line((50, y, 370, y), fill=90, width=3)
    return image


def render_markdown(
    text: str,
    path: Path,
    *,
    outline: bool = True,
    hyphenate: bool = False,
    scanned_page: int | None = None,
    furniture: bool = True,
    metadata_title: bool = True,
    break_compounds: Sequence[str] = (),
    margin: float = MARGIN,
    body_size: float = BODY_SIZE,
    running_header: HeaderText | None = None,
) -> Rendered:
    """Write the Markdown `text` to the PDF `path` and return what went where.

    `outline` adds a bookmark per heading (nested by heading level); `hyphenate` breaks
    long lowercase words at line ends with an inserted hyphen; `scanned_page` (1-based)
    inserts an image-only page there; `furniture` draws the running header and footer;
    `metadata_title` sets /Title; `break_compounds` lists hyphenated words ("noise-sensitive")
    whose first use is broken after its hyphen wherever it falls; `margin` (left and right,
    mm) and `body_size` (pt) change where lines wrap; `running_header` draws, instead of
    the title, the header it returns for each page and the chapter that page starts in.
    """
    title, blocks = _parse(latin1(text))
    pdf = _Pdf(title, furniture, margin, running_header)
    if metadata_title and title:
        pdf.set_title(title)
    layout = _Layout(pdf, hyphenate, break_compounds)
    across: list[str] = []
    paragraphs: list[Paragraph] = []
    headings: list[tuple[int, str, int]] = []
    scanned: list[int] = []
    current = ""

    def new_page() -> None:
        if scanned_page is not None and pdf.page_no() + 1 == scanned_page:
            pdf.bare_pages.add(scanned_page)
            pdf.add_page()
            pdf.image(_scan_image(), x=0, y=0, w=pdf.w, h=pdf.h)
            scanned.append(scanned_page)
        pdf.add_page()

    def ensure(height: float) -> None:
        if pdf.will_page_break(height):
            new_page()

    new_page()
    if title:
        pdf.set_font("Helvetica", "B", 16)
        pdf.multi_cell(0, 8, title, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.ln(3)
    for level, block in blocks:
        if level:
            pdf.set_font("Helvetica", "B", 13 if level == 1 else 11)
            ensure(7 + 3 * LINE_H)  # keep a heading with the lines that follow it
            if outline:
                pdf.start_section(block, level=level - 1, strict=False)
            pdf.cell(0, 7, block, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            pdf.ln(1)
            headings.append((level, block, pdf.page_no()))
            current = block
            if level == 1:
                pdf.chapter = block
            continue
        pdf.set_font("Helvetica", "", body_size)
        starts: list[tuple[int, int]] = []
        broken = ""
        for line, offset in layout.lines(block):
            ensure(LINE_H)
            if broken and starts and pdf.page_no() != starts[-1][1]:
                across.append(broken)
            pdf.cell(0, LINE_H, line, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            starts.append((offset, pdf.page_no()))
            broken = _broken_word(line, block, offset)
        paragraphs.append(Paragraph(block, starts[0][1], current, tuple(starts)))
        pdf.ln(PARAGRAPH_GAP)
    pdf.output(str(path))
    return Rendered(
        path=path,
        title=title,
        pages=pdf.page_no(),
        headings=tuple(headings),
        paragraphs=tuple(paragraphs),
        header=title,
        hyphenated=tuple(layout.hyphenated),
        hyphen_breaks=tuple(layout.hyphen_breaks),
        scanned_pages=tuple(scanned),
        across_pages=tuple(across),
        headers=tuple(pdf.drawn_headers),
    )


def _broken_word(line: str, paragraph: str, offset: int) -> str:
    """The whole word a line ends by breaking ("" when it ends between words)."""
    if not line.endswith("-"):
        return ""
    # The line is the paragraph's text from `offset`, plus the hyphen if one was inserted;
    # either way the word goes on from the hyphen's place (its own hyphen included).
    rest = paragraph[offset + len(line) - 1 :].split(" ", 1)[0]
    head = line.rsplit(" ", 1)[-1][:-1]
    return (head + rest).strip(".,;:()")


def render_file(markdown: Path, out_dir: Path, **options: Any) -> Rendered:
    """`markdown` rendered to `out_dir/<stem>.pdf` (options as for `render_markdown`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    text = markdown.read_text(encoding="utf-8")
    return render_markdown(text, out_dir / f"{markdown.stem}.pdf", **options)


def render_corpus(folder: Path, out_dir: Path, **options: Any) -> list[Rendered]:
    """Every `*.md` in `folder`, rendered into `out_dir`."""
    return [render_file(md, out_dir, **options) for md in sorted(folder.glob("*.md"))]


def write_scanned(path: Path, pages: int = 2) -> Path:
    """A PDF of image-only pages: what a scanner without OCR produces."""
    pdf = _Pdf("", furniture=False)
    image = _scan_image()
    for _ in range(pages):
        pdf.add_page()
        pdf.image(image, x=0, y=0, w=pdf.w, h=pdf.h)
    pdf.output(str(path))
    return path


def _small(pdf: FPDF, text: str) -> None:
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(0, 6, text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)


def write_encrypted(path: Path, user_password: str = "secret") -> Path:
    """An RC4-encrypted PDF. With a user password it cannot be opened without it; with
    `user_password=""` (an owner password only) any reader opens it."""
    pdf = FPDF()
    pdf.set_encryption(
        owner_password="owner", user_password=user_password, encryption_method=EncryptionMethod.RC4
    )
    _small(pdf, "Confidential licence conditions. Clause 1 applies to every holder.")
    pdf.output(str(path))
    return path


def write_aes256(path: Path) -> Path:
    """A hand-made PDF whose /Encrypt dictionary asks for AES-256 (V5 R6).

    pypdf needs the `cryptography` package even to test the empty password on such a
    file, so without it the reader raises DependencyError. The file's content is never
    reached, so the key material is filler of the right lengths.
    """
    stream = b"BT /F1 12 Tf 72 720 Td (Sealed) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Filter /Standard /V 5 /R 6 /Length 256 /P -4 "
        b"/O <" + b"11" * 48 + b"> /U <" + b"22" * 48 + b"> "
        b"/OE <" + b"33" * 32 + b"> /UE <" + b"44" * 32 + b"> /Perms <" + b"55" * 16 + b"> "
        b"/CF << /StdCF << /CFM /AESV3 /AuthEvent /DocOpen /Length 32 >> >> "
        b"/StmF /StdCF /StrF /StdCF >>",
    ]
    trailer = b"/Encrypt 5 0 R /ID [<" + b"ab" * 16 + b"> <" + b"ab" * 16 + b">]"
    path.write_bytes(_assemble(objects, trailer))
    return path


def _assemble(objects: list[bytes], trailer_extra: bytes = b"") -> bytes:
    """A PDF file from numbered object bodies (1 is the catalog), with a correct xref."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R " % (len(objects) + 1) + trailer_extra + b" >>\n"
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def write_corrupt(path: Path, kind: str = "garbage") -> Path:
    """A broken PDF: `garbage` (a %PDF header, then noise), `truncated` (a real PDF cut
    off after its header and first objects), or `empty` (zero bytes)."""
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        noise = bytes((i * 131 + 7) % 251 for i in range(4000))
        path.write_bytes(b"%PDF-1.7\n" + zlib.compress(noise) + noise)
    elif kind == "truncated":
        whole = write_pages(path, 3)
        data = whole.read_bytes()
        path.write_bytes(data[: len(data) // 5])
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return path


_TREES = ("alder", "ash", "beech", "birch", "cedar", "elm", "fir", "hazel", "holly", "larch")


def _page_code(n: int) -> str:
    """Four tree names that differ from page to page (digits alone would not)."""
    k = len(_TREES)
    return " ".join(_TREES[n // k**i % k] for i in range(4))


def _pdf_string(text: str) -> bytes:
    return (
        b"("
        + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")
        + b")"
    )


def write_pages(path: Path, pages: int) -> Path:
    """A PDF of `pages` short pages, written directly (2,000 pages in well under a second).

    Each page has the running header "Long register of licences", a footer "Page N of
    M", and four body lines that name the page ("Entry 7: the hazel alder alder alder
    licence."), so a test can check that each page's text landed on that page.
    """
    font = 3 + 2 * pages
    objects: list[bytes] = [b"", b""]  # the catalog and the page tree, filled in below
    kids = []
    for n in range(1, pages + 1):
        code = _page_code(n)
        lines = [
            (760, 9, "Long register of licences"),
            (720, 11, f"Entry {n}: the {code} licence."),
            (704, 11, f"This is page {n} of the long register. The holder of the {code} licence"),
            (
                688,
                11,
                "must keep records for seven years and report each discharge within 14 days.",
            ),
            (672, 11, f"Entry {n} ends with the {code} licence."),
            (60, 9, f"Page {n} of {pages}"),
        ]
        stream = b" ".join(
            b"BT /F1 %d Tf 72 %d Td " % (size, y) + _pdf_string(text) + b" Tj ET"
            for y, size, text in lines
        )
        page_no = len(objects) + 1
        kids.append(b"%d 0 R" % page_no)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (page_no + 1, font)
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    assert len(objects) == font
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = b"<< /Type /Pages /Kids [" + b" ".join(kids) + b"] /Count %d >>" % pages
    path.write_bytes(_assemble(objects))
    return path


@dataclass(frozen=True)
class Columns:
    """A PDF set in columns: its pages' lines as a reader reads them, column by column."""

    path: Path
    header: str
    pages: tuple[tuple[str, ...], ...]  # per page, the body lines in reading order
    paragraphs: tuple[str, ...]  # every paragraph, whole, as written


def write_columns(
    path: Path,
    paragraphs: Sequence[str],
    columns: int = 2,
    lines_per_column: int = 40,
    header: str = "Official Gazette of Northmere / Vol. 12 / Proposed Rules",
) -> Columns:
    """`paragraphs` set in `columns` columns under a full-width running header.

    Lines flow down the first column, then the next, as in a journal; a paragraph may
    run on from the foot of one column to the head of the next. The lines are drawn
    row by row across the columns, so the content stream (and a reader that follows
    it) meets the first line of every column before the second line of any.
    """
    pdf = _Pdf("", furniture=False, margin=15)
    pdf.set_font("Helvetica", "", 9)
    gap = 6.0
    width = (pdf.epw - gap * (columns - 1)) / columns
    lines: list[str] = []
    for para in paragraphs:
        lines.extend(_wrap(pdf, latin1(para), width))
        lines.append("")  # a blank line between paragraphs
    per_page = columns * lines_per_column
    pages: list[tuple[str, ...]] = []
    for first in range(0, len(lines), per_page):
        page_lines = lines[first : first + per_page]
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 8)
        pdf.text(pdf.l_margin, 14, f"{header} {100 + pdf.page_no()}")
        pdf.set_font("Helvetica", "", 9)
        for row in range(lines_per_column):
            for col in range(columns):
                at = col * lines_per_column + row
                if at < len(page_lines) and page_lines[at]:
                    x = pdf.l_margin + col * (width + gap)
                    pdf.text(x, 24 + row * 4.4, page_lines[at])
        pages.append(tuple(line for line in page_lines if line))
    pdf.output(str(path))
    return Columns(path, header, tuple(pages), tuple(latin1(p) for p in paragraphs))


def _wrap(pdf: FPDF, text: str, width: float) -> list[str]:
    """`text` broken greedily into lines no wider than `width` in the current font."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if line and pdf.get_string_width(candidate) > width:
            lines.append(line)
            candidate = word
        line = candidate
    return [*lines, line] if line else lines


def write_table(
    path: Path,
    rows: Sequence[Sequence[str]],
    before: str,
    after: str,
    title: str = "Zoning Schedule",
) -> Path:
    """A page with a paragraph, a table ruled on every cell (its first row the header),
    and a paragraph after it."""
    pdf = _Pdf(title, furniture=True)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 14)
    pdf.multi_cell(0, 8, title, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_font("Helvetica", "", 10.5)
    pdf.multi_cell(0, LINE_H, latin1(before), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.ln(4)
    with pdf.table(first_row_as_headings=True, borders_layout="ALL", text_align="LEFT") as table:
        for cells in rows:
            row = table.row()
            for cell in cells:
                row.cell(latin1(cell))
    pdf.ln(4)
    pdf.multi_cell(0, LINE_H, latin1(after), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.output(str(path))
    return path


def write_marked(path: Path, lines: Sequence[Sequence[tuple[str, bool]]]) -> Path:
    """A page whose lines mix body text with raised small type, as footnote marks and
    exponents are set: each line is a sequence of (text, raised) pieces drawn one after
    another, a raised piece at 60% of the body size with its baseline 35% of it higher."""
    pdf = _Pdf("", furniture=False)
    pdf.add_page()
    y = 40.0
    for pieces in lines:
        x = MARGIN
        for text, raised in pieces:
            size = BODY_SIZE * 0.6 if raised else BODY_SIZE
            pdf.set_font("Helvetica", "", size)
            # fpdf2 measures in mm: one point is 0.3528 mm.
            pdf.text(x, y - (BODY_SIZE * 0.35 * 0.3528 if raised else 0.0), latin1(text))
            x += pdf.get_string_width(latin1(text))
        y += LINE_H * 1.5
    pdf.output(str(path))
    return path


# The type of each kind of block `write_styled` draws: (style, size); "" is regular.
STYLED_TYPE = {
    "cover": ("B", 28.0),
    "h1": ("", 16.0),
    "h2": ("B", BODY_SIZE),
    "body": ("", BODY_SIZE),
    "bold": ("B", BODY_SIZE),
}


def write_styled(path: Path, blocks: Sequence[tuple[str, str]], metadata_title: str = "") -> Path:
    """A PDF without an outline whose headings are set apart only by their type: each
    block is (kind, text), kind one of STYLED_TYPE's or "page" (a new page). Headings
    and paragraphs alike wrap at the margin. /Title is `metadata_title`, if any."""
    pdf = _Pdf("", furniture=False)
    if metadata_title:
        pdf.set_title(metadata_title)
    pdf.add_page()
    for kind, text in blocks:
        if kind == "page":
            pdf.add_page()
            continue
        style, size = STYLED_TYPE[kind]
        pdf.set_font("Helvetica", style, size)
        pdf.multi_cell(0, size * 0.5, latin1(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.ln(PARAGRAPH_GAP)
    pdf.output(str(path))
    return path


def write_outlined(path: Path, entries: Sequence[tuple[int, str, str, str]]) -> Path:
    """A PDF with an outline whose entries need not read as the headings drawn: each
    entry is (level, outline title, heading as drawn, paragraph), each on a new page when
    its level is 0 (so entries share pages too)."""
    pdf = _Pdf("", furniture=False)
    for level, title, heading, paragraph in entries:
        if level == 0 or pdf.page_no() == 0:
            pdf.add_page()
        pdf.start_section(title, level=level, strict=False)
        pdf.set_font("Helvetica", "B", 14 if level == 0 else 12)
        pdf.multi_cell(0, 7, latin1(heading), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.set_font("Helvetica", "", BODY_SIZE)
        pdf.multi_cell(0, LINE_H, latin1(paragraph), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.ln(PARAGRAPH_GAP)
    pdf.output(str(path))
    return path
