"""Tests for `groundqa.loaders`: real files on disk, the real corpora in ../shared."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import groundqa.loaders as loaders
from groundqa.errors import EmptyCorpusError, LoadError, UsageError
from groundqa.loaders import FORMATS, LoadResult, detect_format, load
from groundqa.models import Document, Finding
from tests.hostilekit import OUTSIDE_SECRET, corpus_with_outside_symlink, outside_link

SHARED = Path(__file__).resolve().parents[2].parent / "shared"


def shared(relative: str) -> Path:
    path = SHARED / relative
    if not path.exists():
        pytest.skip(
            f"{path} not found: these tests read the real corpora in ../shared beside the repo"
        )
    return path


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode("utf-8"))
    return path


def only(findings: tuple[Finding, ...], check: str) -> Finding:
    matching = [f for f in findings if f.check == check]
    assert len(matching) == 1, findings
    return matching[0]


def by_id(result: LoadResult) -> dict[str, Document]:
    return {d.doc_id: d for d in result.documents}


# --- public surface ---------------------------------------------------------------------


def test_public_surface() -> None:
    assert sorted(loaders.__all__) == sorted(
        [
            "FORMATS",
            "LoadResult",
            "OcrBudget",
            "detect_format",
            "load",
            "load_beir",
            "load_csv",
            "load_docx",
            "load_html",
            "load_markdown",
            "load_obliqa",
            "load_pdf",
            "load_text",
        ]
    )
    assert FORMATS == (
        "auto", "csv", "markdown", "pdf", "html", "docx", "text", "beir", "obliqa"
    )  # fmt: skip


def test_the_cli_offers_every_format() -> None:
    from groundqa.cli import main

    ingest = main.commands["ingest"]
    (option,) = [p for p in ingest.params if p.name == "fmt"]
    assert tuple(option.type.choices) == FORMATS


# --- CSV ----------------------------------------------------------------------------------


@pytest.mark.shared
def test_natech_csv_is_44_chapters_keyed_on_chapter() -> None:
    path = shared("corpora/natech/guidance.csv")
    result = load([path])
    assert result.findings == ()
    assert result.sources == (path.resolve().as_posix(),)
    docs = by_id(result)
    assert len(result.documents) == len(docs) == 44
    doc = docs["4.6.2.2"]
    assert doc.title == "Simultaneous accidents"
    assert doc.format == "csv"
    assert doc.source == path.resolve().as_posix()
    assert [s.section_id for s in doc.sections] == ["4.6.2.2"]
    assert doc.sections[0].heading == "Simultaneous accidents"
    assert doc.sections[0].text.startswith("One of the main complications of Natech accidents")
    # Titles lose the trailing spaces the export left on them; their typos stay.
    assert docs["4"].title == "Elements of Natech risk assesment"
    assert all(d.sections[0].text == d.sections[0].text.strip() for d in result.documents)
    lines = [d.line for d in result.documents]
    assert lines[0] == 2
    assert lines == sorted(lines)
    assert all(d.metadata == {} for d in result.documents)


@pytest.mark.shared
def test_natech_folder_skips_probes_and_provenance_with_one_review() -> None:
    result = load([shared("corpora/natech")])
    assert len(result.documents) == 44
    note = only(result.findings, "skipped-files")
    assert note.severity == "REVIEW"
    assert ".json" in note.message and "PROVENANCE.md" in note.message
    assert "probes.json" in note.excerpt


def test_csv_crlf_bom_and_quoted_multiline_fields(tmp_path: Path) -> None:
    body = (
        "\ufeffid,title,text,page\r\n"
        '1,First,"Line one,\r\nline two with ""quotes""",7\r\n'
        "\r\n"
        '2,Second,"  padded  ",\r\n'
    )
    result = load([write(tmp_path / "c.csv", body)])
    assert result.findings == ()
    first, second = result.documents
    assert first.doc_id == "1" and first.title == "First"
    assert first.sections[0].text == 'Line one,\nline two with "quotes"'
    assert first.metadata == {"page": "7"}
    assert first.line == 2
    assert second.line == 5  # the quoted field spans lines 2-3, line 4 is blank
    assert second.sections[0].text == "padded"
    assert second.metadata == {}


