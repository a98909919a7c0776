"""`ollama:MODEL` and `openai:MODEL`: vectors from an embedding model behind HTTP.

`ollama:MODEL` (e.g. `ollama:mxbai-embed-large`) sends `POST {base}/api/embed`
with `{"model", "input": [texts...]}` and reads `{"embeddings": [[...], ...]}`,
one row per input in order. The server is `EmbedderOptions.base_url`, else
`OLLAMA_HOST`, else `http://127.0.0.1:11434`, exactly as the `ollama:`
generator finds it (both ask `groundqa.providers`). Ollama needs no key; a
model it does not have is an HTTP 404 whose message ("try pulling it first")
is passed on.

`openai:MODEL` (e.g. `openai:text-embedding-3-small`) speaks OpenAI's
embeddings API, which vLLM, the llama.cpp server, LM Studio, Ollama's `/v1`
and Azure OpenAI also serve: `POST {base}/embeddings` with `{"model", "input":
[texts...]}`, reading `{"data": [{"index", "embedding"}, ...]}`. Rows are put
back in order by `index`, since a server may answer out of order. The base
URL, the key (`OPENAI_API_KEY` as a bearer token, or `AZURE_OPENAI_API_KEY` as
the `api-key` header) and the hint on a 401 are the `openai:` generator's, so
one setting serves both.

Texts go `batch_size` at a time (64 unless `EmbedderOptions.batch_size` says
otherwise) and `progress` hears after each batch. Every failure is an
`EmbeddingError` of one line: unreachable, timed out, a non-2xx answer with the
provider's message, a body that is not JSON. It refuses vectors it cannot
trust rather than index them: a wrong number of rows, rows of different
lengths, a value that is not a finite number, an index that is missing or
repeated, or a dimension that changes between batches. Keys come from the
environment at each request and never appear in an error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from groundqa.embed import EmbedderOptions, Matrix, Progress, check_vectors
from groundqa.errors import EmbeddingError, UsageError
from groundqa.providers import (
    HttpCall,
    ollama_base_url,
    ollama_call,
    openai_base_url,
    openai_call,
    post_json,
    require_httpx,
    server_message,
)
from groundqa.text import shorten

DEFAULT_BATCH_SIZE = 64


def _require_model(backend: str, model: str, example: str) -> str:
    # Not providers.require_model: its example names --generator, which would mislead here.
    model = model.strip()
    if not model:
        raise UsageError(f"{backend}: name an embedding model, e.g. {backend}:{example}")
    return model


def _batch_size(options: EmbedderOptions) -> int:
    size = DEFAULT_BATCH_SIZE if options.batch_size is None else options.batch_size
    if size < 1:
        raise UsageError(f"embedding batch size must be at least 1, not {size}")
    return size


def _row(call: HttpCall, value: object, where: str) -> list[float]:
    """One vector as floats; anything but a non-empty list of numbers is malformed."""
    if not isinstance(value, list) or not value:
        raise call.malformed(f"{where} is not a list of numbers")
    for x in value:
        # bool is an int to Python, never a coordinate to a server.
        if isinstance(x, bool) or not isinstance(x, int | float):
            raise call.malformed(f"{where} holds {shorten(repr(x), 40)}, not a number")
    return [float(x) for x in value]


@dataclass
class _RemoteEmbedder:
    """The batching, checking and stacking both HTTP backends share."""

    model: str
    base_url: str
    timeout_s: float = 60.0
    batch_size: int = DEFAULT_BATCH_SIZE
    name: str = field(init=False)

    backend = ""  # the provider's word in specs and messages

    def __post_init__(self) -> None:
        self.name = f"{self.backend}:{self.model}"
        require_httpx(self.backend)

    @property
    def model_id(self) -> str:
        return self.name

    def _call(self) -> HttpCall:
        raise NotImplementedError

    def _rows(self, call: HttpCall, reply: Any, count: int) -> list[list[float]]:
        raise NotImplementedError

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> Matrix:
        texts = list(texts)
        if not texts:
            empty: Matrix = np.zeros((0, 0), dtype=np.float32)
            return empty
        call = self._call()
        blocks: list[Matrix] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            reply = post_json(call, {"model": self.model, "input": batch})
            rows = self._rows(call, reply, len(batch))
            if len(rows) != len(batch):
                raise call.error(f"{self.name} returned {len(rows)} vectors for {len(batch)} texts")
            dims = {len(r) for r in rows}
            if len(dims) > 1:
                raise call.error(
                    f"{self.name} returned vectors of different lengths "
                    f"({', '.join(str(d) for d in sorted(dims))}) in one batch"
                )
            block = check_vectors(np.asarray(rows, dtype=np.float32), len(batch), self.name)
            if blocks and block.shape[1] != blocks[0].shape[1]:
                raise call.error(
                    f"{self.name} changed dimension from {blocks[0].shape[1]} to "
                    f"{block.shape[1]} at text {start + 1}; is another model answering?"
                )
            blocks.append(block)
            if progress is not None:
                progress(len(batch))
        out: Matrix = np.concatenate(blocks, axis=0)
        return out


@dataclass
class OllamaEmbedder(_RemoteEmbedder):
    backend = "ollama"

    @classmethod
    def from_spec(cls, model: str, options: EmbedderOptions) -> OllamaEmbedder:
        return cls(
            model=_require_model("ollama", model, "mxbai-embed-large"),
            base_url=ollama_base_url(options.base_url),
            timeout_s=options.timeout_s,
            batch_size=_batch_size(options),
        )

    def _call(self) -> HttpCall:
        return ollama_call(self.base_url, "/api/embed", self.timeout_s, error_type=EmbeddingError)

    def _rows(self, call: HttpCall, reply: Any, count: int) -> list[list[float]]:
        if isinstance(reply, dict) and isinstance(reply.get("error"), str):
            raise call.error(f"ollama reported an error: {reply['error']}")
        embeddings = reply.get("embeddings") if isinstance(reply, dict) else None
        if not isinstance(embeddings, list):
            raise call.malformed("the reply has no embeddings list")
        return [_row(call, v, f"embeddings[{i}]") for i, v in enumerate(embeddings)]


@dataclass
class OpenAIEmbedder(_RemoteEmbedder):
    backend = "openai"

    @classmethod
    def from_spec(cls, model: str, options: EmbedderOptions) -> OpenAIEmbedder:
        return cls(
            model=_require_model("openai", model, "text-embedding-3-small"),
            base_url=openai_base_url(options.base_url),
            timeout_s=options.timeout_s,
            batch_size=_batch_size(options),
        )

    def _call(self) -> HttpCall:
        # The key header, the secrets to scrub and the 401 hint are the generator's, read
        # from the environment now; only the path and the error type differ.
        return openai_call(self.base_url, "/embeddings", self.timeout_s, error_type=EmbeddingError)

    def _rows(self, call: HttpCall, reply: Any, count: int) -> list[list[float]]:
        if isinstance(reply, dict) and "error" in reply:
            raise call.error(f"openai reported an error: {server_message(json.dumps(reply))}")
        data = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(data, list):
            raise call.malformed("the reply has no data list")
        by_index: dict[int, list[float]] = {}
        for i, item in enumerate(data):
            index = item.get("index") if isinstance(item, dict) else None
            if isinstance(index, bool) or not isinstance(index, int):
                raise call.malformed(f"data[{i}] has no integer index")
            if index in by_index:
                raise call.malformed(f"index {index} appears twice in data")
            by_index[index] = _row(call, item.get("embedding"), f"data[{i}].embedding")
        if len(by_index) == count and sorted(by_index) != list(range(count)):
            raise call.malformed(f"data indexes {sorted(by_index)} are not 0..{count - 1}")
        return [by_index[k] for k in sorted(by_index)]


__all__ = ["DEFAULT_BATCH_SIZE", "OllamaEmbedder", "OpenAIEmbedder"]
