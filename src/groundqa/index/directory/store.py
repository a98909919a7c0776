"""Reading an index directory: the current build's chunks, BM25 index and vectors, in memory.

`load_index` opens the build `current` points to, after its manifest has vouched for every
file (see `index.manifest`), and checks that chunks, BM25 documents and vectors agree in
number with each other and with the manifest. The `DirectoryStore` it returns answers the
`Store` protocol from memory.

This module only reads: it never writes, repairs or migrates a build, refuses a build whose
parts disagree with a message that says to rebuild, and refuses a vector search on a build
made without vectors.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from groundqa.embed import Matrix
from groundqa.errors import IndexCorruptError, UsageError
from groundqa.index.base import Mask, Ranked
from groundqa.index.catalog import Catalog, MemoryCatalog
from groundqa.index.dense import VectorIndex, ann_ef_search, hnsw_description
from groundqa.index.directory.catalog import FileCatalog, has_catalog
from groundqa.index.lexical import LexicalIndex, top_k
from groundqa.index.manifest import Manifest, current_build, read_manifest
from groundqa.models import Chunk
from groundqa.text import Analyzer

_A = TypeVar("_A")
_B = TypeVar("_B")

# The files of one build, beside manifest.json and the vectors (see `index.dense`).
CHUNKS = "chunks.jsonl"
BM25_DIR = "bm25"
ACRONYMS = "acronyms.json"


def read_acronyms(directory: Path) -> dict[str, str]:
    path = directory / ACRONYMS
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text("utf-8"))
    except ValueError as exc:
        raise IndexCorruptError(f"{path} is unreadable ({exc}); rebuild the index") from None
    return {str(k): str(v) for k, v in data.items()}


def read_chunks(directory: Path) -> list[Chunk]:
    chunks: list[Chunk] = []
    with (directory / CHUNKS).open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            try:
                chunks.append(Chunk.from_dict(json.loads(line)))
            except (ValueError, KeyError) as exc:
                raise IndexCorruptError(
                    f"{directory}/{CHUNKS} line {line_no} is unreadable ({exc}); rebuild the index"
                ) from None
    return chunks


@dataclass
class DirectoryStore:
    """One build of an index directory, opened: the embedded `Store`. BM25 and vectors are
    memory-mapped; chunks are read per request through `catalog` (all of them, parsed, only
    when `chunks` is asked for)."""

    index_dir: Path
    build_dir: Path
    manifest: Manifest
    size: int
    lexical: LexicalIndex
    vectors: VectorIndex | None = None
    acronyms: dict[str, str] = field(default_factory=dict)

    @property
    def location(self) -> str:
        return str(self.index_dir)

    @cached_property
    def chunks(self) -> list[Chunk]:
        """Every chunk, parsed on first use and kept: for tools that read a whole corpus."""
        chunks = read_chunks(self.build_dir)
        if len(chunks) != self.size:
            raise IndexCorruptError(
                f"{self.index_dir}: {len(chunks)} chunks stored, {self.size} in the manifest; "
                "rebuild the index"
            )
        return chunks

    @cached_property
    def catalog(self) -> Catalog:
        """Chunks by row from the memory-mapped chunks file; a build written before the
        catalogue files existed, from its chunks parsed into memory."""
        if has_catalog(self.build_dir):
            return FileCatalog(self.build_dir, self.build_dir / CHUNKS, self.size)
        return MemoryCatalog(self.chunks)

    @property
    def has_vectors(self) -> bool:
        return self.vectors is not None

    @property
    def heading_weight(self) -> float:
        return self.lexical.heading_weight

    @property
    def num_docs(self) -> int:
        return self.lexical.num_docs

    @property
    def lexical_engine(self) -> dict[str, Any]:
        return {"engine": "bm25s", "version": None, "note": "bm25s in memory"}

    @property
    def vector_engine(self) -> dict[str, Any] | None:
        if self.vectors is None:
            return None
        if self.vectors.ann is None:
            return hnsw_description("exact", "numpy")
        dense = self.manifest.dense
        return hnsw_description(
            "faiss",
            "faiss",
            m=int(dense.get("hnsw_m", 32)),
            ef_construction=int(dense.get("ef_construction", 200)),
            width=int(self.vectors.ann.hnsw.efSearch),
        )

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        return {t: self.lexical.df(t) for t in terms}

    def lexical_search(self, terms: Sequence[str], k: int, allowed: Mask = None) -> Ranked:
        return top_k(self.lexical.scores(terms), k, allowed)

    def vector_search(
        self, query: Matrix, k: int, allowed: Mask = None, *, exact: bool = False
    ) -> Ranked:
        return self._vectors.search(query, k, allowed, exact=exact)

    def vectors_of(self, rows: Sequence[int]) -> Matrix:
        out: Matrix = self._vectors.vectors[list(rows)]
        return out

    @property
    def _vectors(self) -> VectorIndex:
        if self.vectors is None:
            raise UsageError(f"{self.index_dir} has no vectors; rebuild it without --no-dense")
        return self.vectors

    def both(self, first: Callable[[], _A], second: Callable[[], _B]) -> tuple[_A, _B]:
        """In turn: both searches run in this process, on the same cores."""
        return first(), second()

    def current_build_id(self) -> str:
        return current_build(self.index_dir).name

    def reopen(self) -> DirectoryStore:
        return load_index(self.index_dir, self.lexical.analyzer)

    def close(self) -> None:
        return None


def load_index(index_dir: Path, analyzer: Analyzer | None = None) -> DirectoryStore:
    """The current build of `index_dir`, its terms read with the analyzer it was built
    with (`analyzer` when it is that one, so a reopened index keeps its stem cache)."""
    build_dir = current_build(index_dir)
    manifest = read_manifest(build_dir)
    size = int(manifest.counts.get("chunks", -1))
    if analyzer is None or analyzer.name != manifest.analyzer:
        analyzer = Analyzer(manifest.analyzer)
    lexical = LexicalIndex.load(
        build_dir / BM25_DIR,
        analyzer,
        heading_weight=float(manifest.lexical.get("heading_weight", 0.0)),
    )
    if lexical.num_docs != size:
        raise IndexCorruptError(
            f"{index_dir}: {lexical.num_docs} chunks indexed, {size} in the manifest; "
            "rebuild the index"
        )
    vectors = None
    if manifest.dense:
        ef_search = ann_ef_search(int(manifest.dense.get("ef_search", 128)), size)
        vectors = VectorIndex.load(build_dir, ef_search)
        if len(vectors) != size or vectors.dim != manifest.dense.get("dim"):
            raise IndexCorruptError(
                f"{index_dir}: {len(vectors)} vectors of {vectors.dim} dimensions for "
                f"{size} chunks; rebuild the index"
            )
    store = DirectoryStore(
        index_dir, build_dir, manifest, size, lexical, vectors, read_acronyms(build_dir)
    )
    if not has_catalog(build_dir):
        _ = store.chunks  # an older build: its chunks are checked now, as they always were
    return store
