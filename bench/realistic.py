"""Corpora of any size whose vectors and words come from real ones: SciFact with MiniLM.

The base is SciFact's test corpus as the dense benchmark indexes it (bench/dense.py builds
`bench/.work-dense/scifact` with the default embedder, all-MiniLM-L6-v2; built here if it
is missing): 7,280 real chunks, their real vectors, and SciFact's 1,109 real queries,
embedded by the same model. A corpus of n chunks holds the real chunks first, then
generated ones. A generated chunk is made from a real chunk j and one of j's 20 nearest
real neighbours k, with a weight w drawn from [0.55, 0.95]:

    vector  w·x_j + (1-w)·x_k plus Gaussian noise of norm 0.2, normalised: a point between
            two real neighbours, so the space fills in where real text lives
    text    a window of up to 120 of j's words, each replaced with probability 1-w by a
            word of k, so BM25 sees real vocabulary and real document frequencies

Synthetic vectors can mislead (the clustered generator this replaces put a query's own
source at a cosine of about 0.54 and made neighbours near-ties). `check` compares the
generator with real data at equal size: half the real chunks (A) seed as many generated
ones as the other half (B) holds, and the real queries are searched in B and in the
generated set. If the generator is faithful, the neighbour statistics agree. The noise
norm, weight range, neighbour count and window were chosen before the check first ran and
have not been changed since; no search result was looked at to choose them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from _common import WORK
from sets import scifact

BASE_FILE = WORK.parent / ".work-scale" / "realistic-base.npz"
NEIGHBOURS = 20
NOISE = 0.2
WEIGHT = (0.55, 0.95)
WINDOW = 120
STATES = 8
AREAS = 200


def base() -> dict[str, Any]:
    """The real chunks' vectors and words, and the real queries' texts and vectors (cached
    in BASE_FILE; made from SciFact on first use)."""
    if not BASE_FILE.is_file() or "model_id" not in np.load(BASE_FILE).files:
        _make_base()  # none yet, or one an older version of this file made
    data = np.load(BASE_FILE, allow_pickle=False)
    return {
        "vectors": data["vectors"],
        "texts": [str(t) for t in data["texts"]],
        "titles": [str(t) for t in data["titles"]],
        "queries": [str(q) for q in data["queries"]],
        "query_vectors": data["query_vectors"],
        "model_id": str(data["model_id"]),
    }


def _make_base() -> None:
    from groundqa.engine import Engine
    from groundqa.index.directory import DirectoryStore
    from groundqa.ingestion import ingest
    from sets import BUILDS

    test, train = scifact("test"), scifact("train")
    if test is None or train is None:
        raise SystemExit("the realistic corpus needs ../shared/bench/scifact")
    index = BUILDS / "scifact"
    ingest([test.corpus], index, fmt="beir")  # unchanged since bench/dense.py: nothing to do
    engine = Engine.open(index)
    store = engine.store
    assert isinstance(store, DirectoryStore) and store.vectors is not None
    queries = sorted({*test.queries.values(), *train.queries.values()})
    query_vectors = np.stack([engine.retriever.embed(q) for q in queries]).astype(np.float32)
    BASE_FILE.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        BASE_FILE,
        vectors=np.asarray(store.vectors.vectors, dtype=np.float32),
        texts=np.asarray([c.text for c in store.chunks]),
        titles=np.asarray([c.title for c in store.chunks]),
        queries=np.asarray(queries),
        query_vectors=query_vectors,
        model_id=np.asarray(str(engine.manifest.dense["model_id"])),
    )


def _neighbours(vectors: np.ndarray) -> np.ndarray:
    """Each row's NEIGHBOURS nearest other rows (exact)."""
    out = np.empty((len(vectors), NEIGHBOURS), dtype=np.int64)
    for start in range(0, len(vectors), 2048):
        sims = vectors[start : start + 2048] @ vectors.T
        for i in range(len(sims)):
            sims[i, start + i] = -np.inf
        out[start : start + 2048] = np.argpartition(-sims, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]
    return out


