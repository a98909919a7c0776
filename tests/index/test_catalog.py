"""The catalogue of a build on disk: chunks read by row from the mapped chunks file, and
facets, versions and keys read from the files an ingest writes beside it.

`same_as_in_memory` compares a catalogue, lookup by lookup, with the in-memory one over
the same chunks; test_postgres_catalog.py runs it against PostgreSQL too.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from groundqa.engine import Engine
from groundqa.index.catalog import Catalog, MemoryCatalog
from groundqa.index.directory import load_index
from groundqa.index.directory.catalog import FileCatalog
from groundqa.ingestion import ingest
from groundqa.models import Chunk
from groundqa.versions import Versions
from tests.conftest import REGPACK
from tests.test_regulatory import DOCS, VERSIONED, _write

DAYS = [dt.date(2010, 6, 1), dt.date(2019, 3, 1), dt.date(2024, 1, 1), dt.date(2100, 1, 1)]


def write_mixed_corpus(folder: Path) -> Path:
    """The example corpus with the regulatory tests' places, list and nested metadata and
    versions: every kind of facet and version in one corpus."""
    _write(folder, {**DOCS, **VERSIONED})
    for path in REGPACK.glob("*.md"):
        (folder / path.name).write_text(path.read_text("utf-8"), "utf-8")
    return folder


def same_as_in_memory(catalog: Catalog, chunks: Sequence[Chunk]) -> None:
    """Every lookup of `catalog` equals the in-memory catalogue's over `chunks`."""
    memory = MemoryCatalog(chunks)
    facets, expected = catalog.facets, memory.facets
    keys = expected.keys()
    assert facets.keys() == keys
    assert {"state", "area", "frameworks", "reporting.scheme"} <= set(keys)
    for key in keys:
        assert facets.shown(key) == expected.shown(key)
        assert np.array_equal(facets.carries(key), expected.carries(key))
        for value in expected.shown(key):
            assert np.array_equal(facets.rows(key, [value]), expected.rows(key, [value]))
    areas = list(expected.shown("area"))
    assert len(areas) >= 3
    for area in areas:
        assert sorted(facets._states_of([area])) == sorted(expected._states_of([area]))
    assert np.array_equal(
        facets.scope_mask({"area": areas[:2]}),  # type: ignore[arg-type]
        expected.scope_mask({"area": areas[:2]}),  # type: ignore[arg-type]
    )

    rows = [5, 0, len(chunks) - 1, 17]
    assert catalog.chunks_at(rows) == [chunks[r] for r in rows]
    assert catalog.doc_ids(rows) == [chunks[r].doc_id for r in rows]
    ids = [chunks[r].chunk_id for r in rows]
    assert catalog.rows_of([*ids, "no such chunk"]) == dict(zip(ids, rows, strict=True))
    for doc in sorted({c.doc_id for c in chunks}):
        assert catalog.document(doc) == memory.document(doc)
    for section in sorted({c.section_id for c in chunks})[::7]:
        assert catalog.section(section) == memory.section(section)
    assert catalog.document("no such doc") == [] and catalog.section("nope#x") == []

    # Versions: each document judged from what the catalogue gives for it.
    everything = Versions.of_chunks(chunks)
    assert everything.active
    for doc in sorted({c.doc_id for c in chunks}):
        part = catalog.versions([doc])
        assert part.family(doc) == everything.family(doc)
        for day in DAYS:
            assert part.status(doc, day) == everything.status(doc, day)
            assert part.note(doc, day) == everything.note(doc, day)
            assert part.in_force_of(doc, day) == everything.in_force_of(doc, day)


def test_a_build_directory_is_read_by_row_and_equals_the_in_memory_catalogue(
    tmp_path: Path,
) -> None:
    ingest([write_mixed_corpus(tmp_path / "corpus")], tmp_path / "idx", dense=None)
    store = load_index(tmp_path / "idx")
    assert isinstance(store.catalog, FileCatalog)
    assert "chunks" not in store.__dict__  # opening parsed no chunk
    same_as_in_memory(store.catalog, list(store.chunks))


def test_questions_on_a_directory_parse_no_chunk_file_whole(tmp_path: Path) -> None:
    ingest([write_mixed_corpus(tmp_path / "corpus")], tmp_path / "idx", dense=None)
    engine = Engine.open(tmp_path / "idx")
    answer = engine.ask("Do I need a burning permit for an open fire?", scope={"area": "Corley"})
    assert answer.citations and answer.scope["state"] == ["Avonia"]
    assert engine.ask("What levy applies to each leaf blower sold?").notes
    assert engine.catalog.document(answer.citations[0].doc_id)
    assert "chunks" not in engine.store.__dict__


def test_a_build_without_catalogue_files_is_read_into_memory(tmp_path: Path) -> None:
    """A build written before the catalogue files existed opens as it used to."""
    ingest([write_mixed_corpus(tmp_path / "corpus")], tmp_path / "idx", dense=None)
    question = "Do I need a burning permit for an open fire?"
    before = Engine.open(tmp_path / "idx").ask(question, scope={"area": "Corley Shire"})
    store = load_index(tmp_path / "idx")
    (store.build_dir / "facets.json").unlink()
    manifest = store.build_dir / "manifest.json"
    data = json.loads(manifest.read_text("utf-8"))
    del data["files"]["facets.json"]
    manifest.write_text(json.dumps(data), "utf-8")
    legacy = Engine.open(tmp_path / "idx")
    assert isinstance(legacy.store.catalog, MemoryCatalog)
    after = legacy.ask(question, scope={"area": "Corley Shire"})
    assert after.citations == before.citations and after.scope == before.scope
