"""Tests for validate/: each check fires on its artefact and on none of its look-alikes.

The look-alike strings are written here by hand. The tests on the real corpora read
../shared and skip with a message where it is absent; none of its text is copied.
"""

from __future__ import annotations

import csv
import json
import random
import re
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest

from groundqa.models import Document, Finding, Section
from groundqa.validate import (
    SHORT_SECTION_CHARS,
    FootnoteVocabulary,
    continue_footnote_sequence,
    control_char_spans,
    excerpt,
    has_blocking,
    near_duplicate_pairs,
    repeated_paragraphs,
    replacement_char_spans,
    truncation_span,
    validate,
    welded_markers,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared"

WORDS = [
    *("site", "plant", "tank", "valve", "river", "flood", "storm", "wind", "heat", "cold"),
    *("pump", "pipe", "power", "staff", "plan", "alarm", "drill", "map", "road", "bridge"),
    *("town", "shore", "level", "gauge", "sensor", "report", "review", "audit", "check"),
    *("permit", "owner", "crew", "shift", "season", "week", "month", "year", "hour", "north"),
]


def filler(seed: int, words: int = 30) -> str:
    """Distinct ordinary prose per seed, long enough to pass short-section, never a copy."""
    return " ".join(random.Random(seed).choices(WORDS, k=words)).capitalize() + "."


def record(rid: str, text: str, *, title: str = "A title", line: int | None = None) -> Document:
    """A CSV-style record: one Document, one Section whose id is the record id."""
    return Document(
        doc_id=rid,
        title=title,
        source="corpus.csv",
        format="csv",
        sections=(Section(section_id=rid, heading=title, text=text),),
        line=line,
    )


def markdown(name: str, sections: dict[str, str], *, title: str = "Guide") -> Document:
    return Document(
        doc_id=name,
        title=title,
        source=name,
        format="markdown",
        sections=tuple(
            Section(section_id=f"{name}#{h}", heading=h, text=t, path=(h,))
            for h, t in sections.items()
        ),
        line=1,
    )


def checks(findings: list[Finding]) -> list[str]:
    return [f.check for f in findings]


def tokens(text: str, vocabulary: FootnoteVocabulary | None = None) -> list[str]:
    return [m.token(text) for m in welded_markers(text, vocabulary)]


# ------------------------------------------------------------------------ excerpt


def test_excerpt_is_about_sixty_chars_on_one_line_with_controls_visible() -> None:
    text = "a" * 100 + "\x0bBAD\n\n" + "b" * 100
    out = excerpt(text, 100, 101)
    assert "\\x0bBAD" in out
    assert "\n" not in out
    assert out.startswith("…") and out.endswith("…")
    assert 55 <= len(out) <= 64


def test_excerpt_of_a_short_text_is_the_text() -> None:
    assert excerpt("Short text.", 0, 0) == "Short text."


# -------------------------------------------------------------- character checks


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x0b", "\x0c", "\x1b", "\x7f", "\x96"])
def test_control_char_fires(char: str) -> None:
    spans = control_char_spans(f"before{char}after and {char} again")
    assert len(spans) == 1 and spans[0].start == 6 and spans[0].count == 2


@pytest.mark.parametrize(
    "text",
    [
        "tab\tnewline\ncarriage\r\nreturn",
        "accents é ü ø, dashes – —, quotes “ ” ‘ ’, ellipsis …",
        "math 𝑉𝑉com ∙ ⋃ ≤ ≥ ±, symbols € £ ° µ ■ •",
        "non-breaking\u00a0space and soft\u00adhyphen",
    ],
)
def test_control_char_ignores_text(text: str) -> None:
    assert control_char_spans(text) == []


def test_replacement_char_counts_and_locates() -> None:
    spans = replacement_char_spans("V = a ∙ \ufffd and \ufffd")
    assert len(spans) == 1 and spans[0].start == 8 and spans[0].count == 2
    assert replacement_char_spans("no problem here: ¿ ¡ ß") == []


# -------------------------------------------------------------------- truncation


@pytest.mark.parametrize(
    "text",
    [
        "followed by the successively more complex levels of func-",
        "several mechanisms by which diabetes may lead …",
        "a reasonable outcome is possible ...",
        "ends mid-word with trailing space func-  \n",
    ],
)
def test_truncation_fires(text: str) -> None:
    span = truncation_span(text)
    assert span is not None and span.end == len(text.rstrip())


@pytest.mark.parametrize(
    "text",
    [
        "A complete sentence.",
        "Pre- and post-war housing is covered in section 4.",
        "The list goes on and on…",
        "The probability of damage is the estimated damage probability",
        "Emergency number: 112 -",
        "Year range 2012-",
        "Figure 1",
        "COVID-",
        "",
    ],
)
def test_truncation_ignores_clean_endings(text: str) -> None:
    assert truncation_span(text) is None


# ------------------------------------------------------------- welded footnotes


WITH_WORD = "Hazardous situations arise in many ways. "


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("The steps are based on ISO-310002 in the context of a framework.", "ISO-310002"),
        ("The steps follow ISO 310002, adapted to the site.", "ISO 310002"),
        ("Controls follow ISO/IEC 270013 where relevant.", "ISO/IEC 270013"),
        ("The Seveso III Directive (2012/18/EC)1 requires inspections.", "(2012/18/EC)1"),
        ("As discussed by Cox (1998)2, the methods differ.", "(1998)2"),
        (
            WITH_WORD + "That leads to hazardous situations3. For example, tanks fail.",
            "situations3",
        ),
        (WITH_WORD + "It ends in situations12", "situations12"),
        ("Stem cells appear in the mouse fetus6,7. Here we look for the fetus source.", "fetus6,7"),
        ("The embryonic aorta1–4 is a source. The aorta forms early.", "aorta1–4"),
    ],
)
def test_welded_marker_fires(text: str, token: str) -> None:
    assert tokens(text) == [token]


