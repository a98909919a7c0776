"""Writing builds into PostgreSQL: the target an ingest hands its chunks to.

An ingest holds an advisory lock (a second one fails within `LOCK_GRACE_S`), writes a new build's
tables in batches, each batch its own transaction, and marks the build complete and
current in one last transaction. A killed ingest leaves an incomplete build that is
never served and that the next ingest removes. Documents whose content is unchanged
are copied inside the database from the previous build, and a chunk whose text was
embedded before keeps its vector, so an update re-embeds only what changed.

This module writes only while it holds the writer lock (`lock`), reuses chunks and vectors
only from a build made with the same chunker, BM25 and embedding settings, and never makes
a build current before every row of it is written; it answers no queries (see `store`).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from groundqa.embed import Embedder
from groundqa.errors import (
    IndexCorruptError,
    IndexLockedError,
    IndexMissingError,
    StoreUnavailableError,
    UsageError,
)
from groundqa.index.dense import grown, text_key
from groundqa.index.manifest import UPDATABLE, Manifest, stale_fit
from groundqa.index.postgres import bm25
from groundqa.index.postgres.catalog import create_catalog_tables, write_catalog
from groundqa.index.postgres.schema import (
    BuildInfo,
    _columns,
    _drop,
    _psycopg,
    _read_build,
    _register_vector,
    _sql,
    _table,
    _where,
    catalog_tables,
    connect,
    create_build_tables,
    ensure_schema,
    ensure_vector_extension,
    first_line,
    redact,
    stored_metadata,
)
from groundqa.models import Chunk
from groundqa.text import Analyzer

# Chunks written per transaction by an ingest.
BATCH = 2000
# pg_advisory_lock key for writers: "groundqa" in ASCII, as a 63-bit integer.
LOCK_KEY = 0x67726F756E647161
# How long an ingest waits for the writer lock before it calls the lock taken. An ingest
# that was killed holds it a while longer than it lives: its server process lets go only
# when the statement it was running ends and it sees the connection closed (about 10 ms
# after a COMMIT here), and an ingest run again at once would be told another is writing.
LOCK_GRACE_S = 3.0

# The most memory an ingest asks PostgreSQL for while it builds an HNSW index.
HNSW_BUILD_MEMORY_KB = 4 * 1024 * 1024
# pgvector's HNSW graph keeps fewer true neighbours than faiss's with the same m and
# ef_construction (one difference: pgvector inserts rows in table order, faiss the upper
# layers first). At 1M chunks of real MiniLM vectors, m 32, ef_construction 200 and
# ef_search 1000, pgvector kept 0.973 of exact recall@10 on the queries bench/scale.py
# reports, where faiss kept 0.987; rebuilt with 400, pgvector kept 0.9785, and 0.973 in
# another build (bench/pg_ann.py): pgvector draws levels at random and builds on two
# processes, so its recall moves between builds. A PostgreSQL build widens
# ef_construction with its size through these two points, and its store searches the
# graph wider than ef_search allows (`index.dense.pg_search_width`).
PG_EF_CONSTRUCTION_POINTS = ((100_000, 200), (1_000_000, 400))
EF_CONSTRUCTION_MAX = 1000  # pgvector's own limit


def _take_writer_lock(cur: Any, grace_s: float = LOCK_GRACE_S) -> bool:
    """Take the session's writer lock, trying again for up to `grace_s`; whether it is held."""
    deadline = time.monotonic() + grace_s
    while True:
        cur.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,))
        if cur.fetchone()[0]:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def pg_ef_construction(configured: int, size: int) -> int:
    """The ef_construction a PostgreSQL build of `size` chunks uses: the build's setting,
    raised with the size past the first point (below it, searches are exact by default)."""
    if size <= PG_EF_CONSTRUCTION_POINTS[0][0]:
        return min(configured, EF_CONSTRUCTION_MAX)
    needed = round(grown(PG_EF_CONSTRUCTION_POINTS, size))
    return min(max(configured, needed), EF_CONSTRUCTION_MAX)


def create_hnsw(cur: Any, table: str, rows: int, dim: int, m: int, ef_construction: int) -> None:
    """Build the HNSW index over `table`'s `embedding` column, as every build does."""
    # The graph is built in memory when it fits in maintenance_work_mem, and many times
    # slower on disk when it does not: this session asks for what the graph needs (up to
    # HNSW_BUILD_MEMORY_KB), never less than the server's setting.
    need_kb = rows * (dim * 4 + m * 2 * 8 + 128) * 13 // 10 // 1024 + 65536
    cur.execute("SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'")
    memory_kb = max(int(cur.fetchone()[0]), min(need_kb, HNSW_BUILD_MEMORY_KB))
    cur.execute(
        "SELECT set_config('maintenance_work_mem', %s, false), "
        "set_config('max_parallel_maintenance_workers', '1', false)",
        (f"{memory_kb}kB",),
    )
    cur.execute(
        _sql(
            "CREATE INDEX ON {t} USING hnsw (embedding vector_ip_ops) "
            f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})",
            t=table,
        )
    )


