"""OCR of scanned pages, on real scans nobody here made.

Two files from ../shared/corpora/real_docs (PROVENANCE.md there says where they come from):

- coventry_article4_direction_stoneleigh_road_scanned.pdf: 4 typewritten pages as images,
  no text layer. Page 1 is compared word for word with a transcription made by hand
  (bench/real_docs.ocr_reference.json, kept as word hashes: see bench/_ocr_reference.py).
- whitby_anti_idling_bylaw_6489-11_ocr_scan.pdf: a scan that already carries a text layer
  from the scanner's OCR; it must load without being read again.

Measured:

- word accuracy of page 1 = 1 - word error rate: the word-level Levenshtein distance
  between the transcription and the OCR text over the transcription's length, case
  ignored and punctuation dropped, for each Tesseract page segmentation mode tried (the
  loader uses the best), and for the loader's own text of page 1 (after its cleaning);
  the same in any order (bag of words), which separates reading errors from reading order;
- reading order: word accuracy on a two-column page drawn here (DejaVu Serif, 300 dpi),
  for each mode, since a mode that assumes one column reads across both;
- the mean word confidence Tesseract gives, and the OCR seconds per page;
- the baseline: pypdf's text layer, which is empty on every page of the scan.

    python bench/ocr.py   # prints the figures as JSON and a Markdown table
"""

from __future__ import annotations

import itertools
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine, shared_path
from _ocr_reference import bag_accuracy, load_reference, word_accuracy, word_hashes
from groundqa.loaders import load_pdf
from groundqa.loaders.ocr import PAGE_SEGMENTATION, read_pages, unavailable
from groundqa.models import Document

REFERENCE = ROOT / "bench" / "real_docs.ocr_reference.json"
SCAN = "coventry_article4_direction_stoneleigh_road_scanned.pdf"
TEXT_LAYER_SCAN = "whitby_anti_idling_bylaw_6489-11_ocr_scan.pdf"
# Tesseract page segmentation modes: 3 automatic layout, 4 one column of text of
# varying sizes, 6 one uniform block of text, 11 sparse text in no particular order.
MODES = (3, 4, 6, 11)


def reference_words() -> list[str]:
    found = load_reference(REFERENCE)
    if found is None:
        raise FileNotFoundError(f"{REFERENCE} is missing")
    return found[2]


def page_text(doc: Document, page: int) -> str:
    """The loader's text of one page, cut from its sections by their page starts."""
    parts = []
    for section in doc.sections:
        starts = [*section.page_starts, (len(section.text), -1)]
        for (start, number), (end, _) in itertools.pairwise(starts):
            if number == page:
                parts.append(section.text[start:end])
    return "\n".join(parts)


def modes(scan: Path, reference: Sequence[str]) -> list[dict[str, Any]]:
    rows = []
    for psm in MODES:
        (page,) = read_pages(scan, [1], psm=psm)
        rows.append(
            {
                "psm": psm,
                "word_accuracy": round(word_accuracy(reference, page.text), 4),
                "bag_accuracy": round(bag_accuracy(reference, page.text), 4),
                "confidence": round(page.confidence, 1),
                "seconds": round(page.seconds, 2),
            }
        )
    return rows


# Six lines a column: with only three or four, Tesseract reads the two as a table, across.
LEFT = (
    "The permit holder must keep",
    "records of every load for",
    "five years and show them",
    "to an inspector on request.",
    "A record names the driver,",
    "the vehicle and the route.",
)
RIGHT = (
    "Fees are paid each quarter",
    "within thirty days of the",
    "invoice date; a late fee of",
    "ten percent applies after",
    "that, and a permit may be",
    "suspended for arrears.",
)