LOOK_ALIKES = [
    "See Figure 1 and Figure 10 for the layout.",
    "Clause 4.6.1 and clause 4.6.1.1 cover loss of containment.",
    "The directive was adopted in 2012 and applied in 2012.",
    "It ends with a trailing full stop.",
    "Emissions of CO2, H2O vapour, NO2 and SO2 were measured.",
    "Particulates PM2.5 and PM10 exceeded the limit.",
    "Scope1 and scope 1 emissions are reported; scope emissions vary.",
    "Cases of COVID-19 closed the plant.",
    "Print on A4 and play the MP3 file.",
    "Certified to ISO 9001, ISO 14001, ISO 31000 and ISO/IEC 27001.",
    "Lightning protection follows EN 62305.",
    "Directive 2012/18/EU applies.",
    "The directive (2012/18/EU) applies; see also (2012/18/EU), (2012/18/EU).",
    "Under Article 3(1) the operator reports.",
    "The 1st, 2nd, 3rd, 4th and 12th inspections passed.",
    "Areas of 20 m2, 5 m3, 3 km2 and a factor x2 were used.",
    "Tier2 suppliers and Tier4 engines are listed.",
    "The Seveso III Directive covers it, i.e. all sites.",
    "Identifiers ABC123 and v2 are internal.",
    "The enzyme caspase3 was cleaved; caspase-3 activity rose with caspase levels.",
    "The APOE epsilon4 allele; epsilon carriers and alpha1 subunits, alpha chains.",
    "Run python3 then python3 again; the python docs say so.",
    "Alleles are reported as allele1:allele2 per allele pair.",
    "A threshold of pound20,000 per pound spent.",
    "The mutant suppressor1-2 rescues; each suppressor differs.",
    "Play music.mp3 or open /usr/bin/python3 from music folders and python.",
    "Mutants of polo1 and disc1 show defects; polo and disc differ.",
    "Hashes use sha256 and base64 encodings; base encodings vary.",
    "Gene symbols (MMP)2, (CAG)20 and (Ulp)1 are notation.",
    "See table 3 and tables 4-6 for the numbers in the tables.",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_welded_marker_ignores_look_alike(text: str) -> None:
    assert tokens(text) == []


def test_word_marker_needs_the_bare_word_elsewhere_in_the_corpus() -> None:
    text = "That leads to hazardous situations3. For example, tanks fail."
    assert tokens(text) == []  # "situations" never occurs on its own: no evidence
    vocabulary = FootnoteVocabulary([text, "Other situations are rare."])
    assert tokens(text, vocabulary) == ["situations3"]


def test_word_marker_repeated_in_the_corpus_is_a_name() -> None:
    texts = ["The tool myfood24 was used.", "We compared myfood24 with recall.", "food and myfood"]
    vocabulary = FootnoteVocabulary(texts)
    assert all(tokens(t, vocabulary) == [] for t in texts)


def _chain() -> list[str]:
    return [
        "The Directive (2012/18/EC)1 requires inspections.",
        "These steps follow ISO-310002 closely.",
        "This leads to hazardous situations3. Such situations recur.",
    ]


def test_sequence_continues_onto_names_after_a_proven_run() -> None:
    texts = [
        *_chain(),
        "Damage states are mapped in the tool RAPID-N4 (Girgin, 2018).",
        "A dedicated database (eNATECH5) holds the records.",
    ]
    markers = [welded_markers(t) for t in texts]
    extra = continue_footnote_sequence(texts, markers)
    assert [[m.token(t) for m in ms] for t, ms in zip(texts, extra, strict=True)] == [
        [],
        [],
        [],
        ["RAPID-N4"],
        ["eNATECH5"],
    ]


@pytest.mark.parametrize(
    "texts",
    [
        # only one proven marker: no sequence to continue
        ["The Directive (2012/18/EC)1 applies.", "The tool RAPID-N2 maps damage."],
        # the proven markers do not run 1, 2, 3
        [*_chain()[:1], "This leads to hazardous situations3. Such situations recur.", "RAPID-N4"],
        # the name carries the wrong number
        [*_chain(), "The tool RAPID-N7 maps damage."],
        # title-case labels, units and chemicals are never footnotes
        [*_chain(), "Tier4 engines, Scope4 items, MP4 files, A4 paper, PM4 dust, CO4."],
    ],
)
def test_sequence_does_not_continue(texts: list[str]) -> None:
    markers = [welded_markers(t) for t in texts]
    assert all(not ms for ms in continue_footnote_sequence(texts, markers))


def test_sequence_name_before_the_last_marker_does_not_count() -> None:
    texts = ["(2012/18/EC)1 applies.", "The tool RAPID-N3 and then situations2 occur; situations."]
    markers = [welded_markers(t) for t in texts]
    assert [m.token(texts[1]) for m in markers[1]] == ["situations2"]
    assert all(not ms for ms in continue_footnote_sequence(texts, markers))


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_stay_quiet_in_a_corpus_with_a_footnote_run(text: str) -> None:
    docs = [record(str(i), f"{t} {filler(i)}", line=i + 2) for i, t in enumerate(_chain())]
    docs.append(record("9", f"{text} {filler(9)}", line=12))
    found = validate(docs)
    assert checks(found) == ["welded-footnote"] * 3
    assert [f.section_id for f in found] == ["0", "1", "2"]


# ------------------------------------------------------------------- boilerplate

NOTES = (
    "Cash is handy at the market and in smaller places, though cards are accepted\n"
    "almost everywhere now. Coverage is good in the centre and patchy outside."
)


def test_repeated_paragraph_in_three_documents() -> None:
    texts = [(d, f"Own words for document {d}.\n\n{NOTES}") for d in range(3)]
    # a re-wrapped copy is the same paragraph
    texts.append((3, NOTES.replace("\n", " ").replace(" almost", "\n  almost")))
    (repeat,) = repeated_paragraphs(texts)
    assert repeat.documents == (0, 1, 2, 3)


@pytest.mark.parametrize(
    "texts",
    [
        [(0, NOTES), (1, NOTES)],  # only two documents
        [(0, NOTES), (0, NOTES), (0, NOTES)],  # three sections of one document
        [(d, "Opening hours vary by season.") for d in range(5)],  # too short to matter
        [(0, NOTES), (1, NOTES), (2, NOTES.replace("handy", "useful"))],  # not verbatim
    ],
)
def test_repeated_paragraph_ignores(texts: list[tuple[int, str]]) -> None:
    assert repeated_paragraphs(texts) == []


# ---------------------------------------------------------------- near-duplicates


def _prose(seed: int, words: int = 120) -> str:
    """Random text over a 5,000-word vocabulary: unrelated texts share almost no 3-grams."""
    return " ".join(f"w{n}" for n in random.Random(seed).choices(range(5000), k=words))


def test_near_duplicate_pair_found_once() -> None:
    base = _prose(1)
    edited = base.split()
    edited[60] = "changed"
    texts = [_prose(2), base, _prose(3), " ".join(edited)]
    pairs = near_duplicate_pairs(texts)
    assert [(i, j) for i, j, _ in pairs] == [(1, 3)]
    assert 0.9 <= pairs[0][2] < 1.0


def test_near_duplicate_ignores_related_but_different_texts() -> None:
    base = _prose(4).split()
    # a third of the text rewritten: related, not a copy
    other = base[:80] + _prose(5, 40).split()
    assert near_duplicate_pairs([" ".join(base), " ".join(other)]) == []


def test_near_duplicate_ignores_short_texts() -> None:
    assert near_duplicate_pairs(["This clause is deleted."] * 5) == []


def test_near_duplicate_finds_every_planted_pair_among_3000_texts() -> None:
    texts = [_prose(100 + i, 150) for i in range(3000)]
    planted = []
    for k, i in enumerate(range(0, 3000, 300)):
        copy = texts[i].split()
        for pos in (30, 110):  # two edits in 150 words: Jaccard 142/154 = 0.92
            copy[pos] = f"edit{k}"
        texts.append(" ".join(copy))
        planted.append((i, len(texts) - 1))
    pairs = near_duplicate_pairs(texts)
    assert [(i, j) for i, j, _ in pairs] == planted


def test_one_very_long_section_is_compared_without_a_list_of_all_its_words() -> None:
    # A 52 MB Markdown section once took `validate` to 1.1 GB: every word of every text
    # was held as one list before shingling. Now a text is read a block at a time and
    # shingled in batches, so the peak is a few arrays of its words' ids.
    long = _prose(7, 1_600_000)  # about 10 MB of text
    copy = long[:20_000] + " edit " + long[20_000:40_000]
    tracemalloc.start()
    try:
        pairs = near_duplicate_pairs([long, _prose(8), copy, long[:40_000]])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(i, j) for i, j, _ in pairs] == [(2, 3)]
    assert peak < 10 * len(long), f"{peak / 1e6:.0f} MB traced for {len(long) / 1e6:.0f} MB"


