"""Read PDF pages that have no text layer (scans) by OCR, so that they can be indexed.

A page is rendered by PDFium (pypdfium2) at 300 dpi in grayscale and read by Tesseract
(through pytesseract) in English, word by word with a confidence for each word. The page
comes back as lines of text, so that the PDF loader cleans an OCR'd page exactly as it
cleans a text layer (running headers, page numbers, broken words, paragraphs), and with
the mean word confidence, which the loader reports so that a user knows which pages to
check against the scan.

What it refuses to do: it never raises because OCR cannot run (no `tesseract` binary, no
English language data, pytesseract or pypdfium2 not installed): `unavailable()` says why
in one sentence with what to do, and the loader turns that into a finding. It reads only
the pages it is given: a page with a text layer, including one a scanner's own OCR wrote,
is never read again. It does not correct or drop words it is unsure of: the confidence is
reported, the text kept as read. It does not run without bound: an `OcrBudget` gives it
so many seconds for one file and so many for every file of one load (a small PDF can
hold thousands of pages that each take Tesseract most of a minute), and the pages it had
no time for are named in the loader's finding with the setting that would read them.
"""

from __future__ import annotations

import functools
import math
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundqa.errors import UsageError
from groundqa.loaders._common import pages_named, source_of
from groundqa.models import Finding

DPI = 300
LANGUAGE = "eng"
# A page is rendered at a lower resolution when DPI would make it larger than this
# (A4 at 300 dpi is 8.7 million pixels; a poster-sized page must not take gigabytes).
MAX_PIXELS = 40_000_000
# A page whose images hold more pixels than this is not rendered (a 300 dpi scan of an
# A0 sheet holds 140 million).
MAX_IMAGE_PIXELS = 150_000_000
# Tesseract's page segmentation mode: 3, automatic layout. On the typewritten Coventry
# scan it reads the typed words as well as 4 (one column) and better than 6 (one block)
# or 11 (sparse text); on a two-column page 4 and 6 interleave the columns line by line
# and 3 reads one column after the other (bench/ocr.py).
PAGE_SEGMENTATION = 3
# A page that takes longer than this is abandoned (and named), not waited on for ever.
PAGE_TIMEOUT_S = 180
# Seconds of OCR one file may take, and all the files of one load (0: no limit). A clear
# typewritten page takes about 6 s on 2 cores (the 4-page Coventry scan, 24 s); a page of
# noise can take Tesseract 40 s or more. Past either, the pages left are named, not read.
FILE_BUDGET_S = 45.0
BUILD_BUDGET_S = 900.0
OUT_OF_TIME = "no OCR time left"
# Pages whose mean word confidence is under this share (in %) are named for a check.
LOW_CONFIDENCE = 60.0
# Pages named in a finding; the rest are counted.
LISTED = 20
INSTALL_TESSERACT = "install tesseract-ocr (apt-get install tesseract-ocr)"
OCR_ELSEWHERE = "run OCR, e.g. ocrmypdf, and ingest the result"
# PDFium must not be called from two threads at once, not even on different documents.
_PDFIUM_LOCK = threading.Lock()


@dataclass(frozen=True)
class PageText:
    """What OCR read on one page: its lines, and how sure Tesseract was of the words.

    `confidence` is the mean of the word confidences (0-100), 0.0 when no word was read;
    `problem` says why the page could not be read at all (then `lines` is empty).
    """

    page: int  # 1-based, the physical page
    lines: tuple[str, ...]
    confidence: float
    words: int
    seconds: float
    problem: str = ""

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


# Told which file is being read and how far it has got: (file name, pages read, pages).
OcrProgress = Callable[[str, int, int], None]


