"""Chunking keeps sections whole when it can and cuts inside a sentence only past the longest
one it keeps whole, so no chunk grows without bound."""

from __future__ import annotations

from groundqa.chunking import (
    LONGEST_SENTENCE,
    ChunkerSettings,
    check_boundaries,
    chunk_documents,
    cut_at_spaces,
    size_summary,
    split_section,
)
from groundqa.models import Document, Section
from groundqa.text import ends_sentence, split_sentences


def _sentence(i: int) -> str:
    return f"Clause {i} requires the operator to keep records for seven years after the event."


def _long_section(paragraphs: int = 6, per_paragraph: int = 4) -> str:
    return "\n\n".join(
        " ".join(_sentence(p * 10 + s) for s in range(per_paragraph)) for p in range(paragraphs)
    )


def _doc(text: str, sid: str = "act.md#3 Records") -> Document:
    section = Section(sid, "3 Records", text, ("3 Records",), None, {"clause": "3"})
    return Document(
        "act.md", "Records Act", "/c/act.md", "markdown", (section,), {"state": "North"}
    )


def test_short_section_is_one_chunk_with_title_and_path() -> None:
    chunks = chunk_documents([_doc("A short but complete section.")], ChunkerSettings())
    assert len(chunks) == 1
    c = chunks[0]
    assert (c.part, c.parts, c.section_id) == (0, 1, "act.md#3 Records")
    assert c.index_text().startswith("Records Act > 3 Records\n")
    assert c.metadata == {"state": "North", "clause": "3"}


def test_long_section_splits_at_paragraphs_and_every_part_keeps_the_section() -> None:
    text = _long_section()
    settings = ChunkerSettings(max_chars=500, overlap_chars=400)
    parts = split_section(text, settings)
    assert len(parts) > 1
    assert all(len(p) <= 500 for p in parts)
    paragraphs = text.split("\n\n")
    for p in parts:
        assert any(p.startswith(para) for para in paragraphs)
        assert ends_sentence(p)
    chunks = chunk_documents([_doc(text)], settings)
    assert {c.section_id for c in chunks} == {"act.md#3 Records"}
    assert [c.part for c in chunks] == list(range(len(chunks)))
    assert all(c.parts == len(chunks) for c in chunks)


def test_overlap_repeats_a_short_paragraph_across_the_cut() -> None:
    text = "\n\n".join(["A" * 300 + ".", "B" * 250 + ".", "C" * 300 + "."])
    parts = split_section(text, ChunkerSettings(max_chars=600, overlap_chars=260))
    assert parts[0].endswith("B" * 250 + ".")
    assert parts[1].startswith("B" * 250 + ".")


def test_over_long_paragraph_splits_at_sentences_never_inside_one() -> None:
    paragraph = " ".join(_sentence(i) for i in range(30))
    parts = split_section(paragraph, ChunkerSettings(max_chars=400, overlap_chars=100))
    sentences = set(split_sentences(paragraph))
    assert len(parts) > 3
    for p in parts:
        assert all(s in sentences for s in split_sentences(p)), p


def test_single_sentence_longer_than_limit_stays_whole() -> None:
    sentence = "This " + "very " * 200 + "long sentence ends here."
    assert split_section(sentence, ChunkerSettings(max_chars=200)) == [sentence]


def test_chunk_ids_are_stable_and_change_with_text() -> None:
    a = chunk_documents([_doc(_long_section())], ChunkerSettings(max_chars=500))
    b = chunk_documents([_doc(_long_section())], ChunkerSettings(max_chars=500))
    c = chunk_documents([_doc(_long_section() + "\n\nOne more.")], ChunkerSettings(max_chars=500))
    assert [x.chunk_id for x in a] == [x.chunk_id for x in b]
    assert len({x.chunk_id for x in a}) == len(a)
    assert [x.chunk_id for x in a] != [x.chunk_id for x in c]


def test_boundary_check_accepts_clean_chunks_and_lists_exceptions() -> None:
    text = _long_section()
    chunks = chunk_documents([_doc(text)], ChunkerSettings(max_chars=500))
    assert check_boundaries(chunks, {"act.md#3 Records": text}) == []
    cut = chunk_documents([_doc("It starts well and then stops mid")], ChunkerSettings())
    issues = check_boundaries(cut, {"act.md#3 Records": "It starts well and then stops mid"})
    assert [i.problem for i in issues] == ["ends-mid-sentence"]


def test_boundary_check_names_a_sentence_start_inside_a_paragraph() -> None:
    paragraph = " ".join(_sentence(i) for i in range(30))
    chunks = chunk_documents([_doc(paragraph)], ChunkerSettings(max_chars=400, overlap_chars=0))
    problems = {i.problem for i in check_boundaries(chunks, {"act.md#3 Records": paragraph})}
    assert problems == {"starts-mid-paragraph"}


def test_size_summary() -> None:
    chunks = chunk_documents(
        [_doc("x" * 100 + "."), _doc("y" * 300 + ".", "b#c")], ChunkerSettings()
    )
    s = size_summary(chunks)
    assert s["min"] == 101 and s["max"] == 301
    assert size_summary([])["max"] == 0


def test_settings_round_trip_and_an_old_manifest_reads_with_the_section_path() -> None:
    for settings in (ChunkerSettings(), ChunkerSettings(max_chars=800, section_path=False)):
        assert ChunkerSettings.from_dict(settings.to_dict()) == settings
    # The default writes what builds wrote before the setting existed: same fingerprint.
    assert ChunkerSettings().to_dict() == {
        "strategy": "section-paragraph-sentence-v1",
        "max_chars": 1500,
        "overlap_chars": 300,
    }
    assert ChunkerSettings.from_dict({"max_chars": 1500, "overlap_chars": 300}).section_path
    assert ChunkerSettings(section_path=False).to_dict()["section_path"] is False