# --------------------------------------------------------------------- validate


def test_clean_corpus_has_no_findings() -> None:
    docs = [record(str(i), f"{t} {filler(i)}", line=i + 2) for i, t in enumerate(LOOK_ALIKES)]
    docs.append(markdown("guide.md", {"Getting there": filler(100), "Eat": filler(101)}))
    assert validate(docs) == []


def test_empty_body_blocks() -> None:
    docs = [
        Document("empty.md", "Empty", "empty.md", "markdown", (), line=1),
        record("7", "   \n\t"),
    ]
    found = validate(docs)
    assert has_blocking(found)
    assert [(f.severity, f.check, f.doc_id, f.section_id) for f in found] == [
        ("BLOCK", "empty-body", "7", "7"),
        ("BLOCK", "empty-body", "empty.md", None),
    ]


def test_missing_id_blocks_once_per_record() -> None:
    found = validate([record("", filler(1), line=5)])
    assert [(f.severity, f.check, f.line) for f in found] == [("BLOCK", "missing-id", 5)]
    nameless = Section(section_id="", heading="", text=filler(1))
    found = validate([Document("g.md", "Guide", "g.md", "markdown", (nameless,), line=1)])
    assert [(f.severity, f.check, f.doc_id, f.section_id) for f in found] == [
        ("BLOCK", "missing-id", "g.md", None)
    ]