def test_csv_auto_detects_columns_case_insensitively(tmp_path: Path) -> None:
    path = write(tmp_path / "c.csv", "Clause,Heading,Body,Owner\nA.1,Scope,Applies to all.,ops\n")
    (doc,) = load([path]).documents
    assert (doc.doc_id, doc.title, doc.sections[0].text) == ("A.1", "Scope", "Applies to all.")
    assert doc.metadata == {"Owner": "ops"}


def test_csv_explicit_column_mapping(tmp_path: Path) -> None:
    path = write(tmp_path / "c.csv", "Ref No,Label,Notes,Body\nR7,Label seven,note,The body.\n")
    result = load([path], columns={"id": "Ref No", "title": "Label", "text": "Body"})
    (doc,) = result.documents
    assert (doc.doc_id, doc.title, doc.sections[0].text) == ("R7", "Label seven", "The body.")
    assert doc.metadata == {"Notes": "note"}
    # The mapping is by name, so a case slip is forgiven.
    (doc,) = load([path], columns={"id": "ref no", "text": "body"}).documents
    assert doc.doc_id == "R7" and doc.title == ""


def test_csv_missing_text_column_is_a_block(tmp_path: Path) -> None:
    path = write(tmp_path / "c.csv", "id,title,summary\n1,One,short\n")
    result = load([path])
    finding = only(result.findings, "missing-column")
    assert finding.severity == "BLOCK"
    assert "--columns text=NAME" in finding.message
    assert "id, title, summary" in finding.message
    assert result.documents == ()


def test_csv_missing_id_column_is_a_block(tmp_path: Path) -> None:
    result = load([write(tmp_path / "c.csv", "title,text\nOne,Body.\n")])
    finding = only(result.findings, "missing-column")
    assert "--columns id=NAME" in finding.message


def test_csv_named_column_that_does_not_exist_is_a_block(tmp_path: Path) -> None:
    path = write(tmp_path / "c.csv", "id,title,text\n1,One,Body.\n")
    result = load([path], columns={"text": "Content"})
    finding = only(result.findings, "missing-column")
    assert "'Content'" in finding.message and finding.severity == "BLOCK"


def test_csv_unterminated_quote_is_a_block_with_its_line(tmp_path: Path) -> None:
    body = 'id,title,text\n1,One,"fine"\n2,Two,"never closed\n3,Three,x\n'
    result = load([write(tmp_path / "c.csv", body)])
    finding = only(result.findings, "malformed-csv")
    assert finding.severity == "BLOCK"
    assert finding.line == 3
    assert "line 3" in finding.message and "never closed" in finding.message
    assert [d.doc_id for d in result.documents] == ["1"]


def test_csv_stray_quote_is_a_block(tmp_path: Path) -> None:
    result = load([write(tmp_path / "c.csv", 'id,text\n1,"ab"c\n')])
    assert only(result.findings, "malformed-csv").line == 2


def test_csv_wrong_field_count_blocks_that_row_and_keeps_the_rest(tmp_path: Path) -> None:
    body = "id,title,text\n1,One,a\n2,Two,b,extra\n3,Three\n4,Four,d\n"
    result = load([write(tmp_path / "c.csv", body)])
    blocks = [f for f in result.findings if f.check == "malformed-csv"]
    assert [f.line for f in blocks] == [3, 4]
    assert "4 fields but the header has 3" in blocks[0].message
    assert [d.doc_id for d in result.documents] == ["1", "4"]


def test_csv_row_with_empty_id_is_kept_for_validation(tmp_path: Path) -> None:
    body = "id,title,text\n,No id,Body.\n,,,\n"
    result = load([write(tmp_path / "c.csv", body)])
    (doc,) = result.documents  # the all-empty `,,,` row is no record at all
    assert doc.doc_id == "" and doc.sections[0].section_id == ""


