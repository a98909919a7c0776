"""Plain text loading (`groundqa.loaders.text`): titles, heading lines, hard-wrapped
paragraphs, lists and files that are not UTF-8, read by the real loader from files on disk.

(`tests/test_text.py` tests `groundqa.text`, the sentence splitter.)
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from groundqa.loaders._blocks import Heading
from groundqa.loaders.text import TEXT_SUFFIXES, load_text, parse_text
from groundqa.models import Document

BYLAW = """Noise Control By-law

PART 1 - DEFINITIONS

1. Interpretation

In this by-law, "noise" means any sound that disturbs
a person of normal sensitivity, whether indoors or
outdoors.

1.1 Scope
This by-law applies to every property within the
town limits, public or private, and to every noise-
sensitive use.

PART 2 - PROHIBITIONS

2. General prohibition

No person shall make noise between 11pm and 7am on
any day of the week.

FEES

A permit costs 40 pounds.
"""


def load_one(path: Path, text: str, root: Path | None = None) -> Document:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    documents, findings = load_text(path, root=root)
    assert findings == []
    assert len(documents) == 1
    return documents[0]


def test_suffixes() -> None:
    assert TEXT_SUFFIXES == (".txt",)


def test_headings_become_sections_with_paths(tmp_path: Path) -> None:
    document = load_one(tmp_path / "laws" / "noise.txt", BYLAW, root=tmp_path)
    assert document.doc_id == "laws/noise.txt"
    assert document.format == "text"
    assert document.title == "Noise Control By-law"
    assert [(s.section_id, s.path, s.metadata) for s in document.sections] == [
        (
            "laws/noise.txt#1. Interpretation",
            ("PART 1 - DEFINITIONS", "1. Interpretation"),
            {"clause": "1"},
        ),
        (
            "laws/noise.txt#1.1 Scope",
            ("PART 1 - DEFINITIONS", "1. Interpretation", "1.1 Scope"),
            {"clause": "1.1"},
        ),
        (
            "laws/noise.txt#2. General prohibition",
            ("PART 2 - PROHIBITIONS", "2. General prohibition"),
            {"clause": "2"},
        ),
        ("laws/noise.txt#FEES", ("PART 2 - PROHIBITIONS", "FEES"), {}),
    ]


def test_hard_wrapped_lines_join_into_paragraphs(tmp_path: Path) -> None:
    sections = {s.heading: s for s in load_one(tmp_path / "noise.txt", BYLAW).sections}
    assert sections["1. Interpretation"].text == (
        'In this by-law, "noise" means any sound that disturbs a person of normal '
        "sensitivity, whether indoors or outdoors."
    )
    # A heading line with its text straight under it; a word hyphenated at a line end.
    assert sections["1.1 Scope"].text == (
        "This by-law applies to every property within the town limits, public or "
        "private, and to every noise-sensitive use."
    )


def test_without_headings_one_section_named_for_the_file(tmp_path: Path) -> None:
    text = (
        "The library opens at 9am on weekdays\nand at 10am on Saturdays.\n\n\n"
        "It is closed on Sundays.\n"
    )
    document = load_one(tmp_path / "hours.txt", text)
    assert document.title == "hours"  # the first line runs on: not a title
    assert [(s.section_id, s.heading, s.text) for s in document.sections] == [
        (
            "hours.txt#hours",
            "hours",
            "The library opens at 9am on weekdays and at 10am on Saturdays.\n\n"
            "It is closed on Sundays.",
        )
    ]


def test_numbered_lists_and_clauses_stay_text(tmp_path: Path) -> None:
    text = (
        "How to apply\n\n"
        "1. Fill in the form.\n2. Pay the fee.\n3. Wait for the letter.\n\n"
        "1. Site plan\n\n2. Photographs\n\n3. Fee receipt\n\n"
        "Send all three to the clerk at\n100 Main Street.\n\n"
        "100 Main Street\n\n"
        "4. The clerk replies within ten working days of receiving a\ncomplete application.\n"
    )
    document = load_one(tmp_path / "apply.txt", text)
    assert document.title == "How to apply"
    assert len(document.sections) == 1
    assert document.sections[0].text.split("\n\n") == [
        "1. Fill in the form.",
        "2. Pay the fee.",
        "3. Wait for the letter.",
        "1. Site plan",
        "2. Photographs",
        "3. Fee receipt",
        "Send all three to the clerk at 100 Main Street.",
        "100 Main Street",
        "4. The clerk replies within ten working days of receiving a complete application.",
    ]


def test_underlined_headings_and_column_blocks(tmp_path: Path) -> None:
    text = (
        "Parking Rules\n=============\n\n"
        "Permits\n-------\nA permit costs 40 pounds a year.\n\n"
        "Zone       Minimum stay\nCentre     1 hour\nHarbour    4 hours\n"
    )
    document = load_one(tmp_path / "parking.txt", text)
    assert document.title == "Parking Rules"
    assert [(s.heading, s.text) for s in document.sections] == [
        (
            "Permits",
            "A permit costs 40 pounds a year.\n\n"
            "Zone       Minimum stay\nCentre     1 hour\nHarbour    4 hours",
        )
    ]


def test_not_utf8_is_a_block_finding(tmp_path: Path) -> None:
    path = tmp_path / "menu.txt"
    path.write_bytes("Café opens at 9.\n".encode("latin-1"))
    documents, findings = load_text(path)
    assert documents == []
    assert [(f.severity, f.check) for f in findings] == [("BLOCK", "not-utf8")]
    assert "menu.txt is not valid UTF-8" in findings[0].message


def test_bom_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"\xef\xbb\xbfRules\r\n\r\nDogs must be on a lead.\r\n")
    documents, _ = load_text(path)
    assert documents[0].title == "Rules"
    assert documents[0].sections[0].text == "Dogs must be on a lead."


def test_empty_file_has_no_sections(tmp_path: Path) -> None:
    document = load_one(tmp_path / "empty.txt", "\n\n")
    assert document.title == "empty"
    assert document.sections == ()


# Lines made of these: words, numbers, clause numbers, capitals, brackets and stops, but
# no "=-~*_#", whose runs are separator lines that are dropped on purpose.
LINE = st.text(alphabet="aZ 1.2(b)PART:;,\t|", max_size=40)


@settings(derandomize=True, database=None, max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=30))
def test_no_text_is_lost_or_reordered(lines: list[str]) -> None:
    text = "\n".join(lines)
    title, blocks = parse_text(text, "\x00stem")
    shown = [] if title == "\x00stem" else [title]
    shown += [b.text if isinstance(b, Heading) else b for b in blocks]
    assert "".join(" ".join(shown).split()) == "".join(text.split())