def _counts(terms: Sequence[str]) -> dict[str, int]:
    return dict(Counter(t for t in terms if t))


def _counts_json(counts: dict[str, int]) -> str:
    return json.dumps(counts, ensure_ascii=False, separators=(",", ":"))


def term_counts(terms: Sequence[str]) -> str:
    """A field's terms as the JSON object of counts the store keeps."""
    return _counts_json(_counts(terms))


def _lexical_columns(bm25_text: bool) -> list[str]:
    """The lexical table's columns an ingest writes, in order."""
    base = ["row", "body_len", "head_len", "body_tf", "head_tf"]
    return base + (["body_terms", "head_terms"] if bm25_text else [])


@dataclass
class WriteStats:
    """What an ingest into PostgreSQL did, for its report."""

    copied_documents: int = 0
    written_chunks: int = 0
    embedded_chunks: int = 0
    reused_vectors: int = 0
    timings_s: dict[str, float] = field(default_factory=dict)
    # How the build's BM25 is searched: "pg_textsearch 0.6.1 index", or why it runs in SQL.
    lexical: str = ""


BM25_MODES = ("auto", "off")


class PostgresTarget:
    """Writes builds into a database; `lock` first, then `current_manifest` and `write`.

    `bm25` is "auto" (a pg_textsearch index when the server has the extension) or "off"
    (BM25 in SQL only)."""

    def __init__(self, url: str, *, bm25: str = "auto") -> None:
        if bm25 not in BM25_MODES:
            raise UsageError(
                f"the BM25 index mode must be one of {', '.join(BM25_MODES)}, not {bm25!r}"
            )
        self.url = url
        self.bm25 = bm25
        self._conn: Any = None

    @property
    def location(self) -> str:
        return redact(self.url)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """The writer lock: a second ingest into the same database fails once the lock
        has stayed taken for `LOCK_GRACE_S`."""
        conn = connect(self.url)
        try:
            with conn.cursor() as cur:
                if not _take_writer_lock(cur):
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
        except _psycopg().OperationalError as exc:
            raise StoreUnavailableError(
                f"lost PostgreSQL at {_where(self.url)} during the ingest ({first_line(exc)}); the "
                "build it was writing is never served, the previous one still is: run the "
                "ingest again once the server is back"
            ) from None
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
                cur.execute(_drop([*tables, *catalog_tables(build_id)]))
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
        version, note = bm25.enable(conn) if self.bm25 == "auto" else (None, "turned off")
        stats.lexical = f"{note} index" if version is not None else f"in SQL, no index ({note})"
        with conn.cursor() as cur:
            cur.execute(
                "INSERT INTO groundqa_builds (build_id, chunk_table, lexical_table, terms_table, "
                "manifest) VALUES (%s, %s, %s, %s, %s)",
                (build_id, chunk_table, lexical_table, terms_table, json.dumps(manifest.to_dict())),
            )
            create_build_tables(
                cur,
                chunk_table,
                lexical_table,
                terms_table,
                dim if embedder else None,
                bm25_text=version is not None,
            )
            create_catalog_tables(cur, *catalog_tables(build_id))
        conn.commit()

        # Unchanged documents: copied inside the database, vectors and terms included.
        rows = {c.chunk_id: i for i, c in enumerate(chunks)}
        copied: set[str] = set()
        if previous is not None:
            t = time.perf_counter()
            copied = self._copy_unchanged(
                previous, chunk_table, lexical_table, chunks, doc_hashes, rows, version is not None
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
            hashes = [text_key(text) for text in texts]
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
                        json.dumps(stored_metadata(chunk), ensure_ascii=False, default=str),
                    ]
                    if embedder is not None:
                        record.append(vector)
                    copy.write_row(record)
                    body_counts, head_counts = _counts(body), _counts(head)
                    lexical_row = [
                        rows[chunk.chunk_id],
                        len(body),
                        len(head),
                        _counts_json(body_counts),
                        _counts_json(head_counts),
                    ]
                    if version is not None:
                        lexical_row += [bm25.bm25_text(body_counts), bm25.bm25_text(head_counts)]
                    lexical_rows.append(lexical_row)
            lexical_copy = _sql(
                "COPY {t} (" + ", ".join(_lexical_columns(version is not None)) + ") FROM STDIN",
                t=lexical_table,
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
                "CREATE INDEX ON {t} (chunk_id)",
                "CREATE INDEX ON {t} (section_id)",
            ):
                cur.execute(_sql(sql_text, t=chunk_table))
            # Facets and versions, so that a worker reads them per request (`catalog`).
            write_catalog(cur, *catalog_tables(build_id), chunks)
        conn.commit()
        stats.timings_s["index_lexical"] = time.perf_counter() - t
        if embedder is not None:
            t = time.perf_counter()
            dense = dense_entry(dim)
            m = int(dense.get("hnsw_m", 16))
            ef_construction = pg_ef_construction(int(dense.get("ef_construction", 64)), len(chunks))
            with conn.cursor() as cur:
                create_hnsw(cur, chunk_table, len(chunks), dim, m, ef_construction)
            conn.commit()
            stats.timings_s["index_vectors"] = time.perf_counter() - t
            graph = {"hnsw_ef_construction": float(ef_construction)}
        else:
            dense, graph = {}, {}
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
                **graph,  # the ef_construction the HNSW index was built with
            }
            index = None
            if version is not None:
                t = time.perf_counter()
                index = bm25.Bm25Index(
                    version=version,
                    body=_table("bm25b", build_id),
                    head=_table("bm25h", build_id) if store_stats["heading_weight"] > 0 else None,
                    k1=float(manifest.lexical.get("k1", 1.5)),
                    b=float(manifest.lexical.get("b", 0.75)),
                )
                bm25.create_indexes(cur, lexical_table, index.body, index.head, index.k1, index.b)
                stats.timings_s["index_bm25"] = time.perf_counter() - t
            stats.timings_s["total"] = time.perf_counter() - started
            final = make_manifest(build_id, dense)
            cur.execute(
                "UPDATE groundqa_builds SET manifest = %s, acronyms = %s, stats = %s, "
                "bm25_index = %s, complete = true WHERE build_id = %s",
                (
                    json.dumps(final.to_dict()),
                    json.dumps(acronyms, ensure_ascii=False),
                    json.dumps(store_stats),
                    None if index is None else json.dumps(index.to_dict()),
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
        bm25_text: bool,
    ) -> set[str]:
        """Copy the chunks of documents whose content hash is unchanged, with new row numbers;
        their index text for pg_textsearch too (`bm25_text`), made here when the previous
        build has none."""
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
            columns = _lexical_columns(bm25_text and previous.bm25_index is not None)
            cur.execute(
                _sql(
                    "INSERT INTO {new} ("
                    + ", ".join(columns)
                    + ") SELECT m.new_row, "
                    + ", ".join(f"l.{c}" for c in columns[1:])
                    + " FROM {old} l JOIN groundqa_moves m ON m.old_row = l.row",
                    new=lexical_table,
                    old=previous.lexical_table,
                )
            )
            if bm25_text and previous.bm25_index is None:
                cur.execute(
                    _sql(
                        "SELECT row, body_tf, head_tf FROM {t} WHERE row = ANY(%s)",
                        t=lexical_table,
                    ),
                    (mapping[1],),
                )
                texts = [
                    (bm25.bm25_text(body), bm25.bm25_text(head), row)
                    for row, body, head in cur.fetchall()
                ]
                cur.executemany(
                    _sql(
                        "UPDATE {t} SET body_terms = %s, head_terms = %s WHERE row = %s",
                        t=lexical_table,
                    ),
                    texts,
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
                cur.execute(_drop([*tables, *catalog_tables(build_id)]))
                cur.execute("DELETE FROM groundqa_builds WHERE build_id = %s", (build_id,))
        self._conn.commit()


def update_gate(url: str, gate: dict[str, Any], fingerprint: str | None = None) -> Manifest:
    """Replace the current build's gate settings (see `index.manifest.update_part`)."""
    return update_part(url, "gate", gate, fingerprint)


def update_part(
    url: str, part: str, value: dict[str, Any], fingerprint: str | None = None
) -> Manifest:
    """Replace one updatable part of the current build's manifest (see
    `index.manifest.update_part`), in one transaction under the build lock."""
    if part not in UPDATABLE:
        raise ValueError(f"a manifest's {part!r} is not updatable")
    target = PostgresTarget(url)
    with target.lock(), target._conn.cursor() as cur:
        info = _read_build(cur, url)
        if fingerprint is not None and info.manifest.fingerprint != fingerprint:
            raise stale_fit(part, fingerprint, redact(url), info.manifest.fingerprint)
        updated = Manifest.from_dict({**info.manifest.to_dict(), part: value})
        cur.execute(
            "UPDATE groundqa_builds SET manifest = %s WHERE build_id = %s",
            (json.dumps(updated.to_dict()), info.build_id),
        )
        target._conn.commit()
    return updated
