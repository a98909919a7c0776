"""Ingest: validate first, build atomically, do nothing when nothing changed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from groundqa.chunking import ChunkerSettings
from groundqa.embed import EmbedderOptions
from groundqa.engine import Engine
from groundqa.errors import EmptyCorpusError, Interrupted, ValidationBlocked
from groundqa.index.dense import DenseSettings
from groundqa.ingestion import ingest
from tests.fakes import FakeServer, Out, Reply, Seen


def test_build_and_ask(small_corpus: Path, tmp_path: Path) -> None:
    report = ingest([small_corpus], tmp_path / "idx")
    assert report.changed
    # the heading-only "Empty" section is dropped; the preamble joins "Getting there"
    assert report.counts == {"documents": 2, "sections": 5, "chunks": 5}
    engine = Engine.open(tmp_path / "idx")
    ids = {c.section_id for c in engine.chunks}
    assert "alderby.md#Getting there" in ids and "alderby.md#Empty" not in ids
    first = next(c for c in engine.chunks if c.section_id == "alderby.md#Getting there")
    assert first.text.startswith("Alderby is a river town")


def test_unchanged_corpus_is_a_no_op(small_corpus: Path, tmp_path: Path) -> None:
    first = ingest([small_corpus], tmp_path / "idx")
    again = ingest([small_corpus], tmp_path / "idx")
    assert not again.changed and again.build_id == first.build_id
    assert "up to date" in again.message
    forced = ingest([small_corpus], tmp_path / "idx", force=True)
    assert forced.changed and forced.build_id != first.build_id


def test_changed_corpus_rebuilds(small_corpus: Path, tmp_path: Path) -> None:
    first = ingest([small_corpus], tmp_path / "idx")
    path = small_corpus / "bramblecote.md"
    path.write_text(path.read_text().replace("twice a day", "three times a day"))
    second = ingest([small_corpus], tmp_path / "idx")
    assert second.changed and second.build_id != first.build_id
    assert any("three times" in c.text for c in Engine.open(tmp_path / "idx").chunks)


def test_blocking_finding_leaves_previous_index_untouched(
    small_corpus: Path, tmp_path: Path
) -> None:
    first = ingest([small_corpus], tmp_path / "idx")
    (small_corpus / "bad.csv").write_text("id,title,text\n1,A,Some text here.\n1,B,Duplicate id.\n")
    with pytest.raises(ValidationBlocked, match="duplicate"):
        ingest([small_corpus], tmp_path / "idx")
    engine = Engine.open(tmp_path / "idx")
    assert engine.manifest.build_id == first.build_id
    assert not engine.ask("When does the last train leave Alderby?").refused


def test_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmptyCorpusError):
        ingest([tmp_path / "empty"], tmp_path / "idx")
    assert not (tmp_path / "idx").exists()


class _InterruptWhileIndexing:
    """A Reporter that plays the user pressing Ctrl-C once indexing has started."""

    def stage(self, name: str, total: int | None = None) -> None:
        if name.startswith("indexing"):
            raise KeyboardInterrupt

    def advance(self, n: int = 1) -> None:
        return None


def test_interrupt_keeps_previous_index(small_corpus: Path, tmp_path: Path) -> None:
    first = ingest([small_corpus], tmp_path / "idx")
    (small_corpus / "extra.md").write_text(
        "# Extra\n\n## Notes\n\nA new section about ferries at dawn.\n"
    )
    with pytest.raises(Interrupted, match="unchanged"):
        ingest([small_corpus], tmp_path / "idx", reporter=_InterruptWhileIndexing())
    assert Engine.open(tmp_path / "idx").manifest.build_id == first.build_id
    assert not list((tmp_path / "idx" / "builds").glob(".tmp-*"))


# "Quarantine" is only in the section heading, so only the section path can match it.
HARBOUR = """# Harbour Rules

## Quarantine

Vessels must moor at the east pier and wait for the health officer.

## Fees

A berth costs 40 pounds a night at the west pier.
"""


def _harbour(tmp_path: Path) -> Path:
    folder = tmp_path / "harbour"
    folder.mkdir()
    (folder / "harbour.md").write_text(HARBOUR, encoding="utf-8")
    return folder


def test_without_the_section_path_a_heading_word_is_not_indexed_but_still_cited(
    tmp_path: Path,
) -> None:
    corpus = _harbour(tmp_path)
    flat = ChunkerSettings(section_path=False)
    ingest([corpus], tmp_path / "with", dense=None)
    ingest([corpus], tmp_path / "without", dense=None, chunker=flat)
    with_path, without = Engine.open(tmp_path / "with"), Engine.open(tmp_path / "without")
    found = with_path.retrieve("quarantine", retriever="bm25")
    assert [h.chunk.section_id for h in found] == ["harbour.md#Quarantine"]
    assert without.retrieve("quarantine", retriever="bm25") == []
    assert len(without.retrieve("harbour rules", retriever="bm25")) == 2  # the title stays
    assert ChunkerSettings.from_dict(without.manifest.chunker) == flat
    assert with_path.retriever.section_path and not without.retriever.section_path
    answer = without.ask("Where must vessels moor?", retriever="bm25")
    assert not answer.refused
    assert answer.citations[0].section == "Harbour Rules > Quarantine"


def test_the_section_path_setting_is_part_of_the_build_fingerprint(tmp_path: Path) -> None:
    corpus = _harbour(tmp_path)
    settings = ChunkerSettings(section_path=False)
    first = ingest([corpus], tmp_path / "idx", dense=None)
    flat = ingest([corpus], tmp_path / "idx", dense=None, chunker=settings)
    assert flat.changed and flat.build_id != first.build_id
    assert not ingest([corpus], tmp_path / "idx", dense=None, chunker=settings).changed


def _recording_embeddings(embedded: list[str]) -> Reply:
    """Ollama's `/api/embed`: keeps every text it is sent, answers a fixed 2-d vector."""

    def reply(seen: Seen, out: Out) -> None:
        embedded.extend(seen.body["input"])
        vectors = [[1.0, float(len(t) % 7 + 1)] for t in seen.body["input"]]
        out.json({"model": seen.body["model"], "embeddings": vectors})

    return reply


@pytest.mark.parametrize("section_path", [True, False])
def test_the_embedder_sees_the_section_path_only_when_it_is_indexed(
    tmp_path: Path, serve: Callable[[Reply], FakeServer], section_path: bool
) -> None:
    embedded: list[str] = []
    url = serve(_recording_embeddings(embedded)).url
    ingest(
        [_harbour(tmp_path)],
        tmp_path / "idx",
        chunker=ChunkerSettings(section_path=section_path),
        dense=DenseSettings("ollama:rec"),
        embedder_options=EmbedderOptions(base_url=url),
    )
    heads = sorted(text.split("\n")[0] for text in embedded)
    if section_path:
        assert heads == ["Harbour Rules > Fees", "Harbour Rules > Quarantine"]
    else:
        assert heads == ["Harbour Rules", "Harbour Rules"]
