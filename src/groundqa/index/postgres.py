"""The PostgreSQL store: one index in a database that many stateless workers share.

    groundqa_schema          the schema version (a newer one is refused, never migrated down)
    groundqa_builds          one row per build: its manifest, acronyms, corpus statistics and
                             whether it is complete
    groundqa_current         the one build that is served
    groundqa_chunks_<build>  the build's chunks: metadata as JSONB (GIN index) and the vector
                             in a pgvector column (HNSW index, inner product on unit vectors)
    groundqa_lexical_<build> each chunk's term counts per field as JSONB and, generated from
                             them, a tsvector (GIN index); narrow, so BM25 reads no text
    groundqa_terms_<build>   each term's document frequency, per field

The terms are the `Analyzer`'s: the tsvector is generated from the term counts with
`array_to_tsvector`, not by PostgreSQL's parser, which would split some of them, because
BM25 must score exactly the terms the index directory scores. A search is one SQL round
trip: the GIN index finds the chunks that hold a query term, and BM25 (Lucene idf, the
formula bm25s uses) is summed from their term counts; vectors are compared exactly, or
through HNSW; hybrid runs both in one statement, and plain reciprocal-rank fusion is
done in SQL too.

An ingest holds an advisory lock (a second one fails at once), writes a new build's
tables in batches, each batch its own transaction, and marks the build complete and
current in one last transaction. A killed ingest leaves an incomplete build that is
never served and that the next ingest removes. Documents whose content is unchanged
are copied inside the database from the previous build, and a chunk whose text was
embedded before keeps its vector, so an update re-embeds only what changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from groundqa._version import __version__
from groundqa.embed import Embedder, Matrix
from groundqa.errors import (
    IndexCorruptError,
    IndexLockedError,
    IndexMissingError,
    IndexVersionError,
    StoreUnavailableError,
    UsageError,
)
from groundqa.fusion import Fusion
from groundqa.index.base import Mask, Ranked, fuse
from groundqa.index.store import Manifest
from groundqa.models import Chunk
from groundqa.text import Analyzer

SCHEMA_VERSION = 1
# Chunks written per transaction by an ingest.
BATCH = 2000
# pg_advisory_lock key for writers: "groundqa" in ASCII, as a 63-bit integer.
LOCK_KEY = 0x67726F756E647161
POOL_SIZE = 8
# The most memory an ingest asks PostgreSQL for while it builds an HNSW index.
HNSW_BUILD_MEMORY_KB = 4 * 1024 * 1024
CONNECT_TIMEOUT_S = 5


def redact(url: str) -> str:
    """The URL without its password, for messages and `location`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


def _where(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or "localhost (unix socket)"
    port = parts.port or 5432
    return f"{host}:{port}/{parts.path.lstrip('/') or '(default database)'}"


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise UsageError(
            "a postgresql:// store needs psycopg and pgvector: pip install 'groundqa[postgres]'"
        ) from None
    return psycopg


def connect(url: str, *, autocommit: bool = False) -> Any:
    """One connection with the vector type registered, or a one-line error naming the host."""
    psycopg = _psycopg()
    try:
        conn = psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=autocommit)
    except psycopg.OperationalError as exc:
        reason = (str(exc).strip().splitlines() or ["no reason given"])[-1]
        reason = re.sub(r"^connection to server at .*? failed: ", "", reason)
        raise StoreUnavailableError(
            f"cannot connect to PostgreSQL at {_where(url)}: {reason}; check the --store URL "
            "and that the server is running"
        ) from None
    except psycopg.ProgrammingError as exc:
        raise UsageError(f"{redact(url)} is not a valid PostgreSQL URL: {exc}") from None
    return conn


def _register_vector(conn: Any) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)


def _table(prefix: str, build_id: str) -> str:
    return f"groundqa_{prefix}_{re.sub(r'[^a-z0-9]', '_', build_id.lower())}"


def _ident(name: str) -> Any:
    from psycopg import sql

    return sql.Identifier(name)


def _sql(text: str, **names: str) -> Any:
    from psycopg import sql

    return sql.SQL(text).format(**{k: sql.Identifier(v) for k, v in names.items()})


def term_counts(terms: Sequence[str]) -> str:
    """A field's terms as the JSON object of counts the store keeps."""
    return json.dumps(Counter(t for t in terms if t), ensure_ascii=False, separators=(",", ":"))


def _drop(tables: Sequence[str]) -> Any:
    from psycopg import sql

    return sql.SQL("DROP TABLE IF EXISTS {}").format(
        sql.SQL(", ").join(sql.Identifier(t) for t in tables)
    )


def _content_hash(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:32]


# ------------------------------------------------------------------ schema


def _schema_version(cur: Any) -> int | None:
    cur.execute("SELECT to_regclass('groundqa_schema') IS NOT NULL")
    if not cur.fetchone()[0]:
        return None
    cur.execute("SELECT max(version) FROM groundqa_schema")
    row = cur.fetchone()
    return None if row is None or row[0] is None else int(row[0])


def _refuse_newer(version: int | None, url: str) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise IndexVersionError(
            f"the groundqa store at {_where(url)} has schema version {version}, written by a "
            f"newer groundqa; this groundqa ({__version__}) knows up to version {SCHEMA_VERSION} "
            "and never migrates a schema down: upgrade groundqa"
        )


