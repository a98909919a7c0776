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
    groundqa_facets_<build>  posting lists of metadata values, per key and folded value
    groundqa_versions_<build> the documents that declare versions, resolved at ingest

The terms are the `Analyzer`'s: the tsvector is generated from the term counts with
`array_to_tsvector`, not by PostgreSQL's parser, which would split some of them, because
BM25 must score exactly the terms the index directory scores. A search is one SQL round
trip: the GIN index finds the chunks that hold a query term, and BM25 (Lucene idf, the
formula bm25s uses) is summed from their term counts; vectors are compared exactly, or
through HNSW. Hybrid retrieval runs the two searches and fuses them in Python, as for
the directory store (`retrieve.retriever`).

An ingest holds an advisory lock (a second one fails within a few seconds), writes a new build's
tables in batches, each batch its own transaction, and marks the build complete and
current in one last transaction. A killed ingest leaves an incomplete build that is
never served and that the next ingest removes. Documents whose content is unchanged
are copied inside the database from the previous build, and a chunk whose text was
embedded before keeps its vector, so an update re-embeds only what changed.

    schema   connections, the schema and its migrations, each build's tables
    store    `PostgresStore`: reads and searches one build (the query side)
    catalog  `SqlCatalog`: chunks, facets and versions read per request, so a worker
             holds no corpus; and the ingest's writing of the facet and version tables
    target   `PostgresTarget`: writes builds (the ingest side), and `update_part`
"""

from __future__ import annotations

from groundqa.index.postgres.schema import (
    CONNECT_TIMEOUT_S,
    MIGRATIONS,
    SCHEMA_VERSION,
    BuildInfo,
    connect,
    create_build_tables,
    ensure_schema,
    ensure_vector_extension,
    redact,
)
from groundqa.index.postgres.store import POOL_SIZE, PostgresStore, read_current_manifest
from groundqa.index.postgres.target import (
    BATCH,
    HNSW_BUILD_MEMORY_KB,
    LOCK_KEY,
    PostgresTarget,
    WriteStats,
    term_counts,
    update_gate,
    update_part,
)

__all__ = [
    "BATCH",
    "CONNECT_TIMEOUT_S",
    "HNSW_BUILD_MEMORY_KB",
    "LOCK_KEY",
    "MIGRATIONS",
    "POOL_SIZE",
    "SCHEMA_VERSION",
    "BuildInfo",
    "PostgresStore",
    "PostgresTarget",
    "WriteStats",
    "connect",
    "create_build_tables",
    "ensure_schema",
    "ensure_vector_extension",
    "read_current_manifest",
    "redact",
    "term_counts",
    "update_gate",
    "update_part",
]
