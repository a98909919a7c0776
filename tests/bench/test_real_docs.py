"""bench/real_docs.py's labelled questions (read by `sets`) and the measures it scores them with.
The measuring itself (ingest, ask, baselines) is the benchmark's, not run here."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from groundqa.models import Document, Section
from tests.conftest import need_shared

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import _ocr_reference  # noqa: E402
import real_docs  # noqa: E402
import sets  # noqa: E402


def test_the_probe_file_is_well_formed_and_covers_every_kind() -> None:
    probes = sets.load_real_probes()
    assert len(probes) >= 40
    assert len({p.id for p in probes}) == len(probes)
    assert {p.kind for p in probes} == set(sets.REAL_KINDS)
    assert {p.format for p in probes} == {"pdf", "html", "docx"}
    for p in probes:
        assert (p.page is None) == (p.format != "pdf"), p.id
        # Answers are short strings to find, not passages copied from the documents.
        assert len(p.answer) <= 60, p.id
        assert p.question.rstrip().endswith("?"), p.id
    per_doc: dict[str, int] = {}
    for p in probes:
        per_doc[p.doc] = per_doc.get(p.doc, 0) + 1
    assert len(per_doc) == 10 and min(per_doc.values()) >= 3


def test_the_held_out_probes_are_well_formed_and_name_the_held_out_documents() -> None:
    probes = sets.load_real_probes(sets.HELD_OUT_PROBES)
    assert len(probes) >= 20
    names = {p.name for p in sets.HELD_OUT_FILES}
    assert {p.doc for p in probes} == names
    # a PDF question names its page, a web page's has none
    assert all((p.page is not None and p.page >= 1) == (p.format == "pdf") for p in probes)
    assert {p.format for p in probes} == {"pdf", "html"}
    assert len({p.id for p in probes}) == len(probes)


def test_every_probe_names_a_file_and_a_page_it_has() -> None:
    from pypdf import PdfReader

    folder = need_shared("corpora", "real_docs")
    pages: dict[str, int] = {}
    for p in sets.load_real_probes():
        path = folder / p.doc
        assert path.is_file(), f"{p.id}: no {p.doc} in {folder}"
        if p.page is not None:
            if p.doc not in pages:
                pages[p.doc] = len(PdfReader(path).pages)
            assert p.page <= pages[p.doc], p.id


def _write(tmp_path: Path, *rows: dict[str, object]) -> Path:
    path = tmp_path / "probes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


GOOD = {
    "id": "a1",
    "doc": "bylaw.pdf",
    "question": "What is the fee?",
    "page": 3,
    "section": "SECTION 3. Fees",
    "answer": "$10",
    "kind": "text",
}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"kind": "image"}, "`kind`"),
        ({"page": None}, "`page` must be the 1-based"),
        ({"page": 0}, "`page` must be the 1-based"),
        ({"doc": "code.html"}, "`page` must be null"),
        ({"answer": " "}, "`answer`"),
    ],
)
def test_a_malformed_probe_is_refused_with_its_line(
    tmp_path: Path, change: dict[str, object], problem: str
) -> None:
    path = _write(tmp_path, GOOD, {**GOOD, "id": "a2", **change})
    with pytest.raises(ValueError, match=r"probes\.jsonl:2: .*") as err:
        sets.load_real_probes(path)
    assert problem in str(err.value)


def test_a_repeated_probe_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="id 'a1' is used twice"):
        sets.load_real_probes(_write(tmp_path, GOOD, GOOD))


def test_a_section_matches_without_case_spacing_or_punctuation() -> None:
    crumb = "Title 25 SIGNS > Chapter 25.04 GENERAL > 25.04.010  definitions"
    assert real_docs.section_matches("25.04.010 Definitions.", crumb)
    assert real_docs.section_matches(
        "SECTION 3. Dog Licensing", "CHAPTER 5 > Section 3 — dog licensing"
    )
    assert real_docs.section_matches("“Noise” means", 'Definitions > "noise" means')
    # Whole words only: section 1 is not section 11, nor is 25.04.01 25.04.010.
    assert not real_docs.section_matches("SECTION 1.", "CHAPTER 2 > SECTION 11. Fees")
    assert not real_docs.section_matches("25.04.01", crumb)
    assert not real_docs.section_matches("", crumb)


def test_an_answer_contains_the_expected_string_as_whole_words() -> None:
    assert real_docs.contains("The fee is $10,000 per year.", "10,000")
    assert not real_docs.contains("The fee is $110,000 per year.", "10,000")
    assert real_docs.contains("within 5\nmetres of the road", "5 metres")


def test_word_accuracy_compares_hashed_words_in_order(tmp_path: Path) -> None:
    ref = _ocr_reference.word_hashes
    accuracy = _ocr_reference.word_accuracy
    assert accuracy(ref("the cat sat"), "The cat, sat!") == 1.0
    assert accuracy(ref("the cat sat"), "the bat sat") == pytest.approx(2 / 3)
    assert accuracy(ref("a b c d"), "a c d") == pytest.approx(0.75)
    assert accuracy(ref("Article 5(4) applies"), "ARTICLE 54 app1ies") == pytest.approx(2 / 3)
    assert accuracy(ref("a b"), "") == 0.0
    assert _ocr_reference.bag_accuracy(ref("a b c"), "c b a") == 1.0
    assert _ocr_reference.edit_distance(list("kitten"), list("sitting")) == 3
    # The stored reference holds hashes only, never the page's words.
    stored = json.loads(real_docs.OCR_REFERENCE.read_text())
    assert all(re.fullmatch(r"[0-9a-f]{12}", h) for h in stored["word_sha256_12"])
    path = tmp_path / "reference.json"
    path.write_text(json.dumps({"doc": "a.pdf", "page": 2, "word_sha256_12": ref("x y")}))
    assert _ocr_reference.load_reference(path) == ("a.pdf", 2, ref("x y"))
    assert _ocr_reference.load_reference(tmp_path / "missing.json") is None


PAGES = [
    f"Noise By-law # 6917-14\nSECTION {3 * n + 1}. Fees\nText {n}\nSECTION {3 * n + 2}. Fees\n"
    f"More\nSECTION {3 * n + 3}. Fees\nTail\nPage {n} of 4"
    for n in range(1, 5)
]


def test_running_headers_are_edge_lines_on_three_pages_digits_aside() -> None:
    found = real_docs.recurring_edge_lines(PAGES)
    # "SECTION n. Fees" starts every page but is mostly a mid-page heading; "Tail" is one word.
    assert found == {"noise by-law # <n>-<n>": 4, "page <n> of <n>": 4}
    assert real_docs.recurring_edge_lines(PAGES[:2]) == {}
    # A bare page number has no words to tell it from any other number.
    numbered = [f"12\nalpha {n} beta\ngamma {n} delta\n12" for n in ("one", "two", "six")]
    assert real_docs.recurring_edge_lines(numbered) == {}


def test_header_lines_left_counts_what_survives_loading_beyond_body_mentions() -> None:
    headers = real_docs.recurring_edge_lines(PAGES)
    raw = "\n".join(PAGES)
    body = "\n\n".join(page.split("\n", 1)[1].rsplit("\n", 1)[0] for page in PAGES)
    assert real_docs.header_lines_left(headers, raw, raw) == 8
    assert real_docs.header_lines_left(headers, raw, body) == 0
    # One header glued to a paragraph and one footer with its spacing changed survive.
    glued = body + "\n\nNoise By-law # 6917-14 Tail Page  3  of 4"
    assert real_docs.header_lines_left(headers, raw, glued) == 2
    # A body that quotes the header's words does not count as a header left.
    quoted = {"noise by-law": 3}
    page = "Noise By-law\nx\ny\nz\n"
    assert real_docs.header_lines_left(quoted, page * 3 + "Noise By-law", "Noise By-law") == 0
    assert real_docs.header_lines_left(quoted, page * 3 + "Noise By-law", page * 2) == 1


def test_a_documents_pages_are_cut_where_its_sections_say() -> None:
    sections = (
        Section(
            "d#a", "1. Intro", "first page. second page.", page=1, page_starts=((0, 1), (12, 2))
        ),
        Section("d#b", "2. Scope", "still two.", page=2),
    )
    doc = Document("d.pdf", "D", "d.pdf", "pdf", sections)
    pages = real_docs._document_pages(doc)
    assert pages == {1: "1. Intro\nfirst page. ", 2: "second page.\n2. Scope\nstill two."}
    html = Document("d.html", "D", "d.html", "html", (Section("d.html#a", "A", "no pages"),))
    assert real_docs._document_pages(html) == {}


def test_pdf_load_seconds_are_taken_in_turns_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import groundqa.loaders
    from tests.pdfgen import write_pages

    pdf = write_pages(tmp_path / "a.pdf", 2)
    page = tmp_path / "b.html"
    page.write_text("<html><body><h1>B</h1><p>Text.</p></body></html>")
    order: list[str] = []
    for module, name in ((groundqa.loaders, "load"), (real_docs, "_pypdf_pages")):
        reader = getattr(module, name)
        monkeypatch.setattr(
            module, name, lambda p, r=reader, n=name: order.append(n) or r(p), raising=True
        )
    ours, base = real_docs.paired_pdf_seconds([pdf, page])
    # Only PDFs are timed, each once a round by both readers, in the same rounds.
    assert set(ours) == set(base) == {"a.pdf"}
    assert order == ["load", "_pypdf_pages"] * real_docs.ROUNDS
    assert ours["a.pdf"] > 0 and base["a.pdf"] > 0
    # A figure measured so is the one a system reports; a file without one is timed.
    reads: list[int] = []
    assert real_docs._timed(lambda: reads.append(1), "a.pdf", {"a.pdf": 0.5}) == (0.5, None)
    assert reads == [1]
    seconds, _ = real_docs._timed(lambda: reads.append(1), "b.html", {"a.pdf": 0.5})
    assert seconds >= 0 and len(reads) == 1 + real_docs.ROUNDS
