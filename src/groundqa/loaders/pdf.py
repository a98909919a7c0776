"""Load a PDF as one Document: text per page, cleaned, cut into sections, pages kept.

pypdf reads the text layer page by page, in the content stream's order, except where
`pdf_layout` finds that order wrong or flat: a page whose stream goes back and forth
between columns is read column by column (footnotes after the columns), and a ruled
table becomes one line per row that names each cell by its column header ("Zone:
Rural; Minimum lot size: 40 ha."). Before anything is cut, the text is cleaned of what
a page layout adds and a reader skips: running headers and footers and bare page
numbers, including those whose page number or chapter name changes from page to page
(`pdf_furniture` says which lines those are), are removed and listed in one
`pdf-furniture` REVIEW finding, so a user can see that nothing else went with them; so
are the lines of a table of contents or an index (an entry, dot leaders, a page
number), named in one `pdf-contents` REVIEW finding. A word hyphenated at a line end is joined again, unless the document writes that
hyphenated form elsewhere ("noise-sensitive" stays). Lines of one paragraph are joined
with spaces; paragraphs are separated by a blank line, and so are lines that start a
block of their own although the line before ends no sentence: a declaration in a
reference manual, a table's row, a capitalised line after a short line or among lines
broken well before they had to wrap (a heading, a list, a form), so that no sentence
runs across them.

The title is the PDF's /Title (or the title printed on page 1, when that is the same
title with more words: see `_fuller`); else a lone root bookmark; else the largest type
on the first page, when clearly larger than the body; else the file name (never the
first heading, which would put every other section under it). Sections come from the PDF
outline (bookmarks) when it has a usable one: every entry is a heading, and its path
is its own ancestors in the outline. An outline is ignored, and headings are found as
without one, when under three quarters of its entries lead to a page or every entry is
a page label ("Page 3"): a scanner's leftovers, not the document's structure. A heading
used more than once ("SECTION 1." in every chapter) has its path as its id. Without an
outline, headings are the lines the type sets apart (`pdf_headings`: larger than the
body, or bold where it is not). Where the type sets none apart (a scan's text layer, a
typewritten page read by OCR), numbered heading lines are recognised ("2.1.3 Scope 1
thresholds", "Part 2 — Obligations", "Schedule 1 Fees"):
lines that end where the text did not force a wrap (the next word would have fitted),
do not end a sentence or in "the" or "of", are not continued in lower case, are not
one of a list of numbered short lines ("1 Stoneleigh Road"), and whose
number fits the numbering so far ("2.1" only under "2"; Parts above numbers; a Schedule
starts afresh); and so are a few words in Title Case or capitals standing alone after a
sentence, before a clause ("Idling of Vehicles", "FIRST SCHEDULE"), and a few in capitals
after a line of prose its author broke ("... thereby enabling" over "DIRECT THAT"). A clause such as
"1.1 A tree is protected if ..." is body text. Section ids are `<file>#<heading>`, as in Markdown; text before the first heading is the
`<file>#preamble` section. A section's page is where its text starts, and it records
the page each stretch of its text is on (`Section.page_starts`), so that every chunk
cut from it links to its own page (`#page=N`, the physical page, 1-based).

A page without a text layer (a scan) is read by OCR (see `loaders.ocr`) and named in a
`pdf-ocr` REVIEW finding with its word confidence. With OCR off, or where it cannot run,
such a page is a REVIEW finding, and a PDF without any text at all a BLOCK.

What it refuses to do: it does not ask for passwords (an encrypted PDF
that does not open with the empty password is a BLOCK), does not read past `max_pages`,
and never raises on a broken file: whatever pypdf cannot parse is a BLOCK finding.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from groundqa.loaders._common import block, doc_id_of, pages_named, source_of
from groundqa.loaders.ocr import OcrBudget, read_scanned
from groundqa.loaders.pdf_furniture import FUNCTION_WORD as _FUNCTION_WORD
from groundqa.loaders.pdf_furniture import NEW_BLOCK as _NEW_BLOCK
from groundqa.loaders.pdf_furniture import furniture_finding, strip_furniture
from groundqa.loaders.pdf_furniture import norm as _norm
from groundqa.loaders.pdf_headings import Heading, Line, styled_headings
from groundqa.loaders.pdf_layout import TITLE_MAX_CHARS, LineStyle, PageReader, line_key, title_of
from groundqa.loaders.pdf_structure import DASHES as _DASHES
from groundqa.loaders.pdf_structure import SENTENCE_END as _SENTENCE_END
from groundqa.loaders.pdf_structure import (
    SHORT_LINE_SHARE,
    numbered_headings,
    outline_headings,
    wrapped,
)
from groundqa.models import Document, Finding, Section

PDF_SUFFIXES = (".pdf",)
MAX_PAGES = 5000
# A line broken before its next word would have wrapped by this share of a full line
# was broken by the author (a list item, a table row), not by the layout.
EARLY_SHARE = 0.7
# An outline is used when at least this share of its entries lead to a page.
OUTLINE_MIN_LINKED = 0.75

_WS = re.compile(r"\s+")
# A line of a table of contents or an index: an entry, four dot leaders or more, a page
# number (arabic or roman) at the end.
_CONTENTS_LINE = re.compile(
    r"^\S.*?(?:\s?(?:\.\s?){4,}|\s?…{2,}\s?)(?:\d{1,4}|[ivxlc]{1,6})$", re.I
)
_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl"})
_PAGE_LABEL = re.compile(
    r"^(?:page|p\.|pg\.?)?\s*(?:\d{1,5}|[ivxlc]{1,6})(?:\s*(?:of|/)\s*\d{1,5})?$", re.IGNORECASE
)
# A declaration or call in a reference manual: a type, then a name with an underscore
# in it, then its arguments ("int asn1_create_element (asn1_node definitions, ..."),
# perhaps after the kind of entry ("[Function]").
_CODE_LINE = re.compile(
    r"^(?:\[[A-Z][a-z]+\]\s*)?(?:(?:const|unsigned|signed|struct|enum|static|extern)\s+)*"
    r"[A-Za-z_]\w*[\s*]+\**"
    r"(?=\w*_)[A-Za-z_]\w*\s*\("
)
# A table's row as `table_text` writes it ("Zone: Rural; Minimum lot size: 40 ha."): cells
# joined by "; ", one of them at least named by its header, a full stop at the end.
_TABLE_ROW = re.compile(r"^[^;]{1,120}(?:; [^;]{1,120})+\.$")
_TABLE_CELL_NAMED = re.compile(r"; [^;:]{1,80}: ")
_BLOCK_START = re.compile(r"^[\"'“‘(\[]?[A-Z0-9•▪●]")
_OPEN_ENDS = (",", "(", "/", "&", "+")
_LETTERS = r"[^\W\d_]"
# Word patterns start only where a word starts (the lookbehind): tried from every letter
# of a long run, they would take quadratic time on a page that is one long "word".
_WORD_START = rf"(?<!{_LETTERS})"
_BROKEN_WORD = re.compile(rf"{_WORD_START}({_LETTERS}+)-$")
_CONTINUES_WORD = re.compile(rf"^([^\W\d_A-Z]{_LETTERS}*)")
_COMPOUND = re.compile(rf"{_WORD_START}{_LETTERS}+(?:-{_LETTERS}+)+")
_WORD = re.compile(rf"{_LETTERS}+")
_PYPDF_LOCK = threading.Lock()


class _Unreadable(Exception):
    """pypdf failed on the file; `reason` says how, briefly."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def load_pdf(
    path: Path,
    root: Path | None = None,
    max_pages: int = MAX_PAGES,
    ocr: bool = True,
    ocr_budget: OcrBudget | None = None,
) -> tuple[list[Document], list[Finding]]:
    """One Document for the PDF `path`, and the findings met on the way.

    Its id (and the file part of its section ids) is the path relative to `root`, the
    folder that was loaded; just the file name when `root` is None. A file that cannot
    be read (corrupt, encrypted, over `max_pages` pages, no text at all) yields no
    Document and one BLOCK finding. With `ocr`, pages without a text layer are read by
    OCR (see `loaders.ocr`) within `ocr_budget` (the defaults when None); without it,
    where OCR cannot run, or past the budget, they are reported.
    """
    name = doc_id_of(path, root)
    try:
        with _quiet_pypdf():
            read = _read(path, max_pages)
    except _Unreadable as exc:
        return [], [
            block(
                "pdf-unreadable",
                f"{path.name} is not a readable PDF ({exc.reason}); "
                "re-export it or check the download",
                path,
            )
        ]
    if isinstance(read, Finding):
        return [], [read]
    texts, has_content = read.texts, read.has_content

    findings: list[Finding] = []
    scanned = [i + 1 for i, t in enumerate(texts) if not t.strip() and has_content[i]]
    # --- OCR: pages without a text layer are read from their image (`loaders.ocr`);
    # `scanned` keeps the pages it could not read, `advice` says what to do about them.
    by_ocr = read_scanned(path, name, texts, scanned, enabled=ocr, budget=ocr_budget)
    texts, scanned, advice = by_ocr.texts, by_ocr.unread, by_ocr.advice
    findings.extend(by_ocr.findings)
    # --- end of OCR
    if not any(t.strip() for t in texts):
        return [], [
            block(
                "pdf-no-text",
                f"{path.name} has no text layer on any of its {len(texts)} page(s) "
                f"(scanned?), so there is nothing to index; {advice}",
                path,
            )
        ]
    if scanned:
        findings.append(
            Finding(
                severity="REVIEW",
                check="pdf-no-text",
                message=f"{path.name}: {_pages_phrase(scanned)} no text layer (scanned?); {advice}",
                source=source_of(path),
                doc_id=name,
            )
        )

    title, outline = _title(read, path)
    lines, stripped, contents = _lines(read, texts, title)
    if stripped:
        findings.append(furniture_finding(path, name, stripped))
    if contents:
        findings.append(_contents_finding(path, name, contents))
    full = _full_line_chars(lines)

    headings = outline_headings(lines, outline) if outline else []
    if not headings:
        headings = styled_headings(lines, title) or numbered_headings(lines, full)
    sections = _sections(name, title, lines, headings, full)
    document = Document(
        doc_id=name,
        title=title,
        source=source_of(path),
        format="pdf",
        sections=tuple(sections),
    )
    return [document], findings


