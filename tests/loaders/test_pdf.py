"""PDF ingestion: PDFs generated from the example corpus (tests/pdfgen.py), read back by
the real loader through the real pypdf, checked against what the generator recorded."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from groundqa.chunking import ChunkerSettings, chunk_documents
from groundqa.engine import Engine
from groundqa.errors import ValidationBlocked
from groundqa.ingestion import ingest
from groundqa.loaders import detect_format, load, load_pdf
from groundqa.loaders.pdf import MAX_PAGES
from groundqa.models import Chunk, Document, Finding, breadcrumb
from groundqa.text import split_sentences
from tests.conftest import REGPACK, need_shared, write_small_corpus
from tests.pdfgen import (
    Rendered,
    render_corpus,
    render_file,
    render_markdown,
    write_aes256,
    write_columns,
    write_corrupt,
    write_encrypted,
    write_marked,
    write_pages,
    write_scanned,
    write_styled,
    write_table,
)

FOOTER = re.compile(r"Page \d+ of \d+")
SETTINGS = (ChunkerSettings(), ChunkerSettings(max_chars=300, overlap_chars=120))


@pytest.fixture(scope="module", params=["outline", "no-outline"])
def corpus(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[Rendered], list[Document], tuple[Finding, ...]]:
    """The example corpus as PDFs (hyphenated), loaded as a folder."""
    folder = tmp_path_factory.mktemp(str(request.param))
    rendered = render_corpus(REGPACK, folder, outline=request.param == "outline", hyphenate=True)
    result = load([folder])
    return rendered, list(result.documents), result.findings


def _by_source(rendered: list[Rendered]) -> dict[str, Rendered]:
    return {r.path.resolve().as_posix(): r for r in rendered}


def _only(findings: tuple[Finding, ...] | list[Finding], check: str) -> Finding:
    matching = [f for f in findings if f.check == check]
    assert len(matching) == 1, findings
    return matching[0]


def test_every_chunk_links_to_the_page_its_text_starts_on(
    corpus: tuple[list[Rendered], list[Document], tuple[Finding, ...]],
) -> None:
    rendered, documents, _ = corpus
    truth = _by_source(rendered)
    assert len(documents) == len(rendered) == 20
    for settings in SETTINGS:
        chunks = chunk_documents(documents, settings)
        assert any(c.parts > 1 for c in chunks) or settings.max_chars > 1000
        wrong = [
            (c.chunk_id, c.page, truth[c.source].page_at(c.text[:60]))
            for c in chunks
            if c.page != truth[c.source].page_at(c.text[:60])
        ]
        assert not wrong, wrong
        for c in chunks:
            assert c.uri.endswith(f".pdf#page={c.page}")
    # Sections run over page breaks, so the pages within one section differ.
    assert any(len(s.page_starts) > 1 for d in documents for s in d.sections)


def test_sections_are_the_markdown_headings(
    corpus: tuple[list[Rendered], list[Document], tuple[Finding, ...]],
) -> None:
    rendered, documents, _ = corpus
    truth = _by_source(rendered)
    for doc in documents:
        r = truth[doc.source]
        assert doc.format == "pdf" and doc.title == r.title
        headings = [h for _, h, _ in r.headings]
        kept = [s for s in doc.sections if s.heading]
        assert [s.heading for s in kept] == headings
        assert [s.section_id for s in kept] == [f"{doc.doc_id}#{h}" for h in headings]
        assert all(s.path == (s.heading,) for s in kept)
        assert [s.page for s in kept] == [p for _, _, p in r.headings]
        preamble = doc.sections[0]
        assert (preamble.section_id, preamble.path) == (f"{doc.doc_id}#preamble", ())
        assert preamble.text == r.paragraphs[0].text  # the intro, without the title


@pytest.mark.parametrize(("margin", "body_size"), [(55, 12), (12, 8.5)], ids=["narrow", "wide"])
def test_numbered_headings_are_found_whatever_the_line_width(
    tmp_path: Path, margin: float, body_size: float
) -> None:
    # Where lines wrap decides which clause lines look like headings; none may pass.
    rendered = render_corpus(REGPACK, tmp_path, outline=False, margin=margin, body_size=body_size)
    for r in rendered:
        (doc,), _ = load_pdf(r.path)
        assert [s.heading for s in doc.sections if s.heading] == [h for _, h, _ in r.headings]


def test_running_headers_and_footers_are_removed_and_listed(
    corpus: tuple[list[Rendered], list[Document], tuple[Finding, ...]],
) -> None:
    rendered, documents, findings = corpus
    truth = _by_source(rendered)
    for doc in documents:
        r = truth[doc.source]
        for chunk in chunk_documents([doc], ChunkerSettings()):
            assert r.header not in chunk.text
            assert not FOOTER.search(chunk.text)
        finding = _only([f for f in findings if f.source == doc.source], "pdf-furniture")
        assert finding.severity == "REVIEW" and finding.doc_id == doc.doc_id
        assert repr(r.header) in finding.excerpt or repr(r.header[:59] + "…") in finding.excerpt
        assert f"'Page 1 of {r.pages}' ×{r.pages}" in finding.excerpt


def test_hyphenated_line_ends_are_joined(
    corpus: tuple[list[Rendered], list[Document], tuple[Finding, ...]],
) -> None:
    rendered, documents, _ = corpus
    text = "\n".join(s.text for d in documents for s in d.sections)
    words = {w for r in rendered for w in r.hyphenated}
    assert len(words) > 40
    assert all(re.search(rf"\b{w}\b", text) for w in words)
    assert not re.search(r"[a-z]- [a-z]", text)


def test_footnote_marks_leave_the_word_they_follow_and_exponents_stay(tmp_path: Path) -> None:
    pdf = write_marked(
        tmp_path / "marked.pdf",
        [
            [
                ("Major development", False),
                ("82", True),
                (": for housing, ten or more homes, or a site of 1,000m", False),
                ("2", True),
                (" or more.", False),
            ],
            [
                ("Every alert,", False),
                ("5", True),
                (" and each warning", False),
                ("12,13", True),
                (" is logged under the globs2 rules.", False),
            ],
        ],
    )
    documents, _ = load_pdf(pdf)
    text = " ".join(s.text for s in documents[0].sections)
    # The marks are gone; an exponent after a unit, and figures in a word set in the
    # body's type, are the text's own.
    assert "Major development: for housing" in text
    assert "Every alert, and each warning is logged" in text
    assert "1,000m2 or more" in text
    assert "globs2" in text


def test_hyphenation_across_a_page_break_and_a_compound_kept(tmp_path: Path) -> None:
    words = "environmental responsibilities considerations administration implementation "
    text = (
        "# Long Words Code\n\n## 1 General\n\n1.1 "
        + (words * 90).strip()
        + ".\n\n1.2 A noise-sensitive room is a bedroom. Other noise-sensitive uses are listed."
        + "\n\n1.3 Each noise-sensitive use must be assessed.\n"
    )
    r = render_markdown(
        text, tmp_path / "words.pdf", hyphenate=True, break_compounds=["noise-sensitive"]
    )
    assert r.across_pages and r.hyphen_breaks == ("noise-sensitive",)
    (doc,), _ = load_pdf(r.path)
    body = "\n".join(s.text for s in doc.sections)
    assert body.count("noise-sensitive") == 3 and "noisesensitive" not in body
    assert all(w in body for w in r.across_pages)
    assert not re.search(r"\w- ?\n*\w", body.replace("noise-sensitive", ""))
    for chunk in chunk_documents([doc], SETTINGS[1]):
        assert chunk.page == r.page_at(chunk.text[:60])


NESTED = """---
council: Ashcombe
---
# Ashcombe Tree Code

