"""A build's catalogue in PostgreSQL: chunks, facets and versions read per request.

A worker keeps no chunk, posting list or document table in memory. Each call is one
indexed query:

    groundqa_chunks_<build>    chunks by row (primary key), chunk id, document, section
    groundqa_facets_<build>    per metadata key and folded value: the value as written, the
                               rows that carry it, for an area the states its chunks carry;
                               one row per key with no value holds every row that carries
                               the key. Keyed by (key, value). Rows are stored as bytes:
                               int32 row numbers, or a bitmap over all rows when that is
                               smaller (more than one chunk in 32 carries the value)
    groundqa_versions_<build>  the documents that declare a date or a successor, and the
                               successors they name, resolved at ingest, with the family
                               each belongs to

Facets are kept as posting lists rather than searched in the chunks' metadata column:
filters fold case, flatten nested keys (`reporting.scheme`) and read list values item by
item (`facets`), which a JSONB containment query cannot express, and a posting list is one
index lookup however many chunks carry the value. What a worker does keep: each key's
values once asked for, when a key has at most `CACHED_VALUES` of them (the place names that
questions are matched against), so memory follows the number of distinct place names, not
of chunks.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import numpy.typing as npt

from groundqa.errors import IndexCorruptError
from groundqa.facets import FacetIndex, Facets
from groundqa.index.postgres.schema import _sql, read_metadata
from groundqa.models import Chunk
from groundqa.versions import Version, Versions

Cursor = Callable[[], AbstractContextManager[Any]]
# A key with more values than this is read from the database each time it is asked for.
CACHED_VALUES = 5000

CHUNK_COLUMNS = (
    "row, chunk_id, doc_id, section_id, title, section_path, text, source, page, part, "
    "parts, metadata"
)


def chunk_of(r: Sequence[Any]) -> Chunk:
    """A chunk from a row of `CHUNK_COLUMNS` (its first column, the row number, aside)."""
    return Chunk(
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
        **read_metadata(r[11]),
    )


# ------------------------------------------------------------------ writing


def create_catalog_tables(cur: Any, facets_table: str, versions_table: str) -> None:
    cur.execute(
        _sql(
            "CREATE TABLE {t} (key text NOT NULL, value text, shown text, rows bytea NOT NULL,"
            " packed boolean NOT NULL, states text[])",
            t=facets_table,
        )
    )
    cur.execute(
        _sql(
            "CREATE TABLE {t} (doc_id text PRIMARY KEY, family text NOT NULL, version jsonb "
            "NOT NULL)",
            t=versions_table,
        )
    )


def write_catalog(
    cur: Any, facets_table: str, versions_table: str, chunks: Sequence[Chunk]
) -> None:
    """Fill a build's facet and version tables from its chunks (in row order), and index
    them."""
    copy_sql = _sql("COPY {t} (key, value, shown, rows, packed, states) FROM STDIN", t=facets_table)
    with cur.copy(copy_sql) as copy:
        for key, value, shown, rows, states in FacetIndex(chunks).records():
            copy.write_row([key, value, shown, *_encode(rows, len(chunks)), states])
    cur.execute(_sql("CREATE INDEX ON {t} (key, value)", t=facets_table))
    versions = Versions.of_chunks(chunks)
    with cur.copy(_sql("COPY {t} (doc_id, family, version) FROM STDIN", t=versions_table)) as copy:
        for v in versions.dated():
            family = min(versions.family(v.doc_id))
            copy.write_row([v.doc_id, family, json.dumps(v.to_dict())])
    cur.execute(_sql("CREATE INDEX ON {t} (family)", t=versions_table))


def _encode(rows: Sequence[int], size: int) -> tuple[bytes, bool]:
    """Rows as int32 numbers, or as a bitmap over `size` rows when that is smaller."""
    if len(rows) * 32 > size:
        mask = np.zeros(size, dtype=bool)
        mask[np.asarray(rows, dtype=np.int64)] = True
        return np.packbits(mask).tobytes(), True
    return np.asarray(rows, dtype="<i4").tobytes(), False


def _decode(data: bytes, packed: bool, size: int) -> npt.NDArray[np.int64]:
    if packed:
        bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), count=size)
        return np.flatnonzero(bits).astype(np.int64)
    return np.frombuffer(data, dtype="<i4").astype(np.int64)


# ------------------------------------------------------------------ reading


class SqlFacets(Facets):
    """`Facets` answered from the build's facet table."""

    def __init__(self, cursor: Cursor, table: str, size: int, keys: Sequence[str]) -> None:
        self._cursor = cursor
        self._table = table
        self.size = size
        self._keys = sorted(keys)
        self._shown: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()

    def keys(self) -> list[str]:
        return list(self._keys)

    def shown(self, key: str) -> dict[str, str]:
        if key in self._shown:
            return self._shown[key]
        with self._cursor() as cur:
            cur.execute(
                _sql(
                    "SELECT value, shown FROM {t} WHERE key = %s AND value IS NOT NULL",
                    t=self._table,
                ),
                (key,),
            )
            found = {str(v): str(s) for v, s in cur.fetchall()}
        if len(found) <= CACHED_VALUES:
            with self._lock:
                self._shown[key] = found
        return found

    def _postings(self, key: str, values: Sequence[str]) -> dict[str, npt.NDArray[np.int64]]:
        if not values:
            return {}
        with self._cursor() as cur:
            cur.execute(
                _sql(
                    "SELECT value, rows, packed FROM {t} WHERE key = %s AND value = ANY(%s)",
                    t=self._table,
                ),
                (key, list(values)),
            )
            return {str(v): _decode(r, p, self.size) for v, r, p in cur.fetchall()}

    def carries(self, key: str) -> npt.NDArray[np.bool_]:
        out = np.zeros(self.size, dtype=bool)
        with self._cursor() as cur:
            cur.execute(
                _sql(
                    "SELECT rows, packed FROM {t} WHERE key = %s AND value IS NULL",
                    t=self._table,
                ),
                (key.casefold(),),
            )
            for rows, packed in cur.fetchall():
                if packed:
                    out |= np.unpackbits(np.frombuffer(rows, dtype=np.uint8), count=self.size) > 0
                else:
                    out[_decode(rows, packed, self.size)] = True
        return out

    def _states_of(self, areas: Sequence[str]) -> list[str]:
        with self._cursor() as cur:
            cur.execute(
                _sql(
                    "SELECT DISTINCT unnest(states) FROM {t} WHERE key = 'area' AND "
                    "value = ANY(%s)",
                    t=self._table,
                ),
                (list(areas),),
            )
            return sorted(str(s) for (s,) in cur.fetchall())


