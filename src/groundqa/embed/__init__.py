"""Embedders turn text into unit vectors for dense retrieval.

One protocol; the config string that names an embedder resolves through
`groundqa.registry`, as generators and rerankers do:

- `minilm` (the offline default; `minilm:onnx-int8`, `minilm:fp32`): all-MiniLM-L6-v2
  from files pip installed, see `embed/minilm.py`.
- `ollama:MODEL`: Ollama's `POST /api/embed`, e.g. `ollama:mxbai-embed-large`.
- `openai:MODEL`: any server speaking OpenAI's `POST /v1/embeddings`.

Every backend returns float32 rows of norm 1, in the order of its input, so
cosine similarity is a dot product. `model_id` names the model and runtime
whose vectors are comparable; the index manifest records it with the
dimension, and an index refuses queries embedded by anything else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from groundqa import registry

Matrix = np.ndarray[Any, np.dtype[np.float32]]
Progress = Callable[[int], None]

DEFAULT_EMBEDDER = "minilm"


@dataclass(frozen=True)
class EmbedderOptions:
    """How to run a backend; None means the backend's default."""

    base_url: str | None = None
    timeout_s: float = 60.0
    threads: int | None = None
    batch_size: int | None = None


class Embedder(Protocol):
    """`embed` returns one unit-norm float32 row per text, in order.

    `progress`, when given, is called with the number of texts each batch finished.
    """

    name: str

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> Matrix: ...


Factory = Callable[[str, EmbedderOptions], Embedder]


def register(name: str, factory: Factory | str) -> None:
    """Make `name` (or `name:ARG`) resolvable by `get_embedder`; `factory` may be a
    lazily imported `"module:attribute"`."""
    registry.register("embedder", name, factory)


def available() -> list[str]:
    return registry.available("embedder")


def get_embedder(spec: str, options: EmbedderOptions | None = None) -> Embedder:
    """The embedder named by `spec` (a local model loads once per process and settings)."""
    embedder: Embedder = registry.create("embedder", spec.strip(), options or EmbedderOptions())
    return embedder


def check_vectors(vectors: Matrix, count: int, backend: str) -> Matrix:
    """`vectors` as unit-norm float32 rows, after checking there is one per text."""
    from groundqa.errors import EmbeddingError

    try:
        arr = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError):
        raise EmbeddingError(
            f"{backend} returned rows that are not all numbers of one length"
        ) from None
    if arr.ndim != 2 or arr.shape[0] != count or arr.shape[1] == 0:
        raise EmbeddingError(
            f"{backend} returned {arr.shape[0] if arr.ndim else 0} vectors for {count} texts"
        )
    if not np.isfinite(arr).all():
        raise EmbeddingError(f"{backend} returned a vector with NaN or infinite values")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if (norms == 0).any():
        raise EmbeddingError(f"{backend} returned an all-zero vector")
    out: Matrix = arr / norms
    return out


__all__ = [
    "DEFAULT_EMBEDDER",
    "Embedder",
    "EmbedderOptions",
    "Matrix",
    "available",
    "check_vectors",
    "get_embedder",
    "register",
]
