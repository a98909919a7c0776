"""The `Store` protocol: what the query side needs from one complete build of an index.

Two stores implement it: the index directory on local disk (`index.directory`,
bm25s and numpy/faiss in memory) and PostgreSQL with pgvector (`index.postgres`,
one database that many stateless workers share). Retrieval, the gate, generation
and evaluation reach a build only through these methods, so none of them knows
which store it runs on.

Chunks are addressed by *row*: their position in `chunks`, 0..n-1 within one build.
A filter or scope is a boolean mask over rows (see `facets`); a store
returns only allowed rows, and applies the mask before taking the top k, so a
filter never starves a result list. Scores are the same in both stores: BM25 with
the `Analyzer`'s terms (Lucene idf, see `bm25_idf`) and the cosine of unit vectors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from groundqa.embed import Matrix
from groundqa.index.catalog import Catalog
from groundqa.index.manifest import Manifest
from groundqa.models import Chunk

Mask = npt.NDArray[np.bool_] | None
Ranked = list[tuple[int, float]]


def bm25_idf(df: int, num_docs: int) -> float:
    """Robertson-Sparck Jones idf as Lucene computes it; a term no chunk uses gets the most."""
    return math.log(1.0 + (num_docs - df + 0.5) / (df + 0.5))


_A = TypeVar("_A")
_B = TypeVar("_B")


class Store(Protocol):
    """One complete build, opened for queries. Safe to share between threads."""

    @property
    def location(self) -> str:
        """Where the index lives: its directory, or the database URL without a password."""
        ...

    @property
    def manifest(self) -> Manifest: ...

    @property
    def chunks(self) -> Sequence[Chunk]:
        """Every chunk of the build, in row order, for tools that read a whole corpus
        (evaluation, inspection). Answering a question never reads it: see `catalog`."""
        ...

    @property
    def catalog(self) -> Catalog:
        """Chunks by row, id, document and section, facets and versions, per request."""
        ...

    @property
    def acronyms(self) -> dict[str, str]: ...

    @property
    def has_vectors(self) -> bool: ...

    @property
    def heading_weight(self) -> float:
        """How much the breadcrumb field's BM25 score adds (0: the body alone)."""
        ...

    @property
    def num_docs(self) -> int: ...

    @property
    def lexical_engine(self) -> dict[str, Any]:
        """How BM25 is searched: `engine` (bm25s, pg_textsearch or sql), its `version` and a
        `note` that says why, for `inspect` and `/health`."""
        ...

    @property
    def vector_engine(self) -> dict[str, Any] | None:
        """How vectors are searched: `search` (exact or hnsw), the graph's `m` and
        `ef_construction` and the `width` an unfiltered search walks it with, and a `note`,
        for `inspect` and `/health`; None without vectors."""
        ...

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        """How many chunks contain each term (0 for a term the corpus never uses)."""
        ...

    def lexical_search(self, terms: Sequence[str], k: int, allowed: Mask = None) -> Ranked:
        """Rows and BM25 scores of the k best chunks with a positive score, best first,
        ties by row. A term repeated in `terms` counts each time."""
        ...

    def vector_search(
        self, query: Matrix, k: int, allowed: Mask = None, *, exact: bool = False
    ) -> Ranked:
        """Rows and cosines of the k nearest chunks, best first, ties by row. An approximate
        index may answer an unfiltered query unless `exact`; a filtered one is always exact."""
        ...

    def vectors_of(self, rows: Sequence[int]) -> Matrix:
        """The stored vectors of `rows`, in that order."""
        ...

    def both(self, first: Callable[[], _A], second: Callable[[], _B]) -> tuple[_A, _B]:
        """`first()` and `second()`, two independent searches of this store. A store that
        searches in a server runs `first` on another thread (and connection) while `second`
        runs on this one; a store that searches in this process runs them in turn."""
        ...

    def current_build_id(self) -> str:
        """The build the index points to now (differs from `manifest.build_id` after a
        rebuild); cheap enough to call between requests."""
        ...

    def reopen(self) -> Store:
        """The same index opened again at its current build."""
        ...

    def close(self) -> None: ...
