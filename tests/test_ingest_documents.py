"""`ingest_documents`: Documents made elsewhere are indexed as `ingest` indexes what it
loads, into a real index directory, and read back by the real Engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundqa.engine import Engine
from groundqa.errors import EmptyCorpusError
from groundqa.ingestion import ingest, ingest_documents
from groundqa.loaders import load
from tests.conftest import REGPACK


def test_documents_made_elsewhere_index_as_ingest_indexes_them(tmp_path: Path) -> None:
    documents = load([REGPACK]).documents
    first = ingest_documents(documents, tmp_path / "a", dense=None)
    assert first.changed and first.counts["documents"] == len(documents)
    # Unchanged documents and settings: nothing to do, the build stays.
    again = ingest_documents(documents, tmp_path / "a", dense=None)
    assert not again.changed and again.build_id == first.build_id
    from_sources = ingest([REGPACK], tmp_path / "b", dense=None)
    assert from_sources.counts == first.counts
    question = "Who must report scope 1 emissions?"
    a, b = Engine.open(tmp_path / "a"), Engine.open(tmp_path / "b")
    assert [h.chunk.chunk_id for h in a.search(question, 5)] == [
        h.chunk.chunk_id for h in b.search(question, 5)
    ]
    # The same build fingerprint: only where the corpus came from differs.
    made, loaded = a.manifest, b.manifest
    assert made.fingerprint == loaded.fingerprint
    assert "sources" in loaded.corpus and "sources" not in made.corpus


def test_no_documents_is_one_clear_error_and_nothing_written(tmp_path: Path) -> None:
    with pytest.raises(EmptyCorpusError, match="no documents with text"):
        ingest_documents([], tmp_path / "idx", dense=None)
    assert not (tmp_path / "idx").exists()