def two_columns(folder: Path) -> dict[int, float]:
    """Word accuracy per mode on a page of two columns, read left column first."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype("DejaVuSerif.ttf", 30)
    image = Image.new("L", (2550, 3300), 255)
    draw = ImageDraw.Draw(image)
    for i, (left, right) in enumerate(zip(LEFT, RIGHT, strict=True)):
        draw.text((200, 400 + 60 * i), left, font=font, fill=0)
        draw.text((1350, 400 + 60 * i), right, font=font, fill=0)
    path = folder / "two-columns.pdf"
    image.save(path, "PDF", resolution=300)
    reference = word_hashes(" ".join((*LEFT, *RIGHT)))
    return {
        psm: round(word_accuracy(reference, read_pages(path, [1], psm=psm)[0].text), 4)
        for psm in MODES
    }


def whole_scan(scan: Path, reference: Sequence[str]) -> dict[str, Any]:
    started = time.perf_counter()
    (doc,), findings = load_pdf(scan)
    seconds = time.perf_counter() - started
    (ocr,) = [f for f in findings if f.check == "pdf-ocr"]
    first = page_text(doc, 1)
    return {
        "load_seconds": round(seconds, 2),
        "seconds_per_page": round(seconds / 4, 2),
        "finding": ocr.message,
        "pages": ocr.excerpt,
        "loader_page1_word_accuracy": round(word_accuracy(reference, first), 4),
        "loader_page1_bag_accuracy": round(bag_accuracy(reference, first), 4),
    }


def text_layer_scan(scan: Path) -> dict[str, Any]:
    started = time.perf_counter()
    documents, findings = load_pdf(scan)
    return {
        "load_seconds": round(time.perf_counter() - started, 2),
        "documents": len(documents),
        "read_by_ocr": any(f.check == "pdf-ocr" for f in findings),
        "checks": sorted({f.check for f in findings}),
    }


def baseline(scan: Path) -> int:
    """Characters in pypdf's text layer over the whole scan."""
    from pypdf import PdfReader

    return sum(len((p.extract_text() or "").strip()) for p in PdfReader(scan).pages)


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "| psm | page 1 word accuracy | any order | two columns | mean confidence | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for row in data["modes"]:
        chosen = " (used)" if row["psm"] == PAGE_SEGMENTATION else ""
        lines.append(
            f"| {row['psm']}{chosen} | {row['word_accuracy']:.1%} | {row['bag_accuracy']:.1%} "
            f"| {data['two_columns'][row['psm']]:.1%} "
            f"| {row['confidence']:.1f} | {row['seconds']:.1f} |"
        )
    scan = data["scan"]
    lines += [
        "",
        f"Loader, page 1 after cleaning: word accuracy {scan['loader_page1_word_accuracy']:.1%} "
        f"({scan['loader_page1_bag_accuracy']:.1%} in any order); all 4 pages in "
        f"{scan['load_seconds']:.1f} s ({scan['seconds_per_page']:.1f} s a page); {scan['pages']}.",
        f"Baseline (pypdf text layer): {data['baseline_chars']} characters on 4 pages.",
        f"Scan with a text layer: read by OCR again: {data['text_layer_scan']['read_by_ocr']}.",
    ]
    return "\n".join(lines)


def run() -> dict[str, Any] | None:
    reason = unavailable()
    if reason is not None:
        print(f"skipped: {reason}", file=sys.stderr)
        return None
    scan = shared_path("corpora", "real_docs", SCAN)
    layered = shared_path("corpora", "real_docs", TEXT_LAYER_SCAN)
    if scan is None or layered is None:
        return None
    reference = reference_words()
    with tempfile.TemporaryDirectory() as folder:
        columns = two_columns(Path(folder))
    data = {
        "machine": machine(),
        "reference_words": len(reference),
        "modes": modes(scan, reference),
        "two_columns": columns,
        "scan": whole_scan(scan, reference),
        "text_layer_scan": text_layer_scan(layered),
        "baseline_chars": baseline(scan),
    }
    print(json.dumps(data, indent=2))
    print(markdown(data))
    return data


if __name__ == "__main__":
    run()
