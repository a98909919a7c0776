"""The PostgreSQL catalogue: facets, versions and chunks read per request, never the corpus.

Each lookup is compared with the in-memory catalogue of the same chunks, value by value
(`test_catalog.same_as_in_memory`), over the example corpus with the regulatory test
corpus; the engine's answers over PostgreSQL are in test_regulatory.py and test_postgres.py.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundqa.engine import Engine
from groundqa.index.catalog import MemoryCatalog
from groundqa.ingestion import ingest
from tests.index.test_catalog import same_as_in_memory, write_mixed_corpus

psycopg = pytest.importorskip(
    "psycopg", reason="PostgreSQL tests need pip install -e '.[postgres]'"
)
from groundqa.index.postgres import PostgresStore  # noqa: E402
from groundqa.index.postgres.catalog import SqlCatalog  # noqa: E402


@pytest.fixture
def opened(pg_url: str, tmp_path: Path) -> Iterator[Engine]:
    ingest([write_mixed_corpus(tmp_path / "corpus")], pg_url, dense=None)
    engine = Engine.open(pg_url)
    try:
        yield engine
    finally:
        engine.store.close()


def test_every_lookup_equals_the_in_memory_catalogue(opened: Engine) -> None:
    store = opened.store
    assert isinstance(store, PostgresStore) and isinstance(store.catalog, SqlCatalog)
    same_as_in_memory(store.catalog, store._read_chunks())  # the reference, read aside
    with psycopg.connect(store.url) as conn:
        kinds = conn.execute(
            f'SELECT DISTINCT packed FROM "{store.info.catalog_tables[0]}"'
        ).fetchall()
    assert sorted(kinds) == [(False,), (True,)]  # row numbers and bitmaps both compared
    assert store._chunks is None  # none of it read the corpus into the store


def test_questions_with_filters_scopes_and_dates_read_no_corpus(opened: Engine) -> None:
    asked = [
        opened.ask("Do I need a burning permit for an open fire?", scope={"area": "Corley"}),
        opened.ask("What is the turbine setback from a dwelling?", auto_scope=True),
        opened.ask("What levy applies to each leaf blower sold?"),
        opened.ask(
            "Before what time are power tools banned on weekdays?", as_of=dt.date(2019, 3, 1)
        ),
        opened.ask("Which schemes apply?", filters={"frameworks": {"all": ["NGER"]}}),
    ]
    assert all(a.citations for a in asked[:4])
    assert asked[0].scope == {"area": ["Corley Shire"], "state": ["Avonia"]}
    assert asked[2].notes and "not yet in force" in asked[2].notes[0]
    assert asked[3].citations[0].doc_id == "noise_2015.md"
    cited = asked[0].citations[0]
    assert opened.catalog.chunk(cited.chunk_id) is not None
    assert opened.catalog.document(cited.doc_id)
    assert isinstance(opened.store, PostgresStore) and opened.store._chunks is None


def test_a_build_without_catalogue_tables_is_served_from_memory(opened: Engine) -> None:
    """A build written before the catalogue tables existed still answers, as it used to."""
    question = "Do I need a burning permit for an open fire?"
    before = opened.ask(question, scope={"area": "Corley Shire"})
    store = opened.store
    assert isinstance(store, PostgresStore)
    with psycopg.connect(store.url, autocommit=True) as conn:
        for table in store.info.catalog_tables:
            conn.execute(f'DROP TABLE "{table}"')
    legacy = Engine.open(store.url)
    try:
        assert isinstance(legacy.store.catalog, MemoryCatalog)
        after = legacy.ask(question, scope={"area": "Corley Shire"})
        assert after.citations == before.citations and after.scope == before.scope
    finally:
        legacy.store.close()
