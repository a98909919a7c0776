"""BM25 through pg_textsearch's index, on a real PostgreSQL 17 with the extension preloaded
(conftest `pg_bm25_admin_url`), against exhaustive BM25 in SQL and the index directory.

The index only proposes candidates and SQL scores them (see `index.postgres.bm25`), so the
indexed search must return exactly what the exhaustive one does: the same rows, the same
scores, for any query, k and filter. The rest covers how a build records its index, and
what happens when the server, the extension or the recorded settings do not fit it.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from groundqa.engine import Engine
from groundqa.errors import UsageError
from groundqa.ingestion import PG_BM25_ENV, ingest
from groundqa.inspection import inspect_index
from groundqa.text import Analyzer

psycopg = pytest.importorskip(
    "psycopg", reason="PostgreSQL tests need pip install -e '.[postgres]'"
)
from groundqa.index.postgres import PostgresStore, PostgresTarget, bm25  # noqa: E402
from groundqa.index.postgres.store import PROPOSE_MIN  # noqa: E402

ODD = ["gauge_id", "naïve", "3a", "1992", "co2e", "x1f", "straße", "km²", "é"]


def _corpus(root: Path, docs: int = 120, seed: int = 7) -> Path:
    """Markdown documents with Zipf-distributed words, shared and rare headings, odd terms."""
    rng = random.Random(seed)
    vocab = [f"w{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{chr(97 + i // 676)}" for i in range(900)]
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    heads = ["Permits", "Fees", "Setbacks", "Flood levels", "Trees", "Noise"]
    root.mkdir()
    for d in range(docs):
        lines = [f"# Document {d} {rng.choice(vocab[:50])}"]
        for s in range(rng.randint(2, 6)):
            lines.append(f"\n## {rng.choice(heads)} {rng.choice(vocab[:300])} {s}\n")
            for _ in range(rng.randint(1, 3)):
                words = rng.choices(vocab, weights, k=rng.randint(8, 90))
                if rng.random() < 0.3:
                    words.append(rng.choice(ODD))
                lines.append(" ".join(words) + ".\n")
        (root / f"doc{d:02d}.md").write_text("\n".join(lines), "utf-8")
    return root


@pytest.fixture(scope="module")
def built(pg_bm25_admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from psycopg import sql

    from tests.conftest import pg_database_url

    name = "gq_bm25_" + str(random.randrange(10**9))
    with psycopg.connect(pg_bm25_admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            url = pg_database_url(pg_bm25_admin_url, name)
            ingest([_corpus(tmp_path_factory.mktemp("bm25") / "corpus")], url, dense=None)
            yield url
        finally:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def _plan(store: PostgresStore, field: int, rows: list[int] | None) -> str:
    assert store._bm25 is not None
    statement, params = store._propose_sql(store._bm25, field, "wbaa wcaa", 20, rows)
    with psycopg.connect(store.url) as conn:
        lines = conn.execute(psycopg.sql.SQL("EXPLAIN ") + statement, params).fetchall()
    return "\n".join(line for (line,) in lines)


def test_indexed_search_equals_exhaustive_sql_for_any_query_k_and_filter(
    built: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed, exhaustive = PostgresStore.open(built), PostgresStore.open(built, bm25_index=False)
    try:
        assert indexed.lexical_engine["engine"] == "pg_textsearch"
        assert exhaustive.lexical_engine["engine"] == "sql"
        assert "turned off" in exhaustive.lexical_engine["note"]
        n = indexed.num_docs
        assert n > 300
        analyzer = Analyzer()
        words = sorted({t for c in indexed.chunks for t in analyzer.terms(c.text)})
        rounds: list[int] = []
        proposed: list[int] = []  # how many candidates the lists held, per query
        scored: list[int] = []  # how many of them were scored exactly
        real_propose, real_scored = indexed._propose, indexed._scored

        def counting(*args: Any, **kw: Any) -> Any:
            found = real_propose(*args, **kw)
            rounds[-1] += 1
            proposed[-1] += len(found)
            return found

        def scoring(terms: Any, k: int, rows: Any, **kw: Any) -> Any:
            scored[-1] += len(rows)
            return real_scored(terms, k, rows, **kw)

        monkeypatch.setattr(indexed, "_propose", counting)
        monkeypatch.setattr(indexed, "_scored", scoring)
        indexed.direct_rows = 0  # every filter through the index, however few rows it keeps
        # As shipped, lists are read PROPOSE_MIN deep at once; then from one candidate per
        # result, so that the lists must be read deeper, again and again.
        for propose_min in (PROPOSE_MIN, 1):
            indexed.propose_min = propose_min
            rng = random.Random(3)
            rounds.clear()
            proposed.clear()
            scored.clear()
            for i in range(160):
                terms = rng.choices(words[:40] if i % 3 == 0 else words, k=rng.randint(1, 6))
                if i % 4 == 0:
                    terms += terms[:1] * rng.randint(1, 3)  # a repeated term counts each time
                if i % 9 == 0:
                    terms += ["nosuchterm"]
                if i % 5 == 0:
                    terms += rng.sample([analyzer.terms(w)[0] for w in ODD if analyzer.terms(w)], 2)
                k = rng.choice([1, 3, 10, 40])
                mask = None
                if i % 3 == 1:
                    mask = np.random.default_rng(i).random(n) < rng.choice([0.5, 0.05, 0.005])
                rounds.append(0)
                proposed.append(0)
                scored.append(0)
                got = indexed.lexical_search(terms, k, mask)
                want = exhaustive.lexical_search(terms, k, mask)
                assert got == want, (
                    propose_min,
                    terms,
                    k,
                    None if mask is None else int(mask.sum()),
                )
                if mask is not None:
                    assert all(mask[r] for r, _ in got)
            if propose_min == 1:
                # (one list per field a round: two calls settle most queries at once)
                assert max(rounds) > 2 and Counter(rounds)[2] > len(rounds) // 3
            else:
                # Lists read at once, and scored a checkpoint at a time: many queries settle
                # before every candidate was scored.
                assert sum(s < p for s, p in zip(scored, proposed, strict=True)) > len(scored) // 4
        # Both indexes answer, filtered or not.
        index = indexed._bm25
        assert index is not None and index.head is not None
        for rows in (None, list(range(0, n, 7))):
            assert f"Index Scan using {index.body}" in _plan(indexed, 0, rows)
            assert f"Index Scan using {index.head}" in _plan(indexed, 1, rows)
    finally:
        indexed.close()
        exhaustive.close()


def test_a_filter_that_keeps_few_chunks_is_scored_over_them_directly(
    built: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed, exhaustive = PostgresStore.open(built), PostgresStore.open(built, bm25_index=False)
    try:
        proposed: list[int] = []
        real_propose = indexed._propose
        monkeypatch.setattr(
            indexed, "_propose", lambda *a, **kw: proposed.append(1) or real_propose(*a, **kw)
        )
        n = indexed.num_docs
        few = np.zeros(n, dtype=bool)
        few[::9] = True
        indexed.direct_rows = int(few.sum())
        terms = Analyzer().terms("wbaa wcaa wdaa")
        assert indexed.lexical_search(terms, 10, few) == exhaustive.lexical_search(terms, 10, few)
        assert proposed == []  # scored in SQL over the allowed rows
        assert indexed.lexical_search(terms, 10) == exhaustive.lexical_search(terms, 10)
        assert proposed  # unfiltered, through the index
        more = few.copy()
        more[1] = not few[1]
        proposed.clear()
        assert indexed.lexical_search(terms, 10, more) == exhaustive.lexical_search(terms, 10, more)
        assert proposed  # one chunk over the limit: through the index
    finally:
        indexed.close()
        exhaustive.close()


def test_terms_round_trip_through_the_simple_configuration(built: str) -> None:
    analyzer = Analyzer()
    terms = [t for w in [*ODD, "Permits", "flood levels", "ASN.1", "x"] for t in analyzer.terms(w)]
    counts = Counter(terms + terms[:3])
    with psycopg.connect(built) as conn:
        found = dict(
            conn.execute(
                "SELECT lexeme, cardinality(positions) FROM unnest(to_tsvector('simple', %s))",
                (bm25.bm25_text(counts),),
            ).fetchall()
        )
    expected = {bm25.encode_term(t): n for t, n in counts.items()} | {bm25.FILLER: 1}
    assert found == expected
    assert len({bm25.encode_term(t) for t in counts}) == len(counts)  # no two terms collide
    assert bm25.FILLER not in {bm25.encode_term(t) for t in counts}


def test_the_bound_holds_for_every_length() -> None:
    """Our per-term score over pg_textsearch's, with the filler word, never exceeds `scale`."""
    for k1, b in [(1.5, 0.75), (1.2, 0.75), (2.0, 1.0), (0.9, 0.0)]:
        for avgdl in [1.0, 3.0, 40.0, 300.0]:
            limit = bm25.scale(k1, b, avgdl)
            worst = 0.0
            for dl in range(0, 1000):
                for tf in range(1, min(dl, 30) + 1):
                    ours = tf / (tf + k1 * (1 - b + b * dl / avgdl))
                    theirs = (k1 + 1) * tf / (tf + k1 * (1 - b + b * (dl + 1) / (avgdl + 1)))
                    worst = max(worst, ours / theirs)
            assert worst <= limit + 1e-12
            if avgdl >= 40:  # and is tight at the lengths of real passages
                assert worst > 0.99 * limit


