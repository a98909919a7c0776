"""Persisted indexes: one complete build of chunks, BM25 and vectors, on disk or in PostgreSQL.

    manifest    what a build holds and how it was made; the index directory's builds,
                its writer lock and the atomic swap of `current`
    base        the `Store` protocol: what the query side needs from a build
    catalog     the `Catalog` protocol (chunks by key, facets, versions) and its
                in-memory form
    lexical     the BM25 index (bm25s)
    dense       the vector index (numpy, faiss HNSW)
    directory/  the index directory: `store` reads a build, `target` writes its files
    postgres/   PostgreSQL with pgvector: `schema`, `store` (reads), `target` (writes)
    open        a store by where it lives: a folder, or a `postgresql://` URL

Only the protocol and the way in are exported here; each store is imported from its
own package, so opening one never loads the other's dependencies.
"""

from __future__ import annotations

from groundqa.index.base import Mask, Ranked, Store, bm25_idf
from groundqa.index.manifest import Manifest
from groundqa.index.open import current_manifest, is_store_url, open_store, set_gate, set_part

__all__ = [
    "Manifest",
    "Mask",
    "Ranked",
    "Store",
    "bm25_idf",
    "current_manifest",
    "is_store_url",
    "open_store",
    "set_gate",
    "set_part",
]