This code protects trees in the shire and sets the fees for permits.

## Part 1 Preliminary

### 1 Purpose

1.1 A tree on private land is protected if its trunk circumference is 1.5 metres or more at 1 metre above ground level, or if it is listed in the Significant Tree Register kept by the council.

### 2 Definitions

2.1 Trees are protected.

2.2 A permit is a written approval from the council given under clause 3.1.1 of this code to remove or prune a protected tree.

## Part 2 - Obligations

### 3 Permits

#### 3.1 Applications

3.1.1 An application for a permit must be made in writing to the council with a site plan and a report from a qualified arborist where the tree is within 3 metres of a building.

#### 3.2 Decisions

3.2.1 The council must decide an application within 28 days after it is lodged, or within 14 days where the tree is dead or dying.

## Schedule 1 Fees

### 1 Application fees

1.1 The fee for a permit application is 120 dollars, or 60 dollars for a pensioner or a registered charity.
"""

NESTED_PATHS = {
    "1 Purpose": ("Part 1 Preliminary", "1 Purpose"),
    "2 Definitions": ("Part 1 Preliminary", "2 Definitions"),
    "3.1 Applications": ("Part 2 - Obligations", "3 Permits", "3.1 Applications"),
    "3.2 Decisions": ("Part 2 - Obligations", "3 Permits", "3.2 Decisions"),
    "1 Application fees": ("Schedule 1 Fees", "1 Application fees"),
}


@pytest.mark.parametrize("outline", [True, False], ids=["outline", "numbered-headings"])
def test_section_paths_from_the_outline_and_from_numbered_headings(
    tmp_path: Path, outline: bool
) -> None:
    r = render_markdown(NESTED, tmp_path / "trees.pdf", outline=outline)
    (doc,), _ = load_pdf(r.path, root=tmp_path)
    paths = {s.heading: s.path for s in doc.sections}
    # Parts and "3 Permits" have no text of their own, so they are paths, not sections.
    assert paths == {"": (), **NESTED_PATHS}
    purpose = next(s for s in doc.sections if s.heading == "1 Purpose")
    # A long numbered clause is body text, and so is a short one that ends a sentence.
    assert purpose.text.startswith("1.1 A tree on private land is protected if")
    definitions = next(s for s in doc.sections if s.heading == "2 Definitions")
    assert definitions.text.startswith("2.1 Trees are protected.\n\n2.2 A permit")
    assert doc.sections[0].section_id == "trees.pdf#preamble"
    fees = next(s for s in doc.sections if s.path[:1] == ("Schedule 1 Fees",))
    assert fees.section_id == "trees.pdf#1 Application fees"


def test_title_without_metadata_is_the_large_type_on_page_one_else_the_file_name(
    tmp_path: Path,
) -> None:
    r = render_file(
        REGPACK / "state_northmere_native_vegetation_act.md", tmp_path, metadata_title=False
    )
    (doc,), findings = load_pdf(r.path)
    assert r.pages >= 3  # long enough for the running header to show as repeated
    # Not the first heading: that would put every other section under it.
    assert doc.title == r.title != r.headings[0][1]
    assert doc.sections[1].path == (r.headings[0][1],)
    assert not any(r.header in s.text for s in doc.sections)
    assert r.header in _only(findings, "pdf-furniture").excerpt
    (doc,), _ = load_pdf(write_pages(tmp_path / "register.pdf", 3))
    assert doc.title == "register"


@pytest.mark.parametrize(
    ("metadata", "blocks", "title"),
    [
        # A word processor's /Title is the first line of a title printed in large type.
        (
            "THE TOWN OF NORTHMERE",
            [("cover", "THE TOWN OF NORTHMERE"), ("cover", "Noise By-law")],
            "THE TOWN OF NORTHMERE Noise By-law",
        ),
        # A scanner's /Title is a reference that the capitals opening page 1 spell out.
        (
            "By-law 12-34",
            [
                ("body", "THE TOWN OF NORTHMERE"),
                ("body", "BY-LAW NO. 12-34"),
                ("body", "BEING A BY-LAW TO RESTRICT THE IDLING OF VEHICLES"),
            ],
            "THE TOWN OF NORTHMERE BY-LAW NO. 12-34 BEING A BY-LAW TO RESTRICT THE IDLING OF "
            "VEHICLES",
        ),
        # Printed words that are not the same title with more words leave /Title alone.
        ("Annual Report", [("cover", "Quarterly Figures")], "Annual Report"),
        ("By-law 12-34", [("body", "THE TOWN OF NORTHMERE")], "By-law 12-34"),
    ],
)
def test_metadata_title_gives_way_to_the_same_title_printed_in_full_on_page_one(
    tmp_path: Path, metadata: str, blocks: list[tuple[str, str]], title: str
) -> None:
    body = [
        ("body", "WHEREAS the council may regulate the matters in this by-law."),
        ("h2", "1. Prohibition"),
        ("body", "No person shall cause the thing this by-law regulates."),
        ("h2", "2. Penalty"),
        ("body", "Every person who contravenes this by-law is guilty of an offence."),
    ]
    path = write_styled(tmp_path / "bylaw.pdf", [*blocks, *body], metadata_title=metadata)
    (doc,), _ = load_pdf(path)
    assert doc.title == title
    # The title heads every breadcrumb.
    penalty = next(s for s in doc.sections if s.heading == "2. Penalty")
    assert penalty.text.startswith("Every person who contravenes")
    crumb = breadcrumb(doc.title, penalty.path)
    assert crumb.startswith(f"{title} > ") and crumb.endswith(" > 2. Penalty")


def test_a_scanned_page_is_named_and_the_pages_after_it_stay_right(tmp_path: Path) -> None:
    r = render_file(REGPACK / "federal_emissions_energy_reporting_act.md", tmp_path, scanned_page=2)
    (doc,), findings = load_pdf(r.path)
    finding = _only(findings, "pdf-no-text")
    assert finding.severity == "REVIEW"
    assert "page 2 has no text layer (scanned?)" in finding.message
    # It says how to get the page's text: OCR elsewhere, or, with no Tesseract here, how to
    # install it.
    hint = "ocrmypdf" if shutil.which("tesseract") else "apt-get install tesseract-ocr"
    assert hint in finding.message
    pages = {c.page for c in chunk_documents([doc], SETTINGS[1])}
    assert 2 not in pages and max(pages) == r.pages
    for chunk in chunk_documents([doc], SETTINGS[1]):
        assert chunk.page == r.page_at(chunk.text[:60])


def test_an_image_only_pdf_blocks(tmp_path: Path) -> None:
    documents, findings = load_pdf(write_scanned(tmp_path / "scan.pdf", pages=3))
    assert documents == []
    (finding,) = findings
    assert (finding.severity, finding.check) == ("BLOCK", "pdf-no-text")
    assert "no text layer on any of its 3 page(s)" in finding.message
    assert "ocrmypdf" in finding.message


BAD = {
    "encrypted": (lambda p: write_encrypted(p), "pdf-encrypted", "is encrypted; decrypt it"),
    "aes256": (lambda p: write_aes256(p), "pdf-encrypted", "qpdf --decrypt"),
    "garbage": (lambda p: write_corrupt(p, "garbage"), "pdf-unreadable", "not a readable PDF"),
    "truncated": (lambda p: write_corrupt(p, "truncated"), "pdf-unreadable", "re-export it"),
    "empty": (lambda p: write_corrupt(p, "empty"), "pdf-unreadable", "empty file"),
    "too-long": (
        lambda p: write_pages(p, MAX_PAGES + 1),
        "pdf-too-many-pages",
        f"has {MAX_PAGES + 1} pages; the limit is {MAX_PAGES}",
    ),
}


@pytest.mark.parametrize("kind", list(BAD))
def test_a_bad_pdf_is_one_clear_block(tmp_path: Path, kind: str) -> None:
    write, check, words = BAD[kind]
    path = write(tmp_path / f"{kind}.pdf")
    documents, findings = load_pdf(path)
    assert documents == []
    (finding,) = findings
    assert (finding.severity, finding.check, finding.source) == (
        "BLOCK",
        check,
        path.resolve().as_posix(),
    )
    assert finding.message.startswith(f"{kind}.pdf ") and words in finding.message


def test_page_limit_is_a_parameter(tmp_path: Path) -> None:
    path = write_pages(tmp_path / "twelve.pdf", 12)
    (finding,) = load_pdf(path, max_pages=10)[1]
    assert finding.message.startswith("twelve.pdf has 12 pages; the limit is 10")
    assert load_pdf(path, max_pages=12)[0]


def test_an_owner_password_alone_does_not_stop_reading(tmp_path: Path) -> None:
    (doc,), findings = load_pdf(write_encrypted(tmp_path / "owner.pdf", user_password=""))
    assert findings == []
    assert "Confidential licence conditions" in doc.sections[0].text


def test_a_bad_pdf_leaves_the_previous_index_current(tmp_path: Path) -> None:
    folder = write_small_corpus(tmp_path / "corpus")
    r = render_file(REGPACK / "federal_emissions_energy_reporting_act.md", folder)
    index = tmp_path / "idx"
    first = ingest([folder], index, dense=None)
    question = "How many penalty units for failing to lodge a NEER report by the due date?"

    def check_current() -> None:
        engine = Engine.open(index)
        assert engine.manifest.build_id == first.build_id
        answer = engine.ask(question)
        assert not answer.refused
        cited = answer.citations[0]
        assert cited.uri.endswith(f"#page={r.page_at('8.2 Failing to lodge')}")
        assert not engine.ask("When does the last train leave Alderby?").refused

    check_current()
    for kind, (write, check, _) in BAD.items():
        bad = write(folder / f"{kind}.pdf")
        with pytest.raises(ValidationBlocked, match=check) as caught:
            ingest([folder], index, dense=None)
        assert [f.check for f in caught.value.findings if f.severity == "BLOCK"] == [check]
        check_current()
        bad.unlink()


def test_a_folder_of_markdown_and_pdf_loads_both(tmp_path: Path) -> None:
    folder = write_small_corpus(tmp_path / "mixed")
    pdf_dir = folder / "acts"
    render_file(REGPACK / "local_fennick_tree_protection.md", pdf_dir)
    shutil.copy(REGPACK / "penalty_schedule.csv", folder / "penalties.csv")
    result = load([folder])
    formats = {d.doc_id: d.format for d in result.documents}
    assert formats["alderby.md"] == "markdown"
    assert formats["acts/local_fennick_tree_protection.pdf"] == "pdf"
    assert "csv" in formats.values()
    assert detect_format(folder) == "mixed"
    assert detect_format(pdf_dir) == "pdf"
    assert detect_format(pdf_dir / "local_fennick_tree_protection.pdf") == "pdf"
    doc = next(d for d in result.documents if d.format == "pdf")
    assert all(
        s.section_id.startswith("acts/local_fennick_tree_protection.pdf#") for s in doc.sections
    )
    assert load([pdf_dir], fmt="pdf").documents[0].doc_id == "local_fennick_tree_protection.pdf"


def test_two_thousand_pages_load_with_every_page(tmp_path: Path) -> None:
    path = write_pages(tmp_path / "register.pdf", 2000)
    (doc,), findings = load_pdf(path)
    pages = [p for s in doc.sections for _, p in s.page_starts]
    assert pages == list(range(1, 2001))
    assert _only(findings, "pdf-furniture").excerpt.startswith(
        "'Long register of licences' ×2000; 'Page 1 of 2000' ×2000"
    )
    chunks: list[Chunk] = chunk_documents([doc], ChunkerSettings())
    for chunk in chunks:
        match = re.match(r"(?:Entry|This is page) (\d+)", chunk.text)
        assert match is not None and int(match.group(1)) == chunk.page, chunk.text[:80]
    assert chunks[0].page == 1 and "Entry 2000 ends" in chunks[-1].text
    assert [c.page for c in chunks] == sorted(c.page or 0 for c in chunks)


def test_an_answer_from_a_pdf_cites_page_clause_and_deep_link(tmp_path: Path) -> None:
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    rendered = render_file(REGPACK / "local_fennick_tree_protection.md", pdfs, outline=True)
    (pdfs / f"{rendered.path.name}.meta.yaml").write_text(
        "jurisdiction: local\nstate: Northmere\narea: Fennick City\n"
    )
    ingest([pdfs], tmp_path / "idx", dense=None)
    engine = Engine.open(tmp_path / "idx")
    answer = engine.ask(
        "What trunk circumference makes a tree protected?", scope={"area": "Fennick"}
    )
    assert not answer.refused and answer.citations, answer.gate.reason
    first = answer.citations[0]
    assert first.clause == "cl.1.1" and "1.0 metre" in answer.answer
    assert first.page == rendered.page_at(first.snippet[:40])
    assert first.uri.endswith(f"{rendered.path.name}#page={first.page}")
    assert first.section.startswith("Fennick City Council Tree Protection By-law 2022 > ")
    assert answer.passages[0].chunk.metadata["area"] == "Fennick City"


# --- layout: outlines, running headers, columns, tables ---------------------------

SPEC = """# Shared Data Specification