class SqlCatalog:
    """The `Catalog` of one build, each call a query."""

    def __init__(
        self,
        cursor: Cursor,
        *,
        location: str,
        chunk_table: str,
        facets_table: str,
        versions_table: str,
        size: int,
    ) -> None:
        self._cursor = cursor
        self._location = location
        self._chunks = chunk_table
        self._versions = versions_table
        with cursor() as cur:
            cur.execute(_sql("SELECT DISTINCT key FROM {t}", t=facets_table))
            keys = [str(k) for (k,) in cur.fetchall()]
            cur.execute(_sql("SELECT EXISTS (SELECT 1 FROM {t})", t=versions_table))
            self._dated = bool(cur.fetchone()[0])
        self.facets = SqlFacets(cursor, facets_table, size, keys)

    def _select(self, where: str, params: Sequence[Any]) -> list[tuple[int, Chunk]]:
        with self._cursor() as cur:
            cur.execute(
                _sql(
                    f"SELECT {CHUNK_COLUMNS} FROM {{t}} WHERE {where} ORDER BY row", t=self._chunks
                ),
                params,
            )
            return [(int(r[0]), chunk_of(r)) for r in cur.fetchall()]

    def chunks_at(self, rows: Sequence[int]) -> list[Chunk]:
        if not rows:
            return []
        found = dict(self._select("row = ANY(%s::int4[])", (list(rows),)))
        missing = [r for r in rows if r not in found]
        if missing:
            raise IndexCorruptError(
                f"{self._location}: rows {missing[:5]} are missing from {self._chunks}; "
                "rebuild with `groundqa ingest ... --store URL`"
            )
        return [found[r] for r in rows]

    def doc_ids(self, rows: Sequence[int]) -> list[str]:
        if not rows:
            return []
        with self._cursor() as cur:
            cur.execute(
                _sql("SELECT row, doc_id FROM {t} WHERE row = ANY(%s::int4[])", t=self._chunks),
                (list(rows),),
            )
            found = {int(r): str(d) for r, d in cur.fetchall()}
        return [found[r] for r in rows]

    def rows_of(self, chunk_ids: Iterable[str]) -> dict[str, int]:
        ids = list(dict.fromkeys(chunk_ids))
        if not ids:
            return {}
        with self._cursor() as cur:
            cur.execute(
                _sql("SELECT chunk_id, row FROM {t} WHERE chunk_id = ANY(%s)", t=self._chunks),
                (ids,),
            )
            return {str(c): int(r) for c, r in cur.fetchall()}

    def chunk(self, chunk_id: str) -> Chunk | None:
        found = self._select("chunk_id = %s", (chunk_id,))
        return found[0][1] if found else None

    def document(self, doc_id: str) -> list[Chunk]:
        return [c for _, c in self._select("doc_id = %s", (doc_id,))]

    def section(self, section_id: str) -> list[Chunk]:
        return [c for _, c in self._select("section_id = %s", (section_id,))]

    def versions(self, doc_ids: Iterable[str]) -> Versions:
        docs = list(dict.fromkeys(doc_ids))
        if not self._dated or not docs:
            return Versions.resolved([])
        with self._cursor() as cur:
            cur.execute(
                _sql(
                    "SELECT doc_id, version FROM {t} WHERE family IN "
                    "(SELECT family FROM {t} WHERE doc_id = ANY(%s))",
                    t=self._versions,
                ),
                (docs,),
            )
            return Versions.resolved(Version.from_dict(v) for _, v in cur.fetchall())


__all__ = ["CACHED_VALUES", "SqlCatalog", "SqlFacets", "create_catalog_tables", "write_catalog"]
