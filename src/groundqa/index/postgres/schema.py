"""The database side of the PostgreSQL store: connections, the schema and its SQL names.

    groundqa_schema          the schema version (a newer one is refused, never migrated down)
    groundqa_builds          one row per build: its manifest, acronyms, corpus statistics,
                             its pg_textsearch indexes (if any) and whether it is complete
    groundqa_current         the one build that is served
    groundqa_chunks_<build>  the build's chunks (`create_build_tables`)
    groundqa_lexical_<build> each chunk's term counts per field and their tsvector, and where
                             the server has pg_textsearch, the terms as text in BM25 indexes
    groundqa_terms_<build>   each term's document frequency, per field
    groundqa_facets_<build>  posting lists of metadata values (see `catalog`)
    groundqa_versions_<build> the documents that declare versions (see `catalog`)

`MIGRATIONS` creates the three catalogue tables; each build's own tables are made by
`create_build_tables` when an ingest writes it. This module refuses a schema newer than
the one it knows (it never migrates down), and turns a server it cannot reach or a
database without pgvector into one error that says what to do; it runs no searches and
writes no chunks (see `store` and `target`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from groundqa._version import __version__
from groundqa.errors import (
    IndexCorruptError,
    IndexMissingError,
    IndexVersionError,
    StoreUnavailableError,
    UsageError,
)
from groundqa.index.manifest import Manifest
from groundqa.models import Chunk

SCHEMA_VERSION = 2
CONNECT_TIMEOUT_S = 5


# ------------------------------------------------------------------ connections


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


def first_line(exc: BaseException) -> str:
    """The first line of a database error, for a one-line message."""
    return (str(exc).strip().splitlines() or ["no reason given"])[0]


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


def _drop(tables: Sequence[str]) -> Any:
    from psycopg import sql

    return sql.SQL("DROP TABLE IF EXISTS {}").format(
        sql.SQL(", ").join(sql.Identifier(t) for t in tables)
    )


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
    # 2: a build records its pg_textsearch indexes (`bm25.Bm25Index`); NULL for none.
    "ALTER TABLE groundqa_builds ADD COLUMN bm25_index jsonb",
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


# ------------------------------------------------------------------ builds


@dataclass(frozen=True)
class BuildInfo:
    build_id: str
    chunk_table: str
    lexical_table: str
    terms_table: str
    manifest: Manifest
    acronyms: dict[str, str]
    stats: dict[str, float]
    bm25_index: dict[str, Any] | None = None

    @property
    def catalog_tables(self) -> tuple[str, str]:
        return catalog_tables(self.build_id)


def catalog_tables(build_id: str) -> tuple[str, str]:
    """A build's facet and version tables (builds made before they existed have none)."""
    return _table("facets", build_id), _table("versions", build_id)


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
    bm25_column = "bm25_index" if version >= 2 else "NULL"
    cur.execute(
        "SELECT chunk_table, lexical_table, terms_table, manifest, acronyms, stats, complete, "
        f"{bm25_column} FROM groundqa_builds WHERE build_id = %s",
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
        found[7],
    )


# ------------------------------------------------------------------ a build's tables

# A chunk's `page_starts` (PDF pages within one chunk) is kept in its metadata column
# under this key, so every build's table has the same columns; it is taken out again
# when the chunk is read, and never seen as metadata.
PAGE_STARTS_KEY = "groundqa:page_starts"


def stored_metadata(chunk: Chunk) -> dict[str, Any]:
    """What a chunk's metadata column holds: its metadata and its page starts."""
    if not chunk.page_starts:
        return chunk.metadata
    return {**chunk.metadata, PAGE_STARTS_KEY: [list(p) for p in chunk.page_starts]}


def read_metadata(stored: dict[str, Any]) -> dict[str, Any]:
    """A chunk's `metadata` and `page_starts` from its metadata column."""
    metadata = dict(stored)
    starts = metadata.pop(PAGE_STARTS_KEY, None) or ()
    return {"metadata": metadata, "page_starts": tuple((int(o), int(p)) for o, p in starts)}


def _columns(vectors: bool) -> list[str]:
    """The chunk table's columns, in order."""
    return [
        "row", "chunk_id", "doc_id", "doc_hash", "chunk_hash", "section_id", "title",
        "section_path", "text", "source", "page", "part", "parts", "metadata",
    ] + (["embedding"] if vectors else [])  # fmt: skip


def create_build_tables(
    cur: Any,
    chunk_table: str,
    lexical_table: str,
    terms_table: str,
    dim: int | None,
    *,
    bm25_text: bool = False,
) -> None:
    """Create one build's three tables; `dim` is the vector column's size, None for none;
    `bm25_text` adds the text columns pg_textsearch indexes (`bm25.bm25_text`)."""
    vector_col = f", embedding vector({dim})" if dim is not None else ""
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
            "(array_to_tsvector(groundqa_terms(head_tf))) STORED"
            + (", body_terms text, head_terms text" if bm25_text else "")
            + ") WITH (toast_tuple_target = 8160)",
            t=lexical_table,
        )
    )
    if dim is not None:
        # Kept in the row, never compressed or moved out of line: an exact search
        # reads every vector, and a TOASTed one costs a lookup each.
        cur.execute(_sql("ALTER TABLE {t} ALTER COLUMN embedding SET STORAGE PLAIN", t=chunk_table))
    cur.execute(
        _sql(
            "CREATE TABLE {t} (field text NOT NULL, term text NOT NULL, df integer "
            "NOT NULL, PRIMARY KEY (field, term))",
            t=terms_table,
        )
    )