@dataclass
class OcrBudget:
    """How long OCR may run: `file_s` seconds on one file, `build_s` on all the files of
    one load (0 for no limit), and what it has spent so far. One budget is shared by
    every PDF of a load; `progress`, when set, hears of every page as it is read.
    """

    file_s: float = FILE_BUDGET_S
    build_s: float = BUILD_BUDGET_S
    progress: OcrProgress | None = None
    spent_s: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        for value in (self.file_s, self.build_s):
            if not 0 <= value < math.inf:  # NaN too
                raise UsageError(
                    f"an OCR budget is a number of seconds, 0 for no limit, not {value}: "
                    "pass --ocr-budget and --ocr-build-budget as 0 or more"
                )

    def left(self, file_spent: float) -> float:
        """Seconds left for a file that has had `file_spent` (inf when neither limit is set)."""
        left = math.inf
        if self.file_s:
            left = self.file_s - file_spent
        if self.build_s:
            left = min(left, self.build_s - self.spent_s)
        return left

    def limit_reached(self, file_spent: float) -> str:
        """The limit that ran out first, with the setting that raises it, for a finding."""
        file_left = self.file_s - file_spent if self.file_s else math.inf
        build_left = self.build_s - self.spent_s if self.build_s else math.inf
        if build_left <= file_left:
            return f"the {self.build_s:g} s allowed for the whole load (--ocr-build-budget)"
        return f"the {self.file_s:g} s allowed for one file (--ocr-budget)"


def unavailable() -> str | None:
    """Why OCR cannot run on this machine, as a sentence with what to do; None when it can.

    Whether the `tesseract` binary runs is checked once per command name (pytesseract's
    `tesseract_cmd`), then remembered.
    """
    try:
        import pypdfium2  # noqa: F401
        import pytesseract
    except ImportError as exc:
        return (
            f"OCR is not available ({exc.name} is not installed): pip install pytesseract pypdfium2"
        )
    return _probe(str(pytesseract.pytesseract.tesseract_cmd))


