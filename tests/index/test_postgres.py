"""The PostgreSQL store against a real PostgreSQL 18 with pgvector (see conftest `pg_admin_url`).

The example corpus is built once into an index directory and once into a database, and
both are asked the same questions: every retriever must return the same chunks in the
same order with the same scores, and `ask` the same answers. The rest covers what a
shared store must survive: incremental updates, a killed ingest, two ingests at once, a
server that is down, a database without pgvector, a schema from a newer groundqa, and
several `serve` workers over one database.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from groundqa.chunking import ChunkerSettings
from groundqa.engine import Engine
from groundqa.errors import IndexLockedError, IndexVersionError, StoreUnavailableError
from groundqa.evaluate.probes import load_probes
from groundqa.index.dense import pg_search_width
from groundqa.ingestion import ingest
from groundqa.serve import ServeSettings
from groundqa.text import DEFAULT_ANALYZER
from tests.cli.test_cli import one_error_line
from tests.conftest import REGPACK, REGPACK_PROBES, copy_index, pg_database_url
from tests.pgserver import free_port
from tests.serve.test_api import _wait_for_health, keep_asking_through, live_server

psycopg = pytest.importorskip(
    "psycopg", reason="PostgreSQL tests need pip install -e '.[postgres]'"
)
from groundqa.index.postgres import (  # noqa: E402
    PostgresStore,
    PostgresTarget,
    redact,
)
from groundqa.index.postgres.store import ann_settings, ann_statement  # noqa: E402
from groundqa.index.postgres.target import LOCK_GRACE_S, LOCK_KEY  # noqa: E402

GROUNDQA = [sys.executable, "-m", "groundqa.cli"]
RETRIEVERS = [
    "bm25",
    "dense",
    "hybrid",
    "hybrid+weighted=0.5/0.5+defs",
    "bm25+acr+cap=1",
    "hybrid+mmr=0.7",
]


# Each server searches BM25 its own way: PostgreSQL 18 without pg_textsearch in SQL, the
# pg_textsearch server through its BM25 index (see conftest); both must match the directory.
SERVERS = {"sql": "pg_admin_url", "pg_textsearch": "pg_bm25_admin_url"}


@pytest.fixture(scope="module", params=list(SERVERS))
def server_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def module_db(server_kind: str, request: pytest.FixtureRequest) -> Iterator[str]:
    from psycopg import sql

    admin_url = request.getfixturevalue(SERVERS[server_kind])
    name = f"gq_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield pg_database_url(admin_url, name)
        finally:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="module")
def pair(
    module_db: str,
    tmp_path_factory: pytest.TempPathFactory,
    server_kind: str,
    regpack_build: Path,
) -> Iterator[tuple[Engine, Engine]]:
    """The example corpus in an index directory and in PostgreSQL, MiniLM vectors in both."""
    folder = copy_index(regpack_build, tmp_path_factory.mktemp("pgpair") / "idx")
    report = ingest([REGPACK], module_db)
    local, shared = Engine.open(folder), Engine.open(module_db)
    assert shared.store.lexical_engine["engine"] == server_kind
    assert ("BM25: pg_textsearch 0.6" in report.message) == (server_kind == "pg_textsearch")
    yield local, shared
    shared.store.close()


def _ranking(engine: Engine, question: str, **kw: Any) -> list[tuple[str, float]]:
    return [(h.chunk.chunk_id, h.score) for h in engine.search(question, depth=10, **kw)]


def _same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    assert [c for c, _ in a] == [c for c, _ in b]
    assert np.allclose([s for _, s in a], [s for _, s in b], rtol=1e-4, atol=1e-6)


@pytest.mark.slow  # both stores built and every probe ranked (~40 s each); CI runs it
@pytest.mark.parametrize("retriever", RETRIEVERS)
def test_both_stores_rank_every_probe_identically(
    pair: tuple[Engine, Engine], retriever: str
) -> None:
    local, shared = pair
    questions = [p.question for p in load_probes(REGPACK_PROBES)]
    assert len(questions) > 50
    for question in questions:
        _same(
            _ranking(local, question, retriever=retriever),
            _ranking(shared, question, retriever=retriever),
        )


def _both_overlap(store: Any) -> bool:
    """Whether the store's `both` started its second search while the first still ran."""
    second_started = threading.Event()
    overlapped, _ = store.both(lambda: second_started.wait(timeout=0.5), second_started.set)
    return bool(overlapped)


