"""PDF ingestion on the example corpus rendered as PDFs, against pypdf's bare text.

The twenty Markdown files of `examples/regpack` are laid out as PDFs by
`tests/pdfgen.py` (fpdf2, Helvetica, a running header with the title and a "Page N
of M" footer on every page) in three variants: with an outline (bookmarks), without
one (headings are found from their numbers), and without one with long words
hyphenated at line ends. The generator records the page every line of every
paragraph landed on, which is the ground truth here. Beside them, a 2,000-page
register (tests/pdfgen.py `write_pages`) for throughput at length.

Measured, per variant:

- pages per second of `load_pdf` (read, clean, cut into sections) against the
  baseline, pypdf's `extract_text()` over every page with no cleaning at all;
  median of 3 rounds;
- the share of chunks (`chunk_documents`, default ChunkerSettings) whose page is the
  page where the chunk's text starts (target 100%);
- running header and footer lines left in chunk text (target 0; the baseline's
  page texts for comparison);
- sections found against the Markdown source's `##` sections;
- words: recall (the source paragraphs' words found in order in the loaded text,
  difflib matching blocks) and precision (the loaded words that are those): what
  header removal and hyphen repair give back, against the baseline's page text.

    python bench/pdf.py   # (part of `make bench`)
"""

from __future__ import annotations

import difflib
import re
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, WORK, machine, write_result
from report import pct

sys.path.insert(0, str(ROOT))  # tests/pdfgen.py renders the PDFs

from tests.pdfgen import Rendered, render_corpus, write_pages

from groundqa.chunking import ChunkerSettings, chunk_documents
from groundqa.loaders import load_markdown, load_pdf
from groundqa.models import Document

PDF_WORK = WORK / "pdf"
REGPACK = ROOT / "examples" / "regpack"
ROUNDS = 3
LONG_PAGES = 2000
VARIANTS = {
    "outline": {"outline": True},
    "no outline": {"outline": False},
    "no outline, hyphenated": {"outline": False, "hyphenate": True},
}
FOOTER = re.compile(r"Page \d+ of \d+")


def _baseline_texts(path: Path) -> list[str]:
    """The named baseline: pypdf's text for every page, as it comes."""
    from pypdf import PdfReader

    return [page.extract_text() for page in PdfReader(path).pages]


def _median_seconds(paths: list[Path]) -> tuple[float, float]:
    """(load_pdf, baseline) seconds over `paths`, each the median of ROUNDS rounds.

    The two alternate within a round, so a neighbour's load on a shared machine
    falls on both.
    """
    ours, base = [], []
    for _ in range(ROUNDS):
        for fn, times in ((load_pdf, ours), (_baseline_texts, base)):
            started = time.perf_counter()
            for path in paths:
                fn(path)
            times.append(time.perf_counter() - started)
    return statistics.median(ours), statistics.median(base)


def _words(source: str, got: str) -> tuple[float, float]:
    """(recall, precision): the share of `source`'s words found in `got` in order, and
    the share of `got`'s words that are those."""
    a, b = source.split(), got.split()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    matched = sum(block.size for block in matcher.get_matching_blocks())
    return matched / max(1, len(a)), matched / max(1, len(b))


def _furniture_lines(r: Rendered, text: str) -> int:
    return text.count(r.header) + len(FOOTER.findall(text))


def variant(name: str, options: dict[str, bool]) -> dict[str, Any]:
    folder = PDF_WORK / re.sub(r"\W+", "-", name)
    shutil.rmtree(folder, ignore_errors=True)
    rendered = render_corpus(REGPACK, folder, **options)
    paths = [r.path for r in rendered]
    pages = sum(r.pages for r in rendered)
    ours_s, base_s = _median_seconds(paths)

    on_page = chunks_total = left = base_left = found = expected = extra = 0
    words_ours: list[tuple[float, float]] = []
    words_base: list[tuple[float, float]] = []
    for r in rendered:
        documents, _ = load_pdf(r.path)
        (doc,) = documents
        for chunk in chunk_documents([doc], ChunkerSettings()):
            chunks_total += 1
            on_page += chunk.page == r.page_at(chunk.text[:60])
            left += _furniture_lines(r, chunk.text)
        baseline = "\n".join(_baseline_texts(r.path))
        base_left += _furniture_lines(r, baseline)
        source = " ".join(p.text for p in r.paragraphs)
        words_ours.append(_words(source, _body_text(doc)))
        words_base.append(_words(source, baseline))
        markdown = {s.heading for s in _markdown_sections(REGPACK / f"{r.path.stem}.md")}
        headed = {s.heading for s in doc.sections if s.heading}
        expected += len(markdown)
        found += len(markdown & headed)
        extra += len(headed - markdown)
    return {
        "pdfs": len(rendered),
        "pages": pages,
        "load_pdf_s": round(ours_s, 3),
        "baseline_s": round(base_s, 3),
        "load_pdf_pages_per_s": round(pages / ours_s, 1),
        "baseline_pages_per_s": round(pages / base_s, 1),
        "chunks": chunks_total,
        "chunks_on_right_page": on_page,
        "furniture_left": left,
        "baseline_furniture": base_left,
        "sections_expected": expected,
        "sections_found": found,
        "sections_extra": extra,
        "words_recall": round(statistics.fmean(w[0] for w in words_ours), 4),
        "words_precision": round(statistics.fmean(w[1] for w in words_ours), 4),
        "baseline_words_recall": round(statistics.fmean(w[0] for w in words_base), 4),
        "baseline_words_precision": round(statistics.fmean(w[1] for w in words_base), 4),
        "hyphenated_words": sum(len(r.hyphenated) for r in rendered),
    }