def test_a_build_records_its_index_and_inspect_and_health_say_so(built: str) -> None:
    report = inspect_index(built)
    assert report.lexical is not None
    assert report.lexical["engine"] == "pg_textsearch"
    assert report.lexical["version"].startswith("0.6")
    with psycopg.connect(built) as conn:
        record = conn.execute(
            "SELECT b.bm25_index FROM groundqa_builds b JOIN groundqa_current c USING (build_id)"
        ).fetchone()[0]
    assert record["encoding"] == bm25.ENCODING and record["head"] and record["body"]


def _rankings(engine: Engine, questions: list[str]) -> list[list[tuple[str, float]]]:
    return [
        [(h.chunk.chunk_id, h.score) for h in engine.search(q, depth=10, retriever="bm25")]
        for q in questions
    ]


def _same(a: list[list[tuple[str, float]]], b: list[list[tuple[str, float]]]) -> None:
    """The same chunks in the same order; scores equal up to float32 rounding."""
    assert [[c for c, _ in r] for r in a] == [[c for c, _ in r] for r in b]
    assert np.allclose([s for r in a for _, s in r], [s for r in b for _, s in r], rtol=1e-4)


QUESTIONS = [
    "What is the turbine setback from a dwelling in Northmere?",
    "How many penalty units is the fine for late NEER lodgement?",
    "tree protected trunk circumference",
    "native vegetation clearing Westhaven",
]