def test_duplicate_record_id_names_the_first() -> None:
    docs = [record("4.2", filler(1), line=3), record("4.2", filler(2), line=9)]
    docs.append(record("4.2", filler(3), line=14))
    found = validate(docs)
    blocks = [f for f in found if f.severity == "BLOCK"]
    assert [(f.check, f.line) for f in blocks] == [("duplicate-id", 9), ("duplicate-id", 14)]
    assert all("corpus.csv:3" in f.message for f in blocks)


def test_sections_sharing_their_documents_id_are_fine() -> None:
    docs = [
        markdown("a.md", {"One": filler(1), "Two": filler(2)}),
        markdown("b.md", {"One": filler(3)}),
    ]
    assert validate(docs) == []


def test_duplicate_section_id_across_documents_blocks() -> None:
    first = markdown("a.md", {"One": filler(1)})
    second = Document("b.md", "B", "b.md", "markdown", first.sections, line=1)
    found = validate([first, second])
    (block,) = [f for f in found if f.severity == "BLOCK"]
    assert (block.check, block.source, block.section_id) == ("duplicate-id", "b.md", "a.md#One")
    assert "first at a.md" in block.message


def test_missing_title_once_per_record_and_not_for_markdown_headings() -> None:
    docs = [record("1", filler(1), title="")]
    found = validate(docs)
    assert checks(found) == ["missing-title"]
    untitled = Document("g.md", "", "g.md", "markdown", (Section("g.md#A", "A", filler(2)),))
    assert checks(validate([untitled])) == ["missing-title"]
    headingless = markdown("h.md", {"": filler(3)})
    assert "missing-title" not in checks(validate([headingless]))