def _nested_both(engine: Engine, question: str) -> tuple[Any, str, Any]:
    """A search that itself reads side by side, run beside another: on a helper thread it
    does its work in turn rather than wait for another helper."""
    store, terms = engine.store, engine.analyzer.terms(question)
    (inner, thread), outer = store.both(
        lambda: store.both(
            lambda: store.lexical_search(terms, 5), lambda: threading.current_thread().name
        ),
        lambda: store.lexical_search(terms, 5),
    )
    return inner, thread, outer


def test_a_server_store_runs_two_searches_at_once_and_a_directory_in_turn(
    pair: tuple[Engine, Engine],
) -> None:
    local, shared = pair
    assert _both_overlap(shared.store) and not _both_overlap(local.store)
    expected = local.store.lexical_search(local.analyzer.terms("turbine setback"), 5)
    for engine, on_helper in ((shared, True), (local, False)):
        inner, thread, outer = _nested_both(engine, "turbine setback")
        assert thread.startswith("groundqa-pg") is on_helper
        for found in (inner, outer):
            assert found and [r for r, _ in found] == [r for r, _ in expected]
            assert np.allclose([s for _, s in found], [s for _, s in expected], rtol=1e-6)


def test_filters_scopes_and_answers_agree(pair: tuple[Engine, Engine]) -> None:
    local, shared = pair
    cases: list[dict[str, Any]] = [
        {"filters": {"state": "Westhaven"}},
        {"scope": {"area": "Ashcombe"}},
        {"filters": {"state": ["Westhaven", "Northmere"]}, "retriever": "dense"},
    ]
    for kw in cases:
        a = _ranking(local, "How much native vegetation can be cleared?", **kw)
        assert a, kw
        _same(a, _ranking(shared, "How much native vegetation can be cleared?", **kw))
    for question in [
        "What is the turbine setback from a dwelling in Northmere?",
        "Who won the 1994 World Cup?",
        "What trunk circumference makes a tree protected in Fennick City?",
    ]:
        x, y = local.ask(question), shared.ask(question)
        assert (x.answer, x.refused, x.citations) == (y.answer, y.refused, y.citations)
        assert x.gate.score == pytest.approx(y.gate.score, abs=1e-6)
    assert shared.location == redact(shared.store.location)
    assert len(shared.chunks) == len(local.chunks) and shared.store.acronyms == local.store.acronyms


