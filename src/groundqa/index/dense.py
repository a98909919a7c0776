"""The vector index: one unit-norm float32 row per chunk, searched by cosine.

Exact search (one matrix-vector product) is the default and the reference:
on a laptop it answers in well under a millisecond for tens of thousands of
chunks. Past `DenseSettings.ann_threshold` chunks, a build also writes a faiss
HNSW graph (the `ann` extra) and unfiltered queries walk it instead;
`bench/retrieval.py` reports its recall@10 against exact search. A filtered
query always searches the allowed rows exactly, so a filter can never starve
the result list.

The manifest's `dense` entry records the embedder spec, its `model_id` and the
dimension; `check_embedder` refuses a query embedder that differs.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from groundqa.embed import Embedder, Matrix
from groundqa.errors import EmbeddingError, IndexCorruptError, UsageError

VECTORS = "vectors.npy"
HNSW = "hnsw.faiss"


@dataclass(frozen=True)
class DenseSettings:
    """How chunks are embedded and searched."""

    embedder: str = "minilm"
    ann_threshold: int = 100_000  # chunks; below it search is exact
    hnsw_m: int = 32
    ef_construction: int = 200
    ef_search: int = 128

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# HNSW keeps fewer true neighbours as the graph grows at a fixed ef_search. Measured with
# real MiniLM vectors in the index directory (`python bench/ann.py`: 905 real queries to
# choose by, the smallest setting whose one-sided 95% lower bound of recall@10 of exact
# reaches 0.98): 128 at 100,000 chunks and 1000 at 1,000,000. Between and past those two
# points the need is taken to grow as the power of the size through them, an
# interpolation, not a measurement.
EF_SEARCH_POINTS = ((100_000, 128), (1_000_000, 1000))
EF_SEARCH_MAX = 1000  # pgvector's own limit


def ann_ef_search(configured: int, size: int) -> int:
    """The ef_search to search `size` chunks with: the build's setting, raised with the size."""
    return min(max(configured, round(grown(EF_SEARCH_POINTS, size))), EF_SEARCH_MAX)


# pgvector's HNSW graph keeps fewer true neighbours than faiss's with the same settings
# (`index.postgres.target`), so a PostgreSQL store searches its graph wider. Measured at
# 1,000,000 chunks of real MiniLM vectors (`BENCH_PG_ANN_SIZE=1000000 python
# bench/pg_ann.py`, m 32, ef_construction 400, 905 real queries to choose by): 1000 wide
# kept 0.9836 of exact recall@10 (one-sided 95% lower bound 0.9774), 1500 wide 0.9924
# (0.9881), at p50 15 and 38 ms a search. Past pgvector's ef_search limit of 1000 its
# iterative scan carries the search on a further 1000 candidates at a time
# (`index.postgres.store.ann_statement`), so 2000 wide costs and keeps what 1500 does.
# The width grows with the size through 128 at 100,000 chunks (as `ann_ef_search`) and
# 1500 at 1M, up to the rows that scan reads by default.
PG_WIDTH_POINTS = ((100_000, 128), (1_000_000, 1500))
PG_WIDTH_MAX = 20_000  # pgvector's hnsw.max_scan_tuples


def pg_search_width(configured: int, size: int) -> int:
    """How wide a PostgreSQL store of `size` chunks walks its HNSW graph: the build's
    ef_search, raised with the size."""
    return min(max(configured, round(grown(PG_WIDTH_POINTS, size))), PG_WIDTH_MAX)