def test_csv_header_only_is_an_empty_corpus(tmp_path: Path) -> None:
    with pytest.raises(EmptyCorpusError):
        load([write(tmp_path / "c.csv", "id,title,text\n")])


# --- Markdown -----------------------------------------------------------------------------


@pytest.mark.shared
def test_city_guides_one_document_per_guide_preamble_in_first_section() -> None:
    folder = shared("corpora/city_guides")
    result = load([folder])
    assert len(result.documents) == 14
    assert len(result.sources) == 14
    assert all(s.startswith("/") for s in result.sources)
    assert list(result.sources) == sorted(result.sources)
    docs = by_id(result)
    assert all(name.startswith("guide_") and name.endswith(".md") for name in docs)
    kestrelford = docs["guide_kestrelford.md"]
    assert kestrelford.title == "Kestrelford"
    assert kestrelford.format == "markdown"
    first = kestrelford.sections[0]
    assert first.section_id == "guide_kestrelford.md#Getting there"
    assert first.path == ("Getting there",)
    assert first.text.startswith("Kestrelford is a hill town of 12,000")
    preamble_end = first.text.index("difficult in a car.")
    assert first.text.index("No railway station") > preamble_end
    assert "\n\nNo railway station" in first.text
    for doc in result.documents:
        assert doc.title and not doc.title.startswith("#")
        for section in doc.sections:
            assert section.section_id == f"{doc.doc_id}#{section.heading}"
            assert section.text and "\r" not in section.text
    # PROVENANCE.md and questions.json are about the corpus, not in it.
    note = only(result.findings, "skipped-files")
    assert "PROVENANCE.md" in note.message
    assert detect_format(folder) == "markdown"


GUIDE = """\
---
title: Front matter title
updated: 2024-05-01
tags: [coast, rail]
---
# Harbour Town ##

Harbour Town sits on the estuary.

## Getting there

## Eat and drink

Fish at the quay.

### Opening hours

Noon to two.

```bash
## not a heading
# nor this
```

## Eat and drink

Second list of places.

## Empty

## C# and ## more ##

Tilde fences too:

~~~
## still code
~~~
"""


def test_markdown_structure(tmp_path: Path) -> None:
    result = load([write(tmp_path / "harbour.md", GUIDE.replace("\n", "\r\n"))])
    assert result.findings == ()
    (doc,) = result.documents
    assert doc.doc_id == "harbour.md"
    assert doc.title == "Harbour Town"  # the H1 wins over front matter; closing #s dropped
    assert doc.metadata == {
        "title": "Front matter title",
        "updated": "2024-05-01",
        "tags": ["coast", "rail"],
    }
    ids = [s.section_id for s in doc.sections]
    assert ids == [
        "harbour.md#Getting there",
        "harbour.md#Eat and drink",
        "harbour.md#Eat and drink (2)",
        "harbour.md#C# and ## more",
    ]
    getting_there, eat, eat2, csharp = doc.sections
    # An empty first section still carries the preamble; `## Empty` is dropped.
    assert getting_there.text == "Harbour Town sits on the estuary."
    assert eat.heading == "Eat and drink" and eat.path == ("Eat and drink",)
    assert "### Opening hours\n\nNoon to two." in eat.text
    assert "## not a heading\n# nor this" in eat.text
    assert "\r" not in eat.text
    assert eat2.heading == "Eat and drink" and eat2.text == "Second list of places."
    assert csharp.text.endswith("~~~\n## still code\n~~~")
    json.loads(json.dumps(doc.to_dict()))  # metadata stays JSON-safe
    assert Document.from_dict(doc.to_dict()) == doc


