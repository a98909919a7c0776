"""BM25 through a real index inside PostgreSQL: Timescale's pg_textsearch, where the server has it.

pg_textsearch (PostgreSQL licence) adds a `bm25` index type, block-max top-k, queried with
`ORDER BY column <@> to_bm25query(query, index)`. It tokenises with a PostgreSQL text search
configuration, and ours is the `Analyzer`, so a build stores each chunk's terms as text that
the `simple` configuration reads back term for term (`bm25_text`): a term of two or more
ASCII letters as it is, any other term as `x` and its UTF-8 bytes in hex (the parser would
split `gauge_id` and may split other words), each repeated as often as the chunk holds it.

Its scores are not quite ours, in three ways, and the search is exact all the same:
- its BM25 multiplies by k1 + 1 (bm25s's Lucene variant does not);
- it counts neither an empty document in N nor its length in the average, where bm25s
  counts every chunk; so every field's text ends in one filler word, `x` (no term
  encodes to it), which keeps N right and adds one to every length;
- it reads repeated query terms once.

So pg_textsearch only *proposes* candidates, the best `depth` of the body field and of the
heading field, and each candidate is scored exactly by the SQL BM25 of `store` (the same
formula and float32 rounding as the index directory). A chunk that neither list proposed
scores at most the sum over fields of `bound`: that field's score of the last candidate,
scaled by `scale` (the most our score can be per unit of its, given the filler), times
the largest query term count. When the k-th exact score is above that sum the top k is
certain; otherwise the lists are deepened (this is Fagin's threshold algorithm). Filters
and scopes are a WHERE clause on both lists, so they apply before the top k.

This module reads the server's extension and writes nothing but the build's two indexes;
a build made without the extension, or a server that lost it, is searched by SQL alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from groundqa.index.postgres.schema import _psycopg, first_line

EXTENSION = "pg_textsearch"
# Versions whose index this module was written against and tested with.
SUPPORTED = ((0, 6),)
ENCODING = "groundqa-terms-v1"
TEXT_CONFIG = "simple"
FILLER = "x"
_PLAIN = re.compile(r"[a-z]{2,}")


def encode_term(term: str) -> str:
    """The word the `simple` configuration reads back as exactly this term, and as no other."""
    return term if _PLAIN.fullmatch(term) else "x" + term.encode("utf-8").hex()


def bm25_text(counts: Mapping[str, int]) -> str:
    """A field's text for the index: every term as often as the field holds it, then `x`."""
    words = [w for term, n in counts.items() for w in [encode_term(term)] * int(n)]
    return " ".join([*words, FILLER])


def query_text(terms: Sequence[str]) -> str:
    return " ".join(encode_term(t) for t in dict.fromkeys(t for t in terms if t))


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def supported(version: str) -> bool:
    return version_tuple(version)[:2] in SUPPORTED


def supported_text() -> str:
    return ", ".join(".".join(map(str, v)) + ".x" for v in SUPPORTED)


@dataclass(frozen=True)
class Bm25Index:
    """What a build recorded about its pg_textsearch indexes (`groundqa_builds.bm25_index`)."""

    version: str
    body: str
    head: str | None
    k1: float
    b: float
    extension: str = EXTENSION
    encoding: str = ENCODING
    text_config: str = TEXT_CONFIG

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Bm25Index:
        return cls(
            version=str(data["version"]),
            body=str(data["body"]),
            head=None if data.get("head") is None else str(data["head"]),
            k1=float(data["k1"]),
            b=float(data["b"]),
            extension=str(data.get("extension", EXTENSION)),
            encoding=str(data.get("encoding", "")),
            text_config=str(data.get("text_config", "")),
        )


def scale(k1: float, b: float, avgdl: float) -> float:
    """The most one field's exact score (bm25s's Lucene BM25) can be per unit of
    pg_textsearch's score of the same field with the filler word.

    Per term, ours is idf·tf/(tf + k1·u) and its is (k1 + 1)·idf·tf/(tf + k1·u'), where
    u = 1 - b + b·dl/a and u' = 1 - b + b·(dl + 1)/(a + 1): the same idf (the filler makes
    N the same), and u ≥ u' - b/(a + 1) for every dl ≥ 0. With c = k1·b/(a + 1) the ratio
    is at most y/((k1 + 1)(y - c)) for y = tf + k1·u', which falls as y grows, and
    y ≥ 1 + k1·(1 - b) + c.
    """
    c = k1 * b / (max(avgdl, 0.0) + 1.0)
    y = 1.0 + k1 * (1.0 - b) + c
    return y / ((k1 + 1.0) * (y - c))