def test_a_server_that_lost_the_extension_is_searched_in_sql_and_says_why(
    pg_bm25_url: str, tmp_path: Path
) -> None:
    from tests.conftest import REGPACK

    ingest([REGPACK], tmp_path / "idx", dense=None)
    report = ingest([REGPACK], pg_bm25_url, dense=None)
    assert "BM25: pg_textsearch 0.6" in report.message
    local = Engine.open(tmp_path / "idx")
    expected = _rankings(local, QUESTIONS)
    with psycopg.connect(pg_bm25_url, autocommit=True) as conn:
        conn.execute("DROP EXTENSION pg_textsearch CASCADE")
    shared = Engine.open(pg_bm25_url)
    try:
        engine = shared.store.lexical_engine
        assert engine["engine"] == "sql"
        assert "no longer has pg_textsearch" in engine["note"]
        _same(_rankings(shared, QUESTIONS), expected)
    finally:
        shared.store.close()
    # The next ingest enables the extension again and indexes anew.
    again = ingest([REGPACK], pg_bm25_url, dense=None, force=True)
    assert "BM25: pg_textsearch 0.6" in again.message
    shared = Engine.open(pg_bm25_url)
    try:
        assert shared.store.lexical_engine["engine"] == "pg_textsearch"
        _same(_rankings(shared, QUESTIONS), expected)
    finally:
        shared.store.close()


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"k1": 1.2}, "k1=1.2"),
        ({"version": "0.5.0"}, "the build used pg_textsearch 0.5.0 and the server has 0.6"),
        ({"encoding": "other"}, "does not read; rebuild the index"),
        ({"body": "groundqa_no_such_index"}, "groundqa_no_such_index is missing"),
    ],
)
def test_a_record_that_does_not_fit_the_server_falls_back_to_sql(
    pg_bm25_url: str, tmp_path: Path, change: dict[str, Any], reason: str
) -> None:
    from tests.conftest import REGPACK

    ingest([REGPACK], tmp_path / "idx", dense=None)
    ingest([REGPACK], pg_bm25_url, dense=None)
    expected = _rankings(Engine.open(tmp_path / "idx"), QUESTIONS)
    with psycopg.connect(pg_bm25_url) as conn:
        conn.execute(
            "UPDATE groundqa_builds SET bm25_index = bm25_index || %s::jsonb",
            (psycopg.types.json.Jsonb(change),),
        )
    shared = Engine.open(pg_bm25_url)
    try:
        assert shared.store.lexical_engine["engine"] == "sql"
        assert reason in shared.store.lexical_engine["note"]
        _same(_rankings(shared, QUESTIONS), expected)
    finally:
        shared.store.close()