def test_markdown_without_level_two_headings_is_one_section(tmp_path: Path) -> None:
    write(tmp_path / "titled.md", "# Notes\n\nJust a paragraph.\n")
    write(tmp_path / "bare.md", "Only text, no headings.\n")
    write(tmp_path / "fm.md", "---\ntitle: From front matter\n---\nBody text.\n")
    docs = by_id(load([tmp_path]))
    (titled,) = docs["titled.md"].sections
    assert (titled.section_id, titled.heading, titled.text) == (
        "titled.md#Notes",
        "Notes",
        "Just a paragraph.",
    )
    (bare,) = docs["bare.md"].sections
    assert bare.section_id == "bare.md" and bare.path == ()
    assert docs["bare.md"].title == ""
    (fm,) = docs["fm.md"].sections
    assert docs["fm.md"].title == "From front matter"
    assert fm.section_id == "fm.md#From front matter"


def test_markdown_without_text_is_kept_with_no_sections(tmp_path: Path) -> None:
    write(tmp_path / "empty.md", "")
    write(tmp_path / "headings.md", "# Title\n\n## One\n\n## Two\n")
    write(tmp_path / "fm_only.md", "---\nauthor: x\n---\n")
    docs = by_id(load([tmp_path]))
    assert set(docs) == {"empty.md", "headings.md", "fm_only.md"}
    assert all(d.sections == () for d in docs.values())
    assert docs["fm_only.md"].metadata == {"author": "x"}


def test_markdown_invalid_front_matter_is_a_block(tmp_path: Path) -> None:
    bad_yaml = write(tmp_path / "bad.md", "---\ntitle: [unclosed\n---\n# T\n\n## S\n\nBody.\n")
    result = load([bad_yaml])
    finding = only(result.findings, "front-matter")
    assert finding.severity == "BLOCK"
    assert finding.source == bad_yaml.resolve().as_posix()
    assert finding.line is not None and finding.line >= 2
    # The body still loads, so validation can look at the rest of the file.
    (doc,) = result.documents
    assert [s.section_id for s in doc.sections] == ["bad.md#S"]

    listed = write(tmp_path / "list.md", "---\n- a\n- b\n---\nBody.\n")
    finding = only(load([listed]).findings, "front-matter")
    assert "not a mapping" in finding.message


def test_markdown_unclosed_front_matter_is_a_thematic_break(tmp_path: Path) -> None:
    (doc,) = load([write(tmp_path / "hr.md", "---\nText after a rule.\n")]).documents
    assert doc.metadata == {}
    assert doc.sections[0].text == "---\nText after a rule."


def test_markdown_ids_are_relative_to_the_folder_given(tmp_path: Path) -> None:
    write(tmp_path / "b.md", "# B\n\n## S\n\nb.\n")
    write(tmp_path / "sub" / "a.markdown", "# A\n\n## S\n\na.\n")
    write(tmp_path / ".hidden.md", "# H\n\nhidden.\n")
    write(tmp_path / ".git" / "x.md", "# X\n\nx.\n")
    result = load([tmp_path])
    assert [d.doc_id for d in result.documents] == ["b.md", "sub/a.markdown"]
    assert result.documents[1].sections[0].section_id == "sub/a.markdown#S"
    assert result.findings == ()
    (doc,) = load([tmp_path / "sub" / "a.markdown"]).documents
    assert doc.doc_id == "a.markdown"


# --- BEIR ---------------------------------------------------------------------------------


@pytest.mark.shared
def test_scifact_corpus_loads_as_beir() -> None:
    folder = shared("bench/scifact")
    result = load([folder])
    assert len(result.documents) == 5183
    assert result.findings == ()
    assert result.sources == ((folder / "corpus.jsonl").resolve().as_posix(),)
    doc = result.documents[0]
    assert doc.format == "beir" and doc.line == 1
    assert doc.sections[0].section_id == doc.doc_id == "4983"
    assert doc.sections[0].heading == doc.title
    assert detect_format(folder) == "beir"