This specification describes where shared data files live and how they are read.

## 1. Introduction

### 1.1. Version

This is version 0.21 of the specification, last updated 2 October 2018.

### 1.2. Scope

The specification covers the directory layout and the file formats.

## 2. Unified system

### 2.1. Directory layout

Applications store their data files in the shared directory under the data prefix.

### 2.2. The source files

Each package installs one source file that lists the types it defines.

## 3. Contributors

The people who wrote and reviewed this specification are listed here.
"""


def test_outline_siblings_stay_siblings_without_a_metadata_title(tmp_path: Path) -> None:
    r = render_markdown(SPEC, tmp_path / "spec.pdf", metadata_title=False)
    (doc,), _ = load_pdf(r.path)
    # The title is the large type atop page 1, not the first bookmark: were it
    # "1. Introduction", every breadcrumb would put the other chapters under it.
    assert doc.title == "Shared Data Specification"
    paths = {s.heading: s.path for s in doc.sections if s.heading}
    assert paths == {
        "1.1. Version": ("1. Introduction", "1.1. Version"),
        "1.2. Scope": ("1. Introduction", "1.2. Scope"),
        "2.1. Directory layout": ("2. Unified system", "2.1. Directory layout"),
        "2.2. The source files": ("2. Unified system", "2.2. The source files"),
        "3. Contributors": ("3. Contributors",),
    }
    (chunk,) = [c for c in chunk_documents([doc], ChunkerSettings()) if "data prefix" in c.text]
    assert chunk.breadcrumb == (
        "Shared Data Specification > 2. Unified system > 2.1. Directory layout"
    )


BYLAWS = """# General By-laws