class HeadingView(NamedTuple):
    """What the heading finders see of a PDF, for measuring them against its outline."""

    title: str
    outline: list[tuple[int, str, int]]  # (depth, title, page) of each usable entry
    found: list[Heading]  # the headings its type sets apart (`pdf_headings`)
    numbered: list[Heading]  # the numbered headings (the finder used without type)


def heading_view(path: Path) -> HeadingView:
    """The headings the type and the numbering would give `path`, beside its outline,
    whatever the loader would choose (bench/pdf_headings.py); pages without a text layer
    are left out."""
    with _quiet_pypdf():
        read = _read(path, MAX_PAGES)
    if isinstance(read, Finding):
        raise _Unreadable(read.message)
    title, outline = _title(read, path)
    lines = _lines(read, read.texts, title).lines
    return HeadingView(
        title,
        outline,
        styled_headings(lines, title),
        numbered_headings(lines, _full_line_chars(lines)),
    )


# --- reading ----------------------------------------------------------------------


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """pypdf's warnings and log lines (about repairs it made) kept off the user's screen.

    A warning must not escape either: under `-W error` it would turn a readable file
    into an exception. Both switches are process-wide, so PDF reads take turns.
    """
    logger = logging.getLogger("pypdf")
    sink = logging.NullHandler()
    with _PYPDF_LOCK:
        propagate = logger.propagate
        logger.addHandler(sink)
        logger.propagate = False
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield
        finally:
            logger.removeHandler(sink)
            logger.propagate = propagate


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return text if len(text) <= 100 else text[:99] + "…"


