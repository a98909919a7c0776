"""Word (.docx) loading: files built here with python-docx, read back by the real loader,
every bad input one BLOCK finding, and the real Coventry "Call for Sites" form."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import docx
from docx.oxml import OxmlElement, parse_xml
from docx.oxml.ns import nsdecls, qn
from docx.shared import Pt

from groundqa.loaders.docx import DOCUMENT_PART_BYTES, DOCX_SUFFIXES, _word_package, load_docx
from groundqa.models import Document, Section
from tests.conftest import need_shared
from tests.hostilekit import (
    GiB,
    MiB,
    docx_big_document_xml,
    docx_lying_header,
    docx_with_huge_media,
    docx_with_huge_styles,
    load_in_child,
)

# A decimal list ("1." then "1.1", levels linked to the heading styles) over a lettered one
# ("(a)"), added to the template's numbering part.
MULTILEVEL = f"""<w:abstractNum {nsdecls("w")} w:abstractNumId="90">
  <w:multiLevelType w:val="multilevel"/>
  <w:lvl w:ilvl="0">
    <w:start w:val="1"/><w:numFmt w:val="decimal"/><w:pStyle w:val="Heading1"/>
    <w:lvlText w:val="%1."/>
  </w:lvl>
  <w:lvl w:ilvl="1">
    <w:start w:val="1"/><w:numFmt w:val="decimal"/><w:pStyle w:val="Heading2"/>
    <w:lvlText w:val="%1.%2"/>
  </w:lvl>
  <w:lvl w:ilvl="2">
    <w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="(%3)"/>
  </w:lvl>
