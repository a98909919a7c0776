"""PDF ingestion: PDFs generated from the example corpus (tests/pdfgen.py), read back by
the real loader through the real pypdf, checked against what the generator recorded."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from groundqa.chunking import ChunkerSettings, chunk_documents
from groundqa.engine import Engine
from groundqa.errors import ValidationBlocked
from groundqa.ingestion import ingest
from groundqa.loaders import detect_format, load, load_pdf
from groundqa.loaders.pdf import MAX_PAGES
from groundqa.models import Chunk, Document, Finding
from tests.conftest import REGPACK, write_small_corpus
from tests.pdfgen import (
    Rendered,
    render_corpus,
    render_file,
    render_markdown,
    write_aes256,
    write_corrupt,
    write_encrypted,
    write_pages,
    write_scanned,
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


def test_title_without_metadata_is_the_first_heading_else_the_file_name(tmp_path: Path) -> None:
    r = render_file(
        REGPACK / "state_northmere_native_vegetation_act.md", tmp_path, metadata_title=False
    )
    (doc,), findings = load_pdf(r.path)
    assert r.pages >= 3  # long enough for the running header to show as repeated
    assert doc.title == r.headings[0][1]
    assert not any(r.header in s.text for s in doc.sections)
    assert r.header in _only(findings, "pdf-furniture").excerpt
    (doc,), _ = load_pdf(write_pages(tmp_path / "register.pdf", 3))
    assert doc.title == "register"


def test_a_scanned_page_is_named_and_the_pages_after_it_stay_right(tmp_path: Path) -> None:
    r = render_file(REGPACK / "federal_emissions_energy_reporting_act.md", tmp_path, scanned_page=2)
    (doc,), findings = load_pdf(r.path)
    finding = _only(findings, "pdf-no-text")
    assert finding.severity == "REVIEW"
    assert "page 2 has no text layer (scanned?)" in finding.message
    assert "ocrmypdf" in finding.message
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
    started = time.perf_counter()
    (doc,), findings = load_pdf(path)
    seconds = time.perf_counter() - started
    assert seconds < 30, seconds
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
