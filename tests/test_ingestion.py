"""Ingest: validate first, build atomically, do nothing when nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundqa.engine import Engine
from groundqa.errors import EmptyCorpusError, Interrupted, ValidationBlocked
from groundqa.ingestion import ingest


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