def test_updates_keep_the_index_text_whether_or_not_the_last_build_had_it(
    pg_bm25_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from tests.conftest import REGPACK

    corpus = tmp_path / "corpus"
    shutil.copytree(REGPACK, corpus)
    monkeypatch.setenv(PG_BM25_ENV, "off")
    first = ingest([corpus], pg_bm25_url, dense=None)
    assert "in SQL, no index (turned off)" in first.message
    shared = Engine.open(pg_bm25_url)
    assert shared.store.lexical_engine["engine"] == "sql"
    assert "has no pg_textsearch index" in shared.store.lexical_engine["note"]
    shared.store.close()
    monkeypatch.delenv(PG_BM25_ENV)
    for step in range(2):  # SQL-only build -> indexed build -> indexed build
        changed = sorted(corpus.glob("*.md"))[step]
        changed.write_text(changed.read_text("utf-8") + "\n\nHeron nesting sites are kept.\n")
        report = ingest([corpus], pg_bm25_url, dense=None)
        assert report.timings_s["copied_documents"] >= report.counts["documents"] - 1
        fresh = tmp_path / f"fresh{step}"
        ingest([corpus], fresh, dense=None)
        shared = Engine.open(pg_bm25_url)
        try:
            assert shared.store.lexical_engine["engine"] == "pg_textsearch"
            questions = [*QUESTIONS, "heron nesting sites"]
            _same(_rankings(shared, questions), _rankings(Engine.open(fresh), questions))
        finally:
            shared.store.close()


def test_a_server_without_the_extension_builds_in_sql_and_says_so(
    pg_url: str, tmp_path: Path
) -> None:
    from tests.conftest import REGPACK

    report = ingest([REGPACK], pg_url, dense=None)
    assert "BM25: in SQL, no index (the server has no pg_textsearch; install it" in report.message
    assert report.to_dict()["lexical"].startswith("in SQL")
    inspected = inspect_index(pg_url)
    assert inspected.lexical is not None and inspected.lexical["engine"] == "sql"
    assert "suits up to about 100k chunks" in inspected.lexical["note"]


def test_a_wrong_mode_is_one_clear_error() -> None:
    with pytest.raises(UsageError, match="must be one of auto, off, not 'sometimes'"):
        PostgresTarget("postgresql://127.0.0.1:1/x", bm25="sometimes")


def test_versions_groundqa_supports() -> None:
    assert bm25.supported("0.6.1") and bm25.supported("0.6.0")
    assert not bm25.supported("0.5.0") and not bm25.supported("1.0.0")
    assert bm25.encode_term("flood") == "flood"
    assert bm25.encode_term("gauge_id") == "x" + b"gauge_id".hex()


def test_a_role_that_may_not_create_the_extension_builds_in_sql_and_says_why(
    pg_bm25_admin_url: str, pg_bm25_url: str, tmp_path: Path
) -> None:
    from psycopg import sql

    from tests.conftest import REGPACK, pg_database_url

    role, password = f"gq_plain_{random.randrange(10**9)}", "secret-pw"
    name = pg_bm25_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_bm25_admin_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
    try:
        with psycopg.connect(pg_bm25_url, autocommit=True) as db:
            db.execute("CREATE EXTENSION vector")
            db.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(role)))
        url = pg_database_url(pg_bm25_admin_url, name, role, password)
        report = ingest([REGPACK], url, dense=None)
        assert "BM25: in SQL, no index (CREATE EXTENSION pg_textsearch failed (" in report.message
        assert "a superuser can run it" in report.message
        assert password not in report.message
        engine = Engine.open(url)
        try:
            assert engine.store.lexical_engine["engine"] == "sql"
            assert engine.search("turbine setback", 5, retriever="bm25")
        finally:
            engine.store.close()
    finally:
        with psycopg.connect(pg_bm25_url, autocommit=True) as db:
            db.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        with psycopg.connect(pg_bm25_admin_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