def _body_text(doc: Document) -> str:
    return " ".join(s.text for s in doc.sections)


def _markdown_sections(path: Path) -> list[Any]:
    (doc,), _ = load_markdown(path)
    return list(doc.sections)


def long_register() -> dict[str, Any]:
    path = write_pages(PDF_WORK / "register.pdf", LONG_PAGES)
    ours_s, base_s = _median_seconds([path])
    (doc,), _ = load_pdf(path)
    pages = [p for s in doc.sections for _, p in s.page_starts]
    return {
        "pages": LONG_PAGES,
        "load_pdf_s": round(ours_s, 2),
        "baseline_s": round(base_s, 2),
        "load_pdf_pages_per_s": round(LONG_PAGES / ours_s, 1),
        "baseline_pages_per_s": round(LONG_PAGES / base_s, 1),
        "every_page_kept": pages == list(range(1, LONG_PAGES + 1)),
    }


def markdown(data: dict[str, Any]) -> str:
    rows = []
    for name, v in data["variants"].items():
        rows.append(
            f"| {name} | {v['pdfs']} / {v['pages']} | {v['load_pdf_pages_per_s']:.0f} "
            f"| {v['baseline_pages_per_s']:.0f} "
            f"| {pct(v['chunks_on_right_page'] / v['chunks'] if v['chunks'] else None)} "
            f"({v['chunks_on_right_page']}/{v['chunks']}) "
            f"| {v['furniture_left']} (baseline {v['baseline_furniture']}) "
            f"| {v['sections_found']}/{v['sections_expected']} (+{v['sections_extra']}) "
            f"| {pct(v['words_recall'])} / {pct(v['words_precision'])} "
            f"| {pct(v['baseline_words_recall'])} / {pct(v['baseline_words_precision'])} |"
        )
    long = data["long"]
    hyphenated = data["variants"]["no outline, hyphenated"]["hyphenated_words"]
    kept = "every page kept" if long["every_page_kept"] else "PAGES LOST"
    return f"""## PDF ingestion: the example corpus as PDFs

`examples/regpack` (20 Markdown files) rendered by `tests/pdfgen.py` with a running header
and a "Page N of M" footer on every page; {data["machine"]["cpus"]} CPUs; `python bench/pdf.py`.
Baseline: pypdf `extract_text()` on every page, no cleaning. Speeds are the median of
{ROUNDS} rounds. The ground truth for pages is where the generator drew each line.

| variant | PDFs / pages | `load_pdf` pages/s | baseline pages/s | chunks on the right page | header/footer lines left | sections found / Markdown (+extra) | words recall / precision | baseline recall / precision |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
{chr(10).join(rows)}

A 2,000-page register (running header, footer, four lines a page): `load_pdf` takes
{long["load_pdf_s"]:.2f} s ({long["load_pdf_pages_per_s"]:.0f} pages/s), the baseline
{long["baseline_s"]:.2f} s ({long["baseline_pages_per_s"]:.0f} pages/s); {kept}.

Chunks use the default ChunkerSettings; a chunk's page is where its text starts. The
hyphenated variant breaks {hyphenated} long words at line ends. Words: recall is the share
of the source paragraphs' words found, in order, in the loaded section text; precision the
share of the loaded words that are theirs. The baseline's page text keeps headers, footers,
headings and broken words.
"""


def run() -> dict[str, Any]:
    PDF_WORK.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    data: dict[str, Any] = {"machine": machine()}
    data["variants"] = {name: variant(name, options) for name, options in VARIANTS.items()}
    data["long"] = long_register()
    data["seconds"] = round(time.perf_counter() - started, 1)
    write_result("pdf", data, markdown(data))
    return data


if __name__ == "__main__":
    run()