def test_short_section_threshold() -> None:
    short = "x" * (SHORT_SECTION_CHARS - 1)
    found = validate([record("1", f"  {short}  \n"), record("2", short + "y")])
    assert [(f.check, f.section_id) for f in found] == [("short-section", "1")]
    assert validate([record("1", short)], short_section_chars=50) == []


def test_findings_carry_location_and_excerpt() -> None:
    text = f"{filler(1)} Hazardous situations3. Such situations recur. V = a ∙ \ufffd"
    found = validate([record("4.2", text, line=15)])
    by_check = {f.check: f for f in found}
    assert sorted(by_check) == ["replacement-char", "welded-footnote"]
    for f in found:
        assert (f.source, f.doc_id, f.section_id, f.line) == ("corpus.csv", "4.2", "4.2", 15)
        assert f.message.count(". ") == 0 and len(f.excerpt) <= 64
    assert "situations3" in by_check["welded-footnote"].excerpt
    assert "\ufffd" in by_check["replacement-char"].excerpt


def test_sorted_block_first_then_source_line_section_and_load_findings_kept() -> None:
    loaded = Finding("BLOCK", "unreadable-file", "cannot decode z.csv", source="z.csv")
    docs = [record("2", "short", line=4), record("1", "tiny", line=3), record("", filler(1))]
    found = validate(docs, load_findings=[loaded])
    assert [(f.severity, f.check, f.line) for f in found] == [
        ("BLOCK", "missing-id", None),
        ("BLOCK", "unreadable-file", None),
        ("REVIEW", "short-section", 3),
        ("REVIEW", "short-section", 4),
    ]


def test_boilerplate_reported_once_and_not_again_as_near_duplicates() -> None:
    docs = [markdown(f"g{i}.md", {"Intro": filler(i), "Notes": NOTES}) for i in range(4)]
    found = validate(docs)
    assert checks(found) == ["repeated-boilerplate"]
    assert "4 documents (g0.md, g1.md, g2.md and 1 more)" in found[0].message


def test_near_duplicate_sections_reported_once_per_pair() -> None:
    base = _prose(7)
    edited = base.replace(base.split()[50], "changed", 1)
    docs = [record("a", base, line=2), record("b", _prose(8), line=3), record("c", edited, line=4)]
    found = validate(docs)
    assert [(f.check, f.section_id) for f in found] == [("near-duplicate", "c")]
    assert "'a'" in found[0].message


def test_empty_corpus_has_nothing_to_report() -> None:
    assert validate([]) == []  # an empty corpus is the loader's EmptyCorpusError, not a finding


def test_has_blocking() -> None:
    assert not has_blocking([Finding("REVIEW", "short-section", "m")])
    assert has_blocking([Finding("REVIEW", "x", "m"), Finding("BLOCK", "empty-body", "m")])


# ------------------------------------------------------------- the real corpora


def _shared(path: str) -> Path:
    target = SHARED / path
    if not target.exists():
        pytest.skip(f"{target} is absent: the real-corpus checks need ../shared beside the repo")
    return target