class _Pages(NamedTuple):
    """What reading a PDF gives: a text per page (in reading order) and what frames it."""

    texts: list[str]
    has_content: list[bool]  # whether each page draws anything (text, image, vector)
    meta_title: str
    outline: list[tuple[int, str, int]]
    first_page_title: str  # the largest type on page 1, when clearly a title
    styles: list[dict[str, list[LineStyle]]]  # each page's lines' type, by `line_key`


def _read(path: Path, max_pages: int) -> Finding | _Pages:
    """The pages of the PDF read (see `_Pages`), or a BLOCK finding."""
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError

    encrypted = block(
        "pdf-encrypted",
        f"{path.name} is encrypted; decrypt it first "
        "(e.g. qpdf --decrypt in.pdf out.pdf) and ingest the copy",
        path,
    )
    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            return encrypted
        count = _declared_pages(reader)
        if count is not None and count > max_pages:
            return _too_many(path, count, max_pages)
        total = len(reader.pages)
    except (DependencyError, FileNotDecryptedError):
        return encrypted
    except OSError as exc:
        raise _Unreadable(exc.strerror or exc.__class__.__name__) from exc
    except Exception as exc:  # pypdf raises many kinds on garbage
        raise _Unreadable(_reason(exc)) from exc
    if total > max_pages:
        return _too_many(path, total, max_pages)

    pages = PageReader(path)
    read = _Pages([], [], _metadata_title(reader), _outline(reader), "", [])
    try:
        for number, page in enumerate(reader.pages, 1):
            layout = pages.read(page, number)
            read.texts.append(layout.text)
            read.styles.append(layout.styles)
            read.has_content.append(bool(layout.text.strip()) or _draws_something(page))
            if number == 1:
                read = read._replace(first_page_title=title_of(layout.runs))
    except (DependencyError, FileNotDecryptedError):
        return encrypted
    except Exception as exc:
        raise _Unreadable(f"page {len(read.texts) + 1}: {_reason(exc)}") from exc
    finally:
        pages.close()
    return read