def test_hnsw_and_exact_search_in_the_database(pair: tuple[Engine, Engine], module_db: str) -> None:
    _, shared = pair
    ann = PostgresStore.open(module_db, ann="always")
    try:
        found = total = 0
        for probe in load_probes(REGPACK_PROBES)[:30]:
            q = shared.retriever.embed(probe.question)
            exact = {r for r, _ in shared.store.vector_search(q, 10)}
            approx = {r for r, _ in ann.vector_search(q, 10)}
            found, total = found + len(exact & approx), total + len(exact)
            assert {r for r, _ in ann.vector_search(q, 10, exact=True)} == exact
        assert found / total >= 0.95
        # HNSW runs at the store's ef_search (the build's, raised with its size), or at k
        # when k is larger; an exact search does not walk the graph.
        assert ann.ef_search == pg_search_width(128, ann.num_docs) == 128
        # The graph was built with the build's m and ef_construction (a small build does not
        # widen it), and the build records the ef_construction it used.
        with ann._cursor() as cur:
            cur.execute(
                "SELECT c.reloptions FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'hnsw' "
                "AND i.indrelid = %s::regclass",
                (ann.info.chunk_table,),
            )
            assert cur.fetchall() == [(["m=32", "ef_construction=200"],)]
        assert ann.info.stats["hnsw_ef_construction"] == 200
        # `inspect` and /health say how vectors are searched, as the store does it.
        assert ann.vector_engine == {
            "search": "hnsw",
            "engine": "pgvector",
            "m": 32,
            "ef_construction": 200,
            "width": 128,
            "note": "pgvector HNSW, m 32, ef_construction 200, searched 128 wide; "
            "filtered searches are exact",
        }
        assert shared.store.vector_engine is not None
        assert shared.store.vector_engine["search"] == "exact"  # below ann_threshold
        for width, ef, iterative in (
            (128, "128", "off"),
            (1000, "1000", "off"),
            (1500, "1000", "relaxed_order"),
        ):
            with ann._cursor() as cur:
                for setting in ann_settings(width):
                    cur.execute(*setting)
                assert cur.execute("SHOW hnsw.ef_search").fetchone()[0] == ef
                assert cur.execute("SHOW hnsw.iterative_scan").fetchone()[0] == iterative
                assert cur.execute("SHOW enable_seqscan").fetchone()[0] == "off"
        # At k larger than the store's width, the search is k wide: pgvector returns no
        # more rows than ef_search, so a search 10 wide would stop short of 100.
        probe_vector = shared.retriever.embed(load_probes(REGPACK_PROBES)[0].question)
        with ann._cursor() as cur:
            for setting in ann_settings(10):
                cur.execute(*setting)
            cur.execute(
                ann_statement(ann.info.chunk_table, 10), {"qvec": probe_vector, "vec_k": 100}
            )
            assert len(cur.fetchall()) < 100
        ann.ef_search = 10
        assert len(ann.vector_search(probe_vector, 100)) == 100
        # Past pgvector's limit of 1000 the iterative scan carries the search on: asked for
        # more rows than the corpus holds, it reaches every chunk, so its top 10 are the
        # exact top 10, in exact order.
        ann.ef_search = 1500
        assert ann.num_docs < 1500
        assert "searched 1500 wide (iterative scan past ef_search 1000)" in str(ann.vector_engine)
        for probe in load_probes(REGPACK_PROBES)[:5]:
            q = shared.retriever.embed(probe.question)
            exact_ranked = ann.vector_search(q, 10, exact=True)
            wide = ann.vector_search(q, 10)
            assert [r for r, _ in wide] == [r for r, _ in exact_ranked]
            assert [s for _, s in wide] == pytest.approx([s for _, s in exact_ranked], abs=1e-6)
        from pgvector import Vector

        with ann._cursor() as cur:
            for setting in ann_settings(1500):
                cur.execute(*setting)
            # The outer sort reads every row the scan was asked for (a lazy read of the
            # scan's own order would stop after k and lose the wider search).
            cur.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) "
                + ann_statement(ann.info.chunk_table, 1500).as_string(cur),
                {"qvec": Vector(q), "vec_k": 10},
            )
            plan = cur.fetchone()[0][0]["Plan"]
            (scan,) = [n for n in _plan_nodes(plan) if n["Node Type"] == "Index Scan"]
            assert scan["Actual Rows"] == ann.num_docs
    finally:
        ann.close()


def _plan_nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    """A plan node of EXPLAIN (FORMAT JSON) and every node below it."""
    return [node, *(n for child in node.get("Plans", []) for n in _plan_nodes(child))]