</w:abstractNum>"""
LIST_ID = 90


def add_list(document: Any) -> None:
    numbering = document.part.numbering_part.element
    numbering.insert(0, parse_xml(MULTILEVEL))
    numbering.append(
        parse_xml(
            f'<w:num {nsdecls("w")} w:numId="{LIST_ID}"><w:abstractNumId w:val="90"/></w:num>'
        )
    )


def number(paragraph: Any, level: int) -> None:
    num_pr = paragraph._p.get_or_add_pPr().get_or_add_numPr()
    num_pr.get_or_add_ilvl().val = level
    num_pr.get_or_add_numId().val = LIST_ID


def mark_header(row: Any) -> None:
    row._tr.get_or_add_trPr().append(OxmlElement("w:tblHeader"))


def only(result: tuple[list[Document], list[Any]]) -> Document:
    documents, findings = result
    assert findings == []
    assert len(documents) == 1
    return documents[0]


def by_heading(document: Document) -> dict[str, Section]:
    return {s.heading: s for s in document.sections}


def build_bylaw(path: Path) -> Path:
    """Title, two heading levels (automatically numbered), a numbered clause list, an
    empty paragraph, a line break, and a zoning table with a repeated header row and
    merged cells."""
    document = docx.Document()
    add_list(document)
    document.core_properties.author = "Jane Officer"
    document.core_properties.last_modified_by = "John Editor"
    document.add_heading("Kestrelford Zoning By-law", 0)
    document.add_paragraph("This by-law sets the lot sizes for every zone.")
    number(document.add_heading("General", 1), 0)
    number(document.add_heading("Scope", 2), 1)
    document.add_paragraph("")
    lines = document.add_paragraph("It applies to all land")
    lines.add_run().add_break()
    lines.add_run("within the town boundary.")
    number(document.add_paragraph("The owner must keep the register."), 2)
    number(document.add_paragraph("The clerk may inspect it."), 2)
    number(document.add_heading("Lot sizes", 2), 1)
    document.add_paragraph("Table 1 sets the minimum lot size.")
    table = document.add_table(rows=4, cols=3)
    for row, values in zip(
        table.rows,
        [
            ["Zone", "Minimum lot size", "Frontage"],
            ["Rural", "40 ha", "100 m"],
            ["", "25 ha", "60 m"],
            ["Urban", "600 m2", ""],
        ],
        strict=True,
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    mark_header(table.rows[0])
    table.cell(1, 0).merge(table.cell(2, 0))  # Rural spans two rows
    table.cell(3, 1).merge(table.cell(3, 2))  # 600 m2 spans two columns
    document.add_paragraph("Lots in a rural zone need road access.")
    number(document.add_heading("Fees", 1), 0)
    document.add_paragraph("A permit costs 40 pounds.")
    document.save(str(path))
    return path


def test_suffixes() -> None:
    assert DOCX_SUFFIXES == (".docx",)


def test_headings_paths_numbers_and_paragraphs(tmp_path: Path) -> None:
    document = only(load_docx(build_bylaw(tmp_path / "bylaw.docx"), root=tmp_path))
    assert document.doc_id == "bylaw.docx"
    assert document.format == "docx"
    assert document.title == "Kestrelford Zoning By-law"
    sections = by_heading(document)
    assert list(sections) == ["", "1.1 Scope", "1.2 Lot sizes", "2. Fees"]
    assert sections[""].section_id == "bylaw.docx#preamble"
    assert sections[""].text == "This by-law sets the lot sizes for every zone."
    scope = sections["1.1 Scope"]
    assert scope.section_id == "bylaw.docx#1.1 Scope"
    assert scope.path == ("1. General", "1.1 Scope")
    assert scope.metadata == {"clause": "1.1"}
    # The empty paragraph is gone, the line break is a space, list numbers are shown.
    assert scope.text.split("\n\n") == [
        "It applies to all land within the town boundary.",
        "(a) The owner must keep the register.",
        "(b) The clerk may inspect it.",
    ]
    assert sections["2. Fees"].path == ("2. Fees",)
    assert sections["2. Fees"].metadata == {"clause": "2"}


def test_heading_styles_numbered_through_a_linked_list(tmp_path: Path) -> None:
    document = docx.Document()
    add_list(document)
    for name in ("Heading 1", "Heading 2"):
        num_pr = document.styles[name].element.get_or_add_pPr().get_or_add_numPr()
        num_pr.get_or_add_numId().val = LIST_ID  # no level: the list links it to the style
    document.add_heading("Definitions", 1)
    document.add_paragraph("Words mean what they say.")
    document.add_heading("Terms", 2)
    document.add_paragraph("A lot is a parcel of land.")
    document.add_heading("Fees", 1)
    document.add_paragraph("A permit costs 40 pounds.")
    document.save(str(tmp_path / "linked.docx"))
    result = only(load_docx(tmp_path / "linked.docx"))
    assert [(s.heading, s.path, s.metadata) for s in result.sections] == [
        ("1. Definitions", ("1. Definitions",), {"clause": "1"}),
        ("1.1 Terms", ("1. Definitions", "1.1 Terms"), {"clause": "1.1"}),
        ("2. Fees", ("2. Fees",), {"clause": "2"}),
    ]


def test_table_rows_keep_headers_and_merged_cells(tmp_path: Path) -> None:
    document = only(load_docx(build_bylaw(tmp_path / "bylaw.docx")))
    lots = by_heading(document)["1.2 Lot sizes"]
    # The table sits between the paragraphs around it, in document order.
    assert lots.text.split("\n\n") == [
        "Table 1 sets the minimum lot size.",
        "Zone: Rural; Minimum lot size: 40 ha; Frontage: 100 m.\n"
        "Zone: Rural; Minimum lot size: 25 ha; Frontage: 60 m.\n"
        "Zone: Urban; Minimum lot size: 600 m2; Frontage: 600 m2.",
        "Lots in a rural zone need road access.",
    ]


def test_no_author_names_in_text_or_metadata(tmp_path: Path) -> None:
    document = only(load_docx(build_bylaw(tmp_path / "bylaw.docx")))
    everything = repr(document.to_dict())
    assert "Jane Officer" not in everything
    assert "John Editor" not in everything


def test_first_row_of_labels_is_the_header_without_a_mark(tmp_path: Path) -> None:
    document = docx.Document()
    table = document.add_table(rows=3, cols=3)
    for row, values in zip(
        table.rows,
        [["Fee", "Amount", "Due"], ["Permit", "40", "on filing"], ["Renewal", "25", "yearly"]],
        strict=True,
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.save(str(tmp_path / "fees.docx"))
    sections = only(load_docx(tmp_path / "fees.docx")).sections
    assert [s.text for s in sections] == [
        "Fee: Permit; Amount: 40; Due: on filing.\nFee: Renewal; Amount: 25; Due: yearly."
    ]


def test_bold_header_over_a_bold_first_column_is_a_header(tmp_path: Path) -> None:
    document = docx.Document()
    table = document.add_table(rows=3, cols=3)
    rows = [["Zone", "Minimum lot size", "Frontage"], ["Rural", "40 ha", "100 m"]]
    rows.append(["Urban", "600 m2", "15 m"])
    for r, values in enumerate(rows):
        for c, value in enumerate(values):
            write_cell(table.cell(r, c), value, bold=r == 0 or c == 0)
    document.save(str(tmp_path / "zones.docx"))
    assert only(load_docx(tmp_path / "zones.docx")).sections[0].text == (
        "Zone: Rural; Minimum lot size: 40 ha; Frontage: 100 m.\n"
        "Zone: Urban; Minimum lot size: 600 m2; Frontage: 15 m."
    )


def test_two_column_form_reads_label_answer(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Please complete every box.")
    table = document.add_table(rows=3, cols=2)
    for row, values in zip(
        table.rows,
        [["Site name", "Old Mill"], ["Address:", "1 Quay Street"], ["Area (ha)", "2.5"]],
        strict=True,
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.save(str(tmp_path / "form.docx"))
    text = only(load_docx(tmp_path / "form.docx")).sections[0].text
    assert text.split("\n\n")[1] == "Site name: Old Mill.\nAddress: 1 Quay Street.\nArea (ha): 2.5."


def write_cell(cell: Any, text: str, bold: bool = False) -> None:
    cell.paragraphs[0].add_run(text).bold = bold


def test_form_without_heading_styles_reads_as_it_looks(tmp_path: Path) -> None:
    """A title set large, a table whose numbered full-width first row names it, bold
    labels beside answers and tick options, and a bold paragraph heading."""
    document = docx.Document()
    document.add_paragraph().add_run("Site Assessment Form").font.size = Pt(16)
    table = document.add_table(rows=4, cols=3)
    caption = table.cell(0, 0).merge(table.cell(0, 2))
    caption.paragraphs[0].style = document.styles["List Number"]
    write_cell(caption, "Site details (please complete every box)", bold=True)
    write_cell(table.cell(1, 0), "Site name", bold=True)
    write_cell(table.cell(1, 1).merge(table.cell(1, 2)), "Old Mill")
    for cell, text in zip(table.rows[2].cells, ["Do you own the site?", "Yes", "No"], strict=True):
        write_cell(cell, text, bold=text.endswith("?"))
    write_cell(table.cell(3, 0), "Area (ha)", bold=True)
    write_cell(table.cell(3, 1), "2.5")
    document.add_paragraph().add_run("Privacy Notice").bold = True
    document.add_paragraph("We keep your details for five years.")
    document.save(str(tmp_path / "form.docx"))
    result = only(load_docx(tmp_path / "form.docx"))
    assert result.title == "Site Assessment Form"
    assert [(s.heading, s.path, s.metadata, s.text) for s in result.sections] == [
        (
            "1. Site details",
            ("1. Site details",),
            {"clause": "1"},
            "(please complete every box)\n"
            "Site name: Old Mill.\nDo you own the site? Yes; No.\nArea (ha): 2.5.",
        ),
        ("Privacy Notice", ("Privacy Notice",), {}, "We keep your details for five years."),
    ]


def test_outline_level_and_styles_based_on_headings(tmp_path: Path) -> None:
    from docx.enum.style import WD_STYLE_TYPE

    document = docx.Document()
    clause = document.styles.add_style("Clause Heading", WD_STYLE_TYPE.PARAGRAPH)
    clause.base_style = document.styles["Heading 2"]
    document.add_heading("Part 2 Obligations", 1)
    document.add_paragraph("Duties of owners.", style="Clause Heading")
    document.add_paragraph("An owner must register.")
    outlined = document.add_paragraph("Schedule 1")
    level = OxmlElement("w:outlineLvl")
    level.set(qn("w:val"), "0")
    outlined._p.get_or_add_pPr().append(level)
    document.add_paragraph("Fees are set yearly.")
    document.save(str(tmp_path / "duties.docx"))
    result = only(load_docx(tmp_path / "duties.docx"))
    # No Title paragraph and two top-level headings: the first names the document and
    # both stay sections.
    assert result.title == "Part 2 Obligations"
    assert [(s.heading, s.path, s.metadata) for s in result.sections] == [
        ("Duties of owners.", ("Part 2 Obligations", "Duties of owners."), {}),
        ("Schedule 1", ("Schedule 1",), {"clause": "Sch 1"}),
    ]


def test_sole_heading_1_is_the_document(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_heading("Tree Protection Policy", 1)
    document.add_paragraph("Trees over 5 m are protected.")
    document.add_heading("Exemptions", 2)
    document.add_paragraph("Dead trees may be removed.")
    document.save(str(tmp_path / "trees.docx"))
    result = only(load_docx(tmp_path / "trees.docx"))
    assert result.title == "Tree Protection Policy"
    assert [(s.section_id, s.path) for s in result.sections] == [
        ("trees.docx#preamble", ()),
        ("trees.docx#Exemptions", ("Exemptions",)),
    ]


def test_no_headings_is_one_section_named_for_the_file(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Bins are collected on Tuesdays.")
    document.add_paragraph("Garden waste goes in the green bin.")
    document.save(str(tmp_path / "bins.docx"))
    result = only(load_docx(tmp_path / "bins.docx"))
    assert result.title == "bins"
    assert [(s.section_id, s.text) for s in result.sections] == [
        ("bins.docx#bins", "Bins are collected on Tuesdays.\n\nGarden waste goes in the green bin.")
    ]


def test_content_controls_and_tracked_insertions_are_read(tmp_path: Path) -> None:
    document = docx.Document()
    paragraph = document.add_paragraph("Applicant: ")
    paragraph._p.append(
        parse_xml(
            f"<w:sdt {nsdecls('w')}><w:sdtContent><w:r><w:t>Ada Lovelace</w:t></w:r>"
            "</w:sdtContent></w:sdt>"
        )
    )
    paragraph._p.append(
        parse_xml(
            f'<w:ins {nsdecls("w")} w:id="1" w:author="x"><w:r><w:t> (agent)</w:t></w:r></w:ins>'
        )
    )
    paragraph._p.append(
        parse_xml(
            f'<w:del {nsdecls("w")} w:id="2" w:author="x">'
            "<w:r><w:delText>gone</w:delText></w:r></w:del>"
        )
    )
    document.save(str(tmp_path / "sdt.docx"))
    assert (
        only(load_docx(tmp_path / "sdt.docx")).sections[0].text == "Applicant: Ada Lovelace (agent)"
    )


# --- bad input --------------------------------------------------------------------


def finding_for(path: Path) -> Any:
    documents, findings = load_docx(path)
    assert documents == []
    assert len(findings) == 1
    assert findings[0].severity == "BLOCK"
    return findings[0]


def test_renamed_text_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.docx"
    path.write_text("Just some notes, not a Word file.\n", encoding="utf-8")
    finding = finding_for(path)
    assert "notes.docx is not a Word .docx file" in finding.message
    assert "plain text" in finding.message


def test_zip_of_something_else(tmp_path: Path) -> None:
    path = tmp_path / "photos.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.txt", "x")
        archive.writestr("b.png", b"\x89PNG")
    finding = finding_for(path)
    assert finding.check == "docx-not-word"
    assert "is a zip archive of 2 file(s) (a.txt, b.png), not a Word document" in finding.message


def test_renamed_spreadsheet(tmp_path: Path) -> None:
    path = tmp_path / "budget.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/workbook.xml", "<workbook/>")
    assert "is an Excel workbook (.xlsx), not a Word document" in finding_for(path).message


def ole_file(streams: list[str]) -> bytes:
    """An OLE compound file's signature and header, then directory entries naming
    `streams` (UTF-16, as the format stores them). Not a complete compound file: no
    encrypting tool is installed here, and the loader reads no further than the names."""
    header = bytes.fromhex("d0cf11e0a1b11ae1") + bytes(16) + b"\x3e\x00\x03\x00\xfe\xff\x09\x00"
    header += bytes(512 - len(header))
    entries = b""
    for name in ["Root Entry", *streams]:
        encoded = name.encode("utf-16-le") + b"\x00\x00"
        entries += (
            encoded + bytes(64 - len(encoded)) + len(encoded).to_bytes(2, "little") + bytes(62)
        )
    return header + entries


def test_password_protected(tmp_path: Path) -> None:
    path = tmp_path / "secret.docx"
    path.write_bytes(ole_file(["EncryptionInfo", "EncryptedPackage", "\x06DataSpaces"]))
    finding = finding_for(path)
    assert finding.check == "docx-encrypted"
    assert "secret.docx is password-protected; save an unprotected copy" in finding.message


def test_old_binary_doc_renamed(tmp_path: Path) -> None:
    path = tmp_path / "minutes.docx"
    path.write_bytes(ole_file(["WordDocument", "1Table", "\x05SummaryInformation"]))
    finding = finding_for(path)
    assert finding.check == "docx-legacy-doc"
    assert "minutes.docx is a Word 97-2003 .doc; save it as .docx" in finding.message


def test_broken_word_part_is_a_finding_not_an_exception(tmp_path: Path) -> None:
    path = tmp_path / "broken.docx"
    build_bylaw(tmp_path / "good.docx")
    with zipfile.ZipFile(tmp_path / "good.docx") as good, zipfile.ZipFile(path, "w") as bad:
        for item in good.infolist():
            data = good.read(item)
            bad.writestr(item, b"<w:document" if item.filename == "word/document.xml" else data)
    finding = finding_for(path)
    assert finding.check == "docx-unreadable"
    assert "broken.docx cannot be read as a Word document" in finding.message


# --- a real form ------------------------------------------------------------------


def test_real_call_for_sites_form() -> None:
    path = need_shared("corpora", "real_docs", "coventry_call_for_sites_pro_forma.docx")
    document = only(load_docx(path))
    # No heading styles: the large opening line is the title, the numbered title rows of
    # the tables and a bold paragraph are the sections (9 and 10 are questions, too long
    # for headings, and stay text).
    assert document.title == "Call for Sites Assessment Form"
    sections = by_heading(document)
    assert list(sections) == [
        "1. Your Confidentially Held Details",
        "2. Your Publicly Viewable Details",
        "3. Site Location",
        "4. Site ownership",
        "5. Site Constraints",
        "6. Site Accessibility",
        "7. Previous site promotional work",
        "8. Proposal Details",
        "11. Would you like to be added to the planning policy consultation database",
        "Privacy Notice",
    ]
    assert sections["3. Site Location"].metadata == {"clause": "3"}
    assert sections["4. Site ownership"].text.startswith(
        "(please tick as appropriate and/or provide details)\n"
        "Do you own the site? Yes – sole owner; Yes – part owner; "
        "Yes – acting on behalf of the owner(s); No.\n"
    )
    # Bold labels with the cells beside them; a cell merged over two columns once.
    lines = sections["5. Site Constraints"].text.split("\n")
    assert "Existing Infrastructure: Electricity; Gas; Mains Sewer; Mains Water; Telecoms." in lines
    assert "Flooding: Yes - details; Reports/Mitigation Strategy; No." in lines
    assert "Proposed Land Use: Residential; Employment; Retail; Mixed; Other." in (
        sections["8. Proposal Details"].text.split("\n")
    )
    assert sections["Privacy Notice"].text.startswith("Coventry City Council will use your")
    everything = repr(document.to_dict())
    for officer in ("Liggett", "Eggington"):
        assert officer not in everything


# --- zip bombs and lying headers --------------------------------------------------
# Each attack is made at test time (a few megabytes at most) and loaded beside a good
# file in a child process under a memory limit: a loader that inflated it would hit the
# limit there, not take the machine.

GOOD = "# Harbour\n\n## Moorings\n\nVisitors moor on the north wall and pay at the office.\n"
ATTACK_MEMORY = 2 * GiB
# What one refused attack may cost to load, beside the good file.
ATTACK_MB = 300
ATTACK_SECONDS = 20


def load_attack(folder: Path) -> dict[str, Any]:
    (folder / "guide.md").write_text(GOOD, encoding="utf-8")
    report = load_in_child([folder], memory=ATTACK_MEMORY)
    assert report["crash"] is None, report
    assert report["peak_mb"] < ATTACK_MB, report
    assert report["seconds"] < ATTACK_SECONDS, report
    return report


def one_block(report: dict[str, Any]) -> tuple[str, str]:
    """(check, message) of the attack's one finding; the good file loaded beside it."""
    assert report["documents"] == ["guide.md"], report
    (finding,) = report["findings"]
    severity, check, message = finding
    assert severity == "BLOCK"
    assert message.strip() and "\n" not in message and "Traceback" not in message
    return check, message