def _declared_pages(reader: Any) -> int | None:
    """The page count the page tree declares, read without walking it (None if absent)."""
    try:
        count = reader.root_object["/Pages"]["/Count"]
        return int(count)
    except Exception:
        return None


def _too_many(path: Path, count: int, limit: int) -> Finding:
    return block(
        "pdf-too-many-pages",
        f"{path.name} has {count} pages; the limit is {limit}. Split it (e.g. qpdf --split-pages) "
        "or raise the limit if it really is one document",
        path,
    )


def _draws_something(page: Any) -> bool:
    """Whether a page without text still has a content stream or images (a scan)."""
    try:
        resources = page.get("/Resources") or {}
        if "/XObject" in resources:
            return True
        contents = page.get_contents()
        return contents is not None and bool(contents.get_data().strip())
    except Exception:
        return False


def _metadata_title(reader: Any) -> str:
    try:
        title = reader.metadata.title if reader.metadata is not None else None
    except Exception:
        return ""
    title = " ".join(str(title or "").split())
    # Word processors fill /Title with a file name when the author never set one.
    if re.search(r"\.(?:docx?|odt|rtf|pdf|tex|indd)$", title, re.IGNORECASE):
        return ""
    return title


def _outline(reader: Any) -> list[tuple[int, str, int]]:
    """(depth, title, 1-based page) for each outline entry, in order; [] when unusable.

    A broken outline is common and not worth failing the file for: the numbered
    headings are found instead. So is a misleading one (see `_usable`).
    """
    entries: list[tuple[int, str, int | None]] = []

    def visit(items: Sequence[Any], depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                visit(item, depth + 1)
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())
            try:
                page = reader.get_destination_page_number(item)
            except Exception:
                page = None
            entries.append((depth, title, page + 1 if page is not None and page >= 0 else None))

    try:
        visit(reader.outline, 0)
    except Exception:
        return []
    return _usable(entries)