def test_index_text_without_the_section_path_keeps_the_title_and_the_body() -> None:
    c = chunk_documents([_doc("A short but complete section.")], ChunkerSettings())[0]
    assert c.index_text(section_path=False) == "Records Act\nA short but complete section."
    assert c.breadcrumb == "Records Act > 3 Records"


def _paged_section(paragraphs: list[tuple[int, str]], page: int | None = None) -> Section:
    """A section whose paragraphs start on the given pages, as the PDF loader makes it."""
    text, starts = "", []
    for number, para in paragraphs:
        if text:
            text += "\n\n"
        if not starts or starts[-1][1] != number:
            starts.append((len(text), number))
        text += para
    return Section(
        "r.pdf#3 Records", "3 Records", text, ("3 Records",), starts[0][1], {}, tuple(starts)
    )


def _pdf_doc(section: Section) -> Document:
    return Document("r.pdf", "Records Act", "/c/r.pdf", "pdf", (section,))


def test_parts_of_a_section_over_pages_link_to_the_page_their_text_starts_on() -> None:
    paragraphs = [(4 + p // 2, " ".join(_sentence(p * 10 + s) for s in range(3))) for p in range(8)]
    section = _paged_section(paragraphs)
    chunks = chunk_documents([_pdf_doc(section)], ChunkerSettings(max_chars=600, overlap_chars=260))
    assert len(chunks) > 3 and {c.page for c in chunks} == {4, 5, 6, 7}
    for c in chunks:
        (page,) = [n for n, para in paragraphs if c.text.startswith(para)]
        assert c.page == page, c.text[:40]
        assert c.uri == f"file:///c/r.pdf#page={page}"


def test_a_page_break_inside_a_long_paragraph_is_found_at_its_sentence() -> None:
    sentences = [_sentence(i) for i in range(12)]
    text = " ".join(sentences)
    starts = ((0, 2), (text.index(sentences[7]), 3))
    section = Section("r.pdf#1 Scope", "1 Scope", text, ("1 Scope",), 2, {}, starts)
    chunks = chunk_documents([_pdf_doc(section)], ChunkerSettings(max_chars=300, overlap_chars=100))
    for c in chunks:
        first = next(i for i, s in enumerate(sentences) if c.text.startswith(s))
        assert c.page == (3 if first >= 7 else 2), (first, c.page)
    assert {c.page for c in chunks} == {2, 3}


def test_repeated_text_is_placed_after_the_part_before_it() -> None:
    same = "The same notice is printed again."
    paragraphs = [(1, "A first clause of the act."), (1, same), (2, "B second clause."), (3, same)]
    chunks = chunk_documents(
        [_pdf_doc(_paged_section(paragraphs))], ChunkerSettings(max_chars=40, overlap_chars=0)
    )
    assert [(c.text, c.page) for c in chunks] == [(t, n) for n, t in paragraphs]


def test_sections_without_page_starts_keep_their_page_and_their_chunk_ids() -> None:
    text = _long_section()
    plain = Section("act.md#3 Records", "3 Records", text, ("3 Records",), 4)
    paged = Section(
        "act.md#3 Records", "3 Records", text, ("3 Records",), 4, {}, ((0, 4), (900, 5))
    )
    doc = Document("act.md", "Records Act", "/c/act.md", "markdown", (plain,))
    settings = ChunkerSettings(max_chars=500)
    chunks = chunk_documents([doc], settings)
    assert len(chunks) > 2 and {c.page for c in chunks} == {4}
    moved = chunk_documents(
        [Document("act.md", "Records Act", "/c/act.md", "markdown", (paged,))], settings
    )
    assert [c.chunk_id for c in moved] == [c.chunk_id for c in chunks]
    assert [c.page for c in moved] != [c.page for c in chunks]


def test_a_sentence_past_the_longest_is_cut_at_spaces_into_pieces_of_the_limit() -> None:
    # A flattened table or a file made to hurt: no full stop in 30,000 characters.
    text = "Intro sentence here.\n\n" + " ".join(f"cell{i}" for i in range(4000))
    assert len(text) > LONGEST_SENTENCE
    parts = split_section(text, ChunkerSettings(max_chars=1500, overlap_chars=0))
    assert max(len(p) for p in parts) <= 1500
    # Nothing is lost or cut inside a word: the pieces rejoin to the words in order.
    words = " ".join(parts).split()
    assert words == text.split()


def test_a_run_without_spaces_is_cut_at_the_limit() -> None:
    text = "x" * (LONGEST_SENTENCE * 3)
    parts = split_section(text, ChunkerSettings(max_chars=2000, overlap_chars=0))
    assert [len(p) for p in parts] == [2000] * 12
    assert cut_at_spaces("  ab cd  ", 3) == ["ab", "cd"]
    assert cut_at_spaces("abcdefg", 3) == ["abc", "def", "g"]


def test_no_chunk_is_longer_than_the_limit_or_the_longest_sentence() -> None:
    # One 2 MB Markdown section in three shapes: words, abbreviations, one long token.
    for body in ("word " * 400_000, "Mr. Smith " * 200_000, "y" * 2_000_000):
        chunks = chunk_documents([_doc(body)], ChunkerSettings())
        assert max(len(c.text) for c in chunks) <= max(1500, LONGEST_SENTENCE)
        assert len(chunks) > 1000