def test_a_picture_that_unpacks_to_gigabytes_is_refused_unread(tmp_path: Path) -> None:
    docx_with_huge_media(tmp_path / "brochure.docx", 3 * GiB)
    check, message = one_block(load_attack(tmp_path))
    assert check == "docx-too-big"
    assert message.startswith("brochure.docx is refused: it says it unpacks to 3,072 MiB")
    assert "save it again" in message


def test_a_part_the_loader_does_not_read_is_never_unpacked(tmp_path: Path) -> None:
    # The same picture under headers that say 5,000 bytes: nothing notices, and nothing
    # needs to, because only the parts read are unpacked.
    docx_with_huge_media(tmp_path / "brochure.docx", 3 * GiB, declared=5_000)
    report = load_attack(tmp_path)
    assert report["documents"] == ["brochure.docx", "guide.md"]
    assert report["findings"] == []


def test_styles_that_unpack_past_their_limit_are_refused(tmp_path: Path) -> None:
    # Under the limit on what a file may say it holds, so the guard has to count.
    docx_with_huge_styles(tmp_path / "styled.docx", 512 * MiB)
    check, message = one_block(load_attack(tmp_path))
    assert check == "docx-too-big"
    assert "its part word/styles.xml inflates past 4 MiB" in message


def test_a_header_that_understates_a_part_does_not_buy_a_gigabyte(tmp_path: Path) -> None:
    docx_lying_header(tmp_path / "short.docx", GiB, declared=5_000)
    check, message = one_block(load_attack(tmp_path))
    assert check == "docx-unreadable"
    assert "Bad CRC-32 for file 'word/document.xml'" in message