def _usable(entries: Sequence[tuple[int, str, int | None]]) -> list[tuple[int, str, int]]:
    """The outline's entries that lead somewhere, or [] when the outline does not map the
    document's structure: when under OUTLINE_MIN_LINKED of its entries lead to a page
    (a scanner's or converter's leftovers), or when every entry is a page label ("Page 3")."""
    linked = [(d, t, p) for d, t, p in entries if t and p is not None]
    if not linked or len(linked) < OUTLINE_MIN_LINKED * len(entries):
        return []
    if all(_PAGE_LABEL.match(t) for _, t, _ in linked):
        return []
    return linked


def _title(read: _Pages, path: Path) -> tuple[str, list[tuple[int, str, int]]]:
    """The document's title, and the outline entries that are its sections.

    The title is the PDF's /Title (or its fuller printed form, `_fuller`); else a lone
    root bookmark above all the others (the document itself); else the largest type on
    the first page; else the file name. It
    is never the first heading: that would make the first section a parent of all the
    others in every breadcrumb. A lone root bookmark that is the title is not a section:
    its children are the top level.
    """
    outline = read.outline
    title = read.meta_title
    tops = [entry for entry in outline if entry[0] == 0]
    if len(tops) == 1 and len(outline) > 1 and (not title or _norm(tops[0][1]) == _norm(title)):
        title = title or tops[0][1]
        outline = [(depth - 1, text, page) for depth, text, page in outline[1:]]
    return _fuller(title, read) or read.first_page_title or path.stem, outline


def _fuller(title: str, read: _Pages) -> str:
    """The metadata title, or the title printed on page 1 when that is the same title with
    more words: a word processor fills /Title with the document's first line ("THE
    CORPORATION OF THE TOWN OF WHITBY" over "Noise By-law"), and a scanner with a file
    reference ("By-law 6489-11" for a by-law whose title block names what it regulates).
    The printed title is the largest type on page 1, else the lines in capitals that open
    it (a statute's or by-law's title block), when it holds every word of /Title."""
    if not title:
        return title
    words = set(_norm(title).split())
    for printed in (read.first_page_title, _capitals_block(read.texts[0] if read.texts else "")):
        if printed and len(printed) > len(title) and words <= set(_norm(printed).split()):
            return printed
    return title


def _capitals_block(text: str) -> str:
    """The lines in capitals that open a page, joined; "" when the first line is not one
    or the block is longer than a title can be."""
    block = []
    for line in _page_lines(text):
        if any(c.islower() for c in line) or not any(c.isalpha() for c in line):
            break
        block.append(line)
    joined = " ".join(block)
    return joined if len(joined) <= TITLE_MAX_CHARS else ""


def _pages_phrase(pages: Sequence[int], verb: bool = True) -> str:
    """ "page 3 has", "pages 3, 4 have", "pages 2-9 have" (without `verb`: no verb)."""
    phrase = pages_named(pages)
    return f"{phrase} {'has' if len(pages) == 1 else 'have'}" if verb else phrase


# --- cleaning ---------------------------------------------------------------------


def _page_lines(text: str) -> list[str]:
    """The page's non-empty lines, spaces collapsed, ligatures and soft hyphens undone."""
    text = text.translate(_LIGATURES).replace("\u00ad\n", "-\n").replace("\u00ad", "")
    lines = []
    for raw in text.split("\n"):
        line = _WS.sub(" ", raw).strip()
        if line:
            lines.append(line)
    return lines


class _Cleaned(NamedTuple):
    lines: list[Line]  # every line of the text, with its type where known
    furniture: dict[str, list[str]]  # running headers and footers removed, by key
    contents: list[int]  # the page of each contents or index line removed