def bound(field_bound: float, counts: Mapping[str, int]) -> float:
    """The most a chunk can score in one field for a query whose terms repeat (`counts`),
    when its score for the distinct terms is at most `field_bound`: a repeated term counts
    each time, so at most the largest count times it."""
    return max(counts.values(), default=0) * field_bound


# ------------------------------------------------------------------ the server's extension


def server_version(cur: Any) -> str | None:
    """The pg_textsearch version installed in this database, or None."""
    cur.execute("SELECT extversion FROM pg_extension WHERE extname = %s", (EXTENSION,))
    row = cur.fetchone()
    return None if row is None else str(row[0])


def enable(conn: Any) -> tuple[str | None, str]:
    """pg_textsearch in this database, created if the server offers it: (version, note).

    The version is None when a build cannot use it, and the note says why and what to do.
    """
    psycopg = _psycopg()
    with conn.cursor() as cur:
        version = server_version(cur)
        if version is None:
            cur.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = %s",
                (EXTENSION,),
            )
            row = cur.fetchone()
            if row is None:
                conn.rollback()
                return None, (
                    f"the server has no {EXTENSION}; install it (shared_preload_libraries = "
                    f"'{EXTENSION}') for a BM25 index"
                )
            try:
                cur.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
            except psycopg.Error as exc:
                conn.rollback()
                return None, (
                    f"CREATE EXTENSION {EXTENSION} failed ({first_line(exc)}); a superuser can run it "
                    "in this database, and the server needs it in shared_preload_libraries"
                )
            version = server_version(cur)
    conn.commit()
    if version is None:
        return None, f"{EXTENSION} is not installed"
    if not supported(version):
        return None, (
            f"{EXTENSION} {version} is installed, but groundqa supports {supported_text()}; "
            f"BM25 runs in SQL instead"
        )
    return version, f"{EXTENSION} {version}"


def create_indexes(
    cur: Any, lexical_table: str, body: str, head: str | None, k1: float, b: float
) -> None:
    from psycopg import sql

    for name, column in ((body, "body_terms"), (head, "head_terms")):
        if name is None:
            continue
        cur.execute(
            sql.SQL(
                "CREATE INDEX {name} ON {table} USING bm25 ({column}) "
                "WITH (text_config = {config}, k1 = {k1}, b = {b})"
            ).format(
                name=sql.Identifier(name),
                table=sql.Identifier(lexical_table),
                column=sql.Identifier(column),
                config=sql.Literal(TEXT_CONFIG),
                k1=sql.Literal(float(k1)),
                b=sql.Literal(float(b)),
            )
        )


def check(cur: Any, index: Bm25Index, k1: float, b: float) -> str | None:
    """Why a build's BM25 index cannot be used on this server now, or None when it can."""
    if index.encoding != ENCODING or index.text_config != TEXT_CONFIG:
        return (
            f"its BM25 index was written for terms encoded as {index.encoding!r} with "
            f"{index.text_config!r}, which this groundqa does not read; rebuild the index"
        )
    if (index.k1, index.b) != (k1, b):
        return (
            f"its BM25 index has k1={index.k1}, b={index.b} where the build's BM25 settings "
            f"are k1={k1}, b={b}; rebuild the index"
        )
    version = server_version(cur)
    if version is None:
        return f"the server no longer has {EXTENSION} (the build used {index.version})"
    if not supported(version):
        return (
            f"the server's {EXTENSION} {version} is not one groundqa supports ({supported_text()})"
        )
    if version_tuple(version)[:2] != version_tuple(index.version)[:2]:
        return f"the build used {EXTENSION} {index.version} and the server has {version}"
    for name in (index.body, index.head):
        if name is None:
            continue
        cur.execute(
            "SELECT am.amname, c.reloptions FROM pg_class c JOIN pg_am am ON am.oid = c.relam "
            "WHERE c.oid = to_regclass(%s)",
            (name,),
        )
        row = cur.fetchone()
        if row is None or row[0] != "bm25":
            return f"its BM25 index {name} is missing"
        options = dict(str(o).split("=", 1) for o in row[1] or [])
        if options.get("text_config") != TEXT_CONFIG or (
            float(options.get("k1", "nan")),
            float(options.get("b", "nan")),
        ) != (k1, b):
            return f"its BM25 index {name} was made with other settings ({', '.join(row[1] or [])})"
    return None