@functools.lru_cache(maxsize=8)
def _probe(command: str) -> str | None:
    executable = shutil.which(command)
    if executable is None:
        return f"OCR is not available (tesseract not found): {INSTALL_TESSERACT}"
    try:
        listed = subprocess.run(
            [executable, "--list-langs"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"OCR is not available (tesseract does not run: {exc}): {INSTALL_TESSERACT}"
    # Tesseract 5 lists the languages on stdout, older releases on stderr.
    if LANGUAGE not in (listed.stdout + listed.stderr).split():
        return (
            "OCR is not available (tesseract has no English language data): "
            "install tesseract-ocr-eng (apt-get install tesseract-ocr-eng)"
        )
    return None


def read_pages(
    path: Path,
    pages: Sequence[int],
    *,
    dpi: int = DPI,
    psm: int = PAGE_SEGMENTATION,
    budget: OcrBudget | None = None,
) -> list[PageText]:
    """OCR the 1-based `pages` of the PDF `path`, one PageText each, in the order given.

    Call `unavailable()` first. A page that cannot be rendered or read comes back with
    its `problem` set and no lines; the other pages are still read. With a `budget`, a
    page is given only the time left (Tesseract is stopped when it runs out), and the
    pages after it come back unread with the problem OUT_OF_TIME.
    """
    import pypdfium2 as pdfium

    budget = budget or OcrBudget(0, 0)
    results: list[PageText] = []
    try:
        with _PDFIUM_LOCK:
            document = pdfium.PdfDocument(path)
    except Exception as exc:  # PdfiumError, or OSError for an unreadable file
        reason = f"PDFium cannot open it: {_brief(exc)}"
        return [PageText(n, (), 0.0, 0, 0.0, reason) for n in pages]
    spent = 0.0
    try:
        for done, number in enumerate(pages):
            if budget.progress is not None:
                budget.progress(path.name, done, len(pages))
            left = budget.left(spent)
            if left <= 0:
                results.append(PageText(number, (), 0.0, 0, 0.0, OUT_OF_TIME))
                continue
            page = _read_page(document, number, dpi, psm, min(PAGE_TIMEOUT_S, left))
            spent += page.seconds
            budget.spent_s += page.seconds
            if page.problem and budget.left(spent) <= 0:
                page = PageText(number, (), 0.0, 0, page.seconds, OUT_OF_TIME)
            results.append(page)
        if budget.progress is not None:
            budget.progress(path.name, len(pages), len(pages))
    finally:
        with _PDFIUM_LOCK:
            document.close()
    return results


def _read_page(document: Any, number: int, dpi: int, psm: int, timeout: float) -> PageText:
    started = time.perf_counter()
    try:
        image, rendered_dpi = _render(document, number, dpi)
        data = _tesseract(
            image, rendered_dpi, psm, max(timeout - (time.perf_counter() - started), 0.1)
        )
    except Exception as exc:  # a page PDFium cannot draw, Tesseract failing or timing out
        return PageText(number, (), 0.0, 0, time.perf_counter() - started, _brief(exc))
    lines, confidences = words_to_lines(data)
    mean = sum(confidences) / len(confidences) if confidences else 0.0
    return PageText(number, lines, mean, len(confidences), time.perf_counter() - started)


def _render(document: Any, number: int, dpi: int) -> tuple[Any, int]:
    """The page as a grayscale PIL image, and its resolution: `dpi`, or less for a page
    so large that it would come to more than MAX_PIXELS."""
    with _PDFIUM_LOCK:
        page = document[number - 1]
        try:
            pixels = _image_pixels(page)
            if pixels > MAX_IMAGE_PIXELS:
                # PDFium decodes an image whole: a small file can hold gigabytes of pixels.
                raise ValueError(
                    f"its images come to {pixels / 1e6:,.0f} million pixels, more than "
                    f"{MAX_IMAGE_PIXELS / 1e6:,.0f} million; downsample the scan"
                )
            width, height = page.get_size()  # in points, 1/72 inch
            area = max(width * height, 1.0) / 72**2  # square inches
            dpi = max(1, min(dpi, int(math.sqrt(MAX_PIXELS / area))))
            bitmap = page.render(scale=dpi / 72, grayscale=True)
            # A copy: the bitmap's buffer goes when the page is closed.
            return bitmap.to_pil().copy(), dpi
        finally:
            page.close()


def _image_pixels(page: Any) -> int:
    """The pixels of every image drawn on the page (in forms too), as stored."""
    import pypdfium2.raw as pdfium_c

    total = 0
    for image in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE]):
        try:
            width, height = image.get_px_size()
        except Exception:
            continue  # an image PDFium cannot size, it will not decode either
        total += width * height
    return total


def _tesseract(image: Any, dpi: int, psm: int, timeout: float) -> dict[str, list[Any]]:
    import pytesseract

    result: dict[str, list[Any]] = pytesseract.image_to_data(
        image,
        lang=LANGUAGE,
        config=f"--psm {psm} --dpi {dpi}",
        output_type=pytesseract.Output.DICT,
        timeout=timeout,
    )
    return result


def words_to_lines(data: dict[str, list[Any]]) -> tuple[tuple[str, ...], list[float]]:
    """Tesseract's word table as text lines in reading order, and each word's confidence.

    A line is the words Tesseract placed in one (block, paragraph, line); rows that are
    not words (confidence -1) or hold only spaces are left out.
    """
    lines: dict[tuple[int, int, int], list[str]] = {}
    confidences: list[float] = []
    for i, raw in enumerate(data.get("text", [])):
        word = str(raw).strip()
        confidence = float(data["conf"][i])
        if not word or confidence < 0:
            continue
        key = (int(data["block_num"][i]), int(data["par_num"][i]), int(data["line_num"][i]))
        lines.setdefault(key, []).append(word)
        confidences.append(confidence)
    return tuple(" ".join(words) for words in lines.values()), confidences