def _lines(read: _Pages, texts: Sequence[str], title: str) -> _Cleaned:
    """The document's lines, without page furniture (see `strip_furniture`) and without
    the lines of a table of contents or an index: an entry, dot leaders, a page number
    ("2.4 The glob files . . . . . 7"). They would be retrieved for the words of every
    heading and cite the contents page instead of the text."""
    pages, stripped = strip_furniture([_page_lines(t) for t in texts], title)
    lines: list[Line] = []
    contents: list[int] = []
    for number, page in enumerate(pages, 1):
        for text, style in _styled(page, read.styles[number - 1]):
            if _CONTENTS_LINE.match(text):
                contents.append(number)
            else:
                lines.append(Line(text, number, style))
    return _Cleaned(lines, stripped, contents)


def _contents_finding(path: Path, doc_id: str, pages: Sequence[int]) -> Finding:
    on = sorted(set(pages))
    return Finding(
        severity="REVIEW",
        check="pdf-contents",
        message=(
            f"{path.name}: removed {len(pages)} table-of-contents or index line(s) (an entry, "
            f"dot leaders, a page number) on {_pages_phrase(on, verb=False)}; the "
            "sections they list are indexed from the text itself"
        ),
        source=source_of(path),
        doc_id=doc_id,
    )


def _styled(
    lines: Sequence[str], styles: dict[str, list[LineStyle]]
) -> Iterator[tuple[str, LineStyle | None]]:
    """Each of a page's lines with its type, taken in order from the page's `styles`
    (None where the line's text was not found there: OCR, a table put as text)."""
    taken: Counter[str] = Counter()
    for line in lines:
        key = line_key(line)
        found = styles.get(key, [])
        at = taken[key]
        taken[key] += 1
        yield line, found[at] if at < len(found) else None


def _full_line_chars(lines: Sequence[Line]) -> int:
    """The length of a full-width line: the 90th percentile of line lengths."""
    lengths = sorted(len(line.text) for line in lines)
    if len(lengths) < 5:
        return 80
    return max(40, lengths[int(0.9 * (len(lengths) - 1))])


# --- text -------------------------------------------------------------------------


class _Hyphens:
    """Decides, for a word broken at a line end, whether its hyphen is part of it."""

    def __init__(self, lines: Sequence[Line]) -> None:
        self.compounds: Counter[str] = Counter()
        self.words: Counter[str] = Counter()
        for line in lines:
            for match in _COMPOUND.finditer(line.text):
                parts = match.group().casefold().split("-")
                self.compounds.update(f"{a}-{b}" for a, b in itertools.pairwise(parts))
            self.words.update(w.casefold() for w in _WORD.findall(line.text))

    def keep(self, head: str, tail: str) -> bool:
        """Keep "well-known" when the document writes it so at least as often as "wellknown"."""
        hyphenated = self.compounds[f"{head}-{tail}".casefold()]
        return hyphenated > 0 and hyphenated >= self.words[(head + tail).casefold()]


def _joiner(
    previous: str, line: str, hyphens: _Hyphens, full: int, before: str | None = None
) -> tuple[str, bool]:
    """(what goes between two lines, whether the previous line's final hyphen goes);
    `before` is the line before `previous`, if on the same stretch of text."""
    if previous.endswith(_DASHES) and not previous[-2:-1].isspace():
        broken = _BROKEN_WORD.search(previous)
        tail = _CONTINUES_WORD.match(line)
        if broken is not None and tail is not None:
            return "", not hyphens.keep(broken.group(1), tail.group(1))
        return "", False  # "NEER-" then "D 2022", "CO2-" then "e": the dash belongs
    if _SENTENCE_END.search(previous) and (
        not wrapped(previous, line, full) or _NEW_BLOCK.match(line)
    ):
        return "\n\n", False
    if _starts_block(before, previous, line, full):
        return "\n\n", False
    return " ", False