def test_beir_malformed_line_is_a_block_and_the_rest_loads(tmp_path: Path) -> None:
    lines = [
        json.dumps({"_id": 1, "title": "One", "text": "First.", "metadata": {"year": 2020}}),
        "",
        '{"_id": "2", "title": "Two", "text": ',
        "[1, 2]",
        json.dumps({"_id": "3", "title": "Three", "text": "Third.\r\n", "url": "u"}),
    ]
    path = write(tmp_path / "corpus.jsonl", "\n".join(lines) + "\n")
    result = load([path])
    blocks = [f for f in result.findings if f.check == "malformed-json"]
    assert [(f.severity, f.line) for f in blocks] == [("BLOCK", 3), ("BLOCK", 4)]
    assert "line 3" in blocks[0].message
    one, three = result.documents
    assert (one.doc_id, one.line, one.metadata) == ("1", 1, {"year": 2020})
    assert (three.doc_id, three.line, three.metadata) == ("3", 5, {"url": "u"})
    assert three.sections[0].text == "Third."


# --- ObliQA -------------------------------------------------------------------------------


@pytest.mark.shared
def test_obliqa_ids_hierarchy_and_gold_coverage() -> None:
    folder = shared("bench/obliqa/StructuredRegulatoryDocuments")
    result = load([folder])
    assert result.findings == ()
    assert len(result.documents) == 40 == len(result.sources)
    assert detect_format(folder) == "obliqa"
    sections = {s.section_id: s for d in result.documents for s in d.sections}
    assert "1:14.2.3.Guidance.10." in sections
    clause = sections["1:1.2.1.(1)"]
    assert clause.heading == "1.2.1.(1)"
    assert clause.path == ("1. INTRODUCTION", "1.2 Application", "1.2.1.(1)")
    assert clause.metadata == {"clause": "1.2.1.(1)"}
    assert sections["1:1.2.1.Guidance.1."].path[-2:] == ("1.2 Application", "1.2.1.Guidance.1.")
    # Headings label their children and keep their own id; empty passages are only breadcrumbs.
    assert sections["1:1.2"].text == "Application" and sections["1:1."].text == "INTRODUCTION"
    assert sections["1:1.2"].path == ("1. INTRODUCTION", "1.2 Application")
    assert "1:1.2.1" not in sections
    doc = by_id(result)["1"]
    assert doc.title == "Document 1" and doc.format == "obliqa"

    dev = json.loads(shared("bench/obliqa/ObliQA_dev.json").read_text(encoding="utf-8"))
    gold = {f"{p['DocumentID']}:{p['PassageID']}" for q in dev for p in q["Passages"]}
    covered = len(gold & sections.keys()) / len(gold)
    assert covered == 1.0, f"only {covered:.1%} of dev gold passages are sections"


def test_obliqa_file_headings_duplicates_and_order(tmp_path: Path) -> None:
    passages = [
        ("1.", "INTRODUCTION"),
        ("1.1", "Scope"),
        ("1.1.1", ""),
        ("1.1.1.(1)", "This Rulebook applies to every firm."),
        ("1.1.1.Guidance", ""),
        ("1.1.1.Guidance.1.", "Firms should read it."),
        ("1.2", "A Relevant Person must:"),
        ("1.2.(a)", "keep records; and"),
        ("2.", "Part two."),
        ("1.", "Out-of-place text that shares the id of chapter 1."),
        ("1.1.1.(1)", "A second passage of the same clause."),
    ]
    data = [
        {"ID": str(n), "DocumentID": 9, "PassageID": pid, "Passage": text}
        for n, (pid, text) in enumerate(passages)
    ]
    path = write(tmp_path / "9.json", json.dumps(data))
    assert detect_format(path) == "obliqa"
    (doc,) = load([path]).documents
    assert doc.doc_id == "9" and doc.source == path.resolve().as_posix()
    assert [s.section_id for s in doc.sections] == [
        "9:1.1",  # a heading with nothing else under its id: a section of just the heading
        "9:1.1.1.(1)",
        "9:1.1.1.Guidance.1.",
        "9:1.2",  # it has children but it is a clause, not a heading
        "9:1.2.(a)",
        "9:2.",
        "9:1.",  # placed where its text is, labelled with the chapter heading
    ]
    heading, first = doc.sections[:2]
    assert (heading.text, heading.path) == ("Scope", ("1. INTRODUCTION", "1.1 Scope"))
    assert (
        first.text == "This Rulebook applies to every firm.\n\nA second passage of the same clause."
    )
    assert first.path == ("1. INTRODUCTION", "1.1 Scope", "1.1.1.(1)")
    assert doc.sections[4].path == ("1. INTRODUCTION", "1.2.(a)")
    assert doc.sections[-1].path == ("1. INTRODUCTION",)
    assert doc.sections[-1].text == "Out-of-place text that shares the id of chapter 1."


