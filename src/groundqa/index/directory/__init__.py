"""The index directory: one complete build on local disk, read into memory to answer queries.

    store    `DirectoryStore` and `load_index`: the current build, verified and in memory
    target   the build's chunk and acronym files, written before the manifest seals them

The build folders, the manifest and the atomic swap of `current` are `index.manifest`'s.
"""

from __future__ import annotations

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
    "write_chunks",
]