# Each entry turns schema version i into i + 1.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE groundqa_schema (
        version integer NOT NULL,
        groundqa_version text NOT NULL,
        migrated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE groundqa_builds (
        build_id text PRIMARY KEY,
        chunk_table text NOT NULL,
        lexical_table text NOT NULL,
        terms_table text NOT NULL,
        manifest jsonb NOT NULL,
        acronyms jsonb NOT NULL DEFAULT '{}',
        stats jsonb NOT NULL DEFAULT '{}',
        complete boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE groundqa_current (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        build_id text NOT NULL
    );
    CREATE FUNCTION groundqa_terms(counts jsonb) RETURNS text[]
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN ARRAY(SELECT jsonb_object_keys(counts));
    """,
]


def ensure_schema(conn: Any, url: str) -> None:
    """Create or migrate the schema (the caller holds the writer lock)."""
    with conn.cursor() as cur:
        version = _schema_version(cur)
        _refuse_newer(version, url)
        for target in range((version or 0) + 1, SCHEMA_VERSION + 1):
            cur.execute(MIGRATIONS[target - 1])
            cur.execute(
                "INSERT INTO groundqa_schema (version, groundqa_version) VALUES (%s, %s)",
                (target, __version__),
            )
    conn.commit()


def ensure_vector_extension(conn: Any, url: str) -> None:
    psycopg = _psycopg()
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
        if cur.fetchone():
            return
        try:
            cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.errors.InsufficientPrivilege:
            conn.rollback()
            raise StoreUnavailableError(
                f"the database at {_where(url)} does not have the pgvector extension enabled and "
                "this role may not enable it; run `CREATE EXTENSION vector;` in that database as "
                "a superuser or its owner"
            ) from None
        except (psycopg.errors.UndefinedFile, psycopg.errors.FeatureNotSupported):
            conn.rollback()
            raise StoreUnavailableError(
                f"the PostgreSQL server at {_where(url)} has no pgvector extension installed; "
                "install pgvector on the server (https://github.com/pgvector/pgvector), then "
                "run `CREATE EXTENSION vector;`"
            ) from None
    conn.commit()


# ------------------------------------------------------------------ reading


@dataclass(frozen=True)
class BuildInfo:
    build_id: str
    chunk_table: str
    lexical_table: str
    terms_table: str
    manifest: Manifest
    acronyms: dict[str, str]
    stats: dict[str, float]


def _read_build(cur: Any, url: str, build_id: str | None = None) -> BuildInfo:
    version = _schema_version(cur)
    _refuse_newer(version, url)
    where = _where(url)
    if version is None:
        raise IndexMissingError(
            f"no groundqa index in the database at {where}; build one with "
            "`groundqa ingest SOURCE... --store URL`"
        )
    if build_id is None:
        cur.execute("SELECT build_id FROM groundqa_current")
        row = cur.fetchone()
        if row is None:
            raise IndexMissingError(
                f"the database at {where} has no complete groundqa build (an ingest was "
                "stopped?); run `groundqa ingest SOURCE... --store URL`"
            )
        build_id = str(row[0])
    cur.execute(
        "SELECT chunk_table, lexical_table, terms_table, manifest, acronyms, stats, complete "
        "FROM groundqa_builds WHERE build_id = %s",
        (build_id,),
    )
    found = cur.fetchone()
    if found is None or not found[6]:
        raise IndexCorruptError(
            f"the database at {where} points to build {build_id}, which is missing or "
            "incomplete; rebuild with `groundqa ingest SOURCE... --store URL`"
        )
    return BuildInfo(
        build_id,
        str(found[0]),
        str(found[1]),
        str(found[2]),
        Manifest.from_dict(found[3]),
        {str(k): str(v) for k, v in found[4].items()},
        {str(k): float(v) for k, v in found[5].items()},
    )


class PostgresStore:
    """One complete build in PostgreSQL, opened for queries through a connection pool."""

    def __init__(self, url: str, info: BuildInfo, pool: Any, *, ann: str = "auto") -> None:
        self.url = url
        self.info = info
        self._pool = pool
        self.ann = ann
        self._chunks: list[Chunk] | None = None
        self._chunks_lock = threading.Lock()
        self._df: dict[str, int] = {}
        lexical = info.manifest.lexical
        self.k1 = float(lexical.get("k1", 1.5))
        self.b = float(lexical.get("b", 0.75))
        self._heading_weight = float(info.stats.get("heading_weight", 0.0))

    @classmethod
    def open(cls, url: str, *, ann: str = "auto", pool_size: int = POOL_SIZE) -> PostgresStore:
        """The build current now; `ann` is auto (HNSW past the build's `ann_threshold`),
        always, or never (exact search)."""
        if ann not in ("auto", "always", "never"):
            raise UsageError(f"ann must be auto, always or never, not {ann!r}")
        with connect(url) as conn, conn.cursor() as cur:
            info = _read_build(cur, url)
        from psycopg_pool import ConnectionPool

        pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            # No server-side prepared statements: after five runs PostgreSQL would switch
            # a prepared search to a generic plan, which cannot see the query's terms or
            # filter and costs about four times the custom one.
            kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "prepare_threshold": None},
            # A request waits this long for a connection, then gets a 503; a connection the
            # server closed (a restart, a failover) is found and replaced before it is used.
            timeout=CONNECT_TIMEOUT_S,
            check=ConnectionPool.check_connection,
            configure=_register_vector if info.manifest.dense else None,
            open=True,
            name="groundqa",
        )
        return cls(url, info, pool, ann=ann)

    # -- Store protocol

    @property
    def location(self) -> str:
        return redact(self.url)

    @property
    def manifest(self) -> Manifest:
        return self.info.manifest

    @property
    def acronyms(self) -> dict[str, str]:
        return self.info.acronyms

    @property
    def has_vectors(self) -> bool:
        return bool(self.info.manifest.dense)

    @property
    def heading_weight(self) -> float:
        return self._heading_weight

    @property
    def num_docs(self) -> int:
        return int(self.info.manifest.counts.get("chunks", 0))

    @property
    def chunks(self) -> list[Chunk]:
        """Every chunk, read from the database on first use and kept."""
        if self._chunks is None:
            with self._chunks_lock:
                if self._chunks is None:
                    self._chunks = self._read_chunks()
        return self._chunks

    def _read_chunks(self) -> list[Chunk]:
        query = _sql(
            "SELECT row, chunk_id, doc_id, section_id, title, section_path, text, source, page, "
            "part, parts, metadata FROM {t} ORDER BY row",
            t=self.info.chunk_table,
        )
        with self._cursor() as cur:
            cur.execute(query)
            rows = cur.fetchall()
        chunks = [
            Chunk(
                chunk_id=r[1],
                doc_id=r[2],
                section_id=r[3],
                title=r[4],
                section_path=tuple(r[5]),
                text=r[6],
                source=r[7],
                page=r[8],
                part=r[9],
                parts=r[10],
                metadata=dict(r[11]),
            )
            for r in rows
        ]
        if len(chunks) != self.num_docs or any(r[0] != i for i, r in enumerate(rows)):
            raise IndexCorruptError(
                f"{self.location}: build {self.info.build_id} holds {len(chunks)} chunks, its "
                f"manifest {self.num_docs}; rebuild with `groundqa ingest ... --store URL`"
            )
        return chunks

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(terms))
        missing = [t for t in wanted if t not in self._df]
        if missing:
            with self._cursor() as cur:
                cur.execute(
                    _sql(
                        "SELECT term, df FROM {t} WHERE field = 'b' AND term = ANY(%s)",
                        t=self.info.terms_table,
                    ),
                    (missing,),
                )
                found = dict(cur.fetchall())
            if len(self._df) > 200_000:
                self._df.clear()
            self._df.update({t: int(found.get(t, 0)) for t in missing})
        return {t: self._df[t] for t in wanted}

    def lexical_search(self, terms: Sequence[str], k: int, allowed: Mask = None) -> Ranked:
        if k <= 0 or not any(terms):
            return []
        query, params = self._lexical_sql(terms, k, allowed)
        with self._cursor() as cur:
            cur.execute(query, params)
            return [(int(r), float(s)) for r, s in cur.fetchall()]

    def vector_search(
        self, query: Matrix, k: int, allowed: Mask = None, *, exact: bool = False
    ) -> Ranked:
        if k <= 0:
            return []
        sql_text, params = self._vector_sql(query, k, allowed)
        found = self._fetch_with_vectors(sql_text, params, k, exact or allowed is not None)
        return [(int(r), float(s)) for r, s in found]

    def hybrid_search(
        self, terms: Sequence[str], query: Matrix, k: int, allowed: Mask, fusion: Fusion
    ) -> Ranked:
        """Both rankings in one statement; plain reciprocal-rank fusion is done in SQL."""
        if k <= 0:
            return []
        if not any(terms):
            return fuse(fusion, [], self.vector_search(query, k, allowed))
        from psycopg import sql

        lex, lex_params = self._lexical_sql(terms, k, allowed)
        vec, vec_params = self._vector_sql(query, k, allowed)
        params = {**lex_params, **vec_params}
        if fusion.method == "rrf":
            weights = fusion.weights or (1.0, 1.0)
            params.update(rrf_k=fusion.k, w_lex=weights[0], w_vec=weights[1], k=k)
            statement = sql.SQL(
                "WITH lex AS ({lex}), vec AS ({vec}), ranked AS ("
                " SELECT row, %(w_lex)s::float8 / (%(rrf_k)s + rank) AS s, rank FROM"
                "  (SELECT row, row_number() OVER (ORDER BY score DESC, row) AS rank FROM lex) l"
                " UNION ALL"
                " SELECT row, %(w_vec)s::float8 / (%(rrf_k)s + rank), rank FROM"
                "  (SELECT row, row_number() OVER (ORDER BY score DESC, row) AS rank FROM vec) v)"
                " SELECT row, sum(s) AS fused FROM ranked GROUP BY row"
                " ORDER BY fused DESC, min(rank), row::text"
            ).format(lex=lex, vec=vec)
            found = self._fetch_with_vectors(statement, params, k, allowed is not None)
            return [(int(r), float(s)) for r, s in found]
        statement = sql.SQL(
            "WITH lex AS ({lex}), vec AS ({vec}) "
            "SELECT 0, row, score FROM lex UNION ALL SELECT 1, row, score FROM vec"
        ).format(lex=lex, vec=vec)
        found = self._fetch_with_vectors(statement, params, k, allowed is not None)
        lexical = sorted(((int(r), float(s)) for m, r, s in found if m == 0), key=_best_first)
        dense = sorted(((int(r), float(s)) for m, r, s in found if m == 1), key=_best_first)
        return fuse(fusion, lexical, dense)

    def vectors_of(self, rows: Sequence[int]) -> Matrix:
        if not self.has_vectors:
            raise UsageError(f"{self.location} has no vectors; rebuild it without --no-dense")
        with self._cursor() as cur:
            cur.execute(
                _sql(
                    "SELECT row, embedding::real[] FROM {t} WHERE row = ANY(%s)",
                    t=self.info.chunk_table,
                ),
                (list(rows),),
            )
            found = {int(r): np.asarray(v, dtype=np.float32) for r, v in cur.fetchall()}
        return np.stack([found[r] for r in rows]) if rows else np.zeros((0, 0), np.float32)

    def current_build_id(self) -> str:
        with self._cursor() as cur:
            cur.execute("SELECT build_id FROM groundqa_current")
            row = cur.fetchone()
        return "" if row is None else str(row[0])

    def reopen(self) -> PostgresStore:
        return PostgresStore.open(self.url, ann=self.ann, pool_size=self._pool.max_size)

    def close(self) -> None:
        self._pool.close()

    # -- SQL

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[Any]:
        psycopg = _psycopg()
        try:
            with self._pool.connection() as conn, conn.cursor() as cur:
                yield cur
        except psycopg.errors.UndefinedTable:
            raise IndexMissingError(
                f"build {self.info.build_id} was removed from {self.location} by newer builds; "
                "open the index again"
            ) from None
        except psycopg.OperationalError as exc:
            raise StoreUnavailableError(
                f"lost PostgreSQL at {_where(self.url)}: {str(exc).strip().splitlines()[-1]}"
            ) from None

    def _lexical_sql(
        self, terms: Sequence[str], k: int, allowed: Mask
    ) -> tuple[Any, dict[str, Any]]:
        from psycopg import sql

        counts = Counter(t for t in terms if t)
        params: dict[str, Any] = {
            "terms": list(counts),
            "qtf": [float(n) for n in counts.values()],
            "tsq": " | ".join("'" + t.replace("'", "''") + "'" for t in counts),
            "n": float(self.num_docs),
            "k1": self.k1,
            "b": self.b,
            "avg_b": max(self.info.stats.get("avgdl_body", 1.0), 1e-9),
            "avg_h": max(self.info.stats.get("avgdl_head", 1.0), 1e-9),
            "hw": self._heading_weight,
            "lex_k": k,
        }
        filter_sql = sql.SQL("")
        if allowed is not None:
            params["lex_allowed"] = np.flatnonzero(allowed).astype(np.int32).tolist()
            filter_sql = sql.SQL(" AND c.row = ANY(%(lex_allowed)s::int4[])")
        heading = sql.SQL("")
        if self._heading_weight > 0:
            heading = sql.SQL(
                " + %(hw)s * q.w_h * f.tf_h"
                " / (f.tf_h + %(k1)s * (1 - %(b)s + %(b)s * c.head_len / %(avg_h)s))"
            )
        # The sum is rounded to float32, the precision bm25s keeps, so chunks that score
        # the same tie the same way (by row) in both stores.
        statement = sql.SQL(
            "WITH q AS ("
            " SELECT t.term, t.qtf * ln(1 + (%(n)s - b.df + 0.5) / (b.df + 0.5)) AS w_b,"
            "  t.qtf * coalesce(ln(1 + (%(n)s - h.df + 0.5) / (h.df + 0.5)), 0) AS w_h"
            " FROM unnest(%(terms)s::text[], %(qtf)s::float8[]) AS t(term, qtf)"
            " JOIN {terms} b ON b.field = 'b' AND b.term = t.term"
            " LEFT JOIN {terms} h ON h.field = 'h' AND h.term = t.term)"
            " SELECT c.row, sum("
            "  q.w_b * f.tf_b / (f.tf_b + %(k1)s * (1 - %(b)s + %(b)s * c.body_len / %(avg_b)s))"
            "  {heading})::real AS score"
            " FROM {chunks} c CROSS JOIN q CROSS JOIN LATERAL (SELECT"
            "  coalesce((c.body_tf ->> q.term)::float8, 0) AS tf_b,"
            "  coalesce((c.head_tf ->> q.term)::float8, 0) AS tf_h) f"
            " WHERE c.body @@ %(tsq)s::tsquery{filter}"
            " GROUP BY c.row HAVING sum(f.tf_b) > 0"
            " ORDER BY score DESC, c.row LIMIT %(lex_k)s"
        ).format(
            terms=_ident(self.info.terms_table),
            chunks=_ident(self.info.lexical_table),
            filter=filter_sql,
            heading=heading,
        )
        return statement, params

    def _vector_sql(self, query: Matrix, k: int, allowed: Mask) -> tuple[Any, dict[str, Any]]:
        from psycopg import sql

        if not self.has_vectors:
            raise UsageError(f"{self.location} has no vectors; rebuild it without --no-dense")
        from pgvector import Vector

        params: dict[str, Any] = {
            "qvec": Vector(np.asarray(query, np.float32).reshape(-1)),
            "vec_k": k,
        }
        filter_sql = sql.SQL("")
        if allowed is not None:
            params["vec_allowed"] = np.flatnonzero(allowed).astype(np.int32).tolist()
            filter_sql = sql.SQL(" WHERE row = ANY(%(vec_allowed)s::int4[])")
        statement = sql.SQL(
            "SELECT row, -(embedding <#> %(qvec)s) AS score FROM {chunks}{filter}"
            " ORDER BY embedding <#> %(qvec)s, row LIMIT %(vec_k)s"
        ).format(chunks=_ident(self.info.chunk_table), filter=filter_sql)
        return statement, params

    def _uses_ann(self, exact: bool) -> bool:
        if exact or self.ann == "never":
            return False
        if self.ann == "always":
            return True
        threshold = int(self.info.manifest.dense.get("ann_threshold", 100_000))
        return self.num_docs >= threshold

    def _fetch_with_vectors(
        self, statement: Any, params: dict[str, Any], k: int, exact: bool
    ) -> list[Any]:
        """Run a statement that searches vectors, exactly or through HNSW (`_vector_settings`
        for its transaction), and return its rows."""
        with self._cursor() as cur:
            self._vector_settings(cur, k, exact)
            cur.execute(statement, params)
            return list(cur.fetchall())

    def _vector_settings(self, cur: Any, k: int, exact: bool) -> None:
        """Exact search scans every (allowed) row; approximate walks the HNSW graph."""
        if self._uses_ann(exact):
            ef = max(int(self.info.manifest.dense.get("ef_search", 128)), k)
            cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(ef, 1000)),))
            cur.execute("SELECT set_config('enable_seqscan', 'off', true)")
        else:
            cur.execute("SELECT set_config('enable_indexscan', 'off', true)")


def _best_first(item: tuple[int, float]) -> tuple[float, int]:
    return (-item[1], item[0])


# ------------------------------------------------------------------ writing


def _columns(vectors: bool) -> list[str]:
    """The chunk table's columns, in order."""
    return [
        "row", "chunk_id", "doc_id", "doc_hash", "chunk_hash", "section_id", "title",
        "section_path", "text", "source", "page", "part", "parts", "metadata",
    ] + (["embedding"] if vectors else [])  # fmt: skip


@dataclass
class WriteStats:
    """What an ingest into PostgreSQL did, for its report."""

    copied_documents: int = 0
    written_chunks: int = 0
    embedded_chunks: int = 0
    reused_vectors: int = 0
    timings_s: dict[str, float] = field(default_factory=dict)


class PostgresTarget:
    """Writes builds into a database; `lock` first, then `current_manifest` and `write`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: Any = None

    @property
    def location(self) -> str:
        return redact(self.url)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """The writer lock: a second ingest into the same database fails at once."""
        conn = connect(self.url)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,))
                if not cur.fetchone()[0]:
                    raise IndexLockedError(
                        f"another ingest is writing the groundqa store at {_where(self.url)}; "
                        "wait for it to finish and try again"
                    )
            conn.commit()
            ensure_vector_extension(conn, self.url)
            ensure_schema(conn, self.url)
            _register_vector(conn)
            self._conn = conn
            self._drop_incomplete()
            yield
        finally:
            self._conn = None
            conn.close()  # closing the session releases the advisory lock

    def current_manifest(self) -> Manifest | None:
        info = self._current()
        return None if info is None else info.manifest

    def _current(self) -> BuildInfo | None:
        """The build served now, if there is a complete one."""
        with self._conn.cursor() as cur:
            try:
                info = _read_build(cur, self.url)
            except (IndexMissingError, IndexCorruptError):
                self._conn.rollback()
                return None
        self._conn.commit()
        return info

    def _drop_incomplete(self) -> None:
        """Remove what killed ingests left: builds never marked complete."""
        with self._conn.cursor() as cur:
            cur.execute(
                "SELECT build_id, chunk_table, lexical_table, terms_table FROM groundqa_builds "
                "WHERE NOT complete"
            )
            for build_id, *tables in cur.fetchall():
                cur.execute(_drop(tables))
                cur.execute("DELETE FROM groundqa_builds WHERE build_id = %s", (build_id,))
        self._conn.commit()

    def write(
        self,
        chunks: Sequence[Chunk],
        doc_hashes: dict[str, str],
        *,
        analyzer: Analyzer,
        with_path: bool,
        heading_weight: float,
        embedder: Embedder | None,
        make_manifest: Callable[[str, dict[str, Any]], Manifest],
        dense_entry: Callable[[int], dict[str, Any]],
        acronyms: dict[str, str],
        progress: Callable[[int], None] = lambda n: None,
    ) -> tuple[Manifest, WriteStats]:
        """Write a build, copying unchanged documents from the previous one, and make it
        current. `make_manifest(build_id, dense)` gives the build's manifest."""
        conn = self._conn
        stats = WriteStats()
        started = time.perf_counter()
        manifest = make_manifest("", {})
        build_id = manifest.build_id
        chunk_table, terms_table = _table("chunks", build_id), _table("terms", build_id)
        lexical_table = _table("lexical", build_id)
        served = self._current()
        previous = self._reusable(served, manifest, embedder)
        dim = int(embedder.embed(["dimension probe"]).shape[1]) if embedder else 0
        with conn.cursor() as cur:
            cur.execute(
                "INSERT INTO groundqa_builds (build_id, chunk_table, lexical_table, terms_table, "
                "manifest) VALUES (%s, %s, %s, %s, %s)",
                (build_id, chunk_table, lexical_table, terms_table, json.dumps(manifest.to_dict())),
            )
            vector_col = f", embedding vector({dim})" if embedder else ""
            cur.execute(
                _sql(
                    "CREATE TABLE {t} (row integer PRIMARY KEY, chunk_id text NOT NULL, "
                    "doc_id text NOT NULL, doc_hash text NOT NULL, chunk_hash text NOT NULL, "
                    "section_id text NOT NULL, title text NOT NULL, section_path text[] NOT NULL, "
                    "text text NOT NULL, source text NOT NULL, page integer, part integer NOT NULL,"
                    " parts integer NOT NULL, metadata jsonb NOT NULL" + vector_col + ")",
                    t=chunk_table,
                )
            )
            # Term counts stay in the row uncompressed (up to a page), so BM25 reads each
            # count by key without decompressing the object once per query term.
            cur.execute(
                _sql(
                    "CREATE TABLE {t} (row integer PRIMARY KEY, body_len integer NOT NULL, "
                    "head_len integer NOT NULL, body_tf jsonb NOT NULL, head_tf jsonb NOT NULL, "
                    "body tsvector GENERATED ALWAYS AS "
                    "(array_to_tsvector(groundqa_terms(body_tf))) STORED, "
                    "head tsvector GENERATED ALWAYS AS "
                    "(array_to_tsvector(groundqa_terms(head_tf))) STORED) "
                    "WITH (toast_tuple_target = 8160)",
                    t=lexical_table,
                )
            )
            if embedder:
                # Kept in the row, never compressed or moved out of line: an exact search
                # reads every vector, and a TOASTed one costs a lookup each.
                cur.execute(
                    _sql("ALTER TABLE {t} ALTER COLUMN embedding SET STORAGE PLAIN", t=chunk_table)
                )
            cur.execute(
                _sql(
                    "CREATE TABLE {t} (field text NOT NULL, term text NOT NULL, df integer "
                    "NOT NULL, PRIMARY KEY (field, term))",
                    t=terms_table,
                )
            )
        conn.commit()

        # Unchanged documents: copied inside the database, vectors and terms included.
        rows = {c.chunk_id: i for i, c in enumerate(chunks)}
        copied: set[str] = set()
        if previous is not None:
            t = time.perf_counter()
            copied = self._copy_unchanged(
                previous, chunk_table, lexical_table, chunks, doc_hashes, rows
            )
            stats.copied_documents = len(copied)
            stats.timings_s["copy"] = time.perf_counter() - t
        fresh = [i for i, c in enumerate(chunks) if c.doc_id not in copied]
        progress(len(chunks) - len(fresh))

        # New or changed documents: analysed here, vectors reused by content hash, in batches.
        t = time.perf_counter()
        columns = _columns(embedder is not None)
        embed_s = 0.0
        for start in range(0, len(fresh), BATCH):
            batch = [chunks[i] for i in fresh[start : start + BATCH]]
            texts = [c.index_text(with_path) for c in batch]
            hashes = [_content_hash(text) for text in texts]
            vectors: list[Any] = [None] * len(batch)
            if embedder is not None:
                t_embed = time.perf_counter()
                vectors = self._vectors_for(previous, texts, hashes, embedder, stats)
                embed_s += time.perf_counter() - t_embed
            copy_sql = _sql(
                "COPY {t} (" + ", ".join(f'"{c}"' for c in columns) + ") FROM STDIN",
                t=chunk_table,
            )
            lexical_rows = []
            with conn.cursor() as cur, cur.copy(copy_sql) as copy:
                for chunk, text, h, vector in zip(batch, texts, hashes, vectors, strict=True):
                    body = analyzer.terms(text)
                    head = analyzer.terms(chunk.breadcrumb if with_path else chunk.title)
                    record = [
                        rows[chunk.chunk_id],
                        chunk.chunk_id,
                        chunk.doc_id,
                        doc_hashes.get(chunk.doc_id, ""),
                        h,
                        chunk.section_id,
                        chunk.title,
                        list(chunk.section_path),
                        chunk.text,
                        chunk.source,
                        chunk.page,
                        chunk.part,
                        chunk.parts,
                        json.dumps(chunk.metadata, ensure_ascii=False, default=str),
                    ]
                    if embedder is not None:
                        record.append(vector)
                    copy.write_row(record)
                    lexical_rows.append(
                        (
                            rows[chunk.chunk_id],
                            len(body),
                            len(head),
                            term_counts(body),
                            term_counts(head),
                        )
                    )
            lexical_copy = _sql(
                "COPY {t} (row, body_len, head_len, body_tf, head_tf) FROM STDIN", t=lexical_table
            )
            with conn.cursor() as cur, cur.copy(lexical_copy) as copy:
                for lexical_row in lexical_rows:
                    copy.write_row(lexical_row)
            conn.commit()
            stats.written_chunks += len(batch)
            progress(len(batch))
        stats.timings_s["write"] = time.perf_counter() - t - embed_s
        stats.timings_s["embed"] = embed_s

        # Indexes and corpus statistics, then the build becomes current in one transaction.
        t = time.perf_counter()
        with conn.cursor() as cur:
            cur.execute(_sql("CREATE INDEX ON {t} USING gin (body)", t=lexical_table))
            for sql_text in (
                "CREATE INDEX ON {t} USING gin (metadata jsonb_path_ops)",
                "CREATE INDEX ON {t} (doc_id)",
                "CREATE INDEX ON {t} (chunk_hash)",
            ):
                cur.execute(_sql(sql_text, t=chunk_table))
        conn.commit()
        stats.timings_s["index_lexical"] = time.perf_counter() - t
        if embedder is not None:
            t = time.perf_counter()
            dense = dense_entry(dim)
            with conn.cursor() as cur:
                # The HNSW graph is built in memory when it fits in maintenance_work_mem, and
                # many times slower on disk when it does not: this session asks for what the
                # graph needs (up to HNSW_BUILD_MEMORY_KB), never less than the server's setting.
                m = int(dense.get("hnsw_m", 16))
                need_kb = len(chunks) * (dim * 4 + m * 2 * 8 + 128) * 13 // 10 // 1024 + 65536
                cur.execute(
                    "SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'"
                )
                memory_kb = max(int(cur.fetchone()[0]), min(need_kb, HNSW_BUILD_MEMORY_KB))
                cur.execute(
                    "SELECT set_config('maintenance_work_mem', %s, false), "
                    "set_config('max_parallel_maintenance_workers', '1', false)",
                    (f"{memory_kb}kB",),
                )
                cur.execute(
                    _sql(
                        "CREATE INDEX ON {t} USING hnsw (embedding vector_ip_ops) "
                        f"WITH (m = {int(dense.get('hnsw_m', 16))}, "
                        f"ef_construction = {int(dense.get('ef_construction', 64))})",
                        t=chunk_table,
                    )
                )
            conn.commit()
            stats.timings_s["index_vectors"] = time.perf_counter() - t
        else:
            dense = {}
        with conn.cursor() as cur:
            for table in (chunk_table, lexical_table):  # statistics for the planner, now
                cur.execute(_sql("ANALYZE {t}", t=table))
            cur.execute(
                _sql(
                    "INSERT INTO {terms} SELECT 'b', word, ndoc FROM ts_stat('SELECT body FROM "
                    + f'"{lexical_table}"'
                    + "') UNION ALL SELECT 'h', word, ndoc FROM ts_stat('SELECT head FROM "
                    + f'"{lexical_table}"'
                    + "')",
                    terms=terms_table,
                )
            )
            cur.execute(_sql("ANALYZE {t}", t=terms_table))
            cur.execute(
                _sql(
                    "SELECT count(*), coalesce(avg(body_len), 0), coalesce(avg(head_len), 0), "
                    "coalesce(max(head_len), 0) FROM {t}",
                    t=lexical_table,
                )
            )
            n, avg_body, avg_head, max_head = cur.fetchone()
            if n != len(chunks):
                raise IndexCorruptError(
                    f"build {build_id} holds {n} chunks where {len(chunks)} were written; "
                    "run the ingest again"
                )
            store_stats = {
                "avgdl_body": float(avg_body),
                "avgdl_head": float(avg_head),
                # bm25s builds no breadcrumb index when no chunk has breadcrumb terms.
                "heading_weight": heading_weight if max_head > 0 else 0.0,
            }
            stats.timings_s["total"] = time.perf_counter() - started
            final = make_manifest(build_id, dense)
            cur.execute(
                "UPDATE groundqa_builds SET manifest = %s, acronyms = %s, stats = %s, "
                "complete = true WHERE build_id = %s",
                (
                    json.dumps(final.to_dict()),
                    json.dumps(acronyms, ensure_ascii=False),
                    json.dumps(store_stats),
                    build_id,
                ),
            )
            cur.execute(
                "INSERT INTO groundqa_current (one, build_id) VALUES (true, %s) "
                "ON CONFLICT (one) DO UPDATE SET build_id = excluded.build_id",
                (build_id,),
            )
        conn.commit()
        # The build served until now stays for readers that still have it open.
        self._prune(keep={build_id, served.build_id if served else build_id})
        return final, stats

    def _reusable(
        self, info: BuildInfo | None, manifest: Manifest, embedder: Embedder | None
    ) -> BuildInfo | None:
        """The current build, if its chunks can be reused by this one (same settings)."""
        if info is None:
            return None
        old = info.manifest
        same = (
            old.chunker == manifest.chunker
            and old.lexical == manifest.lexical
            and old.analyzer == manifest.analyzer
        )
        if not same:
            return None
        old_model = old.dense.get("model_id") if old.dense else None
        new_model = embedder.model_id if embedder else None
        return info if old_model == new_model else None

    def _copy_unchanged(
        self,
        previous: BuildInfo,
        chunk_table: str,
        lexical_table: str,
        chunks: Sequence[Chunk],
        doc_hashes: dict[str, str],
        rows: dict[str, int],
    ) -> set[str]:
        """Copy the chunks of documents whose content hash is unchanged, with new row numbers."""
        with self._conn.cursor() as cur:
            cur.execute(_sql("SELECT DISTINCT doc_id, doc_hash FROM {t}", t=previous.chunk_table))
            unchanged = {d for d, h in cur.fetchall() if doc_hashes.get(d) == h}
            moving = [c for c in chunks if c.doc_id in unchanged]
            if not moving:
                return set()
            columns = _columns(bool(previous.manifest.dense))
            mapping = ([c.chunk_id for c in moving], [rows[c.chunk_id] for c in moving])
            cur.execute(
                _sql(
                    "CREATE TEMP TABLE groundqa_moves ON COMMIT DROP AS SELECT p.row AS old_row, "
                    "m.new_row FROM {old} p JOIN unnest(%s::text[], %s::int4[]) "
                    "AS m(chunk_id, new_row) USING (chunk_id)",
                    old=previous.chunk_table,
                ),
                mapping,
            )
            if cur.rowcount != len(moving):
                raise IndexCorruptError(
                    f"the previous build {previous.build_id} lacks chunks of unchanged "
                    "documents; rebuild with --force"
                )
            cur.execute(
                _sql(
                    "INSERT INTO {new} ("
                    + ", ".join(f'"{c}"' for c in columns)
                    + ") SELECT m.new_row, "
                    + ", ".join(f'p."{c}"' for c in columns[1:])
                    + " FROM {old} p JOIN groundqa_moves m ON m.old_row = p.row",
                    new=chunk_table,
                    old=previous.chunk_table,
                )
            )
            cur.execute(
                _sql(
                    "INSERT INTO {new} (row, body_len, head_len, body_tf, head_tf) "
                    "SELECT m.new_row, l.body_len, l.head_len, l.body_tf, l.head_tf "
                    "FROM {old} l JOIN groundqa_moves m ON m.old_row = l.row",
                    new=lexical_table,
                    old=previous.lexical_table,
                )
            )
        self._conn.commit()
        return unchanged

    def _vectors_for(
        self,
        previous: BuildInfo | None,
        texts: list[str],
        hashes: list[str],
        embedder: Embedder,
        stats: WriteStats,
    ) -> list[Any]:
        known: dict[str, Any] = {}
        if previous is not None and previous.manifest.dense:
            with self._conn.cursor() as cur:
                cur.execute(
                    _sql(
                        "SELECT DISTINCT ON (chunk_hash) chunk_hash, embedding FROM {t} "
                        "WHERE chunk_hash = ANY(%s)",
                        t=previous.chunk_table,
                    ),
                    (hashes,),
                )
                known = dict(cur.fetchall())
            self._conn.commit()
        todo = [i for i, h in enumerate(hashes) if h not in known]
        out: list[Any] = [known.get(h) for h in hashes]
        if todo:
            embedded = embedder.embed([texts[i] for i in todo])
            for i, vector in zip(todo, embedded, strict=True):
                out[i] = np.asarray(vector, dtype=np.float32)
        stats.embedded_chunks += len(todo)
        stats.reused_vectors += len(hashes) - len(todo)
        return out

    def _prune(self, keep: set[str]) -> None:
        """Drop builds other than the current one and the one before (open readers finish)."""
        with self._conn.cursor() as cur:
            cur.execute(
                "SELECT build_id, chunk_table, lexical_table, terms_table FROM groundqa_builds "
                "WHERE NOT (build_id = ANY(%s))",
                (list(keep),),
            )
            for build_id, *tables in cur.fetchall():
                cur.execute(_drop(tables))
                cur.execute("DELETE FROM groundqa_builds WHERE build_id = %s", (build_id,))
        self._conn.commit()


def read_current_manifest(url: str) -> Manifest:
    with connect(url) as conn, conn.cursor() as cur:
        return _read_build(cur, url).manifest


def update_gate(url: str, gate: dict[str, Any], fingerprint: str | None = None) -> Manifest:
    """Replace the current build's gate settings (see `index.store.update_gate`)."""
    from groundqa.errors import CalibrationError

    target = PostgresTarget(url)
    with target.lock(), target._conn.cursor() as cur:
        info = _read_build(cur, url)
        if fingerprint is not None and info.manifest.fingerprint != fingerprint:
            raise CalibrationError(
                f"the gate was fitted for index build {fingerprint[:12]}, but {redact(url)} now "
                f"holds build {info.manifest.fingerprint[:12]}; calibrate this index itself"
            )
        updated = Manifest.from_dict({**info.manifest.to_dict(), "gate": gate})
        cur.execute(
            "UPDATE groundqa_builds SET manifest = %s WHERE build_id = %s",
            (json.dumps(updated.to_dict()), info.build_id),
        )
        target._conn.commit()
    return updated