def test_obliqa_malformed_files_are_blocks(tmp_path: Path) -> None:
    write(tmp_path / "1.json", json.dumps([{"DocumentID": 1, "PassageID": "1.1", "Passage": "x"}]))
    write(tmp_path / "2.json", '[{"DocumentID": 2, "PassageID": "1",\n "Passage": }]')
    write(tmp_path / "3.json", json.dumps([{"DocumentID": 3, "Passage": "no id"}]))
    result = load([tmp_path])
    assert [d.doc_id for d in result.documents] == ["1"]
    blocks = {Path(f.source).name: f for f in result.findings}
    assert blocks["2.json"].check == "malformed-json" and blocks["2.json"].line == 2
    assert blocks["3.json"].check == "malformed-json" and "entry 1" in blocks["3.json"].message


# --- bad input and dispatch ---------------------------------------------------------------


def test_binary_and_non_utf8_files_are_blocks_and_the_rest_loads(tmp_path: Path) -> None:
    write(tmp_path / "good.md", "# Good\n\nFine text.\n")
    write(tmp_path / "image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    write(tmp_path / "latin1.md", "# Caf\u00e9\n".encode("latin-1"))
    result = load([tmp_path])
    assert [d.doc_id for d in result.documents] == ["good.md"]
    binary = only(result.findings, "binary")
    assert binary.severity == "BLOCK" and binary.source.endswith("/image.md")
    not_utf8 = only(result.findings, "not-utf8")
    assert not_utf8.severity == "BLOCK" and not_utf8.line == 1
    assert "byte 5" in not_utf8.message and "re-save it as UTF-8" in not_utf8.message
    assert len(result.sources) == 3


def test_unreadable_file_is_a_block(tmp_path: Path) -> None:
    # A folder where a file should be fails to read as root too, unlike a mode-000 file.
    folder = tmp_path / "looks_like.csv"
    folder.mkdir()
    documents, findings = loaders.load_csv(folder)
    assert documents == []
    (finding,) = findings
    assert (finding.severity, finding.check) == ("BLOCK", "unreadable")
    assert finding.source == folder.resolve().as_posix()


def test_empty_folder_and_folder_of_other_files_are_empty_corpora(tmp_path: Path) -> None:
    with pytest.raises(
        EmptyCorpusError, match=re.escape("no .md, .markdown, .csv, .pdf, .html, .htm, .docx, .txt")
    ):
        load([tmp_path])
    write(tmp_path / "notes.rtf", "text")
    write(tmp_path / "README.md", "# About this folder\n")
    with pytest.raises(EmptyCorpusError) as caught:
        load([tmp_path])
    assert str(tmp_path) in caught.value.message
    assert "2 other file(s) skipped" in caught.value.message


def test_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match=r"no such file or folder: .*missing"):
        load([tmp_path / "missing"])
    with pytest.raises(
        UsageError, match="auto, csv, markdown, pdf, html, docx, text, beir, obliqa"
    ):
        load([tmp_path], fmt="rtf")
    with pytest.raises(UsageError, match="column role 'body'"):
        load([tmp_path], columns={"body": "Text"})
    with pytest.raises(LoadError):
        detect_format(tmp_path / "missing")