These by-laws were last revised in January 2024.

## CHAPTER I. TOWN MEETINGS

### SECTION 1.

The annual town meeting shall be held on the first Monday in May.

### SECTION 2.

Notice of every town meeting shall be posted at least seven days before it.

## CHAPTER II. FINANCE

### SECTION 1.

The finance committee shall consist of five members appointed by the moderator.

### SECTION 2.

The committee shall report on every article that spends money.
"""


def test_repeated_outline_titles_keep_unique_ids_and_right_paths(tmp_path: Path) -> None:
    r = render_markdown(BYLAWS, tmp_path / "bylaws.pdf")
    (doc,), _ = load_pdf(r.path)
    kept = [s for s in doc.sections if s.heading]
    assert [s.path for s in kept] == [
        ("CHAPTER I. TOWN MEETINGS", "SECTION 1."),
        ("CHAPTER I. TOWN MEETINGS", "SECTION 2."),
        ("CHAPTER II. FINANCE", "SECTION 1."),
        ("CHAPTER II. FINANCE", "SECTION 2."),
    ]
    ids = [s.section_id for s in kept]
    assert len(set(ids)) == 4
    assert ids[2] == "bylaws.pdf#CHAPTER II. FINANCE > SECTION 1."
    finance = kept[2]
    assert finance.text.startswith("The finance committee") and finance.page == r.page_at(
        "The finance committee"
    )


def test_an_outline_of_page_labels_is_ignored(tmp_path: Path) -> None:
    from pypdf import PdfWriter

    r = render_markdown(NESTED, tmp_path / "trees.pdf", outline=False)
    writer = PdfWriter(clone_from=r.path)
    for number in range(r.pages):
        writer.add_outline_item(title=f"Page {number + 1}", page_number=number)
    labelled = tmp_path / "labelled.pdf"
    writer.write(labelled)
    (doc,), _ = load_pdf(labelled, root=tmp_path)
    # The headings come from the text, as without an outline, not from "Page N".
    assert {s.heading: s.path for s in doc.sections} == {"": (), **NESTED_PATHS}


_VERBS = ("opens", "reads", "writes", "checks", "copies", "frees", "parses", "encodes", "sorts")
_THINGS = ("a handle", "a buffer", "a node", "a tree", "a string", "a stream", "a key")
_RESULTS = (
    "returns zero when it succeeds",
    "returns a negative error code when the handle was closed",
    "sets the error flag on failure",
    "leaves the input untouched",
    "may block until the stream is ready",
)
MANUAL = "# Reference Manual\n\nThis manual documents the library.\n\n" + "\n\n".join(
    f"## {n} {name}\n\n"
    + "\n\n".join(
        f"{n}.{k} The {name.lower()} function number {k} {_VERBS[(k + n) % 9]} "
        f"{_THINGS[k % 7]}, checks that it holds at least {k * 16} bytes and "
        f"{_RESULTS[(k * n) % 5]}; it {_VERBS[k % 9]} {_THINGS[(k + 3) % 7]} as well, "
        f"and {_RESULTS[(k + 2) % 5]}."
        for k in range(1, 4 + 18 * (n % 3))
    )
    for n, name in enumerate(
        ["Introduction", "Parsing", "Encoding", "Errors", "Utilities", "Index"], start=1
    )
)


def _chapter_header(page: int, chapter: str) -> str:
    """ "Chapter 2: Parsing 14", as a reference manual heads its pages."""
    if not chapter:
        return "Reference Manual"
    number, name = chapter.split(" ", 1)
    return f"Chapter {number}: {name} {page}"


def test_running_headers_with_page_numbers_and_chapter_names_are_removed(
    tmp_path: Path,
) -> None:
    r = render_markdown(MANUAL, tmp_path / "manual.pdf", running_header=_chapter_header)
    drawn = [h for h in r.headers if h.startswith("Chapter ")]
    # Chapter names change every few pages: no header is on most pages.
    assert len(drawn) >= 6 and max(Counter(re.sub(r"\d+", "#", h) for h in drawn).values()) < (
        r.pages / 2
    )
    (doc,), findings = load_pdf(r.path)
    text = "\n".join(s.text for s in doc.sections)
    assert not [h for h in drawn if h in text]
    assert not re.search(r"Chapter \d+:", text)
    assert "Chapter" in _only(findings, "pdf-furniture").excerpt
    assert not _recurring_edges(doc)


def _page_texts(doc: Document) -> dict[int, str]:
    """Each page's text as loaded, from the sections' page starts."""
    pages: dict[int, list[str]] = {}
    for s in doc.sections:
        starts = list(s.page_starts) or [(0, s.page or 1)]
        ends = [o for o, _ in starts[1:]] + [len(s.text)]
        for (offset, page), end in zip(starts, ends, strict=True):
            pages.setdefault(page, []).append(s.text[offset:end])
    return {p: "\n\n".join(t) for p, t in pages.items()}


def _recurring_edges(doc: Document, words: int = 4) -> dict[str, int]:
    """Page edges (the first or last few words of a page's text, digits masked) that
    recur on three or more pages: running headers and footers left in the text."""
    seen: Counter[str] = Counter()
    for text in _page_texts(doc).values():
        tokens = re.sub(r"\d+", "#", text).casefold().split()
        if len(tokens) >= words:
            seen.update({"top: " + " ".join(tokens[:words]), "foot: " + " ".join(tokens[-words:])})
    return {edge: n for edge, n in seen.items() if n >= 3}


_GOODS = ("timber", "gravel", "diesel", "fertiliser", "seed", "lime", "sand", "cement")
_PLACES = ("quarry", "depot", "wharf", "mill", "yard", "silo")
LEDGER = [
    f"Rule {n}. The operator of a {_PLACES[n % 6]} that takes in {_GOODS[n % 8]} must keep "
    f"a ledger of every {'load' if n % 2 else 'delivery'}, signed by the "
    f"{'driver' if n % 3 else 'person who received it'}, for at least {n + 2} years, and "
    f"must show it to {'an inspector' if n % 4 else 'the council'} on request."
    for n in range(1, 31)
]


@pytest.mark.parametrize("columns", [2, 3])
def test_columns_are_read_one_after_the_other(tmp_path: Path, columns: int) -> None:
    written = write_columns(tmp_path / "gazette.pdf", LEDGER, columns=columns, lines_per_column=24)
    assert len(written.pages) >= 2
    (doc,), _ = load_pdf(written.path)
    flat = " ".join(" ".join(s.text for s in doc.sections).split())
    # Every paragraph reads whole, the ones that run from the foot of one column to
    # the head of the next included.
    assert [p for p in written.paragraphs if p not in flat] == []
    assert [flat.index(p) for p in written.paragraphs] == sorted(
        flat.index(p) for p in written.paragraphs
    )
    assert written.header not in flat
    for chunk in chunk_documents([doc], ChunkerSettings(max_chars=300, overlap_chars=0)):
        opening = " ".join(chunk.text.split()[:4])
        assert opening in " ".join(written.pages[chunk.page - 1]), (chunk.page, opening)


ZONES = [
    ["Zone", "Minimum lot size", "Frontage"],
    ["Rural", "40 ha", "100 m"],
    ["Rural residential", "2 ha", "40 m"],
    ["Township", "600 m2", "15 m"],
]


def test_a_ruled_table_becomes_header_keyed_rows(tmp_path: Path) -> None:
    path = write_table(
        tmp_path / "zones.pdf",
        ZONES,
        before="The minimum lot sizes below apply to every new subdivision in the shire.",
        after="A lot smaller than the minimum may be approved where it holds a dwelling.",
    )
    (doc,), _ = load_pdf(path)
    text = "\n".join(s.text for s in doc.sections)
    assert "Zone: Rural; Minimum lot size: 40 ha; Frontage: 100 m." in text
    assert "Zone: Township; Minimum lot size: 600 m2; Frontage: 15 m." in text
    assert "Rural 40 ha" not in text  # not a run of cells as well
    before = text.index("every new subdivision")
    assert before < text.index("Zone: Rural;") < text.index("may be approved")
    (chunk,) = [c for c in chunk_documents([doc], ChunkerSettings()) if "40 ha" in c.text]
    assert chunk.page == 1
    sentences = [s for s in split_sentences(chunk.text) if "40 ha" in s]
    assert sentences == ["Zone: Rural; Minimum lot size: 40 ha; Frontage: 100 m."]


# --- real documents (../shared/corpora/real_docs, read in place) -----------------

REAL = ("corpora", "real_docs")
REAL_PDFS = (
    "brookfield_ma_general_bylaws.pdf",
    "coventry_authority_monitoring_report_2017_18.pdf",
    "uk_mhclg_draft_nppf_dec2025.pdf",
    "us_faa_federal_register_2020-17221.pdf",
    "whitby_anti_idling_bylaw_6489-11_ocr_scan.pdf",
    "whitby_noise_bylaw_6917-14.pdf",
)


@pytest.fixture(scope="module")
def real() -> dict[str, tuple[Document, list[Finding]]]:
    """The real PDFs with a text layer, each loaded once for this module."""
    loaded = {}
    for name in REAL_PDFS:
        (doc,), findings = load_pdf(need_shared(*REAL, name), ocr=False)
        loaded[name] = (doc, findings)
    return loaded


def _outline_paths(path: Path) -> list[tuple[str, ...]]:
    """Each outline entry's path (its ancestors and itself), read with pypdf directly."""
    from pypdf import PdfReader

    paths: list[tuple[str, ...]] = []

    def visit(items: list[Any], above: tuple[str, ...]) -> None:
        last: tuple[str, ...] = above
        for item in items:
            if isinstance(item, list):
                visit(item, last)
                continue
            last = (*above, " ".join(item.title.split()))
            paths.append(last)

    visit(PdfReader(path).outline, ())
    return paths


def test_real_breadcrumbs_follow_the_outline(
    real: dict[str, tuple[Document, list[Finding]]],
) -> None:
    doc, _ = real["brookfield_ma_general_bylaws.pdf"]
    expected = _outline_paths(need_shared(*REAL, "brookfield_ma_general_bylaws.pdf"))
    assert len(expected) == 138
    headed = [s for s in doc.sections if s.heading]
    # Sections keep the outline's order; every section's path is its entry's path.
    remaining = iter(expected)
    for section in headed:
        assert section.path in remaining, section.section_id
    assert len(headed) >= 120
    assert len({s.section_id for s in doc.sections}) == len(doc.sections)
    sections = [s for s in headed if s.heading.upper().startswith("SECTION")]
    assert len(sections) >= 100
    # (The outline itself nests one "Section 12." under "Section 11.": kept as it is.)
    assert all(s.path[0].startswith("CHAPTER ") for s in sections)
    # "SECTION 1." is in every chapter: its id says which chapter's it is.
    assert "brookfield_ma_general_bylaws.pdf#CHAPTER II Town Meetings > SECTION 1." in {
        s.section_id for s in sections
    }


def test_real_misleading_outline_is_ignored(
    real: dict[str, tuple[Document, list[Finding]]],
) -> None:
    doc, _ = real["whitby_anti_idling_bylaw_6489-11_ocr_scan.pdf"]
    assert not any(re.fullmatch(r"Page \d+", h) for s in doc.sections for h in s.path)


def test_real_titles_are_printed_in_full_where_metadata_has_a_part(
    real: dict[str, tuple[Document, list[Finding]]],
) -> None:
    # Word's /Title is the letterhead, the first line of the cover's large type.
    noise, _ = real["whitby_noise_bylaw_6917-14.pdf"]
    assert noise.title == "THE CORPORATION OF THE TOWN OF WHITBY Noise By-law"
    # The scanner's /Title ("By-law 6489-11") is spelt out by the capitals opening page 1.
    idling, _ = real["whitby_anti_idling_bylaw_6489-11_ocr_scan.pdf"]
    assert idling.title.startswith("THE CORPORATION OF THE TOWN OF WHITBY BY-LAW NO. 6489-11")
    assert idling.title.endswith("RESTRICT THE IDLING OF VEHICLES WITHIN THE TOWN OF WHITBY")
    # A /Title that the page prints as it is stays as it is.
    nppf, _ = real["uk_mhclg_draft_nppf_dec2025.pdf"]
    assert nppf.title == "National Planning Policy Framework: draft text for consultation"


# Body text that does recur at page edges: in the Federal Register rule, each page of
# figures opens with the same instruction ("(7) In the Operating Procedures chapter,
# ... add the information in figure 6 to paragraph (h)(7) of this AD.").
BODY_AT_EDGES = {
    "us_faa_federal_register_2020-17221.pdf": {
        "top: (#) in the operating",
        "top: add the information in",
        "foot: (h)(#) of this ad.",
    },
    # Chapters start on a new page with the same words; their headings are headings, so
    # the first body line opens the page's text.
    "uk_mhclg_draft_nppf_dec2025.pdf": {"top: the objective of the"},
    "coventry_authority_monitoring_report_2017_18.pdf": {"top: #.#. this chapter provides"},
}


def test_real_pdfs_keep_no_running_header_or_footer(
    real: dict[str, tuple[Document, list[Finding]]],
) -> None:
    left = {
        name: set(_recurring_edges(doc)) - BODY_AT_EDGES.get(name, set())
        for name, (doc, _) in real.items()
    }
    assert left == {name: set() for name in real}
    # What was removed is listed, and the recurring body lines were not removed.
    _, findings = real["us_faa_federal_register_2020-17221.pdf"]
    excerpt = _only(findings, "pdf-furniture").excerpt
    assert "'47699 Federal Register / Vol. 85, No. 152" in excerpt
    assert "Operating Procedures" not in excerpt


def test_real_three_columns_read_a_sentence_whole_across_a_column_end(
    real: dict[str, tuple[Document, list[Finding]]],
) -> None:
    doc, _ = real["us_faa_federal_register_2020-17221.pdf"]
    page = _page_texts(doc)[2]
    flat = " ".join(page.split())
    # The first column of page 2 ends at "... disagree alert, and"; the second goes on.
    assert (
        "These effects include stall warning activation, airspeed disagree alert, and "
        "altitude disagree alert,5 and may affect the flightcrew’s ability to accomplish "
        "continued safe flight and landing."
    ) in flat
    chunks = chunk_documents([doc], ChunkerSettings())
    quoted = [
        s
        for c in chunks
        for s in split_sentences(c.text)
        if s.startswith("These effects include stall warning")
    ]
    # The sentence the reader would quote is the whole one (chunks overlap, so it may
    # be in two).
    assert quoted and all(q.endswith("continued safe flight and landing.") for q in quoted)


def test_real_flood_zone_table_is_header_keyed(
    real: dict[str, tuple[Document, list[Finding]]],
) -> None:
    doc, _ = real["uk_mhclg_draft_nppf_dec2025.pdf"]
    page = _page_texts(doc)[127]
    rows = [line for line in page.split("\n") if line.startswith("Zone ")]
    assert rows[2] == (
        "Zone 3a †; Essential infrastructure: Exception test required †; Highly vulnerable: X; "
        "More vulnerable: Exception test required; Less vulnerable: ✓; Water compatible: ✓."
    )
    assert len(rows) == 4
    (chunk,) = [
        c
        for c in chunk_documents([doc], ChunkerSettings())
        if "Zone 3b *; Essential infrastructure" in c.text
    ]
    assert chunk.page == 127 and chunk.uri.endswith("#page=127")


def test_real_housing_table_rows_keep_their_headers(
    real: dict[str, tuple[Document, list[Finding]]],
) -> None:
    doc, _ = real["coventry_authority_monitoring_report_2017_18.pdf"]
    # One paragraph per row, each cell named by its column, not one run of numbers.
    rows = [p for p in _page_texts(doc)[3].split("\n\n") if p.startswith("Completed by: ")]
    assert len(rows) >= 7
    assert rows[0].startswith(
        "Completed by: Major Scheme; Completions: 451; Under Construction: 319;"
    )