def generated(
    vectors: np.ndarray, texts: list[str], n: int, seed: int
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """`n` generated vectors and texts from the real ones given, and each one's source j."""
    rng = np.random.default_rng(seed)
    near = _neighbours(vectors)
    j = rng.integers(0, len(vectors), n)
    k = near[j, rng.integers(0, NEIGHBOURS, n)]
    w = rng.uniform(*WEIGHT, n).astype(np.float32)
    noise = rng.standard_normal((n, vectors.shape[1]), dtype=np.float32)
    noise *= NOISE / np.linalg.norm(noise, axis=1, keepdims=True)
    out = w[:, None] * vectors[j] + (1 - w[:, None]) * vectors[k] + noise
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    words = [t.split() for t in texts]
    made = []
    for a, b, weight in zip(j.tolist(), k.tolist(), w.tolist(), strict=True):
        own, other = words[a], words[b] or words[a]
        start = int(rng.integers(0, max(len(own) - WINDOW, 0) + 1))
        window = own[start : start + WINDOW]
        swap = rng.random(len(window)) > weight
        picks = rng.integers(0, len(other), len(window))
        made.append(
            " ".join(
                other[p] if s else word for word, s, p in zip(window, swap, picks, strict=True)
            )
        )
    return out.astype(np.float32), made, j


def corpus(n: int, seed: int = 7) -> dict[str, Any]:
    """n chunks: the real ones first, then generated ones; with the real queries."""
    real = base()
    vectors, texts, titles = real["vectors"], real["texts"], real["titles"]
    keep = min(n, len(vectors))
    out_vectors, out_texts, out_titles = vectors[:keep], texts[:keep], titles[:keep]
    if n > keep:
        more, made, source = generated(vectors, texts, n - keep, seed)
        out_vectors = np.concatenate([out_vectors, more])
        out_texts = out_texts + made
        out_titles = out_titles + [titles[s] for s in source.tolist()]
    return {
        "vectors": out_vectors,
        "texts": out_texts,
        "titles": out_titles,
        "queries": real["queries"],
        "query_vectors": real["query_vectors"],
        "model_id": real["model_id"],
    }


def places(doc: int) -> dict[str, str]:
    """The metadata a document carries: an area, and the state that area lies in."""
    area = doc % AREAS
    return {"state": f"State {area % STATES}", "area": f"Area {area}"}


def _stats(corpus_vectors: np.ndarray, queries: np.ndarray) -> dict[str, float]:
    sims = queries @ corpus_vectors.T
    top = -np.sort(-sims, axis=1)[:, :100]
    ties = (sims >= top[:, :1] - 0.02).sum(axis=1)
    return {
        "top1_cos_p50": round(float(np.median(top[:, 0])), 3),
        "top10_cos_p50": round(float(np.median(top[:, 9])), 3),
        "top100_cos_p50": round(float(np.median(top[:, 99])), 3),
        "gap_top1_top10_p50": round(float(np.median(top[:, 0] - top[:, 9])), 3),
        "mean_cos_p50": round(float(np.median(sims.mean(axis=1))), 3),
        "within_0.02_of_top1_p50": float(np.median(ties)),
    }


def check(seed: int = 11) -> dict[str, Any]:
    """Real half B against as many chunks generated from half A, and against the clustered
    generator the scale benchmark used before, all searched with the real queries."""
    real = base()
    vectors = real["vectors"]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(vectors))
    a, b = order[: len(order) // 2], order[len(order) // 2 :]
    made, _, _ = generated(vectors[a], [real["texts"][i] for i in a], len(b), seed)
    dim = vectors.shape[1]
    centres = rng.standard_normal((256, dim)).astype(np.float32)
    clustered = centres[rng.integers(0, 256, len(b))] + 0.6 * rng.standard_normal(
        (len(b), dim), dtype=np.float32
    )
    clustered /= np.linalg.norm(clustered, axis=1, keepdims=True)
    queries = real["query_vectors"]
    return {
        "size": len(b),
        "queries": len(queries),
        "real": _stats(vectors[b], queries),
        "generated": _stats(made, queries),
        "clustered (before)": _stats(clustered, queries),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(check(), indent=2))
