"""Chunking keeps sections whole when it can and never cuts inside a sentence."""

from __future__ import annotations

from groundqa.chunking import (
    ChunkerSettings,
    check_boundaries,
    chunk_documents,
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