def hnsw_description(
    kind: str,
    engine: str,
    *,
    m: int | None = None,
    ef_construction: int | None = None,
    width: int | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """How a store searches its vectors, for `inspect` and `/health`: exactly (`kind`
    "exact"), or through an HNSW graph of `m` and `ef_construction` walked `width` wide,
    past the engine's own `limit` of ef_search by its iterative scan."""
    if kind == "exact":
        note = f"exact search ({engine}): every chunk is compared"
        return {"search": "exact", "engine": engine, "note": note}
    note = f"{engine} HNSW, m {m}, ef_construction {ef_construction}, searched {width} wide"
    if limit is not None and width is not None and width > limit:
        note += f" (iterative scan past ef_search {limit})"
    return {
        "search": "hnsw",
        "engine": engine,
        "m": m,
        "ef_construction": ef_construction,
        "width": width,
        "note": note + "; filtered searches are exact",
    }


def grown(points: tuple[tuple[int, int], tuple[int, int]], size: int) -> float:
    """A setting measured at two sizes, at `size`: as the first below the first size, and
    growing as the power of the size through both points from there."""
    (base_size, base), (top_size, top) = points
    growth = math.log(top / base) / math.log(top_size / base_size)
    return float(base * max(1.0, size / base_size) ** growth)


def _faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise UsageError(
            "an approximate vector index needs faiss-cpu; install groundqa[ann], "
            "or raise --ann-threshold to keep exact search"
        ) from None
    return faiss


class VectorIndex:
    """Chunk vectors, with an optional HNSW graph over them."""

    def __init__(self, vectors: Matrix, ann: Any = None, ef_search: int = 128) -> None:
        self.vectors = vectors
        self.ann = ann
        if ann is not None:
            ann.hnsw.efSearch = ef_search

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    @classmethod
    def build(cls, vectors: Matrix, settings: DenseSettings) -> VectorIndex:
        ann = None
        if len(vectors) >= settings.ann_threshold:
            faiss = _faiss()
            ann = faiss.IndexHNSWFlat(vectors.shape[1], settings.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            ann.hnsw.efConstruction = settings.ef_construction
            ann.add(np.ascontiguousarray(vectors, dtype=np.float32))
        return cls(vectors, ann, settings.ef_search)

    def save(self, directory: Path) -> None:
        np.save(directory / VECTORS, np.ascontiguousarray(self.vectors, dtype=np.float32))
        if self.ann is not None:
            _faiss().write_index(self.ann, str(directory / HNSW))

    @classmethod
    def load(cls, directory: Path, ef_search: int = 128) -> VectorIndex:
        vectors = read_vectors(directory)
        ann = None
        if (directory / HNSW).is_file():
            # The graph is read; the vectors inside it stay memory-mapped, so the processes
            # that serve one index share them as they share vectors.npy.
            faiss = _faiss()
            ann = faiss.read_index(str(directory / HNSW), faiss.IO_FLAG_MMAP_IFC)
        return cls(vectors, ann, ef_search)

    def scores(self, query: Matrix) -> npt.NDArray[np.float32]:
        """Cosine similarity of the query with every chunk (exact)."""
        out: npt.NDArray[np.float32] = self.vectors @ query.reshape(-1)
        return out

    def search(
        self,
        query: Matrix,
        k: int,
        allowed: npt.NDArray[np.bool_] | None = None,
        *,
        exact: bool = False,
    ) -> list[tuple[int, float]]:
        """Row indices and cosines of the k nearest chunks, best first, ties by index."""
        if k <= 0 or len(self) == 0:
            return []
        if self.ann is not None and allowed is None and not exact:
            found, ids = self.ann.search(query.reshape(1, -1).astype(np.float32), k)
            return [(int(i), float(s)) for s, i in zip(found[0], ids[0], strict=True) if i >= 0]
        q = query.reshape(-1)
        if allowed is None:  # no copy of the matrix: one product over all rows
            rows, scores = np.arange(len(self)), self.vectors @ q
        else:
            rows = np.flatnonzero(allowed)
            scores = self.vectors[rows] @ q
        if rows.size == 0:
            return []
        if rows.size > k:
            part = np.argpartition(-scores, k - 1)[:k]
            rows, scores = rows[part], scores[part]
        order = np.lexsort((rows, -scores))
        return [(int(rows[i]), float(scores[i])) for i in order]


def read_vectors(directory: Path) -> Matrix:
    """A build's vectors, memory-mapped and read-only: the worker processes that serve one
    index share them. Without the HNSW graph (`VectorIndex.load` adds it)."""
    try:
        vectors: Matrix = np.load(directory / VECTORS, allow_pickle=False, mmap_mode="r")
    except (OSError, ValueError) as exc:
        raise IndexCorruptError(
            f"{directory / VECTORS} is unreadable ({exc}); rebuild the index"
        ) from None
    if vectors.ndim != 2 or vectors.dtype != np.float32:
        raise IndexCorruptError(f"{directory / VECTORS} is not a float32 matrix; rebuild")
    return vectors


def text_key(text: str) -> str:
    """The key a chunk's vector is reused by across builds: a hash of the text embedded.
    Both stores use it; PostgreSQL keeps it in each chunk row (`chunk_hash`)."""
    h = hashlib.sha256(text.encode("utf-8"))
    h.update(b"\x00")
    return h.hexdigest()[:32]


def describe(embedder: Embedder, dim: int, settings: DenseSettings) -> dict[str, Any]:
    """The manifest's `dense` entry."""
    return {**settings.to_dict(), "model_id": embedder.model_id, "dim": dim}


def check_embedder(dense: dict[str, Any], embedder: Embedder, query: Matrix) -> None:
    """Refuse a query vector the index's vectors cannot be compared with."""
    if embedder.model_id != dense.get("model_id"):
        raise EmbeddingError(
            f"this index was embedded with {dense.get('model_id')!r}, the query with "
            f"{embedder.model_id!r}; query with the same embedder or rebuild the index"
        )
    if query.shape[-1] != dense.get("dim"):
        raise EmbeddingError(
            f"the query vector has {query.shape[-1]} dimensions, the index {dense.get('dim')}; "
            "rebuild the index with this embedder"
        )