def _brief(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return text if len(text) <= 100 else text[:99] + "…"


# --- the PDF loader's side --------------------------------------------------------


@dataclass(frozen=True)
class ScannedPages:
    """What OCR made of a PDF's pages without a text layer.

    `texts` is the text per page with each page OCR read filled in; `unread` the pages
    still without text; `advice` what to do about those, for the loader's finding; and
    `findings` the `pdf-ocr` REVIEW finding when any page was read.
    """

    texts: list[str]
    unread: list[int]
    advice: str
    findings: list[Finding]


def read_scanned(
    path: Path,
    doc_id: str,
    texts: Sequence[str],
    scanned: Sequence[int],
    *,
    enabled: bool,
    budget: OcrBudget | None = None,
) -> ScannedPages:
    """Read the 1-based `scanned` pages of `path` by OCR when `enabled` and OCR can run,
    within `budget` (the defaults when None)."""
    texts = list(texts)
    everything = not any(t.strip() for t in texts)
    if not scanned:
        return ScannedPages(texts, [], OCR_ELSEWHERE, [])
    if not enabled:
        advice = f"OCR is off (--no-ocr): drop --no-ocr to read them, or {OCR_ELSEWHERE}"
        return ScannedPages(texts, list(scanned), advice, [])
    reason = unavailable()
    if reason is not None:
        rest = f", or {OCR_ELSEWHERE}" if everything else " or pass --no-ocr"
        return ScannedPages(texts, list(scanned), reason + rest, [])
    budget = budget or OcrBudget()
    read = read_pages(path, scanned, budget=budget)
    done = [p for p in read if p.lines]
    for page in done:
        texts[page.page - 1] = page.text
    unread = [p.page for p in read if not p.lines]
    late = [p.page for p in read if p.problem == OUT_OF_TIME]
    failed = [p for p in read if p.problem and p.problem != OUT_OF_TIME]
    if late:
        spent = sum(p.seconds for p in read)
        advice = (
            f"OCR stopped after {spent:.0f} s, at {budget.limit_reached(spent)}, with "
            f"{pages_named(late)} not read: raise that limit (0 for none), or {OCR_ELSEWHERE}"
        )
    elif failed:
        advice = f"OCR failed on page {failed[0].page} ({failed[0].problem}); {OCR_ELSEWHERE}"
    else:
        advice = f"OCR read no words there (blank, or a picture?); {OCR_ELSEWHERE}"
    findings = [_ocr_finding(path, doc_id, done)] if done else []
    return ScannedPages(texts, unread, advice, findings)


def _ocr_finding(path: Path, doc_id: str, done: Sequence[PageText]) -> Finding:
    """One REVIEW finding naming the pages read by OCR and how sure it was of them."""
    words = sum(p.words for p in done)
    mean = sum(p.confidence * p.words for p in done) / words if words else 0.0
    numbers = _listed([str(p.page) for p in done])
    pages = f"page {numbers}" if len(done) == 1 else f"pages {numbers}"
    low = [str(p.page) for p in done if p.confidence < LOW_CONFIDENCE]
    check = (
        f"; under {LOW_CONFIDENCE:.0f}% on page(s) {_listed(low)}: compare them with the scan"
        if low
        else "; check the text against the scan where a figure matters"
    )
    return Finding(
        severity="REVIEW",
        check="pdf-ocr",
        message=(
            f"{path.name}: read {pages} by OCR (no text layer), "
            f"mean word confidence {mean:.0f}%{check}"
        ),
        source=source_of(path),
        doc_id=doc_id,
        excerpt=_listed(
            [f"page {p.page}: {p.confidence:.0f}% of {p.words} words" for p in done], "; "
        ),
    )


def _listed(items: Sequence[str], separator: str = ", ") -> str:
    """The first LISTED items joined, and how many more there are."""
    more = f" and {len(items) - LISTED} more" if len(items) > LISTED else ""
    return separator.join(items[:LISTED]) + more
