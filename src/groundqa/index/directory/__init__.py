"""The index directory: one complete build on local disk, memory-mapped to answer queries.

    store    `DirectoryStore` and `load_index`: the current build, verified and opened
    catalog  `FileCatalog`: chunks read by row from the mapped chunks file, facets, versions
    target   the build's chunk and acronym files, written before the manifest seals them

The build folders, the manifest and the atomic swap of `current` are `index.manifest`'s.
"""

from __future__ import annotations

from groundqa.index.directory.catalog import write_catalog
from groundqa.index.directory.store import (
    ACRONYMS,
    BM25_DIR,
    CHUNKS,
    DirectoryStore,
    load_index,
    read_acronyms,
    read_chunks,
)
from groundqa.index.directory.target import write_acronyms, write_chunks

__all__ = [
    "ACRONYMS",
    "BM25_DIR",
    "CHUNKS",
    "DirectoryStore",
    "load_index",
    "read_acronyms",
    "read_chunks",
    "write_acronyms",
    "write_catalog",
    "write_chunks",
]