def _starts_block(before: str | None, previous: str, line: str, full: int) -> bool:
    """Whether `line` starts a block of its own though `previous` ends no sentence: a
    line of code (a declaration or call: "int asn1_create_element (asn1_node ...") or a
    table's row, or the line after one, or
    a capitalised line after a short line (a heading, a label) or in a run of lines that
    were not wrapped (a list, a table's rows, a form), where `previous` does not end
    mid-phrase."""
    if _CODE_LINE.match(line) or _CODE_LINE.match(previous):
        return True
    if _table_row(line) or _table_row(previous):
        return True
    if not _broken_early(previous, line, full) or previous.endswith(_OPEN_ENDS):
        return False
    if _FUNCTION_WORD.search(previous) or not _BLOCK_START.match(line):
        return False
    # A short line (a heading, a label) or a run of lines broken early, then a new start.
    short = len(previous) < SHORT_LINE_SHARE * full
    return short or (before is not None and _broken_early(before, previous, full))


def _table_row(line: str) -> bool:
    """Whether a line reads as a table's row: two cells or more after the first, one of
    them named ("...; Completions: 451; Under Construction: 319; 1,695.")."""
    return line.count("; ") >= 2 and bool(_TABLE_ROW.match(line) and _TABLE_CELL_NAMED.search(line))


def _broken_early(line: str, following: str, full: int) -> bool:
    """Whether `line` ended well before the first word of `following` would have had to
    wrap: a break the author made. Line lengths are counted in characters, which in a
    narrow column of justified text is rough, so the margin is wide (EARLY_SHARE)."""
    word = following.split(" ", 1)[0]
    return len(line) + 1 + len(word) < EARLY_SHARE * full


def _body(
    lines: Sequence[Line], hyphens: _Hyphens, full: int
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The text of a run of lines, and (offset, page) where each page's part begins."""
    pieces: list[str] = []
    size = 0
    starts: list[tuple[int, int]] = []
    previous: Line | None = None
    before: Line | None = None
    for line in lines:
        if previous is not None:
            earlier = before.text if before is not None else None
            between, drop_hyphen = _joiner(previous.text, line.text, hyphens, full, earlier)
            if drop_hyphen:
                pieces[-1] = pieces[-1][:-1]
                size -= 1
            pieces.append(between)
            size += len(between)
        if previous is None or line.page != previous.page:
            starts.append((size, line.page))
        pieces.append(line.text)
        size += len(line.text)
        before, previous = previous, line
    return "".join(pieces), tuple(starts)


def _sections(
    name: str, title: str, lines: Sequence[Line], headings: Sequence[Heading], full: int
) -> list[Section]:
    hyphens = _Hyphens(lines)
    runs: list[tuple[str, tuple[str, ...], int, int]]
    if headings:
        # Text before the first heading is the preamble; each heading's body runs to
        # the next heading's line.
        runs = [("", (), 0, headings[0].cut)]
        ends = [h.cut for h in headings[1:]] + [len(lines)]
        runs += [(h.text, h.path, h.start, end) for h, end in zip(headings, ends, strict=True)]
    else:
        runs = [(title, (title,), 0, len(lines))]

    repeated = {h for h, n in Counter(h.text for h in headings).items() if n > 1}
    seen: Counter[str] = Counter()
    sections: list[Section] = []
    for heading, path, start, end in runs:
        text, starts = _body(lines[start:end], hyphens, full)
        if not text:
            continue  # a heading with nothing under it answers nothing
        # A heading used more than once ("SECTION 1." in every chapter) is named by
        # its path, so that its id says which one it is.
        label = (" > ".join(path) if heading in repeated else heading) or "preamble"
        seen[label] += 1
        suffix = f" ({seen[label]})" if seen[label] > 1 else ""
        sections.append(
            Section(
                section_id=f"{name}#{label}{suffix}",
                heading=heading,
                text=text,
                path=path,
                page=starts[0][1],
                page_starts=starts,
            )
        )
    return sections
