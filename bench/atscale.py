"""What the scale benchmarks share (bench/scale.py, bench/pg_bm25.py, bench/pg_ann.py,
bench/ann.py): corpora of a given size, written to a store as `groundqa ingest` writes
after chunking, and the sweep of the HNSW graph's `ef_search`.

- `synthetic`: made-up chunks of ~100 Zipf words with clustered vectors (bench/pg_bm25.py's
  lexical corpus);
- `realistic`: SciFact's real text and vectors grown to any size (bench/realistic.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from _common import WORK, latency_summary

DIM = 384
VOCAB = 30_000
WORDS_PER_CHUNK = 100
CHUNKS_PER_DOC = 5
CLUSTERS = 256
QUERIES = 200
HEAD = 100  # the most frequent made-up words, which play the part of stopwords
SCALE_WORK = WORK.parent / ".work-scale"


def _words() -> list[str]:
    rng = np.random.default_rng(7)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    out: set[str] = set()
    while len(out) < VOCAB:
        n = int(rng.integers(2, 5))
        out.add("".join(syllables[int(i)] for i in rng.integers(0, len(syllables), n)))
    return sorted(out)


def _chunk(i: int, text: str, title: str, folder: str, metadata: Any = None) -> Any:
    """Chunk `i`: part `i % CHUNKS_PER_DOC` of document `i // CHUNKS_PER_DOC`."""
    from groundqa.models import Chunk

    doc, part = divmod(i, CHUNKS_PER_DOC)
    extra = {} if metadata is None else {"metadata": metadata}
    return Chunk(
        chunk_id=f"c{i}",
        doc_id=f"d{doc}",
        section_id=f"d{doc}#{part}",
        title=title,
        section_path=(f"Part {part + 1}",),
        text=text,
        source=f"{folder}/d{doc}.md",
        part=0,
        parts=1,
        **extra,
    )


def synthetic(n: int) -> tuple[list[Any], np.ndarray, list[tuple[list[str], np.ndarray]]]:
    """`n` made-up chunks (~100 Zipf words each) with clustered vectors, and QUERIES (query
    words, query vector) pairs: bench/pg_bm25.py's lexical corpus. The scale runs here use
    `realistic`, whose vectors resemble real ones (these do not: see bench/realistic.py)."""
    rng = np.random.default_rng(n)
    words = np.asarray(_words())
    ranks = np.arange(1, VOCAB + 1, dtype=np.float64)
    p = 1.0 / ranks**1.07
    p /= p.sum()
    ids = rng.choice(VOCAB, size=(n, WORDS_PER_CHUNK), p=p)
    chunks = [
        _chunk(i, " ".join(words[ids[i]]), f"Notice {i // CHUNKS_PER_DOC}", "synthetic")
        for i in range(n)
    ]
    centres = rng.standard_normal((CLUSTERS, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, CLUSTERS, n)] + 0.6 * rng.standard_normal(
        (n, DIM), dtype=np.float32
    )
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = []
    for i in rng.integers(0, n, QUERIES):
        k = int(rng.integers(3, 6))
        q = vectors[i] + 0.08 * rng.standard_normal(DIM, dtype=np.float32)
        # Query words come from below the Zipf head, as a stopword list would leave them.
        pool = ids[i][ids[i] >= HEAD]
        queries.append(([str(w) for w in rng.choice(words[pool], k)], q / np.linalg.norm(q)))
    return chunks, vectors, queries


def realistic(
    n: int,
) -> tuple[list[Any], np.ndarray, list[tuple[list[str], np.ndarray]], list[Any], str]:
    """`n` chunks of real and generated text (bench/realistic.py), their vectors, QUERIES
    real queries (their words, their vector) to report on, QUERIES others to choose
    settings on, and the model the vectors come from."""
    from realistic import corpus, places

    made = corpus(n)
    chunks = [
        _chunk(i, text, title, "generated", places(i // CHUNKS_PER_DOC))
        for i, (text, title) in enumerate(zip(made["texts"], made["titles"], strict=True))
    ]
    pairs = [
        (str(q).split(), v) for q, v in zip(made["queries"], made["query_vectors"], strict=True)
    ]
    return chunks, made["vectors"], pairs[:QUERIES], pairs[QUERIES : 2 * QUERIES], made["model_id"]


class Handed:
    """An embedder that returns vectors already made, looked up by text. It names the model
    that made them, so `groundqa serve` embeds questions with that model."""

    name = "minilm"

    def __init__(self, texts: list[str], vectors: np.ndarray, model_id: str) -> None:
        self.rows = {t: i for i, t in enumerate(texts)}
        self.vectors = vectors
        self.model_id = model_id

    def embed(self, texts: Any, progress: Any = None) -> np.ndarray:
        if list(texts) == ["dimension probe"]:
            return self.vectors[:1]
        return self.vectors[[self.rows[t] for t in texts]]


def synthetic_manifest(n: int, bm25: Any, analyzer: Any) -> Callable[[str, dict[str, Any]], Any]:
    """The `make_manifest` a store's write takes, for `n` synthetic chunks."""
    from groundqa.index.manifest import Manifest, new_build_id

    def make_manifest(build_id: str, dense_entry: dict[str, Any]) -> Manifest:
        return Manifest(
            build_id=build_id or new_build_id(),
            created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            corpus={"fingerprint": f"synthetic-{n}", "build_fingerprint": f"synthetic-{n}"},
            chunker={},
            lexical=bm25.to_dict(),
            analyzer=analyzer.name,
            dense=dense_entry,
            counts={"documents": n // CHUNKS_PER_DOC, "sections": n, "chunks": n},
        )

    return make_manifest


def write_postgres(
    url: str,
    chunks: list[Any],
    bm25: Any,
    analyzer: Any,
    make_manifest: Callable[[str, dict[str, Any]], Any],
    embedder: Any = None,
    dense: Any = None,
) -> Any:
    """Write synthetic chunks (and their handed-in vectors) through `PostgresTarget`, as
    `groundqa ingest` does after chunking; its `WriteStats`."""
    from groundqa.index.postgres import PostgresTarget

    target = PostgresTarget(url)
    with target.lock():
        _, stats = target.write(
            chunks,
            {c.doc_id: c.doc_id for c in chunks},
            analyzer=analyzer,
            with_path=True,
            heading_weight=bm25.heading_weight,
            embedder=embedder,
            make_manifest=make_manifest,
            dense_entry=lambda dim: (
                {**dense.to_dict(), "model_id": embedder.model_id, "dim": dim} if dense else {}
            ),
            acronyms={},
        )
    return stats


def ann_ef(store: Any) -> int | None:
    """The ef_search an unfiltered vector search walks the HNSW graph with, in either
    store; None where it searches exactly."""
    if hasattr(store, "_uses_ann"):
        return int(store.ef_search) if store._uses_ann(False) else None
    if store.vectors is None or store.vectors.ann is None:
        return None
    return int(store.vectors.ann.hnsw.efSearch)


def _set_ann_ef(store: Any, ef: int) -> None:
    if hasattr(store, "_uses_ann"):
        store.ef_search = ef
    else:
        store.vectors.ann.hnsw.efSearch = ef


# Past 1000 (pgvector's ef_search limit) the PostgreSQL store searches on through its
# iterative scan; faiss takes the setting as it is.
EF_SEARCH = (32, 64, 128, 256, 512, 1000, 1500, 3000)


def ef_sweep(
    store: Any,
    tuning: list[tuple[list[str], np.ndarray]],
    queries: list[tuple[Any, Any]],
    efs: tuple[int, ...] = EF_SEARCH,
) -> list[dict[str, Any]] | None:
    """HNSW recall@10 of exact search and latency at each `ef_search`: on the tuning
    queries, to choose by, and on the reported ones. None where search is exact."""
    chosen = ann_ef(store)  # the store's own setting, put back after the sweep
    if chosen is None:
        return None
    exact = {
        name: [{r for r, _ in store.vector_search(v, 10, exact=True)} for _, v in pairs]
        for name, pairs in (("tuning", tuning), ("reported", queries))
    }
    out = []
    for ef in efs:
        _set_ann_ef(store, ef)
        row: dict[str, Any] = {"ef_search": ef}
        for name, pairs in (("tuning", tuning), ("reported", queries)):
            ms, recall = [], []
            for (_, v), truth in zip(pairs, exact[name], strict=True):
                t = time.perf_counter()
                found = {r for r, _ in store.vector_search(v, 10)}
                ms.append((time.perf_counter() - t) * 1000)
                recall.append(len(found & truth) / max(len(truth), 1))
            row[name] = {
                "recall_at_10": round(float(np.mean(recall)), 4),
                "recall_at_10_low95": lower_bound(recall),
                **latency_summary(ms),
            }
        out.append(row)
    _set_ann_ef(store, chosen)
    return out


def lower_bound(values: list[float]) -> float:
    """The one-sided 95% lower confidence bound of the mean (normal approximation): what
    a setting chosen on these queries can be trusted to keep on others like them."""
    if len(values) < 2:
        return round(float(np.mean(values)), 4) if values else 0.0
    sd = float(np.std(values, ddof=1))
    return round(float(np.mean(values)) - 1.645 * sd / len(values) ** 0.5, 4)
