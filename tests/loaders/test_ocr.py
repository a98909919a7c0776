"""OCR of scanned PDF pages: image-only PDFs made here (text drawn into a bitmap with
Pillow), read back by the real loader through the real PDFium and Tesseract."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from fpdf import FPDF
from PIL import Image, ImageDraw, ImageFont
from pytest import approx

from groundqa.chunking import ChunkerSettings, chunk_documents
from groundqa.errors import UsageError
from groundqa.index.open import open_store
from groundqa.ingestion import ingest
from groundqa.loaders import load, load_pdf
from groundqa.loaders._common import pages_named
from groundqa.loaders.ocr import (
    MAX_IMAGE_PIXELS,
    OcrBudget,
    read_pages,
    unavailable,
    words_to_lines,
)
from groundqa.models import Document, Finding
from tests.conftest import ROOT, need_shared, write_small_corpus
from tests.pdfgen import _assemble

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="needs the tesseract binary (apt-get install tesseract-ocr) to read scanned pages",
)
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
DPI = 150
SCANNED = (
    "No person shall cause or permit a vehicle to idle",
    "for more than three minutes in any sixty minute",
    "period, except where the outside temperature is",
    "below five degrees Celsius.",
)
SCANNED_PHRASE = "idle for more than three minutes in any sixty minute period"
TYPED = (
    "This by-law applies to every street, lane and parking area in the town. It may be "
    "cited as the Clean Air By-law, and it comes into force on the day it is passed."
)
MISSING_TESSERACT = (
    "OCR is not available (tesseract not found): "
    "install tesseract-ocr (apt-get install tesseract-ocr) or pass --no-ocr"
)


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    if FONT.exists():
        return ImageFont.truetype(str(FONT), size)
    return ImageFont.load_default(size=size)


def scan_image(lines: tuple[str, ...] = SCANNED) -> Image.Image:
    """A letter-size page at 150 dpi with `lines` typed on it in a large clear font."""
    image = Image.new("L", (int(8.5 * DPI), 11 * DPI), 255)
    draw = ImageDraw.Draw(image)
    font = _font(34)
    for i, line in enumerate(lines):
        draw.text((110, 160 + 62 * i), line, fill=0, font=font)
    return image


def write_scan(path: Path, pages: int = 1) -> Path:
    """An image-only PDF: every page a bitmap, no text layer (what a plain scanner writes)."""
    images = [scan_image() for _ in range(pages)]
    images[0].save(path, "PDF", resolution=DPI, save_all=True, append_images=images[1:])
    return path


def write_mixed(path: Path) -> Path:
    """Page 1 typed (a text layer), page 2 scanned (an image only)."""
    pdf = FPDF(format="letter")
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 6, TYPED)
    pdf.add_page()
    pdf.image(scan_image(), x=0, y=0, w=pdf.w, h=pdf.h)
    pdf.output(str(path))
    return path


def words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def text_of(doc: Document) -> str:
    return words(" ".join(s.text for s in doc.sections))


def only(findings: list[Finding] | tuple[Finding, ...], check: str) -> Finding:
    (found,) = [f for f in findings if f.check == check]
    return found


def confidence(finding: Finding) -> int:
    match = re.search(r"mean word confidence (\d+)%", finding.message)
    assert match is not None, finding.message
    return int(match.group(1))


@needs_tesseract
def test_a_scanned_pdf_is_read_and_the_page_named_with_its_confidence(tmp_path: Path) -> None:
    (doc,), findings = load_pdf(write_scan(tmp_path / "idling.pdf"))
    assert words(SCANNED_PHRASE) in text_of(doc)
    assert [s.page for s in doc.sections] == [1]
    finding = only(findings, "pdf-ocr")
    assert finding.severity == "REVIEW"
    assert "idling.pdf: read page 1 by OCR (no text layer)" in finding.message
    assert confidence(finding) >= 80
    assert re.fullmatch(r"page 1: \d+% of \d+ words", finding.excerpt)
    assert not [f for f in findings if f.check == "pdf-no-text"]


@needs_tesseract
def test_ocr_comes_back_as_lines_with_word_confidences(tmp_path: Path) -> None:
    (page,) = read_pages(write_scan(tmp_path / "idling.pdf"), [1])
    assert page.problem == ""
    assert len(page.lines) == len(SCANNED)
    assert [words(line) for line in page.lines] == [words(line) for line in SCANNED]
    assert page.words == sum(len(line.split()) for line in SCANNED)
    assert 80 <= page.confidence <= 100


@needs_tesseract
def test_a_two_column_scan_is_read_one_column_after_the_other(tmp_path: Path) -> None:
    # Tesseract tells columns apart from a few lines on: three lines side by side read as
    # a table, across.
    left = (
        "Fees are paid each quarter",
        "within thirty days of the",
        "invoice date, by transfer",
        "or by cheque to the town",
        "treasurer, who keeps the",
        "register of payments.",
    )
    right = (
        "A permit may be suspended",
        "for arrears of more than",
        "two quarters, and it ends",
        "when the holder sells the",
        "vehicle or moves out of",
        "the town for good.",
    )
    image = Image.new("L", (int(8.5 * DPI), 11 * DPI), 255)
    draw = ImageDraw.Draw(image)
    for i, (a, b) in enumerate(zip(left, right, strict=True)):
        draw.text((80, 160 + 50 * i), a, fill=0, font=_font(26))
        draw.text((680, 160 + 50 * i), b, fill=0, font=_font(26))
    image.save(tmp_path / "columns.pdf", "PDF", resolution=DPI)
    (doc,), _ = load_pdf(tmp_path / "columns.pdf")
    assert text_of(doc) == words(" ".join((*left, *right)))


def test_words_become_lines_in_reading_order_without_empty_rows() -> None:
    data = {
        "text": ["", "", "Fees", "apply", " ", "", "Schedule", "1"],
        "conf": [-1, -1, 96.5, 91.0, 12.0, -1, 88.0, 70.0],
        "block_num": [0, 1, 1, 1, 1, 2, 2, 2],
        "par_num": [0, 0, 1, 1, 1, 0, 1, 1],
        "line_num": [0, 0, 1, 1, 1, 0, 1, 1],
    }
    lines, confidences = words_to_lines(data)
    assert lines == ("Fees apply", "Schedule 1")
    assert confidences == [96.5, 91.0, 88.0, 70.0]


def test_with_ocr_off_an_image_only_pdf_blocks_and_says_how_to_turn_it_on(
    tmp_path: Path,
) -> None:
    documents, (finding,) = load_pdf(write_scan(tmp_path / "scan.pdf", pages=2), ocr=False)
    assert documents == []
    assert (finding.severity, finding.check) == ("BLOCK", "pdf-no-text")
    assert "no text layer on any of its 2 page(s)" in finding.message
    assert "OCR is off (--no-ocr): drop --no-ocr to read them" in finding.message


def test_with_ocr_off_a_scanned_page_among_typed_ones_is_reported(tmp_path: Path) -> None:
    (doc,), findings = load_pdf(write_mixed(tmp_path / "mixed.pdf"), ocr=False)
    assert text_of(doc) == words(TYPED)
    (finding,) = findings
    assert (finding.severity, finding.check) == ("REVIEW", "pdf-no-text")
    assert "mixed.pdf: page 2 has no text layer (scanned?); OCR is off" in finding.message


def test_without_tesseract_the_finding_says_how_to_install_it_and_nothing_else_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytesseract

    monkeypatch.setattr(pytesseract.pytesseract, "tesseract_cmd", str(tmp_path / "no-tesseract"))
    assert unavailable() == MISSING_TESSERACT.removesuffix(" or pass --no-ocr")
    corpus = write_small_corpus(tmp_path / "corpus")
    write_mixed(corpus / "mixed.pdf")
    write_scan(corpus / "scan.pdf")
    loaded = load([corpus])
    assert sorted(d.doc_id for d in loaded.documents) == [
        "alderby.md",
        "bramblecote.md",
        "mixed.pdf",
    ]
    (mixed,) = [d for d in loaded.documents if d.doc_id == "mixed.pdf"]
    assert text_of(mixed) == words(TYPED)
    blocked, review = sorted(
        (f for f in loaded.findings if f.check == "pdf-no-text"), key=lambda f: f.severity
    )
    assert (review.severity, blocked.severity) == ("REVIEW", "BLOCK")
    assert review.message == f"mixed.pdf: page 2 has no text layer (scanned?); {MISSING_TESSERACT}"
    assert blocked.source.endswith("scan.pdf")
    assert "tesseract not found" in blocked.message and "ocrmypdf" in blocked.message
    assert not [f for f in loaded.findings if f.check == "pdf-ocr"]


@needs_tesseract
def test_a_mixed_pdf_is_indexed_with_each_page_where_it_is(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_mixed(corpus / "mixed.pdf")
    # Short chunks, so that each page's paragraph is a chunk of its own.
    settings = ChunkerSettings(max_chars=200, overlap_chars=0)
    report = ingest([corpus], tmp_path / "index", dense=None, chunker=settings)
    assert [f.check for f in report.findings] == ["pdf-ocr"]
    assert "read page 2 by OCR" in report.findings[0].message
    store = open_store(tmp_path / "index")
    assert store.manifest.corpus["ocr"] is True
    pages = {words(c.text): c.page for c in store.chunks}
    typed = next(p for text, p in pages.items() if words(TYPED)[:40] in text)
    scanned = next(p for text, p in pages.items() if words(SCANNED_PHRASE) in text)
    assert (typed, scanned) == (1, 2)
    (doc,), _ = load_pdf(corpus / "mixed.pdf")
    chunk = next(c for c in chunk_documents([doc], settings) if c.page == 2)
    assert chunk.uri.endswith("mixed.pdf#page=2")


def groundqa(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groundqa.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_ingest_no_ocr_reports_the_scanned_page_and_indexes_the_rest(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_mixed(corpus / "mixed.pdf")
    proc = groundqa(
        "ingest", corpus, "--index", tmp_path / "index", "--no-dense", "--no-ocr", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    (finding,) = report["findings"]
    assert (finding["severity"], finding["check"]) == ("REVIEW", "pdf-no-text")
    assert "page 2 has no text layer" in finding["message"]
    store = open_store(tmp_path / "index")
    assert store.manifest.corpus["ocr"] is False
    assert {c.page for c in store.chunks} == {1}


def test_cli_validate_no_ocr_blocks_an_image_only_pdf(tmp_path: Path) -> None:
    scan = write_scan(tmp_path / "scan.pdf")
    proc = groundqa("validate", scan, "--no-ocr", "--json")
    assert proc.returncode == 1, proc.stderr
    (finding,) = json.loads(proc.stdout)["findings"]
    assert (finding["severity"], finding["check"]) == ("BLOCK", "pdf-no-text")
    assert "--no-ocr" in finding["message"]


@needs_tesseract
def test_cli_validate_reads_an_image_only_pdf_by_default(tmp_path: Path) -> None:
    proc = groundqa("validate", write_scan(tmp_path / "scan.pdf"), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["ok"] is True and result["documents"] == 1
    assert [f["check"] for f in result["findings"]] == ["pdf-ocr"]


@pytest.mark.slow  # in `make test-slow`, which CI runs
@pytest.mark.shared
@needs_tesseract
def test_the_coventry_scan_is_read_on_all_four_pages() -> None:
    scan = need_shared(
        "corpora", "real_docs", "coventry_article4_direction_stoneleigh_road_scanned.pdf"
    )
    (doc,), findings = load_pdf(scan)
    finding = only(findings, "pdf-ocr")
    assert "read pages 1, 2, 3, 4 by OCR" in finding.message
    assert confidence(finding) >= 70
    pages = {page for s in doc.sections for _, page in s.page_starts}
    assert pages == {1, 2, 3, 4}
    assert "stoneleigh road" in text_of(doc)
    assert not [f for f in findings if f.check == "pdf-no-text"]


@pytest.mark.shared
def test_a_scan_that_already_has_an_ocr_text_layer_is_not_read_again() -> None:
    scan = need_shared("corpora", "real_docs", "whitby_anti_idling_bylaw_6489-11_ocr_scan.pdf")
    (doc,), findings = load_pdf(scan)
    assert not [f for f in findings if f.check in {"pdf-ocr", "pdf-no-text"}]
    assert "idl" in text_of(doc)


# ------------------------------------------------------------ the benchmark's measure


def bench_ocr() -> ModuleType:
    sys.path.insert(0, str(ROOT / "bench"))
    return importlib.import_module("ocr")


def test_word_accuracy_is_one_minus_the_word_error_rate() -> None:
    bench = bench_ocr()
    ref = bench.word_hashes
    assert bench.word_accuracy(ref("The cat sat on the mat."), "the cat sat on mat") == approx(
        5 / 6
    )
    assert bench.word_accuracy(ref("a b c"), "c b a") == approx(1 / 3)
    assert bench.bag_accuracy(ref("a b c"), "c b a") == 1.0
    assert bench.bag_accuracy(ref("the the end"), "the end") == approx(2 / 3)
    assert bench.word_accuracy(ref("one two"), "") == 0.0


def write_image_bomb(path: Path, side: int) -> Path:
    """One page drawing a `side` x `side` grey image that is all zeros: a few hundred KB
    of PDF that decodes to `side`² bytes."""
    deflate = zlib.compressobj(9)
    chunk = bytes(1 << 22)
    left = side * side
    data = b""
    while left:
        data += deflate.compress(chunk[: min(left, len(chunk))])
        left -= min(left, len(chunk))
    data += deflate.flush()
    image = (
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /BitsPerComponent 8 "
        b"/ColorSpace /DeviceGray /Filter /FlateDecode /Length %d >>\nstream\n"
        % (side, side, len(data))
        + data
        + b"\nendstream"
    )
    content = b"q 595 0 0 842 0 0 cm /Im1 Do Q"
    path.write_bytes(
        _assemble(
            [
                b"<< /Type /Catalog /Pages 2 0 R >>",
                b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R "
                b"/Resources << /XObject << /Im1 5 0 R >> >> >>",
                b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
                image,
            ]
        )
    )
    return path


@needs_tesseract
def test_a_page_whose_images_decode_to_too_many_pixels_is_named_not_rendered(
    tmp_path: Path,
) -> None:
    side = int(MAX_IMAGE_PIXELS**0.5) + 100
    documents, (finding,) = load_pdf(write_image_bomb(tmp_path / "bomb.pdf", side))
    assert documents == []
    assert (finding.severity, finding.check) == ("BLOCK", "pdf-no-text")
    assert f"OCR failed on page 1 (its images come to {side * side / 1e6:,.0f} million" in (
        finding.message
    )


# ------------------------------------------------------------ the OCR time budget


def speckle_image(density: float = 0.05, seed: int = 7) -> Image.Image:
    """A letter-size page at 150 dpi of sparse black speckle: Tesseract looks for text in
    it for most of a minute and finds none."""
    rng = np.random.default_rng(seed)
    pixels = (rng.random((11 * DPI, int(8.5 * DPI))) >= density) * 255
    return Image.fromarray(pixels.astype("uint8"), "L").convert("1")


def write_scan_then_speckle(path: Path, speckled: int = 3) -> Path:
    """Page 1 a clear scan, then `speckled` pages of speckle; no text layer anywhere."""
    first, rest = scan_image(), [speckle_image(seed=n) for n in range(speckled)]
    first.save(path, "PDF", resolution=DPI, save_all=True, append_images=rest)
    return path


class Heard:
    """A Reporter that keeps what it is told."""

    def __init__(self) -> None:
        self.said: list[tuple[str, int | None]] = []

    def stage(self, name: str, total: int | None = None) -> None:
        self.said.append((name, total))

    def advance(self, n: int = 1) -> None:
        self.said.append(("+", n))


def test_pages_are_named_in_runs_and_the_rest_counted() -> None:
    assert pages_named([3]) == "page 3"
    assert pages_named([3, 4]) == "pages 3, 4"
    assert pages_named([2, 3, 4, 9, 11, 12, 13]) == "pages 2-4, 9, 11-13"
    assert pages_named(list(range(2, 5000))) == "pages 2-4999"
    assert pages_named(list(range(1, 60, 2)), most=3) == "pages 1, 3, 5 and 27 more"


def test_a_budget_is_a_number_of_seconds_or_none() -> None:
    assert OcrBudget(0, 0).left(1e9) == float("inf")
    budget = OcrBudget(10, 30)
    budget.spent_s = 25
    assert budget.left(2) == 5  # the load's 30 s run out before this file's 10 s
    assert "--ocr-build-budget" in budget.limit_reached(2)
    assert "--ocr-budget" in OcrBudget(10, 30).limit_reached(10)
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(UsageError, match="--ocr-budget"):
            OcrBudget(bad, 30)


@needs_tesseract
def test_ocr_stops_at_the_file_budget_and_names_the_pages_it_left(tmp_path: Path) -> None:
    budget = OcrBudget(file_s=8, build_s=0)
    (doc,), findings = load_pdf(write_scan_then_speckle(tmp_path / "scan.pdf"), ocr_budget=budget)
    assert words(SCANNED_PHRASE) in text_of(doc)
    assert "read page 1 by OCR" in only(findings, "pdf-ocr").message
    late = only(findings, "pdf-no-text")
    assert late.severity == "REVIEW"
    assert re.search(
        r"pages 2-4 have no text layer \(scanned\?\); OCR stopped after \d+ s, at the 8 s "
        r"allowed for one file \(--ocr-budget\), with pages 2-4 not read: raise that limit",
        late.message,
    ), late.message
    # Tesseract is stopped when the time runs out, not left to finish its page.
    assert 8 <= budget.spent_s < 11


@needs_tesseract
def test_one_budget_serves_a_whole_load_and_a_spent_one_reads_nothing_more(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "notes.md").write_text("# Notes\n\n## Ferry\n\n" + TYPED + "\n")
    write_scan(corpus / "a.pdf")
    write_scan(corpus / "b.pdf")
    heard: list[tuple[str, int, int]] = []
    budget = OcrBudget(file_s=0, build_s=600, progress=lambda *p: heard.append(p))
    budget.spent_s = 600  # as if earlier files had used it all
    loaded = load([corpus], ocr_budget=budget)
    assert [d.doc_id for d in loaded.documents] == ["notes.md"]
    blocks = sorted(f.message for f in loaded.findings if f.check == "pdf-no-text")
    assert len(blocks) == 2
    for message in blocks:
        assert "OCR stopped after 0 s, at the 600 s allowed for the whole load" in message
        assert "(--ocr-build-budget), with page 1 not read" in message
    assert budget.spent_s == 600  # no page was given to Tesseract
    assert heard == [("a.pdf", 0, 1), ("a.pdf", 1, 1), ("b.pdf", 0, 1), ("b.pdf", 1, 1)]


@needs_tesseract
def test_ingest_shows_ocr_page_by_page_and_keeps_its_budget_in_the_manifest(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_scan(corpus / "idling.pdf", pages=2)
    heard = Heard()
    ingest([corpus], tmp_path / "idx", reporter=heard, ocr_budget=OcrBudget(120, 600))
    at = heard.said.index(("OCR idling.pdf", 2))
    assert heard.said[at + 1 : at + 4] == [("+", 1), ("+", 1), ("loading", None)]
    assert open_store(tmp_path / "idx").manifest.corpus["ocr_budget"] == [120, 600]


@needs_tesseract
def test_cli_takes_the_ocr_budget_and_refuses_one_that_is_not_a_number_of_seconds(
    tmp_path: Path,
) -> None:
    scan = write_scan_then_speckle(tmp_path / "scan.pdf", speckled=2)
    proc = groundqa("validate", scan, "--ocr-budget", "6", "--json")
    assert proc.returncode == 0, proc.stderr
    (late,) = [f for f in json.loads(proc.stdout)["findings"] if f["check"] == "pdf-no-text"]
    assert (
        "at the 6 s allowed for one file (--ocr-budget), with pages 2, 3 not read"
        in (late["message"])
    )
    for bad in ("nan", "-1"):
        proc = groundqa("ingest", scan, "--index", tmp_path / "idx", "--ocr-budget", bad)
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr and "--ocr-budget" in proc.stderr
        assert not (tmp_path / "idx").exists()
