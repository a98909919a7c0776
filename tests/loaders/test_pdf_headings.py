"""Headings found by their type in PDFs without an outline: generated PDFs whose only
cue is the type (tests/pdfgen.py `write_styled`), then the real PDFs in ../shared."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundqa.chunking import ChunkerSettings, chunk_documents
from groundqa.generate import cite
from groundqa.loaders import load_pdf
from groundqa.loaders.pdf_headings import reads_as_heading
from groundqa.models import Document, Hit
from tests.conftest import need_shared
from tests.pdfgen import write_outlined, write_styled

REAL = ("corpora", "real_docs")

BODY = (
    "The council reviews the water supply every year and publishes what it found. "
    "Each review covers the sources, the treatment works and the pipes that carry "
    "water to homes, and it names the work planned for the next year."
)
LONG_BODY = " ".join(
    f"In year {n} the council tested source number {n + 3} and found {n * 7} samples "
    f"within the limits, with {n + 1} repairs made to the pipes that serve district {n}."
    for n in range(1, 15)
)
QUESTION = (
    "Can a household that is not connected to the public supply ask the council for a copy "
    "of the review, and is there a charge for it?"
)
BOLD_PARAGRAPH = (
    "Please note that this review was prepared before the new standards came into "
    "force and that some figures may change when the next review is published in the "
    "spring, after the council has had time to check every source again with the "
    "regulator and with the operators of the treatment works."
)


def _review(tmp_path: Path) -> Document:
    blocks = [
        ("cover", "ANNUAL WATER REVIEW"),
        ("body", "Prepared by the council for its residents."),
        ("page", ""),
        ("h1", "Introduction"),
        ("body", BODY),
        ("h2", "Scope of the review"),
        ("body", BODY),
        ("bold", BOLD_PARAGRAPH),
        ("body", BODY),
        ("h1", "Findings"),
        ("body", BODY),
        ("h2", "Water quality"),
        ("body", LONG_BODY),
        ("page", ""),
        ("h2", "Water quality (continued)"),
        (
            "body",
            "Nitrate stayed low. Levels were below eleven milligrams per litre at every source.",
        ),
        ("h2", "Costs"),
        ("body", "The review cost the council forty thousand pounds."),
        ("h1", "Questions"),
        ("h2", QUESTION),
        ("body", "Yes: every household may ask for a copy, and it is sent free of charge."),
    ]
    path = write_styled(tmp_path / "review.pdf", blocks)
    (doc,), _ = load_pdf(path, root=tmp_path)
    return doc


def test_headings_set_apart_by_type_become_nested_sections(tmp_path: Path) -> None:
    doc = _review(tmp_path)
    paths = [s.path for s in doc.sections if s.heading]
    assert paths == [
        ("Introduction",),
        ("Introduction", "Scope of the review"),
        ("Findings",),
        ("Findings", "Water quality"),
        ("Findings", "Costs"),
        ("Questions", QUESTION),  # a long question set apart, over two lines
    ]
    # The cover's large type is not a level of headings; it is the title.
    assert doc.title == "ANNUAL WATER REVIEW"
    # A bold paragraph is body text of its section, not a heading.
    scope = next(s for s in doc.sections if s.heading == "Scope of the review")
    assert "Please note that this review was prepared" in scope.text
    # "(continued)" at the top of the next page goes on with the same section.
    quality = next(s for s in doc.sections if s.heading == "Water quality")
    assert "Nitrate stayed low." in quality.text
    assert [p for _, p in quality.page_starts] == [2, 3]


@pytest.mark.parametrize("caption", ["Table 3: Nitrate at each source", ""])
def test_a_caption_over_bold_header_cells_is_the_tables_heading(
    tmp_path: Path, caption: str
) -> None:
    # Bold header cells under a caption make a run too long for one heading; the caption
    # opening it is the table's heading, and the cells stay in its text.
    header = [("bold", "Water"), ("bold", "source"), ("bold", "Nitrate"), ("bold", "(mg/l)")]
    blocks = [
        ("cover", "ANNUAL WATER REVIEW"),
        ("page", ""),
        ("h1", "Findings"),
        ("body", BODY),
        *([("bold", caption)] if caption else []),
        *header,
        ("body", "Source 1; Nitrate: 9."),
        ("body", "Source 2; Nitrate: 11."),
        ("h2", "Costs"),
        ("body", "The review cost the council forty thousand pounds."),
        ("page", ""),
        ("h1", "Outlook"),
        ("body", BODY),
    ]
    (doc,), _ = load_pdf(write_styled(tmp_path / "table.pdf", blocks), root=tmp_path)
    paths = [s.path for s in doc.sections if s.heading]
    if caption:
        assert paths == [("Findings",), ("Findings", caption), ("Findings", "Costs"), ("Outlook",)]
        table = next(s for s in doc.sections if s.heading == caption)
        assert " ".join(table.text.split()).startswith("Water source Nitrate (mg/l) Source 1")
        assert "Source 2; Nitrate: 11." in table.text
    else:
        assert paths == [("Findings",), ("Findings", "Costs"), ("Outlook",)]
        findings = next(s for s in doc.sections if s.heading == "Findings")
        assert "year. Water source Nitrate (mg/l) Source 1" in " ".join(findings.text.split())


def test_a_citation_names_the_page_of_the_sentence_it_quotes(tmp_path: Path) -> None:
    doc = _review(tmp_path)
    chunks = [c for c in chunk_documents([doc], ChunkerSettings()) if "Nitrate" in c.text]
    (chunk,) = chunks
    # The chunk starts on page 2 and runs onto page 3, where the quoted sentence is.
    assert chunk.page == 2
    assert [p for _, p in chunk.page_starts] == [2, 3]
    quote = "Levels were below eleven milligrams per litre at every source."
    citation = cite(1, Hit(chunk, 1.0, 1), quote)
    assert citation.page == 3
    assert citation.uri.endswith("review.pdf#page=3")
    opening = cite(1, Hit(chunk, 1.0, 1), chunk.text[:80])
    assert opening.page == 2 and opening.uri.endswith("#page=2")
    # A snippet joins sentences that need not be adjacent: its first one names the page.
    joined = "Nitrate stayed low. In year 14 the council tested source number 17"
    assert cite(1, Hit(chunk, 1.0, 1), joined).page == 3
    # A snippet that is not in the chunk keeps the page the chunk starts on.
    assert cite(1, Hit(chunk, 1.0, 1), "Not in this passage.").page == 2


@pytest.mark.parametrize(
    "text",
    [
        "9. Effective Date",
        "Annex F: Managing Flood Risk and Coastal Change",
        "SECTION 5.",
        "25.04.030 EXEMPTIONS.",
        "(g) Installation/Verification of Flight Control Computer (FCC) Software (OPS)",
        "Authority Monitoring Report 2017/18",
    ],
)
def test_lines_that_read_as_headings(text: str) -> None:
    assert reads_as_heading(text)


@pytest.mark.parametrize(
    "text",
    [
        "Total (Gross) 1,395 2,509 5,077 1,113",  # a table's row of figures
        "Federal Register. The FAA will",  # a sentence ends inside it
        "Note 1 to paragraph (g): Guidance for",  # it runs on
        "Explanation of Change to the",
        "This review is important.",  # a sentence
        "Costs, charges and fees,",
        "x" * 101,
    ],
)
def test_lines_that_do_not_read_as_headings(text: str) -> None:
    assert not reads_as_heading(text)


# --- real PDFs without an outline ------------------------------------------------


def _real(name: str) -> Document:
    (doc,), _ = load_pdf(need_shared(*REAL, name), ocr=False)
    return doc


def test_real_bylaw_headings_from_its_type() -> None:
    doc = _real("whitby_noise_bylaw_6917-14.pdf")
    headings = [s.heading for s in doc.sections if s.heading]
    numbered = [h for h in headings if h[:1].isdigit()]
    assert numbered == [
        "1. Definitions",
        "2. Interpretation",
        "3. Regulation",
        "4. General",
        "5. Schedule(s)",
        "6. Enforcement and Penalties",
        "7. Short Title",
        "8. Repeal of Existing By-law",
        "9. Effective Date",
    ]
    schedules = [h for h in headings if h.startswith("Schedule")]
    # Each schedule once: its "(continued)" pages go on with it.
    assert schedules == [
        "Schedule 1 – Prohibited Noise",
        "Schedule 2 – Prohibited Noise by Time and Place",
        "Schedule 3 – Exempted Noise",
    ]
    # "Noise By-law", set large on page 2 only of 12, names the document: not a level.
    assert next(s for s in doc.sections if s.heading == "1. Definitions").path == (
        "1. Definitions",
    )
    # The bold subheadings sit under their numbered section.
    works = next(
        s for s in doc.sections if s.heading == "Delegation of Authority for Infrastructure Works"
    )
    assert works.path[-2:] == ("3. Regulation", works.heading)
    assert works.page == 4


def test_real_federal_register_rule_headings_from_its_type() -> None:
    doc = _real("us_faa_federal_register_2020-17221.pdf")
    headings = {s.heading: s for s in doc.sections}
    for heading in ("Background", "Costs of Compliance", "Regulatory Findings"):
        assert heading in headings, heading
    # A bold heading wrapped over three lines of a column is one heading.
    g = headings[
        "(g) Installation/Verification of Flight Control Computer (FCC) Operational Program "
        "Software (OPS)"
    ]
    assert g.page == 6
    # The cost table stays in its section, not cut into sections of its own.
    costs = headings["Costs of Compliance"]
    assert "Stabilizer wiring change" in costs.text


@pytest.mark.slow  # in `make test-slow`, which CI runs
def test_real_table_captions_head_their_tables() -> None:
    doc = _real("uk_mhclg_draft_nppf_dec2025.pdf")
    tables = {s.heading: s for s in doc.sections if s.heading.startswith("Table ")}
    # Table 3's caption sits over four lines of bold header cells: still its heading.
    third = tables["Table 3: Flood risk vulnerability and flood zone \u2018incompatibility\u2019"]
    assert third.page == 127
    assert third.path[0] == "Annex F: Managing Flood Risk and Coastal Change"
    assert "Zone 3b *; Essential infrastructure: Exception test required *" in third.text
    assert [h[:8] for h in tables] == ["Table 1:", "Table 2:", "Table 3:"]


def test_real_report_chapters_from_its_type() -> None:
    doc = _real("coventry_authority_monitoring_report_2017_18.pdf")
    paths = [s.path for s in doc.sections if s.heading]
    assert ("Housing", "Completions") in paths
    assert ("Housing", "Projections") in paths
    assert ("Employment",) in paths
    # A bold paragraph and a table's bold header cells are not headings.
    assert all(len(" ".join(p)) < 60 for p in paths)


# --- pages without type to go by: headings by their words and place ----------------


def test_headings_in_body_type_are_found_by_their_words_and_place(tmp_path: Path) -> None:
    clause = "shall not cause or permit a vehicle to idle for more than five minutes in any hour."
    blocks = [
        ("body", "PART I - INTERPRETATION"),
        ("body", "Definitions"),
        (
            "body",
            "1. In this by-law, a vehicle means any motor vehicle that is driven on a highway.",
        ),
        ("body", "Idling of Vehicles"),
        ("body", f"2. No person {clause}"),
        ("body", "3. No driver of a bus waiting at a stop " + clause),
        ("body", "SECOND SCHEDULE"),
        ("body", "The premises listed below front onto Stoneleigh Road and are covered in full."),
        ("body", "1 Stoneleigh Road"),
        ("body", "3 Stoneleigh Road"),
        ("body", "5 Stoneleigh Road"),
        ("body", "Signed by the Town Clerk on the first day of June in the year it was passed."),
    ]
    (doc,), _ = load_pdf(write_styled(tmp_path / "idling.pdf", blocks), root=tmp_path)
    paths = [s.path for s in doc.sections if s.heading]
    assert paths == [
        ("PART I - INTERPRETATION", "Definitions"),
        ("PART I - INTERPRETATION", "Idling of Vehicles"),
        ("PART I - INTERPRETATION", "SECOND SCHEDULE"),
    ]
    # A list of numbered addresses is the schedule's text, not a run of headings.
    schedule = doc.sections[-1]
    assert "1 Stoneleigh Road" in schedule.text and "5 Stoneleigh Road" in schedule.text


def test_a_line_in_capitals_after_a_line_its_author_broke_is_a_heading(tmp_path: Path) -> None:
    blocks = [
        ("body", "A BY-LAW ON THE IDLING OF VEHICLES"),
        ("body", "TOWN OF WHITBY"),
        ("body", "The Council of the Town may regulate the idling of vehicles on its roads."),
        ("body", "NOW THEREFORE the Council by its powers"),
        ("body", "DIRECT THAT"),
        ("body", "1. The permission granted by the Order shall not apply in the Area."),
        ("body", "2. The direction expires six months after it is made unless approved."),
        ("body", "Area ::= SEQUENCE { name OCTET STRING"),
        ("body", "}"),
        ("body", "END"),
        ("body", "The definition above names the area that the direction is made for."),
    ]
    (doc,), _ = load_pdf(write_styled(tmp_path / "direction.pdf", blocks), root=tmp_path)
    # "DIRECT THAT" stands alone after a line broken where the author chose; "TOWN OF
    # WHITBY" ends a title in capitals set over two lines, and is not cut from it; "END"
    # closes a listing of code.
    assert [s.path for s in doc.sections if s.heading] == [("DIRECT THAT",)]
    direct = doc.sections[-1]
    assert direct.text.startswith("1. The permission granted")
    assert "VEHICLES TOWN OF WHITBY" in " ".join(doc.sections[0].text.split())


# --- outline entries that do not read as the headings drawn ------------------------


def test_outline_titles_without_the_drawn_numbers_still_cut_at_their_headings(
    tmp_path: Path,
) -> None:
    entries = [
        (0, "Structure handling", "2 Structure handling", "Structures are read from a file."),
        (1, "Syntax", "2.1 Syntax", "The parser is case sensitive and comments start with --."),
        (1, "Naming", "2.2 Naming", "Every element is named by its path from the root."),
        (1, "Nonregular files", "2.3 Non-regular files", "Sockets and pipes get types too."),
        (0, "A Copying Information", "Appendix A Copying Information", "The licence follows."),
    ]
    path = write_outlined(tmp_path / "manual.pdf", entries)
    (doc,), _ = load_pdf(path, root=tmp_path)
    sections = {s.heading: s for s in doc.sections if s.heading}
    # Each section holds its own paragraph only: its heading was found on the page,
    # not guessed at the page's first line.
    assert sections["Syntax"].text == "The parser is case sensitive and comments start with --."
    assert sections["Naming"].text == "Every element is named by its path from the root."
    assert sections["Nonregular files"].text == "Sockets and pipes get types too."
    assert sections["Nonregular files"].path == ("Structure handling", "Nonregular files")
    assert sections["A Copying Information"].text == "The licence follows."


def test_contents_and_index_lines_are_removed_and_reported(tmp_path: Path) -> None:
    blocks = [
        ("h1", "Contents"),
        ("body", "Introduction . . . . . . . . . . . . . . . . . . . . 2"),
        ("body", "Water quality ........................................ 2"),
        ("body", "Appendix: fees . . . . . . . . . . . . . . . . . . . . iv"),
        ("page", ""),
        ("h1", "Introduction"),
        ("body", BODY),
        ("h1", "Water quality"),
        ("body", "Testing costs ...... 40 work-hours at $85 per hour ...... $3,400 ......"),
        ("body", "Nitrate stayed below eleven milligrams per litre."),
    ]
    (doc,), findings = load_pdf(write_styled(tmp_path / "toc.pdf", blocks), root=tmp_path)
    text = "\n".join(s.text for s in doc.sections)
    assert "Introduction . . ." not in text and "Appendix: fees" not in text
    assert "........ 2" not in text
    # A table's row with dot leaders, not ending in a page number, stays.
    assert "Testing costs ...... 40 work-hours" in text
    (finding,) = [f for f in findings if f.check == "pdf-contents"]
    assert finding.severity == "REVIEW"
    assert "removed 3 table-of-contents or index line(s)" in finding.message
    assert "on page 1;" in finding.message