def test_a_document_part_past_its_limit_is_refused(tmp_path: Path) -> None:
    docx_big_document_xml(tmp_path / "long.docx", 250 * MiB)
    assert (tmp_path / "long.docx").stat().st_size < MiB
    check, message = one_block(load_attack(tmp_path))
    assert check == "docx-too-big"
    assert f"word/document.xml inflates past {DOCUMENT_PART_BYTES // MiB} MiB" in message


def test_the_package_python_docx_sees_holds_only_the_parts_read(tmp_path: Path) -> None:
    # python-docx's template relates a thumbnail, a theme, settings, fonts and custom XML.
    path = build_bylaw(tmp_path / "bylaw.docx")
    assert "docProps/thumbnail.jpeg" in zipfile.ZipFile(path).namelist()
    package = zipfile.ZipFile(_word_package(path))
    assert sorted(package.namelist()) == [
        "[Content_Types].xml",
        "_rels/.rels",
        "docProps/core.xml",
        "word/_rels/document.xml.rels",
        "word/document.xml",
        "word/numbering.xml",
        "word/styles.xml",
    ]
    rels = package.read("word/_rels/document.xml.rels").decode()
    assert "styles" in rels and "numbering" in rels
    assert "theme" not in rels and "settings" not in rels and "fontTable" not in rels