def _natech() -> list[Document]:
    path = _shared("corpora/natech/guidance.csv")
    docs: list[Document] = []
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames is not None
        end = reader.line_num
        for row in reader:
            start, end = end + 1, reader.line_num
            cid, title = row["Chapter"].strip(), row["Title"].strip()
            section = Section(cid, title, row["Content"])
            docs.append(Document(cid, title, str(path), "csv", (section,), line=start))
    return docs


def _city_guides() -> list[Document]:
    folder = _shared("corpora/city_guides")
    docs: list[Document] = []
    for path in sorted(folder.glob("guide_*.md")):
        text = path.read_text(encoding="utf-8")
        title = ""
        if m := re.match(r"#\s+(.*)\n", text):
            title, text = m.group(1).strip(), text[m.end() :]
        preamble, *parts = re.split(r"(?m)^## ", text)
        sections: list[Section] = []
        for part in parts:
            heading, _, body = part.partition("\n")
            body = body.strip()
            if not sections and preamble.strip():
                body = f"{preamble.strip()}\n\n{body}"
            if body:
                sections.append(Section(f"{path.name}#{heading.strip()}", heading.strip(), body))
        docs.append(Document(path.name, title, str(path), "markdown", tuple(sections), line=1))
    return docs


def _scifact() -> list[Document]:
    path = _shared("bench/scifact/corpus.jsonl")
    docs: list[Document] = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            d = json.loads(line)
            section = Section(d["_id"], d["title"], d["text"])
            docs.append(Document(d["_id"], d["title"], str(path), "beir", (section,), line=n))
    return docs


def _welded(found: list[Finding]) -> list[tuple[str | None, str]]:
    out: list[tuple[str | None, str]] = []
    for f in found:
        if f.check == "welded-footnote":
            m = re.match(r"'([^']+)'", f.message)
            assert m is not None
            out.append((f.section_id, m.group(1)))
    return out


@pytest.mark.shared
def test_natech_findings_are_exactly_the_real_artefacts() -> None:
    docs = _natech()
    assert len(docs) == 44
    found = validate(docs)
    assert not has_blocking(found)
    # Footnotes 1-3 by their shape; 4 and 5 sit on tool names and are found because
    # they continue that run in reading order.
    assert _welded(found) == [
        ("1", "(2012/18/EC)1"),
        ("3", "ISO-310002"),
        ("4.2", "situations3"),
        ("4.6.1.1", "RAPID-N4"),
        ("5.5", "eNATECH5"),
    ]
    (fffd,) = [f for f in found if f.check == "replacement-char"]
    assert fffd.section_id == "4.6.2.2" and "\ufffd" in fffd.excerpt
    assert Counter(checks(found)) == {"welded-footnote": 5, "replacement-char": 1}
    assert all(f.line and f.source.endswith("guidance.csv") for f in found)


@pytest.mark.shared
def test_city_guides_practical_notes_boilerplate() -> None:
    docs = _city_guides()
    assert len(docs) == 14
    found = validate(docs)
    (repeat,) = found
    assert repeat.check == "repeated-boilerplate" and repeat.severity == "REVIEW"
    assert "appears verbatim in 9 documents" in repeat.message
    assert repeat.section_id == "guide_brightwater.md#Practical notes"


@pytest.mark.shared
def test_scifact_validates_without_false_alarms() -> None:
    docs = _scifact()
    assert len(docs) == 5183
    found = validate(docs)
    assert not has_blocking(found)
    assert Counter(checks(found)) == {
        "welded-footnote": 28,
        "truncated-text": 24,
        "replacement-char": 3,
        "control-char": 2,
    }
    welded = {token for _, token in _welded(found)}
    # gene, subunit and tool names glued to numbers in SciFact, none of them footnotes
    names = {"epsilon4", "alpha1", "caspase3", "connexin40", "polo1", "disc1", "myfood24"}
    assert not welded & (names | {"allele1", "allele2", "ggplot2", "transcription3"})
    assert {"lineage3", "fetus6,7", "regions14–20"} <= welded
    truncated = {f.section_id for f in found if f.check == "truncated-text"}
    assert "73136607" in truncated  # ends "levels of func-"
