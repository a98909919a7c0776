"""Reading one build out of PostgreSQL: the `Store` the query side runs on.

BM25 runs one of two ways. Where the build has pg_textsearch indexes and the server can
still read them (`bm25.check`), they propose candidates and SQL scores those exactly
(`bm25` says why that is exact). Otherwise a search is one SQL round trip: the GIN index
finds the chunks that hold a query term, and BM25 (Lucene idf, the formula bm25s uses) is
summed from their term counts, which is exhaustive and suits corpora up to about 100k
chunks. `lexical_engine` says which runs and why. Vectors are compared exactly, or through
HNSW; the retriever fuses the two lists for hybrid. The SQL of each search is built here,
beside the code that reads its rows.

This module only reads: it opens the build that is current when the store is opened and
keeps to it (`reopen` moves to a newer one), refuses a build that is incomplete or whose
row count disagrees with its manifest, and never creates, migrates or drops a table.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Any, TypeVar

import numpy as np

from groundqa.embed import Matrix
from groundqa.errors import (
    IndexCorruptError,
    IndexMissingError,
    StoreUnavailableError,
    UsageError,
)
from groundqa.index.base import Mask, Ranked
from groundqa.index.catalog import Catalog, MemoryCatalog
from groundqa.index.dense import EF_SEARCH_MAX, hnsw_description, pg_search_width
from groundqa.index.manifest import Manifest
from groundqa.index.postgres import bm25
from groundqa.index.postgres.catalog import CHUNK_COLUMNS, SqlCatalog, chunk_of
from groundqa.index.postgres.schema import (
    CONNECT_TIMEOUT_S,
    BuildInfo,
    _ident,
    _psycopg,
    _read_build,
    _register_vector,
    _sql,
    _where,
    connect,
    redact,
)
from groundqa.models import Chunk

_T = TypeVar("_T")
_A = TypeVar("_A")
_B = TypeVar("_B")
POOL_SIZE = 8
# How a pg_textsearch list is read (see `bm25` and `_indexed_search`): at least
# PROPOSE_MIN deep at once, since a proposal's cost is mostly fixed (at 1M chunks with
# real queries, measured by bench/scale.py's queries: p50 12.7 ms at depth 20, 17 ms at
# 256, 51 ms at 5,120); its candidates scored PROPOSE_PER_RESULT per result asked for at
# first, then twice as many at each checkpoint; and read PROPOSE_GROWTH times deeper when
# the whole list cannot settle the top k. They change the cost, never the ranking.
PROPOSE_PER_RESULT = 2
PROPOSE_MIN = 256
PROPOSE_GROWTH = 4
# A filter or scope that leaves at most this many chunks is scored over them directly in
# SQL: the index, which reads chunks in score order, would pass over about (allowed share)⁻¹
# of them for each one it keeps. Both ways give the same ranking (the exhaustive one).
# Set a priori, from that estimate; not tuned on any query set.
DIRECT_ROWS = 5000
SQL_BM25_NOTE = "exhaustive BM25 in SQL over the GIN index; suits up to about 100k chunks"


class PostgresStore:
    """One complete build in PostgreSQL, opened for queries through a connection pool."""

    def __init__(
        self,
        url: str,
        info: BuildInfo,
        pool: Any,
        *,
        ann: str = "auto",
        bm25_index: bm25.Bm25Index | None = None,
        lexical_note: str = SQL_BM25_NOTE,
        bm25_wanted: bool = True,
    ) -> None:
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
        self._bm25 = bm25_index
        self._lexical_note = lexical_note
        self.bm25_wanted = bm25_wanted  # what `reopen` asks for again
        self.direct_rows = DIRECT_ROWS
        self.propose_min = PROPOSE_MIN
        # How wide HNSW is searched: the build's ef_search, raised with its size.
        configured = int(info.manifest.dense.get("ef_search", 128))
        self.ef_search = pg_search_width(configured, int(info.manifest.counts.get("chunks", 0)))
        self._helpers: ThreadPoolExecutor | None = None
        self._helpers_lock = threading.Lock()

    @classmethod
    def open(
        cls, url: str, *, ann: str = "auto", pool_size: int = POOL_SIZE, bm25_index: bool = True
    ) -> PostgresStore:
        """The build current now; `ann` is auto (HNSW past the build's `ann_threshold`),
        always, or never (exact search); `bm25_index` False searches BM25 in SQL even
        where the build has a pg_textsearch index."""
        if ann not in ("auto", "always", "never"):
            raise UsageError(f"ann must be auto, always or never, not {ann!r}")
        with connect(url) as conn, conn.cursor() as cur:
            info = _read_build(cur, url)
            index, note = _usable_bm25(cur, info, wanted=bm25_index)
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
        return cls(
            url,
            info,
            pool,
            ann=ann,
            bm25_index=index,
            lexical_note=note,
            bm25_wanted=bm25_index,
        )

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
    def lexical_engine(self) -> dict[str, Any]:
        """How BM25 is searched here, and why: for `inspect` and `/health`."""
        if self._bm25 is not None:
            return {
                "engine": bm25.EXTENSION,
                "version": self._bm25.version,
                "note": f"{bm25.EXTENSION} {self._bm25.version} BM25 index proposes, SQL scores",
            }
        return {"engine": "sql", "version": None, "note": self._lexical_note}

    @property
    def vector_engine(self) -> dict[str, Any] | None:
        if not self.has_vectors:
            return None
        if not self._uses_ann(False):
            return hnsw_description("exact", "pgvector")
        dense = self.info.manifest.dense
        return hnsw_description(
            "pgvector",
            "pgvector",
            m=int(dense.get("hnsw_m", 16)),
            ef_construction=int(
                self.info.stats.get("hnsw_ef_construction", dense.get("ef_construction", 64))
            ),
            width=self.ef_search,
            limit=EF_SEARCH_MAX,
        )

    @property
    def chunks(self) -> list[Chunk]:
        """Every chunk, read from the database on first use and kept: for tools that read a
        whole corpus, and for a build older than its catalogue tables. Serving a build that
        has them never calls this."""
        if self._chunks is None:
            with self._chunks_lock:
                if self._chunks is None:
                    self._chunks = self._read_chunks()
        return self._chunks

    @cached_property
    def catalog(self) -> Catalog:
        """Chunks, facets and versions by SQL per request; a build written before the
        catalogue tables existed is served from its chunks in memory, as it used to be."""
        facets_table, versions_table = self.info.catalog_tables
        with self._cursor() as cur:
            cur.execute("SELECT to_regclass(%s) IS NOT NULL", (facets_table,))
            has_tables = bool(cur.fetchone()[0])
        if not has_tables:
            return MemoryCatalog(self.chunks)
        return SqlCatalog(
            self._cursor,
            location=self.location,
            chunk_table=self.info.chunk_table,
            facets_table=facets_table,
            versions_table=versions_table,
            size=self.num_docs,
        )

    def _read_chunks(self) -> list[Chunk]:
        query = _sql(f"SELECT {CHUNK_COLUMNS} FROM {{t}} ORDER BY row", t=self.info.chunk_table)
        with self._cursor() as cur:
            cur.execute(query)
            rows = cur.fetchall()
        chunks = [chunk_of(r) for r in rows]
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
        rows = None if allowed is None else np.flatnonzero(allowed).astype(np.int32).tolist()
        if self._bm25 is not None and (rows is None or len(rows) > self.direct_rows):
            return self._indexed_search(self._bm25, terms, k, rows)
        return self._scored(terms, k, rows, match=True)

    def _scored(
        self, terms: Sequence[str], k: int, rows: list[int] | None, *, match: bool
    ) -> Ranked:
        query, params = self._lexical_sql(terms, k, rows, match=match)
        with self._cursor() as cur:
            cur.execute(query, params)
            return [(int(r), float(s)) for r, s in cur.fetchall()]

    def _indexed_search(
        self, index: bm25.Bm25Index, terms: Sequence[str], k: int, rows: list[int] | None
    ) -> Ranked:
        """The top k by exact BM25, from candidates the pg_textsearch indexes propose.

        A list is read `propose_min` deep at once (a proposal costs little more at depth 256
        than at 20), but its candidates are scored a checkpoint at a time: the first
        PROPOSE_PER_RESULT·k of each list, then twice as many, and so on, each checkpoint
        bounded by pg_textsearch's score of the list's chunk there. Only when the whole
        lists cannot settle the top k are they read PROPOSE_GROWTH times deeper. The two
        lists are read side by side, and so are the scores at the cuts and the first
        checkpoint's exact scores, each on its own connection."""
        counts = Counter(t for t in terms if t)
        heading = self._heading_weight if index.head is not None else 0.0
        stats = self.info.stats
        scale = (
            bm25.scale(self.k1, self.b, stats.get("avgdl_body", 1.0)),
            heading * bm25.scale(self.k1, self.b, stats.get("avgdl_head", 1.0)),
        )
        fields = (0, 1) if heading > 0 else (0,)
        text = bm25.query_text(list(counts))
        mark = PROPOSE_PER_RESULT * k
        wanted = dict.fromkeys(fields, max(mark, self.propose_min))
        lists: dict[int, list[int]] = {}
        read: dict[int, int] = {}  # how deep each list was asked for
        theirs: dict[int, dict[int, float]] = {f: {} for f in fields}
        scored: dict[int, float] = {}
        while True:
            todo = [
                f
                for f in fields
                if f not in lists or (wanted[f] > read[f] and len(lists[f]) == read[f])
            ]
            # The two lists are read side by side, on two connections.
            found_now = self._side_by_side(
                [functools.partial(self._propose, index, f, text, wanted[f], rows) for f in todo]
            )
            for f, found in zip(todo, found_now, strict=True):
                lists[f], read[f] = found, wanted[f]
            marks = _checkpoints(mark, max(read.values()))
            cuts = {f: [_cut(lists[f], m, read[f]) for m in marks] for f in fields}
            # pg_textsearch's scores at the cuts and the exact scores of the first
            # checkpoint's candidates are independent: they are read side by side.
            first = self._unscored(lists, marks[0], scored)
            calls: list[Callable[[], dict[int, float]]] = [
                functools.partial(
                    self._their_scores,
                    index,
                    f,
                    text,
                    sorted({r for r in cuts[f] if r is not None} - theirs[f].keys()),
                )
                for f in fields
            ]
            calls.append(functools.partial(self._exact_scores, terms, first))
            *found_scores, first_scores = self._side_by_side(calls)
            for f, their in zip(fields, found_scores, strict=True):
                theirs[f].update(their)
            scored.update(first_scores)
            for i, m in enumerate(marks):
                scored.update(self._exact_scores(terms, self._unscored(lists, m, scored)))
                # What a chunk that no list holds among its first m can score at most, per
                # field (`bm25.bound`); nothing, where a list holds every chunk that scores.
                part = [0.0, 0.0]
                for f in fields:
                    cut = cuts[f][i]
                    if cut is not None:
                        part[f] = bm25.bound(scale[f] * theirs[f][cut], counts)
                bound = sum(part)
                ranked = sorted(
                    ((r, s) for r, s in scored.items() if s > 0), key=lambda x: (-x[1], x[0])
                )
                if bound <= 0 or (len(ranked) >= k and ranked[k - 1][1] > bound * (1 + 1e-6)):
                    return ranked[:k]
            # Read deeper the list that leaves the most room, and the other too when it
            # leaves at least half as much.
            for f in fields:
                if part[f] > 0 and part[f] >= max(part) / 2:
                    wanted[f] = min(read[f] * PROPOSE_GROWTH, self.num_docs + 1)
            mark = marks[-1] * 2

    def both(self, first: Callable[[], _A], second: Callable[[], _B]) -> tuple[_A, _B]:
        """`first` on a helper thread while `second` runs here, each on its own connection:
        the server does the work, so the two overlap on its cores."""
        if _on_a_helper():
            return first(), second()
        pending = self._helpers_pool().submit(first)
        done = second()
        return pending.result(), done

    @staticmethod
    def _unscored(lists: dict[int, list[int]], m: int, scored: dict[int, float]) -> list[int]:
        """The chunks among the first m of any list that are not scored yet."""
        return sorted({r for found in lists.values() for r in found[:m]} - scored.keys())

    def _exact_scores(self, terms: Sequence[str], rows: list[int]) -> dict[int, float]:
        """The exact BM25 score of each of these chunks (0 where no term is in its body)."""
        if not rows:
            return {}
        return {
            **dict.fromkeys(rows, 0.0),
            **dict(self._scored(terms, len(rows), rows, match=False)),
        }

    def _side_by_side(self, calls: Sequence[Callable[[], _T]]) -> list[_T]:
        """Each call's result, the first ones run by helper threads while this thread runs
        the last (each call takes its own connection from the pool)."""
        if len(calls) <= 1 or _on_a_helper():
            return [call() for call in calls]
        helpers = self._helpers_pool()
        futures = [helpers.submit(call) for call in calls[:-1]]
        last = calls[-1]()
        return [future.result() for future in futures] + [last]

    def _helpers_pool(self) -> ThreadPoolExecutor:
        """The threads that run searches beside the caller's, started on first use. What a
        helper runs does all its own work in turn (`_on_a_helper`): a helper never waits on
        another, so a busy pool queues work but cannot deadlock."""
        with self._helpers_lock:
            if self._helpers is None:
                self._helpers = ThreadPoolExecutor(
                    POOL_SIZE, thread_name_prefix="groundqa-pg", initializer=_mark_helper
                )
            return self._helpers

    def _propose(
        self, index: bm25.Bm25Index, field: int, text: str, depth: int, rows: list[int] | None
    ) -> list[int]:
        """The best `depth` allowed chunks of one field (0 body, 1 heading) by pg_textsearch's
        score, best first (a short list holds every chunk that scores in that field)."""
        statement, params = self._propose_sql(index, field, text, depth, rows)
        with self._cursor() as cur:
            cur.execute(statement, params)
            return [int(r) for (r,) in cur.fetchall()]

    def _their_scores(
        self, index: bm25.Bm25Index, field: int, text: str, rows: list[int]
    ) -> dict[int, float]:
        """pg_textsearch's score of one field of these chunks. Read for a few chunks only:
        it computes a score in the select list anew from the text, which costs more than
        the index scan itself."""
        if not rows:
            return {}
        column, name = _field(index, field)
        with self._cursor() as cur:
            cur.execute(
                _sql(
                    "SELECT row, -({c} <@> to_bm25query(%(q)s, %(name)s)) FROM {t} "
                    "WHERE row = ANY(%(rows)s::int4[])",
                    c=column,
                    t=self.info.lexical_table,
                ),
                {"q": text, "name": name, "rows": rows},
            )
            return {int(r): float(s) for r, s in cur.fetchall()}

    def _propose_sql(
        self, index: bm25.Bm25Index, field: int, text: str, depth: int, rows: list[int] | None
    ) -> tuple[Any, dict[str, Any]]:
        from psycopg import sql

        column, name = _field(index, field)
        params: dict[str, Any] = {"q": text, "name": name, "depth": depth}
        where = sql.SQL("")
        if rows is not None:
            params["rows"] = rows
            where = sql.SQL(" WHERE row = ANY(%(rows)s::int4[])")
        statement = sql.SQL(
            "SELECT row FROM {table}{where} ORDER BY {column} <@> to_bm25query(%(q)s, %(name)s)"
            " LIMIT %(depth)s"
        ).format(
            table=sql.Identifier(self.info.lexical_table),
            where=where,
            column=sql.Identifier(column),
        )
        return statement, params

    def vector_search(
        self, query: Matrix, k: int, allowed: Mask = None, *, exact: bool = False
    ) -> Ranked:
        if k <= 0:
            return []
        # A filtered search scans the allowed rows exactly: the graph would lose them.
        ann = self._uses_ann(exact or allowed is not None)
        statement, params = self._vector_sql(query, k, allowed, ann)
        with self._cursor() as cur:
            for setting in ann_settings(max(self.ef_search, k)) if ann else EXACT_SETTINGS:
                cur.execute(*setting)
            cur.execute(statement, params)
            return [(int(r), float(s)) for r, s in cur.fetchall()]

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
        return PostgresStore.open(
            self.url,
            ann=self.ann,
            pool_size=self._pool.max_size,
            bm25_index=self.bm25_wanted,
        )

    def close(self) -> None:
        if self._helpers is not None:
            self._helpers.shutdown(wait=True)
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
        self, terms: Sequence[str], k: int, rows: list[int] | None, *, match: bool = True
    ) -> tuple[Any, dict[str, Any]]:
        """BM25 of the chunks in `rows` (all when None); `match` finds them through the GIN
        index of their terms, where False reads the rows by key (a short candidate list)."""
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
        conditions = [sql.SQL("c.body @@ %(tsq)s::tsquery")] if match else []
        if rows is not None:
            params["lex_allowed"] = rows
            conditions.append(sql.SQL("c.row = ANY(%(lex_allowed)s::int4[])"))
        filter_sql = (
            sql.SQL(" WHERE ") + sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("")
        )
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
            "{filter}"
            " GROUP BY c.row HAVING sum(f.tf_b) > 0"
            " ORDER BY score DESC, c.row LIMIT %(lex_k)s"
        ).format(
            terms=_ident(self.info.terms_table),
            chunks=_ident(self.info.lexical_table),
            filter=filter_sql,
            heading=heading,
        )
        return statement, params

    def _vector_sql(
        self, query: Matrix, k: int, allowed: Mask, ann: bool
    ) -> tuple[Any, dict[str, Any]]:
        from psycopg import sql

        if not self.has_vectors:
            raise UsageError(f"{self.location} has no vectors; rebuild it without --no-dense")
        from pgvector import Vector

        params: dict[str, Any] = {
            "qvec": Vector(np.asarray(query, np.float32).reshape(-1)),
            "vec_k": k,
        }
        if ann:
            return ann_statement(self.info.chunk_table, max(self.ef_search, k)), params
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