def test_a_broken_pdf_is_a_block_not_an_error(tmp_path: Path) -> None:
    pdf = write(tmp_path / "report.pdf", b"%PDF-1.7\n")
    good = write(tmp_path / "g.csv", "id,text\n1,x\n")
    result = load([pdf, good])
    finding = only(result.findings, "pdf-unreadable")
    assert finding.severity == "BLOCK"
    assert finding.message.startswith("report.pdf is not a readable PDF (")
    assert [d.doc_id for d in result.documents] == ["1"]
    assert result.sources == tuple(sorted(p.resolve().as_posix() for p in (pdf, good)))
    assert detect_format(pdf) == "pdf"


def test_mixed_folder_and_skipped_files(tmp_path: Path) -> None:
    write(tmp_path / "a_guide.md", "# Guide\n\n## Part\n\nText.\n")
    write(tmp_path / "b_rules.csv", "id,title,text\nR1,Rule,Do this.\n")
    write(tmp_path / "notes.rtf", "x")
    write(tmp_path / "more" / "data.json", "{}")
    write(tmp_path / "more" / "c.rtf", "y")
    write(tmp_path / "PROVENANCE.md", "# Where this came from\n")
    assert detect_format(tmp_path) == "mixed"
    result = load([tmp_path])
    assert [(d.doc_id, d.format) for d in result.documents] == [
        ("a_guide.md", "markdown"),
        ("R1", "csv"),
    ]
    note = only(result.findings, "skipped-files")
    assert note.severity == "REVIEW"
    assert "3 file(s)" in note.message and "1 .json, 2 .rtf" in note.message
    assert "PROVENANCE.md" in note.message
    assert note.source == tmp_path.resolve().as_posix()
    # An explicit format reads only its own files and says what it left out.
    only_csv = load([tmp_path], fmt="csv")
    assert [d.doc_id for d in only_csv.documents] == ["R1"]
    assert "1 .md" in only(only_csv.findings, "skipped-files").message


def test_explicit_format_reads_any_extension(tmp_path: Path) -> None:
    path = write(tmp_path / "notes.mdown", "# Notes\n\n## One\n\nBody.\n")
    auto = load([path])
    assert only(auto.findings, "unsupported-format").severity == "BLOCK"
    (doc,) = load([path], fmt="markdown").documents
    assert doc.sections[0].section_id == "notes.mdown#One"


def test_same_source_twice_is_read_once(tmp_path: Path) -> None:
    path = write(tmp_path / "c.csv", "id,text\n1,x\n")
    result = load([path, str(path)])
    assert len(result.documents) == 1 and len(result.sources) == 1
    assert load(path).documents == result.documents  # a lone path is not a sequence


# --- symbolic links -----------------------------------------------------------------------


def _everything(result: LoadResult) -> str:
    """All a load kept, as one string: where a secret would show if it leaked."""
    return json.dumps([d.to_dict() for d in result.documents]) + json.dumps(
        [f.to_dict() for f in result.findings]
    )


def test_links_out_of_the_corpus_are_skipped_and_named(tmp_path: Path) -> None:
    corpus = corpus_with_outside_symlink(tmp_path)
    result = load([corpus])
    assert OUTSIDE_SECRET not in _everything(result)
    # The link that stays inside loads as before, under its own name.
    assert sorted(d.doc_id for d in result.documents) == ["alias.md", "guide.md", "sub/note.md"]
    assert all(not d.metadata for d in result.documents)
    links = [f for f in result.findings if f.check == "skipped-links"]
    assert {f.severity for f in links} == {"REVIEW"}
    # One finding for the walk (document, folder, dangling and looping links) and one for
    # each metadata file that is a link out of the corpus.
    walked = next(f for f in links if f.source == corpus.resolve().as_posix())
    assert "4 symbolic link(s)" in walked.message and "--follow-links" in walked.message
    for name in ("passwd.txt", "elsewhere", "dangling.md", "loop.md"):
        assert name in walked.excerpt
    assert "outside" in walked.excerpt and "nothing" in walked.excerpt
    sidecars = sorted(Path(f.source).name for f in links if f is not walked)
    assert sidecars == ["_meta.yaml", "guide.md.meta.yaml"]
    for finding in links:
        one_line = finding.message
        assert "\n" not in one_line and "symbolic link" in one_line