@pytest.mark.slow  # a calibration over the example probes (~25 s each); CI runs it
def test_gate_calibration_is_stored_in_the_database(module_db: str, tmp_path: Path) -> None:
    run = subprocess.run(
        [*GROUNDQA, "calibrate", "--store", module_db, "--probes", str(REGPACK_PROBES)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    engine = Engine.open(module_db)
    try:
        assert engine.gate.calibrated
    finally:
        run = subprocess.run(
            [*GROUNDQA, "calibrate", "--store", module_db, "--reset"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        engine.store.close()
    assert run.returncode == 0, run.stderr
    reopened = Engine.open(module_db)
    assert not reopened.gate.calibrated
    reopened.store.close()


# ---------------------------------------------------------------- updates


def _copy_corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    shutil.copytree(REGPACK, corpus)
    return corpus


@pytest.mark.slow  # in `make test-slow`, which CI runs
def test_an_update_copies_unchanged_documents_and_embeds_only_new_text(
    pg_url: str, tmp_path: Path
) -> None:
    corpus = _copy_corpus(tmp_path)
    first = ingest([corpus], pg_url)
    assert first.timings_s["copied_documents"] == 0
    assert first.timings_s["embedded_chunks"] == first.counts["chunks"]
    again = ingest([corpus], pg_url)
    assert not again.changed and again.build_id == first.build_id

    changed = sorted(corpus.glob("*.md"))[0]
    changed.write_text(
        changed.read_text("utf-8") + "\n\nA new closing paragraph about heron nesting sites.\n",
        "utf-8",
    )
    removed = sorted(corpus.glob("*.md"))[1]
    removed.unlink()
    second = ingest([corpus], pg_url)
    assert second.changed
    documents = second.counts["documents"]
    assert documents == first.counts["documents"] - 1
    assert second.timings_s["copied_documents"] == documents - 1
    # Only the changed document's chunks are new text; even among them, unchanged
    # parts keep their vectors.
    assert 1 <= second.timings_s["embedded_chunks"] <= 3

    # The updated build answers exactly as a fresh build of the new corpus does.
    fresh = tmp_path / "fresh"
    ingest([corpus], fresh)
    local, shared = Engine.open(fresh), Engine.open(pg_url)
    try:
        assert [c.chunk_id for c in local.chunks] == [c.chunk_id for c in shared.chunks]
        for question in ["heron nesting sites", "turbine setback from a dwelling"]:
            for retriever in ("bm25", "dense", "hybrid"):
                _same(
                    _ranking(local, question, retriever=retriever),
                    _ranking(shared, question, retriever=retriever),
                )
        assert shared.catalog.chunk(local.chunks[0].chunk_id) == local.chunks[0]
    finally:
        shared.store.close()
    with psycopg.connect(pg_url) as conn:
        builds = conn.execute("SELECT count(*) FROM groundqa_builds").fetchone()
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'groundqa_chunks_%'"
        ).fetchone()
    assert builds == tables == (2,)  # the current build and the one before it


def test_a_rebuild_with_other_settings_keeps_the_build_readers_have_open(
    pg_url: str, tmp_path: Path
) -> None:
    corpus = _copy_corpus(tmp_path)
    first = ingest([corpus], pg_url, dense=None)
    reader = Engine.open(pg_url)
    try:
        second = ingest([corpus], pg_url, dense=None, chunker=ChunkerSettings(max_chars=800))
        assert second.timings_s["copied_documents"] == 0  # nothing reusable across settings
        # The reader still has the first build open and can go on searching it.
        assert reader.search("turbine setback", depth=3, retriever="bm25")
        assert [b for b, _ in _build_state(pg_url)[1]] == [first.build_id, second.build_id]
    finally:
        reader.store.close()


def _build_state(url: str) -> tuple[str, list[tuple[str, bool]]]:
    with psycopg.connect(url) as conn:
        current = conn.execute("SELECT build_id FROM groundqa_current").fetchone()
        builds = conn.execute(
            "SELECT build_id, complete FROM groundqa_builds ORDER BY created_at"
        ).fetchall()
    return (current[0] if current else ""), builds


def test_a_killed_ingest_leaves_the_previous_build_served(pg_url: str, tmp_path: Path) -> None:
    corpus = _copy_corpus(tmp_path)
    first = ingest([corpus], pg_url, dense=None)
    # A bigger second corpus, so the kill lands while its chunks are being written.
    big = tmp_path / "big"
    big.mkdir()
    words = ["heron", "ferry", "levee", "culvert", "basin", "permit", "hedge", "orchard"]
    for i in range(600):
        sections = "\n\n".join(
            f"## Part {j}\n\n" + " ".join(words[(i * j + k) % len(words)] for k in range(60))
            for j in range(1, 5)
        )
        (big / f"doc{i:03d}.md").write_text(f"# Notice {i}\n\n{sections}\n", "utf-8")
    proc = subprocess.Popen(
        [*GROUNDQA, "ingest", str(big), "--store", pg_url, "--no-dense"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            _, builds = _build_state(pg_url)
            if any(not complete for _, complete in builds):
                break
            assert proc.poll() is None, "the ingest finished before it could be killed"
            time.sleep(0.02)
        else:
            pytest.fail("the second ingest never started writing")
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    current, builds = _build_state(pg_url)
    assert current == first.build_id
    assert any(not complete for _, complete in builds)  # the half build is there, unserved
    engine = Engine.open(pg_url)
    try:
        assert engine.manifest.build_id == first.build_id
        assert len(engine.chunks) == first.counts["chunks"]
        assert engine.search("turbine setback", depth=3, retriever="bm25")
    finally:
        engine.store.close()
    # The next ingest clears the leftover and completes.
    done = ingest([corpus], pg_url, dense=None, force=True)
    current, builds = _build_state(pg_url)
    assert current == done.build_id and all(complete for _, complete in builds)


def test_a_second_ingest_fails_while_one_writes(pg_url: str, tmp_path: Path) -> None:
    corpus = _copy_corpus(tmp_path)
    holder = PostgresTarget(pg_url)
    with holder.lock():
        started = time.monotonic()
        with pytest.raises(IndexLockedError, match="another ingest is writing"):
            ingest([corpus], pg_url, dense=None)
        assert time.monotonic() - started >= LOCK_GRACE_S  # it gave the writer its grace
        run = subprocess.run(
            [*GROUNDQA, "ingest", str(corpus), "--store", pg_url, "--no-dense"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 1 and "another ingest is writing" in one_error_line(run)
    assert ingest([corpus], pg_url, dense=None).changed  # the lock is free again


def test_an_ingest_right_after_a_killed_one_takes_the_lock(pg_url: str, tmp_path: Path) -> None:
    """A killed writer's server process lets go of the lock only when the statement it
    was running ends and it sees the connection closed: an ingest started at once waits
    for that rather than calling the lock taken."""
    corpus = _copy_corpus(tmp_path)
    script = (
        "import sys, psycopg\n"
        "conn = psycopg.connect(sys.argv[1], autocommit=True)\n"
        "conn.execute('SELECT pg_advisory_lock(%s)', (int(sys.argv[2]),))\n"
        "conn.pgconn.send_query(b'SELECT pg_sleep(1)')  # a statement still running\n"
        "print('held', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script, pg_url, str(LOCK_KEY)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        holder.kill()
        holder.wait(timeout=30)
        with PostgresTarget(pg_url).lock():  # at once, while the statement still runs
            pass
    assert ingest([corpus], pg_url, dense=None).changed


# ---------------------------------------------------------------- bad input


def test_a_server_that_is_down_is_one_line_naming_the_host() -> None:
    port = free_port()
    url = f"postgresql://groundqa:secret@127.0.0.1:{port}/corpus"
    for args in (["ask", "What is the setback?"], ["ingest", str(REGPACK), "--no-dense"]):
        run = subprocess.run(
            [*GROUNDQA, *args, "--store", url], capture_output=True, text=True, timeout=60
        )
        assert run.returncode == 1
        line = one_error_line(run)
        assert f"cannot connect to PostgreSQL at 127.0.0.1:{port}/corpus" in line
        assert "secret" not in run.stderr + run.stdout


def test_a_database_that_does_not_exist_or_holds_no_index(pg_admin_url: str, pg_url: str) -> None:
    missing = pg_database_url(pg_admin_url, "gq_no_such_database")
    with pytest.raises(
        StoreUnavailableError, match='database "gq_no_such_database" does not exist'
    ):
        Engine.open(missing)
    run = subprocess.run(
        [*GROUNDQA, "ask", "anything?", "--store", pg_url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert "no groundqa index in the database" in run.stderr and "ingest" in run.stderr


def test_a_database_without_pgvector_says_how_to_enable_it(pg_url_novector: str) -> None:
    run = subprocess.run(
        [*GROUNDQA, "ingest", str(REGPACK), "--store", pg_url_novector, "--no-dense"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1 and "CREATE EXTENSION vector;" in one_error_line(run)
    with psycopg.connect(pg_url_novector) as conn:
        assert conn.execute("SELECT to_regclass('groundqa_builds')").fetchone() == (None,)


def test_a_schema_from_a_newer_groundqa_is_refused_and_left_alone(
    pg_url: str, tmp_path: Path
) -> None:
    corpus = _copy_corpus(tmp_path)
    built = ingest([corpus], pg_url, dense=None)
    with psycopg.connect(pg_url) as conn:
        conn.execute("INSERT INTO groundqa_schema (version, groundqa_version) VALUES (99, '9.9')")
    with pytest.raises(IndexVersionError, match="never migrates a schema down"):
        Engine.open(pg_url)
    (corpus / "extra.md").write_text("# Extra\n\nA new document about ferries.\n", "utf-8")
    with pytest.raises(IndexVersionError, match="schema version 99"):
        ingest([corpus], pg_url, dense=None)
    with psycopg.connect(pg_url) as conn:
        versions = conn.execute("SELECT version FROM groundqa_schema ORDER BY version").fetchall()
        current = conn.execute("SELECT build_id FROM groundqa_current").fetchone()
    assert versions == [(1,), (2,), (99,)] and current == (built.build_id,)


def test_a_store_at_schema_version_1_is_read_and_migrated_by_the_next_ingest(
    pg_url: str, tmp_path: Path
) -> None:
    corpus = _copy_corpus(tmp_path)
    built = ingest([corpus], pg_url, dense=None)
    with psycopg.connect(pg_url) as conn:  # as the groundqa before the BM25 index left it
        conn.execute("ALTER TABLE groundqa_builds DROP COLUMN bm25_index")
        conn.execute("DELETE FROM groundqa_schema WHERE version = 2")
    old = Engine.open(pg_url)
    try:
        assert old.manifest.build_id == built.build_id
        assert old.store.lexical_engine["engine"] == "sql"
        assert old.search("turbine setback", 5, retriever="bm25")
    finally:
        old.store.close()
    (corpus / "extra.md").write_text("# Extra\n\nA new document about ferries.\n", "utf-8")
    ingest([corpus], pg_url, dense=None)
    with psycopg.connect(pg_url) as conn:
        versions = conn.execute("SELECT version FROM groundqa_schema ORDER BY version").fetchall()
    assert versions == [(1,), (2,)]
    new = Engine.open(pg_url)
    try:
        assert new.search("ferries", 5, retriever="bm25")[0].chunk.doc_id.endswith("extra.md")
    finally:
        new.store.close()


def test_a_database_that_goes_away_is_a_503_with_retry_after(
    pg_admin_url: str, pg_url: str, tmp_path: Path
) -> None:
    ingest([_copy_corpus(tmp_path)], pg_url, dense=None)
    engine = Engine.open(pg_url)
    name = pg_url.rsplit("/", 1)[1]
    question = {"question": "What is the turbine setback from a dwelling in Northmere?"}
    try:
        with live_server(engine, ServeSettings(cache="off")) as base:
            assert httpx.post(f"{base}/query", json=question, timeout=30).status_code == 200
            with psycopg.connect(pg_admin_url, autocommit=True) as admin:
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                    (name,),
                )
            try:
                reply = httpx.post(f"{base}/query", json=question, timeout=60)
                assert reply.status_code == 503 and reply.headers["retry-after"] == "5"
                error = reply.json()["error"]
                assert error["code"] == "store_unavailable" and "PostgreSQL at" in error["message"]
            finally:
                with psycopg.connect(pg_admin_url, autocommit=True) as admin:
                    admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            # The pool reconnects once the database is back.
            deadline = time.monotonic() + 30
            while httpx.post(f"{base}/query", json=question, timeout=60).status_code != 200:
                assert time.monotonic() < deadline
                time.sleep(0.2)
    finally:
        engine.store.close()


# ---------------------------------------------------------------- many workers


def test_serve_runs_several_workers_over_one_database(pg_url: str, tmp_path: Path) -> None:
    corpus = _copy_corpus(tmp_path)
    first = ingest([corpus], pg_url, dense=None)
    port = free_port()
    proc = subprocess.Popen(
        [*GROUNDQA, "serve", "--store", pg_url, "--port", str(port), "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for_health(base, alive=lambda: proc.poll() is None, seconds=60)
        workers: set[int] = set()
        deadline = time.monotonic() + 30
        while len(workers) < 2 and time.monotonic() < deadline:
            with httpx.Client() as client:  # a new connection each time
                workers.add(client.get(f"{base}/health").json()["worker"])
        assert len(workers) == 2 and proc.pid not in workers
        reply = httpx.post(
            f"{base}/query",
            json={"question": "What is the turbine setback from a dwelling in Northmere?"},
            timeout=60,
        )
        assert reply.status_code == 200 and reply.json()["citations"]

        # An ingest while the workers serve: each notices the new build, no request fails.
        def rebuild() -> str:
            (corpus / "extra.md").write_text(
                "# Ferries\n\n## Timetable\n\nThe ferry leaves at dawn.\n", "utf-8"
            )
            return ingest([corpus], pg_url, dense=None).build_id

        keep_asking_through(base, rebuild)
        # Every worker, not only the one that answered last, within its reload interval.
        streak, deadline = 0, time.monotonic() + 20
        while streak < 20 and time.monotonic() < deadline:
            with httpx.Client() as client:
                health = client.get(f"{base}/health").json()
            fresh = health["index"]["counts"]["documents"] == first.counts["documents"] + 1
            streak = streak + 1 if fresh else 0
        assert streak == 20
    finally:
        proc.terminate()
        stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "2 workers" in stdout and "Traceback" not in stderr
    for pid in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


# ---------------------------------------------------------------- pieces


def test_terms_the_postgresql_parser_would_split_are_searched_whole(
    pg_url: str, tmp_path: Path
) -> None:
    corpus = tmp_path / "odd"
    corpus.mkdir()
    (corpus / "a.md").write_text(
        "# Gauges\n\n## Readings\n\nThe gauge_id field names each naïve reading. "
        + "flood " * 300
        + "\n",
        "utf-8",
    )
    (corpus / "b.md").write_text(
        "# Levees\n\n## Checks\n\nA gauge reading of 3.5m at the levee means a flood watch. "
        "Tampering with the levee centre's gauge is an offence.\n",
        "utf-8",
    )
    ingest([corpus], tmp_path / "idx", dense=None)
    ingest([corpus], pg_url, dense=None)
    local, shared = Engine.open(tmp_path / "idx"), Engine.open(pg_url)
    try:
        questions = ["gauge_id", "naïve reading", "flood", "3.5m levee", "flood flood gauge"]
        for question in [*questions, "offense at the center"]:
            expected = _ranking(local, question, retriever="bm25")
            assert expected, question
            _same(expected, _ranking(shared, question, retriever="bm25"))
        # Both stores fold British spellings the same way, at build and at question time.
        assert shared.analyzer.name == local.analyzer.name == DEFAULT_ANALYZER
        assert shared.search("offense at the center", 1)[0].chunk.doc_id.endswith("b.md")
        assert shared.store.document_frequencies(["gauge_id", "flood", "nothing"]) == {
            "gauge_id": 1,
            "flood": 2,
            "nothing": 0,
        }
    finally:
        shared.store.close()


def test_urls_lose_their_password_in_messages() -> None:
    assert redact("postgresql://u:pw@h:5/db") == "postgresql://u:***@h:5/db"
    assert redact("postgresql://h/db") == "postgresql://h/db"
    assert json.dumps(redact("postgresql://u@h/db")) == '"postgresql://u@h/db"'


def test_chunk_page_starts_round_trip_and_stay_out_of_metadata(pg_url: str, tmp_path: Path) -> None:
    from tests.loaders.test_pdf_headings import _review

    folder = tmp_path / "docs"
    folder.mkdir()
    _review(folder)
    ingest([folder], tmp_path / "idx")
    ingest([folder], pg_url)
    local, shared = Engine.open(tmp_path / "idx"), Engine.open(pg_url)
    try:
        mine, theirs = local.store.chunks, shared.store.chunks
        assert [c.to_dict() for c in theirs] == [c.to_dict() for c in mine]
        crossing = [c for c in theirs if c.page_starts]
        assert crossing and all(len(c.page_starts) > 1 for c in crossing)
        assert all(not any(k.startswith("groundqa:") for k in c.metadata) for c in theirs)
        question = "How high were the nitrate levels at the sources?"
        here, there = local.ask(question), shared.ask(question)
        assert here.answer == there.answer and not here.refused
        assert [c.to_dict() for c in there.citations] == [c.to_dict() for c in here.citations]
        assert there.citations[0].page == 3  # the quoted sentence's page, not the chunk's
    finally:
        shared.store.close()