# Exact search scans every (allowed) row.
EXACT_SETTINGS = (("SELECT set_config('enable_indexscan', 'off', true)",),)


def ann_settings(width: int) -> list[tuple[str, tuple[str]] | tuple[str]]:
    """The transaction's settings for a search that walks the HNSW graph `width` wide:
    ef_search up to pgvector's limit, and past it the iterative scan that carries on from
    the candidates the first pass set aside."""
    settings: list[tuple[str, tuple[str]] | tuple[str]] = [
        ("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(width, EF_SEARCH_MAX)),)),
        ("SELECT set_config('enable_seqscan', 'off', true)",),
    ]
    if width > EF_SEARCH_MAX:
        settings.append(("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)",))
    return settings


def ann_statement(table: str, width: int) -> Any:
    """The unfiltered top %(vec_k)s by inner product with %(qvec)s through the HNSW graph
    of `table`, searched `width` wide (with `ann_settings(width)`). Past pgvector's limit,
    the iterative scan is asked for `width` rows, in roughly the order of their distance,
    and their top k are taken by the exact distance."""
    from psycopg import sql

    if width <= EF_SEARCH_MAX:
        statement = (
            "SELECT row, -(embedding <#> %(qvec)s) AS score FROM {t}"
            " ORDER BY embedding <#> %(qvec)s, row LIMIT %(vec_k)s"
        )
    else:
        statement = (
            "WITH wide AS MATERIALIZED (SELECT row, embedding <#> %(qvec)s AS distance FROM {t}"
            " ORDER BY embedding <#> %(qvec)s LIMIT {width})"
            " SELECT row, -distance AS score FROM wide ORDER BY score DESC, row LIMIT %(vec_k)s"
        )
    return sql.SQL(statement).format(t=_ident(table), width=sql.Literal(int(width)))


_helper_thread = threading.local()


def _mark_helper() -> None:
    _helper_thread.is_helper = True


def _on_a_helper() -> bool:
    return bool(getattr(_helper_thread, "is_helper", False))


def _checkpoints(first: int, depth: int) -> list[int]:
    """first, 2·first, 4·first, … below depth, then depth itself."""
    marks = []
    while first < depth:
        marks.append(first)
        first *= 2
    return [*marks, depth]


def _cut(found: list[int], m: int, depth: int) -> int | None:
    """The chunk whose score bounds every chunk a list read `depth` deep does not hold among
    its first m, or None when the list holds every chunk that scores in its field."""
    at = min(m, depth)
    if at < len(found):
        return found[at - 1]
    return found[-1] if found and len(found) == depth else None


def _field(index: bm25.Bm25Index, field: int) -> tuple[str, str | None]:
    """The text column and pg_textsearch index of a field (0 body, 1 heading)."""
    return ("body_terms", index.body) if field == 0 else ("head_terms", index.head)


def _usable_bm25(cur: Any, info: BuildInfo, *, wanted: bool) -> tuple[bm25.Bm25Index | None, str]:
    """The build's pg_textsearch index if this server can search it, and a note on how BM25
    runs here (with the reason when it runs in SQL)."""
    if info.bm25_index is None:
        return None, f"{SQL_BM25_NOTE} (the build has no {bm25.EXTENSION} index)"
    try:
        index = bm25.Bm25Index.from_dict(info.bm25_index)
    except (KeyError, TypeError, ValueError):
        return None, f"{SQL_BM25_NOTE} (the build's record of its BM25 index is unreadable)"
    if not wanted:
        return None, f"{SQL_BM25_NOTE} (the {bm25.EXTENSION} index is turned off here)"
    manifest = info.manifest.lexical
    reason = bm25.check(cur, index, float(manifest.get("k1", 1.5)), float(manifest.get("b", 0.75)))
    if reason is not None:
        return None, f"{SQL_BM25_NOTE}, because {reason}"
    return index, ""


def read_current_manifest(url: str) -> Manifest:
    with connect(url) as conn, conn.cursor() as cur:
        return _read_build(cur, url).manifest