def test_a_link_to_a_system_file_is_not_read(tmp_path: Path) -> None:
    passwd = Path("/etc/passwd")
    if not passwd.is_file():
        pytest.skip("no /etc/passwd here")
    corpus = corpus_with_outside_symlink(tmp_path, target=passwd)
    result = load([corpus])
    assert "root:" not in _everything(result)
    assert str(passwd) in only_walk_finding(result, corpus).excerpt


def only_walk_finding(result: LoadResult, folder: Path) -> Finding:
    (finding,) = [
        f
        for f in result.findings
        if f.check == "skipped-links" and f.source == folder.resolve().as_posix()
    ]
    return finding


def test_follow_links_reads_them_all(tmp_path: Path) -> None:
    corpus = corpus_with_outside_symlink(tmp_path)
    result = load([corpus], follow_links=True)
    ids = sorted(d.doc_id for d in result.documents)
    assert ids == [
        "alias.md",
        "elsewhere/more.md",
        "elsewhere/secret.txt",
        "guide.md",
        "passwd.txt",
        "sub/note.md",
    ]
    assert by_id(result)["guide.md"].metadata == {"secret": OUTSIDE_SECRET}
    # A link to nothing is still skipped, and says so.
    finding = only_walk_finding(result, corpus)
    assert "2 symbolic link(s)" in finding.message
    assert "dangling.md" in finding.excerpt and "loop.md" in finding.excerpt


def test_a_linked_folder_that_loops_is_read_once(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write(corpus / "a" / "one.md", "# One\n\nText of one.\n")
    (corpus / "a" / "back").symlink_to(corpus, target_is_directory=True)
    result = load([corpus], follow_links=True)
    assert [d.doc_id for d in result.documents] == ["a/one.md"]


def test_benchmark_layouts_found_in_a_folder_are_not_read_through_links(tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    record = {"_id": "s1", "title": "Secret", "text": OUTSIDE_SECRET}
    outside_link(beir, "corpus.jsonl", json.dumps(record) + "\n")
    write(beir / "notes.md", "# Notes\n\nA note that belongs here.\n")
    result = load([beir])
    assert OUTSIDE_SECRET not in _everything(result)
    assert "corpus.jsonl" in only_walk_finding(result, beir).excerpt
    with pytest.raises(EmptyCorpusError, match=r"1 symbolic link\(s\) skipped"):
        load([beir], fmt="beir")

    obliqa = tmp_path / "obliqa"
    passage = {"DocumentID": 9, "PassageID": "1.1", "Passage": OUTSIDE_SECRET}
    outside_link(obliqa, "9.json", json.dumps([passage]))
    write(obliqa / "1.json", json.dumps([{"DocumentID": 1, "PassageID": "1.1", "Passage": "x"}]))
    result = load([obliqa])
    assert [d.doc_id for d in result.documents] == ["1"]
    assert OUTSIDE_SECRET not in _everything(result)
    assert "9.json" in only_walk_finding(result, obliqa).excerpt


def test_a_file_named_on_its_own_reads_no_sidecar_through_a_link(tmp_path: Path) -> None:
    guide = write(tmp_path / "docs" / "guide.md", "# Guide\n\n## Part\n\nSome text here.\n")
    outside_link(tmp_path / "docs", "guide.md.meta.yaml", f"secret: {OUTSIDE_SECRET}\n")
    result = load([guide])
    assert OUTSIDE_SECRET not in _everything(result)
    (finding,) = [f for f in result.findings if f.check == "skipped-links"]
    assert finding.source.endswith("guide.md.meta.yaml")
    # A file the user names is read even when it is a link: naming it is the consent.
    named = outside_link(tmp_path / "docs", "named.md", "# Named\n\n## Part\n\nLinked text.\n")
    assert [d.doc_id for d in load([named]).documents] == ["named.md"]
